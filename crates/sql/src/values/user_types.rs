//! Users' types (enum types and domains): their definitions, which the
//! catalog keeps per database (`catalog/types.rs`) and publishes to
//! `enum_registry.rs`, where every layer finds an enum type's name and
//! labels by OID: a [`SqlType`] is a small `Copy` value that Arrow field
//! metadata names, so an enum column's type is just its OID
//! (`SqlType::Enum`).
//!
//! Values of an enum travel as their labels (Utf8): equality, hashing,
//! GROUP BY and joins need nothing more. Order does: `enums.rs` rewrites
//! comparisons, sorts and window orders of enum values into the labels'
//! positions.

use serde::{Deserialize, Serialize};

pub use crate::values::enum_registry::{
    EnumType, check_labels, enum_type, publish_domain, publish_enum, require_enum, type_name,
};
use crate::values::types::SqlType;

/// An enum type or a domain of one database.
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
    pub checks: Vec<DomainCheck>,
}

/// A domain's CHECK constraint: its name and SQL over `VALUE`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DomainCheck {
    pub name: String,
    pub expr: String,
}

impl TypeDef {
    /// Makes the type known to every layer (see the module's text).
    pub fn publish(&self) {
        match &self.body {
            TypeKind::Enum { labels } => publish_enum(self.oid, &self.name, labels),
            TypeKind::Domain(_) => publish_domain(self.oid, &self.name),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::code;

    #[test]
    fn type_names_as_kept() {
        assert_eq!(type_key("Mood"), "mood");
        assert_eq!(type_key("\"Mood\""), "Mood");
        assert_eq!(type_key("public.mood"), "mood");
    }

    #[test]
    fn labels_have_positions() {
        publish_enum(999_001, "mood", &["sad".into(), "ok".into(), "happy".into()]);
        let t = enum_type(999_001).unwrap();
        assert_eq!(t.position("ok"), Some(1));
        let e = t.require("meh").unwrap_err();
        assert_eq!(e.code, code::INVALID_TEXT);
        assert_eq!(e.message, "invalid input value for enum mood: \"meh\"");
        assert_eq!(SqlType::Enum(999_001).name(), "mood");
        assert_eq!(SqlType::from_oid(999_001), Some(SqlType::Enum(999_001)));
        let f = SqlType::Enum(999_001).field("m", true);
        assert_eq!(SqlType::of_field(&f), SqlType::Enum(999_001));
    }
}
