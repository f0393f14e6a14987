//! The stored names of temporary relations (`plan::temp_tables` resolves
//! a session's names to them): the session's prefix `pg_temp_<token>.`,
//! then the name it gave.

/// The start of every temporary relation's stored name.
pub const PREFIX: &str = "pg_temp_";

/// Whether a stored relation name is a temporary relation's.
pub fn is_temp(stored: &str) -> bool {
    stored.starts_with(PREFIX) && stored.contains('.')
}

/// A temporary relation's schema (`pg_temp_<token>`) and its own name.
pub fn split(stored: &str) -> Option<(&str, &str)> {
    if is_temp(stored) { stored.split_once('.') } else { None }
}
