//! Users' types (`user_types.rs`): enum types and domains, kept per
//! database like its tables (in its home), and how a type name in DDL or
//! a cast resolves.

use std::sync::Arc;

use super::Catalog;
use crate::error::{Result, SqlError, code};
use crate::values::types::SqlType;
pub use crate::values::user_types::{DomainDef, TypeDef, TypeKind, type_key};

/// A type name resolved: the SQL type values have, and the domain whose
/// constraints apply, if the name was a domain's.
#[derive(Debug, Clone)]
pub struct ResolvedType {
    pub ty: SqlType,
    pub domain: Option<Arc<TypeDef>>,
}

impl Catalog {
    pub fn user_type(&self, db: &str, name: &str) -> Option<Arc<TypeDef>> {
        self.schema().user_type(db, name).cloned()
    }

    pub fn user_type_by_oid(&self, oid: u32) -> Option<Arc<TypeDef>> {
        self.schema().type_by_oid(oid).cloned()
    }

    /// The domain with OID `oid`, if it is one.
    pub fn domain(&self, oid: Option<u32>) -> Option<(Arc<TypeDef>, DomainDef)> {
        let t = self.user_type_by_oid(oid?)?;
        let d = t.domain()?.clone();
        Some((t, d))
    }

    pub fn user_types(&self, db: &str) -> Vec<Arc<TypeDef>> {
        self.schema().user_types(db).cloned().collect()
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
