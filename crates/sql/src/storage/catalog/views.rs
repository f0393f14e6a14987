//! Views (`plan/views.rs` expands them), kept per database like its tables (in its home),
//! and what depends on what.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{Catalog, Entry};
use crate::error::Result;
use crate::values::types::SqlType;

/// A view of one database.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ViewDef {
    pub oid: u32,
    pub db: String,
    pub name: String,
    /// The defining query as stored (see the module's text).
    pub query: String,
    pub columns: Vec<ViewColumn>,
    /// The OIDs of the tables and views the query reads.
    pub depends_on: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewColumn {
    pub name: String,
    pub ty: SqlType,
}

impl Catalog {
    pub fn view(&self, db: &str, name: &str) -> Option<Arc<ViewDef>> {
        self.schema().view(db, name).cloned()
    }

    pub fn views(&self, db: &str) -> Vec<Arc<ViewDef>> {
        self.schema().views(db).cloned().collect()
    }

    /// The OID of the table or view `name` of database `db`.
    pub fn relation_oid(&self, db: &str, name: &str) -> Option<u32> {
        self.table(db, name).map(|t| t.oid).or_else(|| self.view(db, name).map(|v| v.oid))
    }

    /// The views of `db` that read relation `oid` directly.
    pub fn dependent_views(&self, db: &str, oid: u32) -> Vec<Arc<ViewDef>> {
        self.views(db).into_iter().filter(|v| v.depends_on.contains(&oid)).collect()
    }

    /// The views of `db` that read relation `oid`, directly or through
    /// other views, each after the views that read it (the order to drop
    /// them in).
    pub fn dependent_views_deep(&self, db: &str, oid: u32) -> Vec<Arc<ViewDef>> {
        let mut out: Vec<Arc<ViewDef>> = Vec::new();
        fn visit(c: &Catalog, db: &str, oid: u32, out: &mut Vec<Arc<ViewDef>>) {
            for v in c.dependent_views(db, oid) {
                if out.iter().any(|x| x.oid == v.oid) {
                    continue;
                }
                visit(c, db, v.oid, out);
                out.push(v);
            }
        }
        visit(self, db, oid, &mut out);
        out
    }

    // ----- changes (callers hold `ddl_lock`) -----

    pub fn put_views(&self, views: Vec<ViewDef>) -> Result<()> {
        let entries: Vec<Entry> = views.into_iter().map(Entry::View).collect();
        self.write_entries(&entries)
    }

    pub fn drop_view_entries(&self, oids: &[u32]) -> Result<()> {
        let keys: Vec<String> = oids.iter().map(|o| format!("view:{o}")).collect();
        self.delete_entries(&keys)
    }
}
