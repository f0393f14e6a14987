//! The relations a session sees in the system views: the database's
//! tables and views, its own temporary ones under the names it gave them
//! (their stored names say whose they are: `storage::temp_names`), other
//! sessions' not at all.

use std::collections::HashSet;
use std::sync::Arc;

use crate::scope::Resolver;
use crate::storage::catalog::views::ViewDef;
use crate::storage::catalog::{ColumnDef, TableDef};

/// The database's tables as this session sees them.
pub(crate) fn tables(r: &Resolver) -> Vec<Arc<TableDef>> {
    let mut tables = as_seen(r, r.catalog.tables(&r.db), |t| &t.name, |t| &mut t.name);
    // A temporary table's indexes are stored under prefixed names too;
    // they show under the names the session gave them.
    for t in &mut tables {
        if t.indexes.iter().any(|ix| crate::storage::temp_names::is_temp(&ix.name)) {
            for ix in &mut Arc::make_mut(t).indexes {
                if let Some(shown) = shown_name(r, &ix.name) {
                    ix.name = shown;
                }
            }
        }
    }
    tables
}

/// The database's views as this session sees them.
pub(crate) fn views(r: &Resolver) -> Vec<Arc<ViewDef>> {
    as_seen(r, r.catalog.views(&r.db), |v| &v.name, |v| &mut v.name)
}

/// Relations as this session sees them (see [`shown_name`]); `name`
/// and `name_mut` reach a relation's name (copied only to rename it).
fn as_seen<T: Clone>(
    r: &Resolver,
    relations: Vec<Arc<T>>,
    name: fn(&T) -> &String,
    name_mut: fn(&mut T) -> &mut String,
) -> Vec<Arc<T>> {
    relations
        .into_iter()
        .filter_map(|mut rel| {
            let shown = shown_name(r, name(&rel))?;
            if shown != *name(&rel) {
                *name_mut(Arc::make_mut(&mut rel)) = shown;
            }
            Some(rel)
        })
        .collect()
}

/// The name a relation shows this session: a temporary relation's own
/// name if it is the session's, None if it is another session's.
fn shown_name(r: &Resolver, stored: &str) -> Option<String> {
    match crate::storage::temp_names::split(stored) {
        Some((schema, own)) => (schema == r.info.temp_schema).then(|| own.to_string()),
        None => Some(stored.to_string()),
    }
}

/// The OIDs of the session's temporary tables and views.
pub(crate) fn temp_oids(r: &Resolver) -> HashSet<u32> {
    let own = |n: &str| crate::storage::temp_names::split(n).is_some_and(|(schema, _)| schema == r.info.temp_schema);
    let tables = r.catalog.tables(&r.db).into_iter().filter(|t| own(&t.name)).map(|t| t.oid);
    tables.chain(r.catalog.views(&r.db).into_iter().filter(|v| own(&v.name)).map(|v| v.oid)).collect()
}

/// The name of the schema the relation `oid` is in (`temp`: the
/// session's temporary relations, from [`temp_oids`]).
pub(crate) fn schema_name(temp: &HashSet<u32>, r: &Resolver, oid: u32) -> String {
    if temp.contains(&oid) { r.info.temp_schema.clone() } else { "public".to_string() }
}

/// A table or view with its columns, as the views that list columns of
/// both read them.
pub(crate) struct RelationColumns {
    pub oid: u32,
    pub name: String,
    pub columns: Vec<ColumnDef>,
    /// A view's (its columns come from its query, not declarations).
    pub is_view: bool,
}

/// Each of `tables` and each view the session sees, with its columns (a
/// view's as columns without defaults or constraints): tables first.
pub(crate) fn relation_columns(r: &Resolver, tables: &[Arc<TableDef>]) -> Vec<RelationColumns> {
    let mut out: Vec<RelationColumns> = tables
        .iter()
        .map(|t| RelationColumns { oid: t.oid, name: t.name.clone(), columns: t.columns.clone(), is_view: false })
        .collect();
    for v in views(r) {
        let columns = v
            .columns
            .iter()
            .map(|c| ColumnDef {
                name: c.name.clone(),
                ty: c.ty,
                not_null: false,
                default: None,
                identity: None,
                field: 0,
                domain: None,
            })
            .collect();
        out.push(RelationColumns { oid: v.oid, name: v.name.clone(), columns, is_view: true });
    }
    out
}
