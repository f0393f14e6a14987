//! Committed data survives `kill -9`: a bulk load through COPY, updates and deletes, then SIGKILL (no shutdown, no
//! checkpoint) and a restart on the same data directory, after which rows, catalog, sequence and index must all be
//! as they were.

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::SinkExt;
use tokio_postgres::Client;

use crate::client::{block_on, connect, describe, exec, query_text, rows};
use crate::harness::Server;

/// Rows loaded into the table with a primary key. The other two tables get a tenth of this each.
const ROWS: i64 = 1_000_000;
/// The COPY statements the load into the table with a primary key is split into.
const COPY_BATCHES: i64 = 4;
/// Rows deleted from the top of the key range after the load.
const DELETED: i64 = 5_000;
/// A debug build loads and checks a million rows well within this; anything slower is a hang or a regression.
const LIMIT: Duration = Duration::from_secs(240);
/// COPY data goes out in chunks of about this size.
const CHUNK: usize = 256 * 1024;

/// Streams `lines` to `COPY … FROM STDIN` (text format) and returns the row count the server reports.
async fn copy_in(client: &Client, copy: &str, lines: impl Iterator<Item = String>) -> u64 {
    let sink = client.copy_in(copy).await.unwrap_or_else(|e| panic!("{copy}: {}", describe(&e)));
    let mut sink = std::pin::pin!(sink);
    let mut chunk = String::with_capacity(CHUNK + 256);
    for line in lines {
        chunk.push_str(&line);
        chunk.push('\n');
        if chunk.len() >= CHUNK {
            let data = Bytes::from(std::mem::replace(&mut chunk, String::with_capacity(CHUNK + 256)));
            sink.send(data).await.unwrap_or_else(|e| panic!("{copy}: sending data: {}", describe(&e)));
        }
    }
    if !chunk.is_empty() {
        sink.send(Bytes::from(chunk)).await.unwrap_or_else(|e| panic!("{copy}: sending data: {}", describe(&e)));
    }
    sink.as_mut().finish().await.unwrap_or_else(|e| panic!("{copy}: {}", describe(&e)))
}

fn balance(id: i64) -> i64 {
    id * 7 % 1000
}

/// The answers the checks expect, computed here rather than read from the server.
struct Expected {
    accounts: Vec<Vec<Option<String>>>,
    events: Vec<Vec<Option<String>>>,
    tickets: Vec<Vec<Option<String>>>,
}

fn expected() -> Expected {
    let kept = 1..=ROWS - DELETED;
    // Every hundredth account got +1, one account was renamed.
    let sum: i64 = kept.clone().map(|id| balance(id) + i64::from(id % 100 == 0)).sum();
    let accounts = vec![vec![Some((ROWS - DELETED).to_string()), Some(sum.to_string()), Some("1".to_string())]];
    let n = ROWS / 10;
    let events_sum: i64 = (0..n).map(|i| i % 50).sum();
    // Every fourth kind is NULL (`\N`), another fourth contains an escaped tab.
    let events = vec![vec![
        Some(n.to_string()),
        Some(events_sum.to_string()),
        Some((n / 4 * 3).to_string()),
        Some((n / 4).to_string()),
    ]];
    let tickets = vec![vec![Some(n.to_string()), Some(n.to_string())]];
    Expected { accounts, events, tickets }
}

const CHECK_ACCOUNTS: &str = "SELECT count(*), sum(balance), count(*) FILTER (WHERE owner = 'renamed') FROM accounts";
const CHECK_EVENTS: &str =
    "SELECT count(*), sum(amount), count(kind), count(*) FILTER (WHERE kind = E'fee\\twith tab') FROM events";
const CHECK_TICKETS: &str = "SELECT count(*), max(id) FROM tickets";
const CATALOG: &str = "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns \
                       WHERE table_name IN ('accounts', 'events', 'tickets') ORDER BY table_name, ordinal_position";

async fn check_data(client: &Client, expected: &Expected, when: &str) {
    assert_eq!(query_text(client, CHECK_ACCOUNTS).await, expected.accounts, "accounts {when}");
    assert_eq!(query_text(client, CHECK_EVENTS).await, expected.events, "events {when}");
    assert_eq!(query_text(client, CHECK_TICKETS).await, expected.tickets, "tickets {when}");
    // A point lookup by primary key, and by the secondary index (ticket i has code `code-i` and, the serial
    // column counting from 1 in COPY order, id i + 1).
    let renamed = query_text(client, "SELECT owner, balance FROM accounts WHERE id = 4200").await;
    assert_eq!(renamed, rows(&[&["renamed", "401"]]), "account 4200 {when}");
    let ticket = query_text(client, "SELECT id, account FROM tickets WHERE code = 'code-77777'").await;
    assert_eq!(ticket, rows(&[&["77778", "77777"]]), "ticket code-77777 {when}");
}

#[test]
fn bulk_load_updates_and_deletes_survive_kill9() {
    let mut server = Server::start();
    let expected = expected();
    let catalog_before = block_on(LIMIT, async {
        let client = connect(&server).await;
        exec(
            &client,
            "CREATE TABLE accounts (id bigint PRIMARY KEY, owner text NOT NULL, balance bigint NOT NULL);
             CREATE TABLE events (account bigint, kind text, amount integer);
             CREATE TABLE tickets (id serial, account bigint, code text);
             CREATE INDEX tickets_code ON tickets (code)",
        )
        .await;

        // In several COPY statements, because one transaction's log record is limited in size (see
        // `one_copy_of_a_million_rows`).
        let start = Instant::now();
        for batch in 0..COPY_BATCHES {
            let ids = batch * ROWS / COPY_BATCHES + 1..=(batch + 1) * ROWS / COPY_BATCHES;
            let expected = ids.clone().count() as u64;
            let lines = ids.map(|id| format!("{id}\towner-{}\t{}", id % 1000, balance(id)));
            let n = copy_in(&client, "COPY accounts FROM STDIN", lines).await;
            assert_eq!(n, expected, "COPY accounts row count, batch {batch}");
        }
        let elapsed = start.elapsed();
        println!(
            "COPY of {ROWS} rows into accounts: {elapsed:.1?} ({:.0} rows/s)",
            ROWS as f64 / elapsed.as_secs_f64()
        );

        let start = Instant::now();
        let n = ROWS / 10;
        let kinds = ["deposit", "withdrawal", "fee\\twith tab", "\\N"];
        let lines = (0..n).map(|i| format!("{}\t{}\t{}", i, kinds[i as usize % 4], i % 50));
        assert_eq!(copy_in(&client, "COPY events FROM STDIN", lines).await, n as u64, "COPY events row count");
        println!("COPY of {n} rows into events: {:.1?}", start.elapsed());
        let start = Instant::now();
        let lines = (0..n).map(|i| format!("{i}\tcode-{i}"));
        let copied = copy_in(&client, "COPY tickets (account, code) FROM STDIN", lines).await;
        assert_eq!(copied, n as u64, "COPY tickets row count");
        println!("COPY of {n} rows into tickets: {:.1?}", start.elapsed());

        let start = Instant::now();
        let updated = client.execute("UPDATE accounts SET balance = balance + 1 WHERE id % 100 = 0", &[]).await;
        assert_eq!(updated.map_err(|e| describe(&e)), Ok(ROWS as u64 / 100), "UPDATE of every hundredth account");
        let deleted = client.execute("DELETE FROM accounts WHERE id > $1", &[&(ROWS - DELETED)]).await;
        assert_eq!(deleted.map_err(|e| describe(&e)), Ok(DELETED as u64), "DELETE of the top accounts");
        let renamed = client.execute("UPDATE accounts SET owner = 'renamed' WHERE id = 4200", &[]).await;
        assert_eq!(renamed.map_err(|e| describe(&e)), Ok(1), "UPDATE of one account");
        println!("UPDATE and DELETE: {:.1?}", start.elapsed());

        let start = Instant::now();
        check_data(&client, &expected, "before the crash").await;
        println!("checks: {:.1?}", start.elapsed());
        query_text(&client, CATALOG).await
    });
    assert_eq!(
        catalog_before,
        rows(&[
            &["accounts", "id", "bigint", "NO"],
            &["accounts", "owner", "text", "NO"],
            &["accounts", "balance", "bigint", "NO"],
            &["events", "account", "bigint", "YES"],
            &["events", "kind", "text", "YES"],
            &["events", "amount", "integer", "YES"],
            &["tickets", "id", "integer", "NO"],
            &["tickets", "account", "bigint", "YES"],
            &["tickets", "code", "text", "YES"],
        ]),
        "information_schema.columns before the crash"
    );

    server.kill9();
    let start = Instant::now();
    server.restart();
    println!("restart after kill -9: {:.1?}", start.elapsed());

    block_on(LIMIT, async {
        let client = connect(&server).await;
        check_data(&client, &expected, "after kill -9 and restart").await;
        assert_eq!(query_text(&client, CATALOG).await, catalog_before, "information_schema.columns after restart");

        // The sequence behind the serial column must not hand out an id it gave before the crash (PostgreSQL
        // itself may skip some after a crash, so only "above the old maximum" is required).
        let next =
            query_text(&client, "INSERT INTO tickets (account, code) VALUES (-1, 'after-crash') RETURNING id").await;
        let next: i64 = next[0][0].as_deref().unwrap().parse().unwrap();
        assert!(next > ROWS / 10, "the serial column restarted at {next}, at or below its old maximum {}", ROWS / 10);
        let found = query_text(&client, "SELECT id, account FROM tickets WHERE code = 'after-crash'").await;
        assert_eq!(found, rows(&[&[&next.to_string(), "-1"]]));

        // The index still exists and the lookup above used it.
        let indexes = query_text(&client, "SELECT indexname FROM pg_indexes WHERE tablename = 'tickets'").await;
        assert_eq!(indexes, rows(&[&["tickets_code"]]));
        let plan = query_text(&client, "EXPLAIN SELECT id FROM tickets WHERE code = 'code-5'").await;
        let plan: Vec<String> = plan.into_iter().flatten().flatten().collect();
        assert!(plan.iter().any(|line| line.contains("tickets_code")), "the lookup does not use the index: {plan:#?}");
    });
}

/// UPDATE and DELETE on a table without a primary key (rows addressed by the engine's internal row id), made
/// durable across `kill -9`.
#[test]
fn updates_and_deletes_on_a_table_without_primary_key_survive_kill9() {
    const N: i64 = 20_000;
    let mut server = Server::start();
    let check = "SELECT count(*), sum(amount), count(*) FILTER (WHERE kind = 'changed') FROM heap";
    // Rows 0..N with amount i % 50; every seventh row gets kind `changed`, amounts 40 and up are deleted.
    let expected = {
        let kept = (0..N).filter(|i| i % 50 < 40);
        let sum: i64 = kept.clone().map(|i| i % 50).sum();
        let changed = kept.clone().filter(|i| i % 7 == 0).count();
        vec![vec![Some(kept.count().to_string()), Some(sum.to_string()), Some(changed.to_string())]]
    };
    block_on(LIMIT, async {
        let client = connect(&server).await;
        exec(&client, "CREATE TABLE heap (seq bigint, kind text, amount integer)").await;
        copy_in(&client, "COPY heap FROM STDIN", (0..N).map(|i| format!("{i}\tnew\t{}", i % 50))).await;
        let updated = client.execute("UPDATE heap SET kind = 'changed' WHERE seq % 7 = 0", &[]).await;
        assert_eq!(updated.map_err(|e| describe(&e)), Ok((N as u64).div_ceil(7)), "UPDATE");
        let deleted = client.execute("DELETE FROM heap WHERE amount >= 40", &[]).await;
        assert_eq!(deleted.map_err(|e| describe(&e)), Ok(N as u64 / 5), "DELETE");
        assert_eq!(query_text(&client, check).await, expected, "before the crash");
    });
    server.kill9();
    server.restart();
    block_on(LIMIT, async {
        let client = connect(&server).await;
        assert_eq!(query_text(&client, check).await, expected, "after kill -9 and restart");
    });
}

/// One COPY is one transaction, however large, as in PostgreSQL.
#[test]
fn one_copy_of_a_million_rows() {
    let server = Server::start();
    block_on(LIMIT, async {
        let client = connect(&server).await;
        exec(&client, "CREATE TABLE accounts (id bigint PRIMARY KEY, owner text NOT NULL, balance bigint NOT NULL)")
            .await;
        let lines = (1..=ROWS).map(|id| format!("{id}\towner-{}\t{}", id % 1000, balance(id)));
        assert_eq!(copy_in(&client, "COPY accounts FROM STDIN", lines).await, ROWS as u64);
        let sum: i64 = (1..=ROWS).map(balance).sum();
        let expected = rows(&[&[&ROWS.to_string(), &sum.to_string()]]);
        assert_eq!(query_text(&client, "SELECT count(*), sum(balance) FROM accounts").await, expected);
    });
}

/// A client of database `db` on `server`.
async fn connect_db(server: &Server, db: &str) -> Client {
    let conn_str = format!("host=127.0.0.1 port={} user=tessera dbname={db}", server.port());
    let (client, connection) = tokio_postgres::connect(&conn_str, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("connecting with `{conn_str}`: {}", describe(&e)));
    tokio::spawn(connection);
    client
}

/// A database made by CREATE DATABASE keeps its schema, rows and sequences
/// in an engine of its own (its home, a stream apart from the system
/// engine's): everything survives `kill -9`, and DROP DATABASE takes the
/// home with it.
#[test]
fn a_databases_home_engine_survives_kill9_and_goes_with_drop() {
    let mut server = Server::start();
    block_on(Duration::from_secs(120), async {
        let admin = connect(&server).await;
        exec(&admin, "CREATE DATABASE shop").await;
        let shop = connect_db(&server, "shop").await;
        exec(
            &shop,
            "CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL);
             CREATE SEQUENCE tickets;
             INSERT INTO items (name) VALUES ('a'), ('b'), ('c');
             SELECT nextval('tickets'); SELECT nextval('tickets');",
        )
        .await;
        // Its home is a stream of its own; the bootstrap database's is the system engine's.
        let streams = query_text(&admin, "SELECT database, stream FROM tessera.replicas ORDER BY database").await;
        let stream_of = |db: &str| streams.iter().find(|r| r[0].as_deref() == Some(db)).and_then(|r| r[1].clone());
        assert_eq!(stream_of("tessera").as_deref(), Some("0"), "{streams:?}");
        assert!(stream_of("shop").is_some_and(|s| s != "0"), "{streams:?}");
        // Its objects' oids come from its home's own block (so that the
        // primaries of different databases never hand out the same one).
        let oid = query_text(&shop, "SELECT oid FROM pg_class WHERE relname = 'items'").await;
        let oid: u64 = oid[0][0].as_deref().unwrap().parse().unwrap();
        assert!(oid >= 1 << 20, "{oid}");
        // Its tables are its own: the bootstrap database does not see them.
        let err = admin.simple_query("SELECT * FROM items").await.unwrap_err();
        assert_eq!(err.code().map(|c| c.code()), Some("42P01"));
    });
    server.kill9();
    server.restart();
    block_on(Duration::from_secs(120), async {
        let shop = connect_db(&server, "shop").await;
        exec(&shop, "INSERT INTO items (name) VALUES ('d')").await;
        // The serial goes on past the values reserved before the crash (as
        // PostgreSQL's does after one), never repeating one.
        let items = query_text(&shop, "SELECT id, name FROM items ORDER BY id").await;
        let names: Vec<&str> = items.iter().map(|r| r[1].as_deref().unwrap()).collect();
        assert_eq!(names, ["a", "b", "c", "d"], "{items:?}");
        assert!(items[3][0].as_deref().and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v > 3), "{items:?}");
        // New objects continue the block after a restart.
        exec(&shop, "CREATE TABLE more (id int PRIMARY KEY)").await;
        let oids =
            query_text(&shop, "SELECT relname, oid FROM pg_class WHERE relname IN ('items', 'more') ORDER BY oid")
                .await;
        assert_eq!(oids.iter().map(|r| r[0].clone().unwrap()).collect::<Vec<_>>(), ["items", "more"], "{oids:?}");
        // The sequence goes on past what it handed out before the crash.
        let next = query_text(&shop, "SELECT nextval('tickets')").await;
        assert!(next[0][0].as_deref().and_then(|v| v.parse::<i64>().ok()).is_some_and(|v| v > 2), "{next:?}");
        drop(shop);
        let admin = connect(&server).await;
        exec(&admin, "DROP DATABASE shop").await;
        exec(&admin, "CREATE DATABASE shop").await;
        let shop = connect_db(&server, "shop").await;
        let err = shop.simple_query("SELECT * FROM items").await.unwrap_err();
        assert_eq!(err.code().map(|c| c.code()), Some("42P01"), "a new database of the same name starts empty");
    });
    server.kill9();
    server.restart();
    block_on(Duration::from_secs(60), async {
        let shop = connect_db(&server, "shop").await;
        exec(&shop, "CREATE TABLE items (id int PRIMARY KEY)").await;
    });
}
