//! The handlers of statements that read and write rows: INSERT, UPDATE
//! and DELETE (`dml`, with `dml_params` for their parameters' types),
//! COPY (`copy`), EXPLAIN (`explain`). Each takes the session and returns
//! an `Output`; `dispatch` calls them. They sit above `session` and below
//! `ddl`, which reuses their row checks and encodings.

pub mod copy;
pub(crate) mod dml;
pub(crate) mod dml_params;
pub(crate) mod dml_returning;
pub(crate) mod explain;
