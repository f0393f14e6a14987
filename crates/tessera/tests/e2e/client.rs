//! tokio-postgres helpers shared by the end-to-end tests that talk to the server as a client.

// Each test module uses a different subset of these helpers.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

use crate::harness::Server;

/// Runs `work` on a fresh runtime and fails the test if it needs more than `limit`: a hung server must show up as a
/// failure, never as a test that runs forever.
pub fn block_on<F: Future>(limit: Duration, work: F) -> F::Output {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        match tokio::time::timeout(limit, work).await {
            Ok(output) => output,
            Err(_) => panic!("the test's client work did not finish within {limit:?}"),
        }
    })
}

/// Connects a new session to `server`; the connection task runs until the client is dropped.
pub async fn connect(server: &Server) -> Client {
    let conn_str = server.conn_str();
    let (client, connection) = tokio_postgres::connect(&conn_str, NoTls)
        .await
        .unwrap_or_else(|e| panic!("connecting with `{conn_str}`: {}", describe(&e)));
    tokio::spawn(connection);
    client
}

/// An error as a failure message shows it: `<SQLSTATE> <message>` for a server error, otherwise the client's view
/// with its cause (a lost connection, a protocol violation).
pub fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} {}", db.code().code(), db.message()),
        None => match std::error::Error::source(e) {
            Some(cause) => format!("client error: {e}: {cause}"),
            None => format!("client error: {e}"),
        },
    }
}

/// The rows of a simple-protocol result in PostgreSQL's text format, `None` for NULL.
pub fn text_rows(messages: &[SimpleQueryMessage]) -> Vec<Vec<Option<String>>> {
    messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some((0..row.len()).map(|i| row.get(i).map(str::to_string)).collect()),
            _ => None,
        })
        .collect()
}

/// Runs `sql` over the simple query protocol and returns its rows as text, failing the test on any error.
pub async fn query_text(client: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    match client.simple_query(sql).await {
        Ok(messages) => text_rows(&messages),
        Err(e) => panic!("{sql}: {}", describe(&e)),
    }
}

/// Runs `sql` (one or more statements) over the simple query protocol, failing the test on any error.
pub async fn exec(client: &Client, sql: &str) {
    if let Err(e) = client.batch_execute(sql).await {
        panic!("{sql}: {}", describe(&e));
    }
}

/// Expected text rows written compactly: `rows(&[&["1", "a"]])`; the string `NULL` stands for a NULL value.
pub fn rows(expected: &[&[&str]]) -> Vec<Vec<Option<String>>> {
    expected.iter().map(|row| row.iter().map(|v| (*v != "NULL").then(|| v.to_string())).collect()).collect()
}

/// Checks that a new session can connect and run `SELECT 1`, i.e. that the server still serves clients.
pub async fn assert_serves(server: &Server) {
    let client = connect(server).await;
    assert_eq!(query_text(&client, "SELECT 1").await, rows(&[&["1"]]), "the server answered SELECT 1 wrongly");
}

/// Any column value as the raw bytes the server sent, for the types plain tokio-postgres cannot decode.
pub struct Raw(pub Vec<u8>);

impl<'a> tokio_postgres::types::FromSql<'a> for Raw {
    fn from_sql(
        _: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Raw, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(raw.to_vec()))
    }

    fn accepts(_: &tokio_postgres::types::Type) -> bool {
        true
    }
}
