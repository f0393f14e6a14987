//! Runs every `crates/sql/tests/slt/*.slt` file with [sqllogictest] over the wire, each on a fresh database.
//!
//! Against Tessera (the default), each file runs twice, each time on its own server with a fresh data directory:
//! once as is, where short key-based statements take the fast path, and once with `tessera.fast_path = off`,
//! where every statement takes the general (DataFusion) path. Both must give PostgreSQL's results.
//!
//! ```text
//! cargo test -p tessera --test e2e slt
//! ```
//!
//! The expected output is PostgreSQL's. To check a file against PostgreSQL itself, give a connection string for a
//! user that may create databases; each file then runs in a new database `slt_<n>`, dropped afterwards:
//!
//! ```text
//! TESSERA_SLT_POSTGRES='host=127.0.0.1 port=5432 user=postgres dbname=postgres' cargo test -p tessera --test e2e slt
//! ```
//!
//! `TESSERA_SLT_FILTER=dml` runs only the files whose name contains `dml`; `TESSERA_SLT_DIR` reads the files from
//! another directory.
//!
//! Conventions for the files:
//! - Queries go through the simple query protocol, so values are PostgreSQL's text format; NULL reads `NULL` and the
//!   empty string `(empty)`.
//! - An error reads `<SQLSTATE> <message>`, and `statement error <regex>` / `query error <regex>` pass when the
//!   regex matches anywhere in it: `statement error 23505` expects a unique violation.
//! - The engine name is `tessera` or `postgres`, for `onlyif` / `skipif`.
//! - A file whose first line is `# database: <name>: <CREATE DATABASE statement>` runs connected to that database,
//!   created first (keyed databases are Tessera's own, so such files run on Tessera only).
//!
//! [sqllogictest]: https://github.com/risinglightdb/sqllogictest-rs

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;
use std::{env, fmt, fs};

use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType, Runner};
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

use crate::harness::Server;

/// Far beyond what any file needs, even on a debug build.
const FILE_TIMEOUT: Duration = Duration::from_secs(120);

/// One session, over the simple query protocol so every value arrives as PostgreSQL's text output.
struct Session {
    client: Client,
    engine: &'static str,
}

/// A query's failure as the test files match it: `<SQLSTATE> <message>`.
#[derive(Debug)]
struct SqlError(String);

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SqlError {}

impl From<tokio_postgres::Error> for SqlError {
    fn from(e: tokio_postgres::Error) -> SqlError {
        match e.as_db_error() {
            Some(db) => SqlError(format!("{} {}", db.code().code(), db.message())),
            // Not a server error (connection lost, protocol violation): no SQLSTATE, so no file can expect it.
            None => {
                let cause = std::error::Error::source(&e).map(|c| format!(": {c}")).unwrap_or_default();
                SqlError(format!("client error: {e}{cause}"))
            }
        }
    }
}

impl Session {
    async fn connect(conn_str: &str, engine: &'static str) -> Result<Session, SqlError> {
        let (client, connection) = tokio_postgres::connect(conn_str, NoTls).await?;
        // The connection task ends by itself once the client is dropped.
        tokio::spawn(connection);
        Ok(Session { client, engine })
    }

    async fn exec(&self, sql: &str) -> Result<(), String> {
        self.client.simple_query(sql).await.map(drop).map_err(|e| format!("{sql}: {}", SqlError::from(e)))
    }

    async fn query(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SqlError> {
        let mut columns = None;
        let mut rows = Vec::new();
        let mut count = 0;
        for message in self.client.simple_query(sql).await? {
            match message {
                SimpleQueryMessage::RowDescription(cols) => columns = Some(cols.len()),
                SimpleQueryMessage::Row(row) => rows.push(
                    (0..row.len())
                        .map(|i| match row.get(i) {
                            None => "NULL".to_string(),
                            Some("") => "(empty)".to_string(),
                            Some(v) => v.to_string(),
                        })
                        .collect(),
                ),
                SimpleQueryMessage::CommandComplete(n) => count = n,
                _ => {}
            }
        }
        // A row description (even with no rows after it) means the statement returns rows, as a SELECT with an
        // empty result does; anything else only reports a count. The simple protocol carries no column types.
        Ok(match columns {
            Some(n) => DBOutput::Rows { types: vec![DefaultColumnType::Any; n], rows },
            None => DBOutput::StatementComplete(count),
        })
    }
}

/// The future type `#[async_trait]` gives `AsyncDB`'s methods, written out so the tests need no macro crate.
type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

impl AsyncDB for Session {
    type Error = SqlError;
    type ColumnType = DefaultColumnType;

    fn run<'s, 'q, 'f>(&'s mut self, sql: &'q str) -> BoxFuture<'f, Result<DBOutput<DefaultColumnType>, SqlError>>
    where
        's: 'f,
        'q: 'f,
        Self: 'f,
    {
        Box::pin(self.query(sql))
    }

    fn shutdown<'s, 'f>(&'s mut self) -> BoxFuture<'f, ()>
    where
        's: 'f,
        Self: 'f,
    {
        Box::pin(async {})
    }

    fn engine_name(&self) -> &str {
        self.engine
    }
}

/// Runs one file on the database `conn_str` names; `connection <name>` records open further sessions there.
async fn run_file(conn_str: String, engine: &'static str, file: &Path) -> Result<(), String> {
    let mut runner = Runner::new(move || {
        let conn_str = conn_str.clone();
        async move { Session::connect(&conn_str, engine).await }
    });
    // A hung statement would otherwise stall the whole suite; as a failure, the remaining files still run.
    match tokio::time::timeout(FILE_TIMEOUT, runner.run_file_async(file)).await {
        Ok(result) => result.map_err(|e| e.display(false).to_string()),
        Err(_) => Err(format!("timed out after {FILE_TIMEOUT:?}")),
    }
}

/// The database a file asks for in its first line: (name, the statement that creates it).
fn file_database(file: &Path) -> Option<(String, String)> {
    let text = fs::read_to_string(file).ok()?;
    let rest = text.lines().next()?.strip_prefix("# database: ")?;
    let (name, create) = rest.split_once(": ")?;
    Some((name.trim().to_string(), create.trim().to_string()))
}

/// Runs one file on a Tessera server, in the database it asks for.
async fn run_file_on_tessera(conn_str: String, file: &Path) -> Result<(), String> {
    let conn_str = match file_database(file) {
        None => conn_str,
        Some((name, create)) => {
            let admin = Session::connect(&conn_str, "tessera").await.map_err(|e| e.to_string())?;
            admin.exec(&create).await?;
            format!("{conn_str} dbname={name}")
        }
    };
    run_file(conn_str, "tessera", file).await
}

/// Runs one file on PostgreSQL in a database of its own, so files cannot see each other's tables.
async fn run_file_on_postgres(admin_conn_str: &str, n: usize, file: &Path) -> Result<(), String> {
    let admin = Session::connect(admin_conn_str, "postgres").await.map_err(|e| e.to_string())?;
    let db = format!("slt_{n}");
    admin.exec(&format!("DROP DATABASE IF EXISTS {db}")).await?;
    admin.exec(&format!("CREATE DATABASE {db}")).await?;
    // A later keyword overrides an earlier one in a libpq connection string.
    let result = run_file(format!("{admin_conn_str} dbname={db}"), "postgres", file).await;
    // FORCE: the file's sessions may not have finished closing yet.
    admin.exec(&format!("DROP DATABASE {db} WITH (FORCE)")).await?;
    result
}

#[test]
fn sqllogictest_files() {
    let dir = env::var_os("TESSERA_SLT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../sql/tests/slt"));
    let filter = env::var("TESSERA_SLT_FILTER").unwrap_or_default();
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "slt"))
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(&filter))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .slt files in {} match {filter:?}", dir.display());

    let postgres = env::var("TESSERA_SLT_POSTGRES").ok().filter(|s| !s.is_empty());
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let mut failures = Vec::new();
    for (n, file) in files.iter().enumerate() {
        let result = match &postgres {
            Some(_) if file_database(file).is_some() => continue,
            Some(admin) => runtime.block_on(run_file_on_postgres(admin, n, file)),
            None => {
                // Kept alive until the file is done; dropping it kills the server.
                let server = Server::start();
                let fast = runtime.block_on(run_file_on_tessera(server.conn_str(), file));
                // Then again with the fast path off: both paths must give the same results and errors.
                let server = Server::start();
                let general = format!("{} options='-c tessera.fast_path=off'", server.conn_str());
                let general = runtime.block_on(run_file_on_tessera(general, file));
                match (fast, general) {
                    (Ok(()), Ok(())) => Ok(()),
                    (fast, general) => Err(format!(
                        "{}{}",
                        fast.err().map(|e| format!("with the fast path:\n{e}\n")).unwrap_or_default(),
                        general.err().map(|e| format!("with tessera.fast_path=off:\n{e}")).unwrap_or_default()
                    )),
                }
            }
        };
        let name = file.file_name().unwrap().to_string_lossy();
        // Progress goes to stderr so a long run shows where it is (visible with --nocapture).
        match result {
            Ok(()) => eprintln!("slt ok   {name}"),
            Err(e) => {
                eprintln!("slt FAIL {name}");
                failures.push(format!("=== {name}\n{e}"));
            }
        }
    }
    let engine = if postgres.is_some() { "postgres" } else { "tessera" };
    assert!(
        failures.is_empty(),
        "{} of {} sqllogictest files failed on {engine}:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}
