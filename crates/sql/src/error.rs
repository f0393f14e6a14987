//! The SQL layer's error: a PostgreSQL SQLSTATE, a message, and optional
//! detail and hint, classified so callers know whether to retry.

use datafusion::error::DataFusionError;
use tessera_engine::{EngineError, ErrorClass};

pub type Result<T, E = SqlError> = std::result::Result<T, E>;

/// An error as a PostgreSQL client sees it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct SqlError {
    /// The five-character SQLSTATE.
    pub code: &'static str,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// Severity: "ERROR" or "FATAL" (the connection closes).
    pub severity: &'static str,
}

pub mod code {
    pub const SYNTAX: &str = "42601";
    pub const INVALID_TXN_STATE: &str = "25000";
    pub const INVALID_TABLE_DEFINITION: &str = "42P16";
    pub const INVALID_OBJECT_DEFINITION: &str = "42P17";
    pub const UNDEFINED_TABLE: &str = "42P01";
    pub const UNDEFINED_COLUMN: &str = "42703";
    pub const UNDEFINED_OBJECT: &str = "42704";
    pub const UNDEFINED_FUNCTION: &str = "42883";
    pub const DUPLICATE_TABLE: &str = "42P07";
    pub const DUPLICATE_OBJECT: &str = "42710";
    pub const DUPLICATE_COLUMN: &str = "42701";
    pub const DUPLICATE_DATABASE: &str = "42P04";
    pub const UNDEFINED_DATABASE: &str = "3D000";
    pub const INVALID_PK: &str = "42P16";
    pub const DATATYPE_MISMATCH: &str = "42804";
    pub const WRONG_OBJECT_TYPE: &str = "42809";
    pub const AMBIGUOUS_COLUMN: &str = "42702";
    pub const GROUPING_ERROR: &str = "42803";
    pub const UNIQUE: &str = "23505";
    pub const NOT_NULL: &str = "23502";
    pub const CHECK: &str = "23514";
    pub const DIVISION_BY_ZERO: &str = "22012";
    pub const OUT_OF_RANGE: &str = "22003";
    pub const SEQUENCE_LIMIT: &str = "2200H";
    pub const INVALID_TEXT: &str = "22P02";
    pub const INVALID_BINARY: &str = "22P03";
    pub const STRING_TOO_LONG: &str = "22001";
    pub const DATETIME_FORMAT: &str = "22007";
    pub const DATETIME_OVERFLOW: &str = "22008";
    pub const INTERVAL_FIELD_OVERFLOW: &str = "22015";
    pub const BAD_COPY_FORMAT: &str = "22P04";
    pub const INVALID_PARAMETER: &str = "22023";
    pub const SERIALIZATION: &str = "40001";
    pub const DEADLOCK: &str = "40P01";
    pub const COMPLETION_UNKNOWN: &str = "40003";
    pub const LOCK_NOT_AVAILABLE: &str = "55P03";
    pub const IN_FAILED_TXN: &str = "25P02";
    pub const ACTIVE_TXN: &str = "25001";
    pub const NO_ACTIVE_TXN: &str = "25P01";
    pub const READ_ONLY_TXN: &str = "25006";
    pub const CANNOT_CONNECT_NOW: &str = "57P03";
    pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
    pub const UNDEFINED_PARAMETER: &str = "42704";
    pub const CANT_CHANGE_RUNTIME_PARAM: &str = "55P02";
    pub const INVALID_PARAMETER_VALUE: &str = "22023";
    pub const INVALID_NTH_VALUE_ARGUMENT: &str = "22016";
    pub const SAVEPOINT_EXCEPTION: &str = "3B001";
    pub const QUERY_CANCELED: &str = "57014";
    pub const IDLE_IN_TXN_TIMEOUT: &str = "25P03";
    pub const DISK_FULL: &str = "53100";
    pub const IO_ERROR: &str = "58030";
    pub const DATA_CORRUPTED: &str = "XX001";
    pub const INTERNAL: &str = "XX000";
    pub const INVALID_PASSWORD: &str = "28P01";
    pub const INVALID_AUTH: &str = "28000";
    pub const TOO_MANY_CONNECTIONS: &str = "53300";
    pub const PROTOCOL_VIOLATION: &str = "08P01";
    pub const PROGRAM_LIMIT: &str = "54000";
    pub const OBJECT_IN_USE: &str = "55006";
    pub const INSUFFICIENT_PRIVILEGE: &str = "42501";
    pub const INVALID_NAME: &str = "42602";
    pub const INVALID_COLUMN_REFERENCE: &str = "42P10";
    pub const DEPENDENT_OBJECTS: &str = "2BP01";
    pub const CARDINALITY_VIOLATION: &str = "21000";
}

/// Marks (in `detail`) an unknown table named with a database prefix.
pub const CATALOG_MARK: &str = "\u{1}catalog:";

impl SqlError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        SqlError { code, message: message.into(), detail: None, hint: None, severity: "ERROR" }
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn unsupported(what: impl std::fmt::Display) -> Self {
        SqlError::new(code::FEATURE_NOT_SUPPORTED, format!("{what} is not supported by Tessera"))
    }

    pub fn syntax(message: impl Into<String>) -> Self {
        SqlError::new(code::SYNTAX, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        SqlError::new(code::INTERNAL, message)
    }

    /// Conflicts and deadlocks: the client should run the transaction again.
    pub fn is_retryable(&self) -> bool {
        matches!(self.code, code::SERIALIZATION | code::DEADLOCK)
    }
}

impl From<EngineError> for SqlError {
    fn from(e: EngineError) -> Self {
        let message = e.to_string();
        match &e {
            EngineError::Conflict { .. } => {
                SqlError::new(code::SERIALIZATION, message).with_hint("The transaction might succeed if retried.")
            }
            EngineError::Deadlock => {
                SqlError::new(code::DEADLOCK, message).with_hint("The transaction might succeed if retried.")
            }
            EngineError::LockTimeout(_) => SqlError::new(code::LOCK_NOT_AVAILABLE, message),
            // The session sets the deadline from statement_timeout alone.
            EngineError::DeadlinePassed => {
                SqlError::new(code::QUERY_CANCELED, "canceling statement due to statement timeout")
            }
            EngineError::UniqueViolation { .. } => SqlError::new(code::UNIQUE, message),
            EngineError::NoSuchTable(_) => SqlError::new(code::UNDEFINED_TABLE, message),
            EngineError::TableExists(_) => SqlError::new(code::DUPLICATE_TABLE, message),
            EngineError::NoSuchIndex(_) => SqlError::new(code::UNDEFINED_OBJECT, message),
            EngineError::IndexExists(_) => SqlError::new(code::DUPLICATE_TABLE, message),
            // A cluster's primary could not replicate the commit: nothing
            // was written, and the transaction may be run again (through a
            // new connection once this node stops serving as primary).
            EngineError::CommitFailed(tessera_engine::LogError::NotReplicated(why)) => {
                SqlError::new(code::SERIALIZATION, format!("could not commit: {why}"))
                    .with_hint("Nothing was committed. The transaction might succeed if retried.")
            }
            // The commit was replicated but the primary changed before its
            // quorum answered: the next primary may commit it or discard it.
            EngineError::CommitFailed(tessera_engine::LogError::OutcomeUnknown(why)) => {
                SqlError::new(code::COMPLETION_UNKNOWN, format!("the outcome of the commit is unknown: {why}"))
                    .with_hint("The transaction may or may not have committed; check before running it again.")
            }
            // One transaction's changes over the log's record limit: that
            // transaction's error alone, the engine goes on.
            EngineError::CommitFailed(tessera_engine::LogError::RecordTooLarge { size, limit }) => SqlError::new(
                code::PROGRAM_LIMIT,
                format!(
                    "transaction too large to commit: its changes take {size} bytes in the log, \
                     over the limit of {limit} bytes"
                ),
            )
            .with_hint("Nothing was committed. Split the work into smaller transactions (a large COPY into several)."),
            EngineError::ReadOnly(_) | EngineError::CommitFailed(_) => {
                let disk_full = format!("{e:?}").contains("StorageFull") || message.contains("No space left");
                SqlError::new(if disk_full { code::DISK_FULL } else { code::IO_ERROR }, message)
            }
            EngineError::TooManyTransactions(_) => SqlError::new(code::TOO_MANY_CONNECTIONS, message),
            EngineError::Unavailable(_) => {
                SqlError::new(code::CANNOT_CONNECT_NOW, message).with_hint("Nothing was done. Try again in a moment.")
            }
            _ => match e.class() {
                ErrorClass::Corruption => SqlError::new(code::DATA_CORRUPTED, message),
                ErrorClass::Unavailable => SqlError::new(code::IO_ERROR, message),
                ErrorClass::User => SqlError::new(code::INVALID_PARAMETER, message),
                _ => SqlError::internal(message),
            },
        }
    }
}

impl From<DataFusionError> for SqlError {
    fn from(e: DataFusionError) -> Self {
        classify_datafusion(e)
    }
}

impl From<datafusion::arrow::error::ArrowError> for SqlError {
    fn from(e: datafusion::arrow::error::ArrowError) -> Self {
        classify_datafusion(DataFusionError::ArrowError(Box::new(e), None))
    }
}

/// DataFusion reports most problems as strings; map the ones a PostgreSQL
/// client cares about to their SQLSTATE and keep the text readable.
fn classify_datafusion(e: DataFusionError) -> SqlError {
    // An error of ours raised inside DataFusion (a UDF, a scan) comes back wrapped.
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(s) = source {
        if let Some(sql) = s.downcast_ref::<SqlError>() {
            return sql.clone();
        }
        source = s.source();
    }
    let e = e.find_root();
    let raw = e.strip_backtrace();
    let msg = clean_message(&raw);
    let lower = msg.to_lowercase();
    let code = match e {
        DataFusionError::SQL(..) => {
            if lower.contains("not supported") || lower.contains("unsupported") {
                code::FEATURE_NOT_SUPPORTED
            } else {
                code::SYNTAX
            }
        }
        DataFusionError::NotImplemented(_) => code::FEATURE_NOT_SUPPORTED,
        DataFusionError::SchemaError(..) => {
            if lower.contains("ambiguous") {
                code::AMBIGUOUS_COLUMN
            } else if lower.contains("no field named") || lower.contains("not found") {
                code::UNDEFINED_COLUMN
            } else {
                code::SYNTAX
            }
        }
        _ if lower.contains("can't cast value")
            && lower.split_whitespace().nth(3).is_some_and(|v| v.parse::<f64>().is_ok()) =>
        {
            code::OUT_OF_RANGE
        }
        _ if lower.contains("limit must be >= 0") => "2201W",
        _ if lower.contains("returned more than one row") => code::CARDINALITY_VIOLATION,
        _ if lower.contains("order by column out of bounds") => code::INVALID_COLUMN_REFERENCE,
        _ if lower.contains("non-boolean predicate") || lower.contains("must be type boolean") => {
            code::DATATYPE_MISMATCH
        }
        _ if lower.contains("divide by zero") || lower.contains("division by zero") => code::DIVISION_BY_ZERO,
        _ if lower.contains("overflow") || lower.contains("out of range") || lower.contains("too large to store") => {
            code::OUT_OF_RANGE
        }
        // Text that is not a date or time: PostgreSQL's invalid_datetime_format.
        _ if lower.contains("error parsing timestamp") || lower.contains("error parsing date") => code::DATETIME_FORMAT,
        _ if lower.contains("cannot cast")
            || lower.contains("can't cast")
            || lower.contains("cast error")
            || lower.contains("invalid input syntax")
            || lower.contains("error parsing") =>
        {
            code::INVALID_TEXT
        }
        _ if lower.contains("table") && lower.contains("not found") => code::UNDEFINED_TABLE,
        _ if lower.contains("invalid function") || lower.contains("no function matches") => code::UNDEFINED_FUNCTION,
        _ if lower.contains("not supported") || lower.contains("unsupported") => code::FEATURE_NOT_SUPPORTED,
        _ if lower.contains("does not support") => code::FEATURE_NOT_SUPPORTED,
        DataFusionError::Plan(_) => {
            if lower.contains("projections require expression") || lower.contains("must appear in the group by") {
                code::GROUPING_ERROR
            } else if lower.contains("no field named") || lower.contains("column") && lower.contains("not found") {
                code::UNDEFINED_COLUMN
            } else if lower.contains("cannot be cast") || lower.contains("cannot infer common") {
                code::DATATYPE_MISMATCH
            } else {
                code::SYNTAX
            }
        }
        DataFusionError::Execution(_) | DataFusionError::ArrowError(..) => code::INVALID_PARAMETER,
        _ => code::INTERNAL,
    };
    // "table 'db.public.t' not found" -> PostgreSQL's wording.
    if let Some(rest) = msg.strip_prefix("table '")
        && let Some(name) = rest.strip_suffix("' not found")
    {
        let parts: Vec<&str> = name.split('.').collect();
        if parts.len() == 3 && parts[1] == "public" {
            // The session turns this into 0A000 when the database is not its own.
            return SqlError::new(code::UNDEFINED_TABLE, format!("relation \"{}\" does not exist", parts[2]))
                .with_detail(format!("{CATALOG_MARK}{}", parts[0]));
        }
        if parts.len() == 3 {
            return SqlError::new(
                code::UNDEFINED_TABLE,
                format!("relation \"{}.{}\" does not exist", parts[1], parts[2]),
            );
        }
    }
    if lower.contains("cannot cast string")
        && (lower.contains("date32") || lower.contains("timestamp") || lower.contains("time64"))
    {
        // A well-formed but impossible date ('2024-02-30') is out of range, not malformed.
        let value = msg.split('\'').nth(1).unwrap_or("");
        let shaped = value.len() >= 10
            && value.as_bytes()[4] == b'-'
            && value.as_bytes()[7] == b'-'
            && value[..4].chars().all(|c| c.is_ascii_digit());
        return SqlError::new(if shaped { code::DATETIME_OVERFLOW } else { code::DATETIME_FORMAT }, msg);
    }
    if let Some(pg) = invalid_number_text(&msg) {
        return SqlError::new(code::INVALID_TEXT, pg);
    }
    let mut err = SqlError::new(code, msg);
    if code == code::DIVISION_BY_ZERO {
        err.message = "division by zero".into();
    }
    err
}

/// Arrow's "Cannot cast string 'x' to value of Int32 type" (and "Cannot
/// cast value 'x' to value of Boolean type") in PostgreSQL's words:
/// `invalid input syntax for type integer: "x"`.
fn invalid_number_text(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("Cannot cast string '").or_else(|| msg.strip_prefix("Cannot cast value '"))?;
    let at = rest.rfind("' to value of ")?;
    let (value, arrow) = (&rest[..at], rest[at + "' to value of ".len()..].trim_end_matches(" type"));
    let name = match arrow {
        "Int16" => "smallint",
        "Int32" => "integer",
        "Int64" => "bigint",
        "Float32" => "real",
        "Float64" => "double precision",
        "Boolean" => "boolean",
        _ => return None,
    };
    Some(format!("invalid input syntax for type {name}: \"{value}\""))
}

/// Strips DataFusion's layered prefixes ("Error during planning: ...") and
/// NUL bytes, which would corrupt a protocol frame.
fn clean_message(raw: &str) -> String {
    let mut s = raw.replace('\0', "");
    for prefix in [
        "SQL error: ",
        "Error during planning: ",
        "Execution error: ",
        "Arrow error: ",
        "Schema error: ",
        "This feature is not implemented: ",
        "Invalid argument error: ",
        "Cast error: ",
        "External error: ",
        "Optimizer rule 'simplify_expressions' failed\ncaused by\n",
        "ParserError(\"",
    ] {
        while let Some(rest) = s.strip_prefix(prefix) {
            s = rest.to_string();
        }
    }
    if let Some(idx) = s.find(" at Line: ") {
        s.truncate(idx);
    }
    s.trim_end_matches("\")").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_number_text_in_postgres_words() {
        assert_eq!(
            invalid_number_text("Cannot cast string 'it's' to value of Int32 type").as_deref(),
            Some("invalid input syntax for type integer: \"it's\"")
        );
        assert_eq!(
            invalid_number_text("Cannot cast value 'maybe' to value of Boolean type").as_deref(),
            Some("invalid input syntax for type boolean: \"maybe\"")
        );
        assert_eq!(invalid_number_text("Cannot cast string 'x' to value of Date32 type"), None);
        assert_eq!(invalid_number_text("something else"), None);
    }
}
