//! The system views: PostgreSQL's `pg_catalog` and `information_schema`,
//! and Tessera's own schema `tessera` (`tessera.databases`,
//! `tessera.partitions`, the cluster's nodes and replicas, …). None of
//! them is stored: when a query names one, its rows are built from the
//! catalog as the querying session sees it (its own temporary tables
//! under the names it gave them, other sessions' not at all), so psql's
//! `\d` commands, drivers and ORMs read the catalog the way they read
//! PostgreSQL's.
//!
//! The layer sits above `scope` (the `Resolver`
//! a view reads the session and catalog through) and `storage` (the
//! catalog's definitions), and below `plan`, whose DataFusion catalog
//! (`plan::context`) registers the three schemas and asks them for a view
//! by name.
//!
//! A view is declared in one place, in the file of its subject: a row
//! struct made with `view_row!`, whose fields are the
//! view's columns in order (so a value can only land in the column it is
//! named for, with that column's type), and a `View` static
//! that names the view and the function making its rows. Views PostgreSQL
//! has and Tessera keeps empty, only so that clients' queries of them
//! plan, are `EmptyView`s: a name and columns. To add
//! a view, declare it so and list it in its schema's registry
//! (`pg_catalog::PG_CATALOG`, `information_schema::INFORMATION_SCHEMA`
//! or `tessera_views::TESSERA`), where the order is the order the
//! schema lists its views in.

pub(crate) mod information_schema;
pub(crate) mod pg_catalog;
pub(crate) mod regtype;
pub(crate) mod tessera_views;
pub(crate) mod view;
mod visible;

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;

    use datafusion::arrow::array::RecordBatch;
    use tessera_engine::{EngineConfig, Node};

    use crate::scope::Resolver;
    use crate::system::view::{Views, schema};
    use crate::system::{information_schema, pg_catalog, tessera_views};

    /// A session's resolver on a database holding one of each kind of
    /// object the views list.
    fn resolver() -> (crate::Session, Resolver) {
        let sql = crate::SqlEngine::open(Arc::new(Node::open(EngineConfig::in_memory()).unwrap())).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let mut admin = sql.session("tessera", "tessera").unwrap();
        let (_, err) = rt.block_on(admin.execute_sql("CREATE DATABASE shop"));
        assert!(err.is_none(), "{err:?}");
        let mut s = sql.session("tessera", "shop").unwrap();
        for statement in [
            "CREATE TYPE mood AS ENUM ('sad', 'happy')",
            "CREATE DOMAIN positive AS int CHECK (VALUE > 0)",
            "CREATE TABLE t (id int PRIMARY KEY, name varchar(20) NOT NULL DEFAULT 'x' UNIQUE, \
             m mood, p positive, n bigint GENERATED ALWAYS AS IDENTITY, CHECK (p < 100))",
            "CREATE INDEX t_m ON t USING hash (m)",
            "CREATE VIEW v AS SELECT id, name FROM t",
            "CREATE SEQUENCE q",
            "CREATE TEMP TABLE tt (x int)",
        ] {
            let (_, err) = rt.block_on(s.execute_sql(statement));
            assert!(err.is_none(), "{statement}: {err:?}");
        }
        let r = Resolver {
            catalog: s.catalog().clone(),
            db: "shop".to_string(),
            txn: s.txn.clone(),
            notes: s.notes.clone(),
            info: s.info.clone(),
            scratch: Default::default(),
            schema: Default::default(),
        };
        (s, r)
    }

    /// Every view's rows make a batch of exactly its declared columns, and
    /// a schema has no two views, nor a view two columns, of one name.
    #[test]
    fn every_view_makes_its_declared_columns() {
        let (_session, r) = resolver();
        let registries: [&Views; 3] =
            [&pg_catalog::PG_CATALOG, &information_schema::INFORMATION_SCHEMA, &tessera_views::TESSERA];
        let mut rows = std::collections::HashMap::new();
        for views in registries {
            let mut names = HashSet::new();
            for view in views.0 {
                assert!(names.insert(view.name()), "two views named {}", view.name());
                let columns: HashSet<&str> = view.columns().iter().map(|(name, _)| *name).collect();
                assert_eq!(columns.len(), view.columns().len(), "{}: two columns of one name", view.name());
                let batch = RecordBatch::try_new(schema(*view), view.arrays(&r));
                let batch = batch.unwrap_or_else(|e| panic!("{}: {e}", view.name()));
                rows.insert(view.name(), batch.num_rows());
            }
        }
        // The views of what the database holds list it.
        for name in ["pg_class", "pg_attribute", "pg_type", "pg_enum", "pg_index", "pg_constraint", "pg_attrdef"] {
            assert!(rows[name] > 0, "{name} is empty");
        }
        for name in ["columns", "table_constraints", "key_column_usage", "databases", "partitions"] {
            assert!(rows[name] > 0, "{name} is empty");
        }
    }
}
