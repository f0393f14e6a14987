//! A drain under a write load: clients writing through the database's
//! primary while `tessera node drain` moves it away keep their
//! connections (the sessions follow the primary), see at most one
//! retryable error per transaction in flight, and never a COMMIT whose
//! outcome is unknown (a connection cut while the COMMIT waits for its
//! answer). A client idle between transactions sees nothing at all: its
//! settings and prepared statements are there on the new primary. Every
//! acknowledged commit is there afterwards.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio_postgres::NoTls;

use crate::client::block_on;
use crate::cluster::{Outcome, admin, db_primary, free_port, query, run_anywhere, start_cluster_on};

#[derive(Default)]
struct Tally {
    committed: BTreeMap<i64, i64>,
    /// SQLSTATE (or "broken") of each failed statement, by where it failed.
    errors: BTreeMap<String, usize>,
    /// A COMMIT that got no answer: its outcome is unknown.
    unknown: usize,
    /// Commits acknowledged after the primary moved, by client.
    after: BTreeMap<i64, i64>,
}

#[test]
fn a_drain_under_writes_leaves_no_commit_of_unknown_outcome() {
    drain_under_writes("CREATE DATABASE bank");
}

/// The same in a keyed database, whose partitions have primaries of their
/// own: the drain moves the home's primary and those of the partitions the
/// node led, under the sessions' transactions.
#[test]
fn a_drain_of_a_keyed_database_under_writes_leaves_no_commit_of_unknown_outcome() {
    drain_under_writes("CREATE DATABASE bank WITH (partition_key = 'id int', partitions = 4)");
}

fn drain_under_writes(create: &'static str) {
    let rpc: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let nodes = start_cluster_on(&rpc);
    let all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
    block_on(Duration::from_secs(400), async {
        let sql = create;
        assert_eq!(run_anywhere(&all, "tessera", sql, Duration::from_secs(60)).await, Outcome::Done);
        let sql = "CREATE TABLE acct (id int PRIMARY KEY, n bigint NOT NULL)";
        assert_eq!(run_anywhere(&all, "bank", sql, Duration::from_secs(60)).await, Outcome::Done);
        // (One row group per statement: a keyed database's transaction stays in one.)
        for id in 1..=4 {
            let sql = format!("INSERT INTO acct VALUES ({id}, 0)");
            assert_eq!(run_anywhere(&all, "bank", &sql, Duration::from_secs(60)).await, Outcome::Done);
        }
        let primary = db_primary(&all, "bank").await;
        let port = all[primary - 1];

        // Four clients on the primary's node, each on its own row, until
        // some time after the drain.
        let tally = Arc::new(Mutex::new(Tally::default()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let moved = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut clients = Vec::new();
        for id in 1..=4i32 {
            let (tally, stop, moved) = (tally.clone(), stop.clone(), moved.clone());
            clients.push(tokio::spawn(async move {
                let conn = format!("host=127.0.0.1 port={port} user=tessera dbname=bank");
                let Ok((c, connection)) = tokio_postgres::connect(&conn, NoTls).await else { return };
                tokio::spawn(connection);
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let begun = async {
                        c.batch_execute("BEGIN").await?;
                        c.batch_execute(&format!("UPDATE acct SET n = n + 1 WHERE id = {id}")).await
                    };
                    if let Err(e) = begun.await {
                        let what = e.code().map_or("broken".to_string(), |c| c.code().to_string());
                        *tally.lock().errors.entry(format!("statement {what}")).or_default() += 1;
                        if c.is_closed() {
                            return;
                        }
                        let _ = c.batch_execute("ROLLBACK").await;
                        continue;
                    }
                    let after = moved.load(std::sync::atomic::Ordering::SeqCst);
                    match c.batch_execute("COMMIT").await {
                        Ok(()) => {
                            let mut t = tally.lock();
                            *t.committed.entry(id as i64).or_default() += 1;
                            if after {
                                *t.after.entry(id as i64).or_default() += 1;
                            }
                        }
                        Err(e) => {
                            let mut t = tally.lock();
                            match e.code().map(|c| c.code()) {
                                // 40003: the server says the outcome is unknown.
                                None | Some("40003") => t.unknown += 1,
                                Some(code) => *t.errors.entry(format!("commit {code}")).or_default() += 1,
                            }
                            if c.is_closed() {
                                return;
                            }
                        }
                    }
                }
            }));
        }
        // A client idle between transactions across the drain, with a
        // setting of its own and a prepared statement.
        let conn = format!("host=127.0.0.1 port={port} user=tessera dbname=bank");
        let (idle, connection) = tokio_postgres::connect(&conn, NoTls).await.unwrap();
        tokio::spawn(connection);
        idle.batch_execute("SET statement_timeout = '54321ms'").await.unwrap();
        let read = idle.prepare("SELECT n FROM acct WHERE id = $1").await.unwrap();
        idle.query_one(&read, &[&1i32]).await.unwrap();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let addr = format!("127.0.0.1:{}", rpc[0]);
        let (ok, text) = admin(&["node", "drain", &primary.to_string(), "--rpc-addr", &addr]);
        assert!(ok, "the drain failed: {text}");
        let drained = Instant::now();
        while db_primary(&all, "bank").await == primary {
            assert!(drained.elapsed() < Duration::from_secs(30), "the primary did not move");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        moved.store(true, std::sync::atomic::Ordering::SeqCst);
        // The writers go on, on the same connections, on the new primary.
        tokio::time::sleep(Duration::from_secs(3)).await;
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        for c in clients {
            tokio::time::timeout(Duration::from_secs(30), c).await.expect("a client hung").unwrap();
        }
        // The idle client's session moved with its setting and statement.
        let n = idle.query_one(&read, &[&1i32]).await.expect("the idle session did not survive the drain");
        assert!(n.get::<_, i64>(0) >= 0);
        let shown = idle.query_one("SHOW statement_timeout", &[]).await.unwrap();
        assert_eq!(shown.get::<_, String>(0), "54321ms", "the session's setting did not follow it");
        let idle_done = idle.execute("UPDATE acct SET n = n WHERE id = 1", &[]).await;
        assert_eq!(idle_done.expect("the moved session cannot write"), 1);

        let (committed, errors, unknown, after) = {
            let t = tally.lock();
            (t.committed.clone(), t.errors.clone(), t.unknown, t.after.clone())
        };
        eprintln!(
            "drain under writes ({create}): committed {committed:?}, errors {errors:?}, unknown {unknown}, after the move {after:?}"
        );
        assert_eq!(unknown, 0, "COMMITs without an answer across a drain: errors {errors:?}");
        assert!(committed.values().sum::<i64>() > 0, "nothing committed before the drain");
        // No session ended, and each went on committing on the new primary.
        assert!(!errors.keys().any(|k| k.ends_with("broken")), "a connection broke across the drain: {errors:?}");
        assert!(!errors.keys().any(|k| k.contains("57P01")), "a session was ended by the drain: {errors:?}");
        for id in 1..=4 {
            assert!(
                after.get(&id).copied().unwrap_or(0) > 0,
                "client {id} committed nothing after the move: {after:?}"
            );
        }
        // At most one retryable error per transaction in flight (four).
        let failed: usize = errors.values().sum();
        assert!(failed <= 4, "more than one error per transaction in flight: {errors:?}");
        // Every acknowledged commit is there, and nothing else (no COMMIT
        // was left without an answer).
        let sql = "SELECT id, n FROM acct ORDER BY id";
        let rows = match query(all[primary % 3], "bank", sql).await {
            Ok(r) => r,
            Err(_) => query(all[(primary + 1) % 3], "bank", sql).await.unwrap(),
        };
        for r in rows {
            let (id, n): (i64, i64) = (r[0].parse().unwrap(), r[1].parse().unwrap());
            assert_eq!(n, committed.get(&id).copied().unwrap_or(0), "row {id}");
        }
    });
}

/// A session of the first group (the `tessera` database) follows its
/// primary across a drain; a transaction left open across the move gets
/// one retryable error (40001, a COMMIT too), and after its ROLLBACK the
/// session goes on on the new primary.
#[test]
fn sessions_follow_a_drained_primary_and_an_open_transaction_gets_one_retryable_error() {
    let rpc: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let nodes = start_cluster_on(&rpc);
    let all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
    let primary = crate::cluster::primary_by_status(rpc[0], 3) as usize;
    let port = all[primary - 1];
    block_on(Duration::from_secs(300), async {
        let sql = "CREATE TABLE moved (id int PRIMARY KEY, n bigint NOT NULL)";
        assert_eq!(run_anywhere(&all, "tessera", sql, Duration::from_secs(60)).await, Outcome::Done);
        let sql = "INSERT INTO moved VALUES (1, 0), (2, 0)";
        assert_eq!(run_anywhere(&all, "tessera", sql, Duration::from_secs(60)).await, Outcome::Done);
        let conn = format!("host=127.0.0.1 port={port} user=tessera dbname=tessera application_name=mover");
        let (idle, c) = tokio_postgres::connect(&conn, NoTls).await.unwrap();
        tokio::spawn(c);
        let (open, c) = tokio_postgres::connect(&conn, NoTls).await.unwrap();
        tokio::spawn(c);
        let bump = idle.prepare("UPDATE moved SET n = n + 1 WHERE id = $1").await.unwrap();
        assert_eq!(idle.execute(&bump, &[&1i32]).await.unwrap(), 1);
        open.batch_execute("BEGIN; UPDATE moved SET n = n + 100 WHERE id = 2").await.unwrap();

        let addr = format!("127.0.0.1:{}", rpc[0]);
        let (ok, text) = admin(&["node", "drain", &primary.to_string(), "--rpc-addr", &addr]);
        assert!(ok, "the drain failed: {text}");
        assert_ne!(crate::cluster::primary_by_status(rpc[0], 3) as usize, primary, "the primary did not move");

        // The idle session: its prepared statement and its startup
        // setting are there on the new primary.
        assert_eq!(idle.execute(&bump, &[&1i32]).await.expect("the idle session did not follow"), 1);
        let name = idle.query_one("SHOW application_name", &[]).await.unwrap();
        assert_eq!(name.get::<_, String>(0), "mover");
        // A cancel request, sent to the node the client connected to with
        // the key it got there, reaches the statement on the new primary.
        let token = idle.cancel_token();
        let canceller = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            token.cancel_query(NoTls).await
        });
        let started = Instant::now();
        let long =
            "SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b WHERE a % 7 = b % 7";
        let e = idle.query_one(long, &[]).await.unwrap_err();
        assert_eq!(e.code().map(|c| c.code()), Some("57014"), "{e:?}");
        assert!(started.elapsed() < Duration::from_secs(20), "the cancel took {:?}", started.elapsed());
        canceller.await.unwrap().expect("sending the cancel request");
        // The open transaction: one 40001, then the session goes on.
        let err = open.batch_execute("UPDATE moved SET n = n + 100 WHERE id = 2").await.unwrap_err();
        assert_eq!(err.code().map(|c| c.code()), Some("40001"), "{err:?}");
        let err = open.batch_execute("SELECT 1").await.unwrap_err();
        assert_eq!(err.code().map(|c| c.code()), Some("25P02"), "{err:?}");
        open.batch_execute("ROLLBACK").await.unwrap();
        open.batch_execute("BEGIN; UPDATE moved SET n = n + 10 WHERE id = 2; COMMIT").await.unwrap();
        // A transaction caught at its COMMIT learns that nothing committed.
        open.batch_execute("BEGIN; UPDATE moved SET n = n + 1000 WHERE id = 2").await.unwrap();
        let new_primary = crate::cluster::primary_by_status(rpc[0], 3) as usize;
        let (ok, text) = admin(&["node", "drain", &new_primary.to_string(), "--rpc-addr", &addr]);
        assert!(ok, "the second drain failed: {text}");
        let err = open.batch_execute("COMMIT").await.unwrap_err();
        assert_eq!(err.code().map(|c| c.code()), Some("40001"), "{err:?}");
        let rows = open.query("SELECT id, n FROM moved ORDER BY id", &[]).await.unwrap();
        let got: Vec<(i32, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert_eq!(got, [(1, 2), (2, 10)]);
        assert!(!idle.is_closed() && !open.is_closed());
    });
}
