//! PostgreSQL's listings of a database's relations by name: `pg_tables`,
//! `pg_views`, `pg_indexes`, and `pg_sequences` (whose rows `pg_sequence`
//! shows too).

use super::constraints::index_def;
use crate::scope::Resolver;
use crate::system::view::{View, view_row};
use crate::system::visible;

view_row! {
    /// A row of `pg_tables`: a table.
    pub struct PgTables {
        schemaname: String,
        tablename: String,
        tableowner: &'static str,
        tablespace: Option<String>,
        hasindexes: bool,
        hasrules: bool,
        hastriggers: bool,
        rowsecurity: bool,
    }
}

pub static PG_TABLES: View<PgTables> = View { name: "pg_tables", rows: pg_tables };

fn pg_tables(r: &Resolver) -> Vec<PgTables> {
    let temp = visible::temp_oids(r);
    visible::tables(r)
        .iter()
        .map(|t| PgTables {
            schemaname: visible::schema_name(&temp, r, t.oid),
            tablename: t.name.clone(),
            tableowner: "tessera",
            tablespace: None,
            hasindexes: !t.indexes.is_empty(),
            hasrules: false,
            hastriggers: false,
            rowsecurity: false,
        })
        .collect()
}

view_row! {
    /// A row of `pg_views`: a view and its query.
    pub struct PgViews {
        schemaname: String,
        viewname: String,
        viewowner: &'static str,
        definition: String,
    }
}

pub static PG_VIEWS: View<PgViews> = View { name: "pg_views", rows: pg_views };

fn pg_views(r: &Resolver) -> Vec<PgViews> {
    let temp = visible::temp_oids(r);
    visible::views(r)
        .iter()
        .map(|v| PgViews {
            schemaname: visible::schema_name(&temp, r, v.oid),
            viewname: v.name.clone(),
            viewowner: "tessera",
            // As PostgreSQL prints a view's query: a leading space and a
            // closing semicolon.
            definition: format!(" {};", v.query),
        })
        .collect()
}

view_row! {
    /// A row of `pg_indexes`: an index and the statement that makes it.
    pub struct PgIndexes {
        schemaname: String,
        tablename: String,
        indexname: String,
        tablespace: Option<String>,
        indexdef: String,
    }
}

pub static PG_INDEXES: View<PgIndexes> = View { name: "pg_indexes", rows: pg_indexes };

fn pg_indexes(r: &Resolver) -> Vec<PgIndexes> {
    let temp = visible::temp_oids(r);
    let mut rows = Vec::new();
    for t in visible::tables(r) {
        for ix in &t.indexes {
            rows.push(PgIndexes {
                schemaname: visible::schema_name(&temp, r, t.oid),
                tablename: t.name.clone(),
                indexname: ix.name.clone(),
                tablespace: None,
                indexdef: index_def(&t, ix),
            });
        }
    }
    rows
}

view_row! {
    /// A row of `pg_sequences` and `pg_sequence`: a sequence, its bounds
    /// and the value it last gave.
    pub struct PgSequences {
        seqrelid: i64,
        sequencename: String,
        schemaname: &'static str,
        seqstart: i64,
        seqincrement: i64,
        seqmin: i64,
        seqmax: i64,
        last_value: Option<i64>,
    }
}

pub static PG_SEQUENCE: View<PgSequences> = View { name: "pg_sequence", rows: pg_sequences };
pub static PG_SEQUENCES: View<PgSequences> = View { name: "pg_sequences", rows: pg_sequences };

/// The sequences but Tessera's own (named `__…`: the row ids of tables
/// without a primary key).
fn pg_sequences(r: &Resolver) -> Vec<PgSequences> {
    r.catalog
        .sequences(&r.db)
        .iter()
        .filter(|q| !q.name.starts_with("__"))
        .map(|q| PgSequences {
            seqrelid: q.oid as i64,
            sequencename: q.name.clone(),
            schemaname: "public",
            seqstart: q.start,
            seqincrement: q.increment,
            seqmin: q.min,
            seqmax: q.max,
            last_value: r.catalog.last_value(q),
        })
        .collect()
}
