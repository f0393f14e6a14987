//! The catalog's definitions as one immutable, versioned snapshot.
//!
//! Every lookup reads a [`SchemaSnapshot`]: the databases, tables, sequences,
//! roles, types, views and schema-change jobs as of one catalog version.
//! A change never edits a snapshot in place: the catalog copies the one
//! it holds (its maps hold `Arc`s, so a copy costs a pointer per
//! definition), applies the change, and publishes the copy under a new
//! version, all under its DDL mutex. So whoever holds a snapshot sees one
//! consistent version for as long as they hold it — a statement's
//! planning resolves every name against the one it took
//! (`scope::Resolver::pin_schema`), however much DDL runs meanwhile.
//!
//! The counters that hand out oids and streams are not definitions and
//! are not here: they only ever move forward, and a snapshot held by a
//! reader must not pin them (`catalog.rs`, `Counters`).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::views::ViewDef;
use super::{DatabaseDef, Entry, IndexDef, RoleDef, SequenceDef, TableDef, TypeDef};
use crate::storage::jobs::JobDef;

/// The catalog's definitions at one version.
#[derive(Default, Clone)]
pub struct SchemaSnapshot {
    /// The catalog version this snapshot was published at.
    pub(super) version: i64,
    pub(super) databases: BTreeMap<String, DatabaseDef>,
    pub(super) tables: BTreeMap<(String, String), Arc<TableDef>>,
    pub(super) sequences: BTreeMap<(String, String), Arc<SequenceDef>>,
    pub(super) roles: BTreeMap<String, RoleDef>,
    pub(super) types: BTreeMap<(String, String), Arc<TypeDef>>,
    pub(super) views: BTreeMap<(String, String), Arc<ViewDef>>,
    pub(super) jobs: BTreeMap<u32, JobDef>,
}

fn key(db: &str, name: &str) -> (String, String) {
    (db.to_string(), name.to_string())
}

impl SchemaSnapshot {
    /// The catalog version this snapshot shows.
    pub fn version(&self) -> i64 {
        self.version
    }

    pub fn database(&self, name: &str) -> Option<&DatabaseDef> {
        self.databases.get(name)
    }

    pub fn databases(&self) -> impl Iterator<Item = &DatabaseDef> {
        self.databases.values()
    }

    pub fn table(&self, db: &str, name: &str) -> Option<&Arc<TableDef>> {
        self.tables.get(&key(db, name))
    }

    pub fn tables<'a>(&'a self, db: &'a str) -> impl Iterator<Item = &'a Arc<TableDef>> + 'a {
        self.tables.values().filter(move |t| t.db == db)
    }

    pub fn sequence(&self, db: &str, name: &str) -> Option<&Arc<SequenceDef>> {
        self.sequences.get(&key(db, name))
    }

    pub fn sequences<'a>(&'a self, db: &'a str) -> impl Iterator<Item = &'a Arc<SequenceDef>> + 'a {
        self.sequences.values().filter(move |s| s.db == db)
    }

    pub fn role(&self, name: &str) -> Option<&RoleDef> {
        self.roles.get(name)
    }

    pub fn roles(&self) -> impl Iterator<Item = &RoleDef> {
        self.roles.values()
    }

    pub fn user_type(&self, db: &str, name: &str) -> Option<&Arc<TypeDef>> {
        self.types.get(&key(db, name))
    }

    pub fn type_by_oid(&self, oid: u32) -> Option<&Arc<TypeDef>> {
        self.types.values().find(|t| t.oid == oid)
    }

    pub fn user_types<'a>(&'a self, db: &'a str) -> impl Iterator<Item = &'a Arc<TypeDef>> + 'a {
        self.types.values().filter(move |t| t.db == db)
    }

    pub fn view(&self, db: &str, name: &str) -> Option<&Arc<ViewDef>> {
        self.views.get(&key(db, name))
    }

    pub fn views<'a>(&'a self, db: &'a str) -> impl Iterator<Item = &'a Arc<ViewDef>> + 'a {
        self.views.values().filter(move |v| v.db == db)
    }

    pub fn jobs(&self) -> impl Iterator<Item = &JobDef> {
        self.jobs.values()
    }

    /// The index named `name` in database `db`, with its table.
    pub fn index(&self, db: &str, name: &str) -> Option<(Arc<TableDef>, IndexDef)> {
        self.tables(db).find_map(|t| t.indexes.iter().find(|i| i.name == name).map(|i| (t.clone(), i.clone())))
    }

    /// The database an object of a catalog entry's key (`kind:oid`)
    /// belongs to; None for what is cluster-wide or not here.
    pub(super) fn db_of_key(&self, kind: &str, oid: u32) -> Option<&str> {
        match kind {
            "table" => self.tables.values().find(|t| t.oid == oid).map(|t| t.db.as_str()),
            "sequence" => self.sequences.values().find(|q| q.oid == oid).map(|q| q.db.as_str()),
            "type" => self.types.values().find(|t| t.oid == oid).map(|t| t.db.as_str()),
            "view" => self.views.values().find(|v| v.oid == oid).map(|v| v.db.as_str()),
            _ => None,
        }
    }

    /// Puts a definition in (replacing the one of its oid, whatever its
    /// name was). Layouts and the stream counter are not definitions:
    /// the caller handles them.
    pub(super) fn apply(&mut self, entry: Entry) {
        match entry {
            Entry::Database(d) => {
                self.databases.retain(|_, x| x.oid != d.oid);
                self.databases.insert(d.name.clone(), d);
            }
            Entry::Table(t) => {
                self.tables.retain(|_, x| x.oid != t.oid);
                self.tables.insert(key(&t.db, &t.name), Arc::new(t));
            }
            Entry::Sequence(s) => {
                self.sequences.retain(|_, x| x.oid != s.oid);
                self.sequences.insert(key(&s.db, &s.name), Arc::new(s));
            }
            Entry::Role(r) => {
                self.roles.retain(|_, x| x.oid != r.oid);
                self.roles.insert(r.name.clone(), r);
            }
            Entry::Type(t) => {
                t.publish();
                self.types.retain(|_, x| x.oid != t.oid);
                self.types.insert(key(&t.db, &t.name), Arc::new(t));
            }
            Entry::View(v) => {
                self.views.retain(|_, x| x.oid != v.oid);
                self.views.insert(key(&v.db, &v.name), Arc::new(v));
            }
            Entry::Job(j) => {
                self.jobs.insert(j.id, j);
            }
            Entry::Layout(l) => self.merge_layouts(vec![l]),
            Entry::Streams { .. } => {}
        }
    }

    /// Takes out the definition a catalog entry's key (`kind:oid`) names.
    pub(super) fn remove(&mut self, kind: &str, oid: u32) {
        match kind {
            "database" => self.databases.retain(|_, x| x.oid != oid),
            "table" => self.tables.retain(|_, x| x.oid != oid),
            "sequence" => self.sequences.retain(|_, x| x.oid != oid),
            "type" => self.types.retain(|_, x| x.oid != oid),
            "view" => self.views.retain(|_, x| x.oid != oid),
            _ => self.roles.retain(|_, x| x.oid != oid),
        }
    }
}
