//! # tessera-sql: the SQL layer
//!
//! This crate turns SQL text into reads and writes of the storage engine,
//! giving PostgreSQL's answers (or refusing with PostgreSQL's SQLSTATE)
//! wherever DataFusion, which plans and executes queries, would answer
//! otherwise. DataFusion stays in the top crates: this one and
//! `tessera-server`, which sends Arrow batches over the wire.
//!
//! ## Layers
//!
//! The crate's top-level modules are layers; each imports only the layers
//! below it (`module-cycles` checks that none import each other in a
//! circle):
//!
//! ```text
//!  dispatch   where a statement goes: transaction blocks, the one match that
//!             routes a statement to its handler, Describe, CREATE TABLE AS
//!  ddl        CREATE/ALTER/DROP of databases, tables, indexes, sequences,
//!             roles, types, domains and views; TRUNCATE
//!  exec       INSERT/UPDATE/DELETE, COPY, EXPLAIN and their parameters
//!  session    a connection's state: its transaction, DataFusion context,
//!             settings (SET/SHOW), and what handlers ask of it (plan and run
//!             a query, begin and finish a statement); the fast path's entry
//!  fast       the OLTP fast path: key-reaching statements bound once and run
//!             on the engine without DataFusion
//!  plan       the DataFusion context of a session: catalogs, functions of
//!             PostgreSQL's, views and temporary names resolved before planning
//!  system     pg_catalog, information_schema and Tessera's own views
//!  scope      what one statement sees and returns: the session's identity and
//!             settings, the Resolver of names, Output
//!  storage    the catalog, tables over partitions, transactions over them,
//!             keyed databases, splits, remote parts, the TableProvider
//!  rewrite    AST and plan rewrites that give PostgreSQL's semantics
//!  values     SQL types and values: encodings, casts, operators and functions
//!  parser     SQL text to statements (with the syntax sqlparser lacks)
//!  error      SqlError and SQLSTATEs
//! ```
//!
//! Each layer's module (`values.rs`, `storage.rs`, …) opens with what it
//! holds. Inside a layer, modules import each other freely but keep small.
//!
//! ## A statement's way through
//!
//! A [`Session`] belongs to one client connection. `dispatch` parses a
//! query string (`plan::parse_sql`: `parser`, then PostgreSQL's names),
//! runs transaction control itself (`dispatch::blocks`), resolves the
//! session's temporary names (`plan::temp_tables`) and expands views
//! (`plan::views`), then hands the statement to its handler:
//!
//! * a query is named as PostgreSQL names result columns
//!   (`rewrite::naming`), rewritten where DataFusion would answer
//!   differently (`rewrite::strict` and friends), planned and executed by
//!   DataFusion over `storage::provider::EngineTable`, a `TableProvider`
//!   that reads through the session's engine transaction and picks a point
//!   lookup, an index range or a full scan from the pushed-down filters;
//! * INSERT / UPDATE / DELETE (`exec::dml`) become queries whose result rows
//!   name exactly the rows to write, applied to the engine by Tessera (never
//!   through DataFusion's DML hooks); COPY (`exec::copy`) reads and writes
//!   text, CSV and PostgreSQL's binary format;
//! * DDL (`ddl`) changes the engine and the catalog (`storage::catalog`),
//!   which is stored as documents in engine tables, durable like data;
//! * SET / SHOW (`session::settings`).
//!
//! A short statement that reaches rows by a unique key is bound once and
//! run on the engine directly (`fast`), falling back to the general path
//! whenever it cannot give exactly the general path's answer.
//!
//! Errors carry SQLSTATEs (`error`), classified for the wire as the
//! client's mistake, retryable, or internal.
pub mod ddl;
pub mod dispatch;
pub mod error;
pub mod exec;
pub mod fast;
pub mod parser;
pub mod plan;
pub mod rewrite;
pub mod scope;
pub mod session;
pub mod storage;
pub mod system;
pub mod values;

pub use dispatch::Described;
pub use error::{Result, SqlError};
pub use session::{Output, Session, SqlEngine, TxnStatus};
pub use values::types::SqlType;
