//! Rewrites of a statement or plan that give PostgreSQL's semantics where
//! DataFusion would read it otherwise. They know values (`values`) but no
//! catalog or session; `plan` and `session` apply them.
//!
//! - `strict` raises PostgreSQL's errors where DataFusion would return a
//!   value (logarithms of zero, float input out of range), reads constants
//!   as PostgreSQL does (char(n) without padding, timestamps in ISO forms)
//!   and keeps a subquery's ORDER BY under an outer LIMIT;
//! - `query_checks` refuses (0A000) what DataFusion would misread;
//! - `using_joins` orders `*` over USING joins and merges RIGHT/FULL keys;
//! - `windows` writes named windows out, `window_defaults` types
//!   `lead`/`lag` with a wider default as PostgreSQL does;
//! - `naming` names unaliased result columns as PostgreSQL does (repeated
//!   names allowed, set-returning functions' columns after their alias).

pub(crate) mod naming;
pub(crate) mod query_checks;
pub(crate) mod strict;
pub(crate) mod using_joins;
pub(crate) mod window_defaults;
pub(crate) mod windows;
