//! `pg_namespace` (the schemas) and `pg_class` (every relation: tables,
//! their indexes, views and sequences).

use super::{INFORMATION_SCHEMA_NS, PG_CATALOG_NS, PUBLIC_NS, TEMP_NS};
use crate::scope::Resolver;
use crate::storage::catalog::IndexMethod;
use crate::system::view::{View, view_row};
use crate::system::visible;

view_row! {
    /// A row of `pg_namespace`: a schema.
    pub struct PgNamespace {
        oid: i64,
        nspname: String,
        nspowner: i64,
        nspacl: Option<Vec<Option<String>>>,
    }
}

pub static PG_NAMESPACE: View<PgNamespace> = View { name: "pg_namespace", rows: pg_namespace };

/// PostgreSQL's schemas, and the session's temporary schema once it
/// holds a relation.
fn pg_namespace(r: &Resolver) -> Vec<PgNamespace> {
    let schema = |oid, name: &str| PgNamespace { oid, nspname: name.to_string(), nspowner: 10, nspacl: None };
    let mut rows = vec![
        schema(PG_CATALOG_NS, "pg_catalog"),
        schema(PUBLIC_NS, "public"),
        schema(INFORMATION_SCHEMA_NS, "information_schema"),
    ];
    if !visible::temp_oids(r).is_empty() {
        rows.push(schema(TEMP_NS, &r.info.temp_schema));
    }
    rows
}

view_row! {
    /// A row of `pg_class`: a relation.
    pub struct PgClass {
        oid: i64,
        relname: String,
        relnamespace: i64,
        relkind: &'static str,
        relowner: i64,
        reltuples: f32,
        relhasindex: bool,
        relpersistence: &'static str,
        relam: i64,
        relnatts: i16,
        relfilenode: i64,
        relhasrules: bool,
        relhastriggers: bool,
        relrowsecurity: bool,
        relforcerowsecurity: bool,
        relispartition: bool,
        relreplident: &'static str,
        reloptions: Option<Vec<Option<String>>>,
        reltablespace: i64,
        reloftype: i64,
        relispopulated: bool,
        relchecks: i16,
        relpages: i32,
        relacl: Option<Vec<Option<String>>>,
        reltoastrelid: i64,
        relpartbound: Option<String>,
        relisshared: bool,
    }
}

impl PgClass {
    /// A permanent relation in `public` of kind `relkind`, with what
    /// Tessera's relations have in common (no rules, triggers, row
    /// security, partitions or storage options); each kind sets the rest.
    fn new(oid: u32, relname: &str, relkind: &'static str) -> PgClass {
        PgClass {
            oid: oid as i64,
            relname: relname.to_string(),
            relnamespace: PUBLIC_NS,
            relkind,
            relowner: 10,
            reltuples: 0.0,
            relhasindex: false,
            relpersistence: "p",
            relam: 0,
            relnatts: 0,
            relfilenode: 0,
            relhasrules: false,
            relhastriggers: false,
            relrowsecurity: false,
            relforcerowsecurity: false,
            relispartition: false,
            relreplident: "n",
            reloptions: None,
            reltablespace: 0,
            reloftype: 0,
            relispopulated: true,
            relchecks: 0,
            relpages: 0,
            relacl: None,
            reltoastrelid: 0,
            relpartbound: None,
            relisshared: false,
        }
    }
}

pub static PG_CLASS: View<PgClass> = View { name: "pg_class", rows: pg_class };

/// Each table followed by its indexes, then the views, then the
/// sequences (but Tessera's own, named `__…`: the row ids of tables
/// without a primary key).
fn pg_class(r: &Resolver) -> Vec<PgClass> {
    let temp = visible::temp_oids(r);
    // The schema and `relpersistence` of a table or view.
    let placed = |oid: u32| if temp.contains(&oid) { (TEMP_NS, "t") } else { (PUBLIC_NS, "p") };
    let mut rows = Vec::new();
    for t in visible::tables(r) {
        let stats = r.catalog.engine_table(&t).ok().map(|e| e.stats());
        let live = stats.map(|s| s.rows as f64).unwrap_or(0.0) as f32;
        let (relnamespace, relpersistence) = placed(t.oid);
        rows.push(PgClass {
            relnamespace,
            reltuples: live,
            relhasindex: !t.indexes.is_empty(),
            relpersistence,
            relam: 2,
            relnatts: t.columns.len() as i16,
            relfilenode: t.oid as i64,
            relreplident: "d",
            relchecks: t.checks.len() as i16,
            ..PgClass::new(t.oid, &t.name, "r")
        });
        for ix in &t.indexes {
            // An index is in its table's schema, temporary with it.
            rows.push(PgClass {
                relnamespace,
                relpersistence,
                reltuples: live,
                relam: if ix.method == IndexMethod::Hash { 405 } else { 403 },
                relnatts: ix.columns.len() as i16,
                relfilenode: ix.oid as i64,
                ..PgClass::new(ix.oid, &ix.name, "i")
            });
        }
    }
    for v in visible::views(r) {
        let (relnamespace, relpersistence) = placed(v.oid);
        rows.push(PgClass {
            relnamespace,
            relpersistence,
            relnatts: v.columns.len() as i16,
            relhasrules: true,
            ..PgClass::new(v.oid, &v.name, "v")
        });
    }
    for sq in r.catalog.sequences(&r.db).iter().filter(|s| !s.name.starts_with("__")) {
        rows.push(PgClass {
            reltuples: 1.0,
            relnatts: 3,
            relfilenode: sq.oid as i64,
            ..PgClass::new(sq.oid, &sq.name, "S")
        });
    }
    rows
}
