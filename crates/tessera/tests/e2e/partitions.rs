//! Partitions of keyed databases through a real client: fan-out reads give
//! the same answers over eight partitions as over one; row-group
//! transactions on many partitions keep every group's total through kill -9;
//! a split under concurrent writes loses and duplicates nothing.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio_postgres::{Client, SimpleQueryMessage};

use crate::client::block_on;
use crate::harness::Server;
use crate::keyed::{commits, connect};

/// Split points that spread customers 1..=400 over eight partitions.
const EIGHT: &str = "50, 100, 150, 200, 250, 300, 350";

/// A query's rows as text, in the order the server sent them.
async fn rows(c: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    let mut out = Vec::new();
    for m in c.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}")) {
        if let SimpleQueryMessage::Row(r) = m {
            out.push((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect());
        }
    }
    out
}

async fn copy_in(c: &Client, copy: &str, data: String) -> u64 {
    use futures::SinkExt;
    let sink = c.copy_in(copy).await.unwrap_or_else(|e| panic!("{copy}: {e}"));
    let mut sink = std::pin::pin!(sink);
    sink.send(bytes::Bytes::from(data)).await.unwrap();
    sink.as_mut().finish().await.unwrap_or_else(|e| panic!("{copy}: {e}"))
}

async fn partition_map(c: &Client, db: &str) -> Vec<Vec<Option<String>>> {
    rows(c, &format!("SELECT partition, stream, low, high FROM tessera.partitions WHERE database = '{db}' ORDER BY 1"))
        .await
}

/// Creates keyed database `db` with the schema of these tests and loads it
/// (by COPY, which may span partitions).
async fn load_shop(admin: &Client, port: u16, db: &str, options: &str) -> Client {
    admin.batch_execute(&format!("CREATE DATABASE {db} WITH (partition_key = 'cid bigint'{options})")).await.unwrap();
    let c = connect(port, db).await;
    c.batch_execute(
        "CREATE TABLE customers (cid bigint PRIMARY KEY, name text, region text);
         CREATE TABLE orders (cid bigint, oid int, amount numeric(10,2), placed date, PRIMARY KEY (cid, oid));
         CREATE INDEX orders_amount ON orders (amount);",
    )
    .await
    .unwrap();
    let customers: String = (1..=400)
        .map(|cid| format!("{cid}\tcustomer {cid}\t{}\n", ["north", "south", "east", "west"][cid % 4]))
        .collect();
    assert_eq!(copy_in(&c, "COPY customers FROM STDIN", customers).await, 400);
    let orders: String = (1..=400)
        .flat_map(|cid| (1..=(cid % 5)).map(move |oid| (cid, oid)))
        .map(|(cid, oid)| format!("{cid}\t{oid}\t{}.{:02}\t2026-0{}-1{}\n", cid * oid % 997, oid * 7, oid, cid % 9))
        .collect();
    copy_in(&c, "COPY orders FROM STDIN", orders).await;
    c
}

#[test]
fn fan_out_over_eight_partitions_matches_one_partition() {
    let server = Server::start();
    let port = server.port();
    block_on(Duration::from_secs(180), async move {
        let admin = connect(port, "tessera").await;
        let one = load_shop(&admin, port, "one", "").await;
        let eight = load_shop(&admin, port, "eight", &format!(", split_points = '{EIGHT}'")).await;
        assert_eq!(partition_map(&admin, "one").await.len(), 1);
        assert_eq!(partition_map(&admin, "eight").await.len(), 8);
        // Every partition of the eight got rows.
        let counts =
            rows(&admin, "SELECT rows FROM tessera.partitions WHERE database = 'eight' ORDER BY partition").await;
        assert!(counts.iter().all(|r| r[0].as_deref() != Some("0")), "{counts:?}");
        let queries = [
            "SELECT * FROM customers ORDER BY cid",
            "SELECT * FROM orders ORDER BY cid, oid",
            "SELECT count(*), sum(amount), min(placed), max(placed) FROM orders",
            "SELECT region, count(*) FROM customers GROUP BY region ORDER BY region",
            "SELECT c.region, sum(o.amount) FROM customers c JOIN orders o ON o.cid = c.cid GROUP BY c.region ORDER BY 1",
            "SELECT cid, oid FROM orders WHERE cid BETWEEN 90 AND 260 ORDER BY cid, oid",
            "SELECT cid FROM customers WHERE cid > 345 OR cid < 3 ORDER BY cid",
            "SELECT * FROM orders WHERE cid = 123 ORDER BY oid",
            "SELECT cid, oid FROM orders WHERE amount > 900 ORDER BY amount DESC, cid LIMIT 10",
            "SELECT count(DISTINCT placed) FROM orders",
            "SELECT c.cid, count(o.oid) FROM customers c LEFT JOIN orders o ON o.cid = c.cid \
             GROUP BY c.cid HAVING count(o.oid) = 0 ORDER BY c.cid LIMIT 20",
            "SELECT name FROM customers WHERE cid IN (1, 99, 100, 101, 399, 400) ORDER BY cid",
        ];
        for q in queries {
            let (a, b) = (rows(&one, q).await, rows(&eight, q).await);
            assert!(!a.is_empty(), "{q} returned nothing");
            assert_eq!(a, b, "{q}");
        }
        // EXPLAIN shows the fan-out and the pruning.
        let plan =
            |rs: Vec<Vec<Option<String>>>| rs.into_iter().filter_map(|r| r[0].clone()).collect::<Vec<_>>().join("\n");
        let all = plan(rows(&eight, "EXPLAIN SELECT count(*) FROM orders WHERE placed > '2026-01-01'").await);
        assert!(all.contains("in all 8 partitions"), "{all}");
        let some = plan(rows(&eight, "EXPLAIN SELECT * FROM orders WHERE cid >= 120 AND cid <= 160").await);
        assert!(some.contains("in partitions 3, 4 of 8"), "{some}");

        // A database in use cannot be dropped; once its sessions are gone it
        // goes, partitions and all.
        let e = admin.batch_execute("DROP DATABASE eight").await.expect_err("in use");
        let db = e.as_db_error().expect("a server error");
        assert_eq!(db.code().code(), "55006", "{db:?}");
        assert_eq!(db.detail(), Some("There is 1 other session using the database."));
        drop(eight);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            match admin.batch_execute("DROP DATABASE eight").await {
                Ok(()) => break,
                Err(e) if std::time::Instant::now() < deadline && e.code().is_some_and(|c| c.code() == "55006") => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("DROP DATABASE eight: {e}"),
            }
        }
        assert!(partition_map(&admin, "eight").await.is_empty());
        assert_eq!(rows(&one, "SELECT count(*) FROM customers").await, vec![vec![Some("400".to_string())]]);
    });
}

async fn group_totals(c: &Client) -> Vec<Vec<Option<String>>> {
    rows(c, "SELECT cid, sum(bal) FROM accounts GROUP BY cid ORDER BY cid").await
}

#[test]
fn row_group_transactions_on_eight_partitions_keep_every_total_through_kill9() {
    let mut server = Server::start();
    let port = server.port();
    let customers = 40i64;
    let expected: Vec<Vec<Option<String>>> =
        (1..=customers).map(|c| vec![Some((c * 10).to_string()), Some("2000".to_string())]).collect();
    let before = expected.clone();
    let map = block_on(Duration::from_secs(180), async move {
        let admin = connect(port, "tessera").await;
        admin
            .batch_execute("CREATE DATABASE bank WITH (partition_key = 'cid bigint', split_points = '50, 100, 150, 200, 250, 300, 350')")
            .await
            .unwrap();
        let c = connect(port, "bank").await;
        c.batch_execute("CREATE TABLE accounts (cid bigint, acct int, bal int, PRIMARY KEY (cid, acct))")
            .await
            .unwrap();
        // Customers 10, 20, …, 400: five in each partition.
        for cid in 1..=customers {
            c.execute("INSERT INTO accounts VALUES ($1, 1, 1000), ($1, 2, 1000)", &[&(cid * 10)]).await.unwrap();
        }
        let done = transfers_by_ten(port, customers).await;
        assert!(done > 0);
        assert_eq!(group_totals(&c).await, before, "after {done} transfers");
        partition_map(&admin, "bank").await
    });
    server.kill9();
    server.restart();
    let port = server.port();
    block_on(Duration::from_secs(60), async move {
        let admin = connect(port, "tessera").await;
        assert_eq!(partition_map(&admin, "bank").await, map, "the partition map survives kill -9");
        let c = connect(port, "bank").await;
        assert_eq!(group_totals(&c).await, expected, "every partition's rows survive kill -9");
    });
}

/// Transfers over customers 10, 20, … (the ids of the kill -9 test).
async fn transfers_by_ten(port: u16, customers: i64) -> usize {
    let mut tasks = Vec::new();
    for worker in 0..4i64 {
        tasks.push(tokio::spawn(async move {
            let c = connect(port, "bank").await;
            let mut done = 0;
            for i in 0..60i64 {
                let customer = 10 * (1 + (worker * 7 + i * 13) % customers);
                let (from, to) = if i % 2 == 0 { (1, 2) } else { (2, 1) };
                let sql = format!(
                    "BEGIN; \
                     UPDATE accounts SET bal = bal - 3 WHERE cid = {customer} AND acct = {from}; \
                     UPDATE accounts SET bal = bal + 3 WHERE cid = {customer} AND acct = {to}; \
                     COMMIT"
                );
                if commits(&c, &sql).await {
                    done += 1;
                }
            }
            done
        }));
    }
    let mut committed = 0;
    for t in tasks {
        committed += t.await.unwrap();
    }
    committed
}

#[test]
fn a_split_under_concurrent_writes_loses_and_duplicates_nothing() {
    let mut server = Server::start();
    let port = server.port();
    let acknowledged = block_on(Duration::from_secs(240), async move {
        let admin = connect(port, "tessera").await;
        admin.batch_execute("CREATE DATABASE live WITH (partition_key = 'cid bigint')").await.unwrap();
        let c = connect(port, "live").await;
        c.batch_execute(
            "CREATE TABLE accounts (cid bigint, acct int, bal int, PRIMARY KEY (cid, acct));
             CREATE TABLE events (cid bigint, seq int, worker int, PRIMARY KEY (cid, seq, worker));",
        )
        .await
        .unwrap();
        for cid in 1..=32i64 {
            c.execute("INSERT INTO accounts VALUES ($1, 1, 1000), ($1, 2, 1000)", &[&cid]).await.unwrap();
        }
        // Writers: each inserts events (remembering the acknowledged ones)
        // and moves money inside a row group, retrying serialization failures.
        let mut writers = Vec::new();
        for worker in 0..4i32 {
            writers.push(tokio::spawn(async move {
                let c = connect(port, "live").await;
                let mut acked = Vec::new();
                for seq in 0..150i32 {
                    let cid = 1 + ((seq as i64) * 5 + worker as i64 * 3) % 32;
                    let sql = format!(
                        "BEGIN; \
                         INSERT INTO events VALUES ({cid}, {seq}, {worker}); \
                         UPDATE accounts SET bal = bal - 1 WHERE cid = {cid} AND acct = 1; \
                         UPDATE accounts SET bal = bal + 1 WHERE cid = {cid} AND acct = 2; \
                         COMMIT"
                    );
                    // Retry until it commits.
                    while !commits(&c, &sql).await {}
                    acked.push((cid, seq, worker));
                }
                acked
            }));
        }
        // Meanwhile the one partition is split, and split again.
        for at in [16, 8, 24, 4, 28] {
            tokio::time::sleep(Duration::from_millis(150)).await;
            admin.batch_execute(&format!("ALTER DATABASE live SPLIT AT ({at})")).await.unwrap();
        }
        let mut acked = Vec::new();
        for w in writers {
            acked.extend(w.await.unwrap());
        }
        acked.sort();
        check_live(&c, &acked).await;
        assert_eq!(partition_map(&admin, "live").await.len(), 6);
        acked
    });
    server.kill9();
    server.restart();
    let port = server.port();
    block_on(Duration::from_secs(60), async move {
        let c = connect(port, "live").await;
        check_live(&c, &acknowledged).await;
    });
}

/// Every acknowledged event is there exactly once and nothing else is;
/// every customer's two accounts still total 2000.
async fn check_live(c: &Client, acked: &[(i64, i32, i32)]) {
    let found: Vec<(i64, i32, i32)> = c
        .query("SELECT cid, seq, worker FROM events ORDER BY cid, seq, worker", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(found.len(), acked.len(), "acknowledged events vs rows");
    assert_eq!(found, acked);
    let totals: BTreeMap<i64, i64> = c
        .query("SELECT cid, sum(bal) FROM accounts GROUP BY cid", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(totals.len(), 32);
    assert!(totals.values().all(|&t| t == 2000), "{totals:?}");
    let moved: i64 = c.query_one("SELECT sum(bal) FROM accounts WHERE acct = 2", &[]).await.unwrap().get(0);
    assert_eq!(moved, 32 * 1000 + acked.len() as i64, "every acknowledged transfer happened once");
}
