//! # tessera-sql: the SQL layer
//!
//! This crate turns SQL text into reads and writes of the storage engine.
//! It is the only crate that depends on DataFusion.
//!
//! A [`session::Session`] belongs to one client connection. It parses each
//! statement with DataFusion's sqlparser (PostgreSQL dialect) and dispatches:
//!
//! * transaction control, SET/SHOW — handled by the session itself;
//! * DDL (`ddl`) — changes the engine and the catalog (`catalog`), which is
//!   stored as documents in an engine table and so is durable like data;
//!   CREATE TABLE … AS (`create_as`) is a CREATE TABLE shaped by the
//!   query's result followed by an INSERT of its rows;
//! * queries — named as PostgreSQL names result columns (`naming`: repeated
//!   names allowed, set-returning functions' columns after their alias),
//!   planned and executed by DataFusion over [`provider::EngineTable`],
//!   a `TableProvider` that reads through the session's engine transaction
//!   and picks a point lookup, an index range or a full scan from the
//!   pushed-down filters;
//! * INSERT / UPDATE / DELETE (`dml`) — rewritten as queries whose result rows
//!   name exactly the rows to write, then applied to the engine here (never
//!   through DataFusion's DML hooks);
//! * COPY (`copy`) — text and CSV in and out, and PostgreSQL's binary
//!   format (`copy_binary`, with the values' binary forms in `pg_binary`,
//!   which the wire layer uses for binary results and parameters too);
//! * waits for rows' holders (`row_waits`) — a write never waits on a
//!   thread: the engine answers `WouldBlock` and the session's task awaits
//!   the holder's end on the engine of the part that answered, then
//!   writes again;
//! * the fast path (`fast`) — short statements that reach rows by a unique
//!   key (point SELECT, INSERT … VALUES, UPDATE/DELETE by key) are bound once
//!   and run directly on the engine, skipping DataFusion; whatever they
//!   cannot do exactly falls back to the general path above;
//! * keyed databases (`keyed`) — `CREATE DATABASE … WITH (partition_key =
//!   'column type', partitions = n | split_points = '…')` and the rule that
//!   every table of such a database carries that column (and, if it has a
//!   primary key or unique index, includes it there);
//! * partitions (`partition`, `txn`, `split`) — a keyed database's key
//!   ranges are engines of the node; a SQL table is a `StoredTable` (its
//!   engine table in each partition) and a SQL transaction a `Txn` (engine
//!   transactions over the partitions it touches, mirroring the engine's
//!   versioned key-value interface and routing by key). `split` splits a
//!   partition in place behind a per-partition writer gate. On a cluster
//!   each partition is a replication group of its own, and a partition led
//!   by another node is worked on there (`remote`: a `Txn`'s remote part,
//!   and `PartEngine` for schema changes, provided by the binary);
//! * homes (`catalog/home.rs`) — a database made by CREATE DATABASE keeps
//!   its catalog entries and sequences in an engine of its own, with its
//!   rows (keyless) or its partitions' layout (keyed, `catalog/layout.rs`;
//!   the partitions take streams from the home's block). On a cluster
//!   (`cluster_view::DatabaseGroups`, provided by the binary) the home and
//!   each of a keyed database's partitions are replication groups of their own,
//!   and `SqlEngine::open_follower` serves the database's sessions on
//!   whichever node leads it: a catalog that follows the replicated
//!   catalog, sessions that write only their database's engines (`WITH
//!   (replicas = n)` sets its count), and that finish what a former
//!   primary left half done (`Catalog::finish_left_work`).
//!
//! Values are stored one engine field per column in order-preserving
//! encodings (`rowcodec`); `types` maps SQL types to Arrow and PostgreSQL
//! OIDs; `text` formats values as PostgreSQL prints them. `pg_catalog` serves
//! the system views psql and drivers query (and Tessera's own, such as
//! `tessera.databases`), `functions` the PostgreSQL
//! functions DataFusion lacks. Errors carry SQLSTATEs (`error`).
//!
//! Where DataFusion's answer differs from PostgreSQL's, Tessera gives
//! PostgreSQL's or refuses: `exact_casts` keeps casts that merge values in
//! comparisons; `overflow` and `strict` raise PostgreSQL's errors where
//! DataFusion would return a value (integer overflow, constants included;
//! logarithms of zero; float input out of range), read constants as PostgreSQL does (char(n)
//! without padding, timestamps in ISO forms) and keep a subquery's ORDER
//! BY; `patterns` rewrites SIMILAR TO and LIKE … ESCAPE into what
//! DataFusion matches; `float_compare` compares numerics with floats in
//! float8; `query_checks` refuses what DataFusion reads
//! otherwise; `int_literals` types integer constants as PostgreSQL does;
//! `int_casts` rounds casts to integers; `float_arith` raises float
//! overflow and division by zero and casts floats to numeric through their
//! significant digits; `real_sum` keeps `sum(real)` single precision;
//! `numeric` and `numeric_ops` hold numerics beyond
//! Decimal128 (numeric(p, s) up to 76 digits, and unconstrained numeric
//! exactly to 38 places) and multiply, divide and average them as
//! PostgreSQL does; `numeric_special` keeps NaN and the infinities
//! (stored, compared, cast; refused in arithmetic); `numeric_div` plans
//! numeric quotients and averages (of integers too) as PostgreSQL's
//! `numeric_div`, exact and rounded per value; `numeric_var` computes
//! variances and standard deviations of integers and numerics exactly; `intervals` reads, compares and multiplies intervals as
//! PostgreSQL does; `bpchar` gives casts to char(n) their padding;
//! `using_joins` orders `*` over USING joins and merges RIGHT/FULL keys;
//! `tz` and `local_time` apply the session's `TimeZone` to timestamptz;
//! `json` gives json and jsonb their operators and functions, `json_sets`
//! their aggregates, set-returning functions and `?|`/`?&`; `windows`
//! writes named windows out; `window_defaults` types `lead`/`lag` with
//! a wider default as PostgreSQL does; `array_types` gives array columns
//! PostgreSQL's text form; `array_fns` gives `array_remove`,
//! `array_replace`, the dimension functions and `op ANY (array)`
//! PostgreSQL's meaning; `parser` parses the expressions
//! the rewriters build;
//! `volatile` gives every row its own value of `nextval()` and
//! `gen_random_uuid()`; `date_fields` computes the `extract` fields
//! DataFusion gets wrong or lacks (seconds' fraction, years BC, decades,
//! centuries, millennia); `to_char` reads PostgreSQL's templates, and
//! `to_char_numeric` and `to_number` format and read numbers with them as
//! PostgreSQL's NUM_processor does; `zones`
//! computes AT TIME ZONE with IANA zones; `pg_typeof` names types.
//!
//! Users' types: `type_ddl` creates, alters and drops enum types and
//! domains, kept per database in the catalog (`catalog/types.rs`);
//! `user_types` tells every layer an enum type's name and labels by OID
//! (an enum column's `SqlType` is its OID; its values travel as labels);
//! `enums` reads casts to enum types and domains and orders enum values
//! by their labels' positions, `enum_aggregates` gives them `min`/`max`;
//! `domains` checks domains' constraints where values are written or
//! cast; `pg_types` shows the types in `pg_type`/`pg_enum` and reads type
//! names as `regtype`.
//!
//! Views: `view_ddl` creates, replaces and drops them and keeps what
//! reads a table or view from losing it (`catalog/views.rs` stores them
//! and their dependencies); `views` qualifies a view's query when it is
//! stored and puts it in place of the view in each statement that reads
//! it, before any other rewrite. `temp_tables` gives each session its
//! temporary tables and views, resolving the names a statement uses to
//! the session's own before anything else reads it.

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
