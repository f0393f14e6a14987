//! Users' enum types (and domains' names) by OID, for every layer: a
//! [`crate::values::types::SqlType`] names an enum type by OID alone, and what
//! the OID stands for is here (see `user_types.rs`, whose definitions
//! the catalog publishes here when it loads or changes one).
//!
//! OIDs are never reused and are unique across the cluster (each home
//! hands out its own block), so one map per process answers for every
//! catalog in it, and a type dropped while a statement still names it
//! leaves only an unused entry.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use parking_lot::RwLock;

use crate::error::{Result, SqlError, code};

/// An enum type: its name and its labels in their order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumType {
    pub name: String,
    pub labels: Vec<String>,
}

impl EnumType {
    /// Where `label` sorts among the type's labels.
    pub fn position(&self, label: &str) -> Option<usize> {
        self.labels.iter().position(|l| l == label)
    }

    /// The position of `label`, or PostgreSQL's error for a value that is
    /// not one of the type's labels.
    pub fn require(&self, label: &str) -> Result<usize> {
        self.position(label).ok_or_else(|| {
            SqlError::new(code::INVALID_TEXT, format!("invalid input value for enum {}: \"{label}\"", self.name))
        })
    }
}

static ENUMS: LazyLock<RwLock<HashMap<u32, Arc<EnumType>>>> = LazyLock::new(Default::default);
/// Domains' names, for `format_type`.
static DOMAINS: LazyLock<RwLock<HashMap<u32, String>>> = LazyLock::new(Default::default);

/// Makes domain `oid`'s name known (again, after a rename).
pub fn publish_domain(oid: u32, name: &str) {
    DOMAINS.write().insert(oid, name.to_string());
}

/// The name of user type `oid` (an enum type or a domain).
pub fn type_name(oid: u32) -> Option<String> {
    enum_type(oid).map(|t| t.name.clone()).or_else(|| DOMAINS.read().get(&oid).cloned())
}

/// Makes enum type `oid` known (again, after a change).
pub fn publish_enum(oid: u32, name: &str, labels: &[String]) {
    let t = Arc::new(EnumType { name: name.to_string(), labels: labels.to_vec() });
    ENUMS.write().insert(oid, t);
}

/// The enum type with OID `oid`, if there is one.
pub fn enum_type(oid: u32) -> Option<Arc<EnumType>> {
    ENUMS.read().get(&oid).cloned()
}

/// Enum type `oid`, or an internal error: a plan names it, so it existed.
pub fn require_enum(oid: u32) -> Result<Arc<EnumType>> {
    enum_type(oid).ok_or_else(|| SqlError::new(code::UNDEFINED_OBJECT, format!("type with OID {oid} does not exist")))
}

/// Checks that every value is one of enum type `oid`'s labels.
pub fn check_labels(oid: u32, values: &datafusion::arrow::array::ArrayRef) -> Result<()> {
    let t = require_enum(oid)?;
    let strings = datafusion::arrow::compute::cast(values, &datafusion::arrow::datatypes::DataType::Utf8)?;
    let strings = strings
        .as_any()
        .downcast_ref::<datafusion::arrow::array::StringArray>()
        .ok_or_else(|| SqlError::internal("enum values are not text"))?;
    for v in strings.iter().flatten() {
        t.require(v)?;
    }
    Ok(())
}
