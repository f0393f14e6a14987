//! Users' types: enum types and domains, kept per database like its
//! tables (in its home), and how a type name in DDL or a cast resolves.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{Catalog, CheckDef};
use crate::error::{Result, SqlError, code};
use crate::types::SqlType;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TypeDef {
    pub oid: u32,
    pub db: String,
    pub name: String,
    /// (Not `kind`: catalog entries are tagged with that name.)
    pub body: TypeKind,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum TypeKind {
    /// `CREATE TYPE … AS ENUM`: the labels in their sort order.
    Enum { labels: Vec<String> },
    /// `CREATE DOMAIN`: a base type with constraints.
    Domain(DomainDef),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DomainDef {
    pub base: SqlType,
    pub not_null: bool,
    /// The DEFAULT expression as SQL text.
    pub default: Option<String>,
    /// CHECK constraints over `VALUE`.
    pub checks: Vec<CheckDef>,
}

impl TypeDef {
    /// Makes an enum type's labels known to every layer (`user_types`).
    pub(super) fn publish(&self) {
        match &self.body {
            TypeKind::Enum { labels } => crate::user_types::publish_enum(self.oid, &self.name, labels),
            TypeKind::Domain(_) => crate::user_types::publish_domain(self.oid, &self.name),
        }
    }

    pub fn domain(&self) -> Option<&DomainDef> {
        match &self.body {
            TypeKind::Domain(d) => Some(d),
            TypeKind::Enum { .. } => None,
        }
    }

    /// The SQL type a column or cast of this type has.
    pub fn sql_type(&self) -> SqlType {
        match &self.body {
            TypeKind::Enum { .. } => SqlType::Enum(self.oid),
            TypeKind::Domain(d) => d.base,
        }
    }
}

/// A type name resolved: the SQL type values have, and the domain whose
/// constraints apply, if the name was a domain's.
#[derive(Debug, Clone)]
pub struct ResolvedType {
    pub ty: SqlType,
    pub domain: Option<Arc<TypeDef>>,
}

/// A user's type name as written (`mood`, `"Mood"`, `public.mood`) in the
/// form the catalog keeps it.
pub fn type_key(name: &str) -> String {
    let name = name.trim();
    let name = name.strip_prefix("public.").unwrap_or(name);
    match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None => name.to_lowercase(),
    }
}

impl Catalog {
    pub fn user_type(&self, db: &str, name: &str) -> Option<Arc<TypeDef>> {
        self.state.read().types.get(&(db.to_string(), name.to_string())).cloned()
    }

    pub fn user_type_by_oid(&self, oid: u32) -> Option<Arc<TypeDef>> {
        self.state.read().types.values().find(|t| t.oid == oid).cloned()
    }

    pub fn user_types(&self, db: &str) -> Vec<Arc<TypeDef>> {
        self.state.read().types.values().filter(|t| t.db == db).cloned().collect()
    }

    /// Resolves a type name as written in DDL or a cast: PostgreSQL's
    /// built-in types first, then the database's enum types and domains.
    pub fn resolve_type(&self, db: &str, name: &str) -> Result<ResolvedType> {
        match SqlType::parse(name) {
            Ok(ty) => Ok(ResolvedType { ty, domain: None }),
            Err(e) if e.code == code::UNDEFINED_OBJECT => {
                let trimmed = name.trim();
                if let Some(elem) = trimmed.strip_suffix("[]")
                    && self.user_type(db, &type_key(elem)).is_some()
                {
                    return Err(SqlError::unsupported(format!("arrays of enum types and domains ({trimmed})")));
                }
                let t = self.user_type(db, &type_key(name)).ok_or(e)?;
                let domain = t.domain().is_some().then(|| t.clone());
                Ok(ResolvedType { ty: t.sql_type(), domain })
            }
            Err(e) => Err(e),
        }
    }

    /// What uses type `oid` (columns of the database's tables, domains
    /// over it), as PostgreSQL names them, which keeps it from being
    /// dropped.
    pub fn type_users(&self, db: &str, oid: u32) -> Vec<String> {
        let mut users = Vec::new();
        for t in self.tables(db) {
            for c in &t.columns {
                if c.domain == Some(oid) || c.ty == SqlType::Enum(oid) {
                    users.push(format!("column {} of table {}", c.name, t.name));
                }
            }
        }
        for d in self.user_types(db) {
            if d.domain().is_some_and(|d| d.base == SqlType::Enum(oid)) {
                users.push(format!("type {}", d.name));
            }
        }
        users
    }

    // ----- changes (callers hold `ddl_lock`) -----

    pub fn put_type(&self, t: TypeDef) -> Result<()> {
        self.write_entries(&[super::Entry::Type(t)])
    }

    pub fn drop_type_entry(&self, oid: u32) -> Result<()> {
        self.delete_entries(&[format!("type:{oid}")])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_as_kept() {
        assert_eq!(type_key("Mood"), "mood");
        assert_eq!(type_key("\"Mood\""), "Mood");
        assert_eq!(type_key("public.mood"), "mood");
    }
}
