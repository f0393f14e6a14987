//! Runs every `tests/slt/*.slt` file with [sqllogictest] in process, over
//! the SQL layer itself: no server, no sockets, no wire protocol.
//!
//! ```text
//! cargo test -p tessera-sql --test slt
//! ```
//!
//! The same files run end to end, over the wire and against PostgreSQL 15,
//! in `crates/tessera/tests/e2e/slt.rs`, whose text states the files'
//! conventions; this runner reads them the same way. Each file runs twice
//! on a fresh in-memory node: with the fast path, and with
//! `tessera.fast_path = off`. Values are PostgreSQL's text forms, as the
//! simple query protocol sends them (`NULL` for NULL, `(empty)` for the
//! empty string), and an error reads `<SQLSTATE> <message>`.
//!
//! `TESSERA_SLT_FILTER=dml` runs only the files whose name contains `dml`.
//!
//! [sqllogictest]: https://github.com/risinglightdb/sqllogictest-rs

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::{env, fmt, fs};

use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType, Runner};
use tessera_engine::{EngineConfig, Node};
use tessera_sql::values::text::format_cell_in;
use tessera_sql::{Output, Session, SqlEngine};

/// A statement's failure as the files match it: `<SQLSTATE> <message>`.
#[derive(Debug)]
struct SqlFailure(String);

impl fmt::Display for SqlFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SqlFailure {}

impl From<tessera_sql::SqlError> for SqlFailure {
    fn from(e: tessera_sql::SqlError) -> SqlFailure {
        SqlFailure(format!("{} {}", e.code, e.message))
    }
}

/// One session of the SQL layer, as a connection of the files sees it.
struct InProcess {
    session: Session,
}

impl InProcess {
    fn open(sql: &Arc<SqlEngine>, db: &str, fast_path: bool) -> Result<InProcess, SqlFailure> {
        let session = sql.session("tessera", db)?;
        if !fast_path {
            session.info.settings.lock().set("tessera.fast_path", "off")?;
        }
        Ok(InProcess { session })
    }

    /// Runs a record's SQL as a simple-protocol query string, and reads
    /// its last result as the simple protocol would show it.
    async fn query(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SqlFailure> {
        let (outputs, error) = self.session.execute_sql(sql).await;
        if let Some(e) = error {
            return Err(e.into());
        }
        let style = self.session.text_style();
        Ok(match outputs.into_iter().last() {
            Some(Output::Rows { schema, batches, .. }) => {
                let mut rows = Vec::new();
                for batch in &batches {
                    for r in 0..batch.num_rows() {
                        rows.push(
                            batch
                                .columns()
                                .iter()
                                .map(|col| match format_cell_in(col, r, style) {
                                    None => "NULL".to_string(),
                                    Some(v) if v.is_empty() => "(empty)".to_string(),
                                    Some(v) => v,
                                })
                                .collect(),
                        );
                    }
                }
                DBOutput::Rows { types: vec![DefaultColumnType::Any; schema.fields().len()], rows }
            }
            Some(Output::Command(tag)) => {
                DBOutput::StatementComplete(tag.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0))
            }
            Some(Output::CopyOut { rows, .. }) => DBOutput::StatementComplete(rows as u64),
            Some(Output::CopyIn(_)) => return Err(SqlFailure("COPY FROM STDIN has no data in a .slt file".into())),
            Some(Output::Empty) | None => DBOutput::StatementComplete(0),
        })
    }
}

/// The future type `AsyncDB`'s methods return, written out (no macro crate).
type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

impl AsyncDB for InProcess {
    type Error = SqlFailure;
    type ColumnType = DefaultColumnType;

    fn run<'s, 'q, 'f>(&'s mut self, sql: &'q str) -> BoxFuture<'f, Result<DBOutput<DefaultColumnType>, SqlFailure>>
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
        "tessera"
    }
}

/// The database a file asks for in its first line: (name, the statement that creates it).
fn file_database(file: &Path) -> Option<(String, String)> {
    let text = fs::read_to_string(file).ok()?;
    let rest = text.lines().next()?.strip_prefix("# database: ")?;
    let (name, create) = rest.split_once(": ")?;
    Some((name.trim().to_string(), create.trim().to_string()))
}

/// Runs one file on a fresh in-memory node.
async fn run_file(file: &Path, fast_path: bool) -> Result<(), String> {
    let node = Arc::new(Node::open(EngineConfig::in_memory()).map_err(|e| e.to_string())?);
    let sql = SqlEngine::open(node).map_err(|e| e.message.clone())?;
    let db = match file_database(file) {
        None => "tessera".to_string(),
        Some((name, create)) => {
            let mut admin = InProcess::open(&sql, "tessera", fast_path).map_err(|e| e.to_string())?;
            admin.query(&create).await.map_err(|e| format!("{create}: {e}"))?;
            name
        }
    };
    let mut runner = Runner::new(move || {
        let (sql, db) = (sql.clone(), db.clone());
        async move { InProcess::open(&sql, &db, fast_path) }
    });
    runner.run_file_async(file).await.map_err(|e| e.display(false).to_string())
}

#[test]
fn sqllogictest_files_in_process() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let filter = env::var("TESSERA_SLT_FILTER").unwrap_or_default();
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "slt"))
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(&filter))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .slt files in {} match {filter:?}", dir.display());
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let mut failures = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy();
        for fast_path in [true, false] {
            if let Err(e) = runtime.block_on(run_file(file, fast_path)) {
                let path = if fast_path { "with the fast path" } else { "with tessera.fast_path=off" };
                failures.push(format!("=== {name} ({path})\n{e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {} runs failed:\n\n{}", failures.len(), files.len() * 2, failures.join("\n"));
}
