//! A drain under a write load: clients writing through the database's
//! primary while `tessera node drain` moves it away see at most one
//! retryable error per transaction in flight, and never a COMMIT whose
//! outcome is unknown (a connection cut while the COMMIT waits for its
//! answer): the drained node lets each session's statement under way
//! finish and answer before it ends the session. Every acknowledged
//! commit is there afterwards.

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
}

#[test]
fn a_drain_under_writes_leaves_no_commit_of_unknown_outcome() {
    let rpc: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let nodes = start_cluster_on(&rpc);
    let all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
    block_on(Duration::from_secs(400), async {
        let sql = "CREATE DATABASE bank";
        assert_eq!(run_anywhere(&all, "tessera", sql, Duration::from_secs(60)).await, Outcome::Done);
        let sql = "CREATE TABLE acct (id int PRIMARY KEY, n bigint NOT NULL)";
        assert_eq!(run_anywhere(&all, "bank", sql, Duration::from_secs(60)).await, Outcome::Done);
        let sql = "INSERT INTO acct SELECT g, 0 FROM generate_series(1, 4) g";
        assert_eq!(run_anywhere(&all, "bank", sql, Duration::from_secs(60)).await, Outcome::Done);
        let primary = db_primary(&all, "bank").await;
        let port = all[primary - 1];

        // Four clients on the primary's node, each on its own row, until
        // some time after the drain.
        let tally = Arc::new(Mutex::new(Tally::default()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut clients = Vec::new();
        for id in 1..=4i32 {
            let (tally, stop) = (tally.clone(), stop.clone());
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
                    match c.batch_execute("COMMIT").await {
                        Ok(()) => *tally.lock().committed.entry(id as i64).or_default() += 1,
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
        tokio::time::sleep(Duration::from_secs(2)).await;
        let addr = format!("127.0.0.1:{}", rpc[0]);
        let (ok, text) = admin(&["node", "drain", &primary.to_string(), "--rpc-addr", &addr]);
        assert!(ok, "the drain failed: {text}");
        let drained = Instant::now();
        while db_primary(&all, "bank").await == primary {
            assert!(drained.elapsed() < Duration::from_secs(30), "the primary did not move");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        for c in clients {
            tokio::time::timeout(Duration::from_secs(30), c).await.expect("a client hung").unwrap();
        }

        let (committed, errors, unknown) = {
            let t = tally.lock();
            (t.committed.clone(), t.errors.clone(), t.unknown)
        };
        eprintln!("drain under writes: committed {committed:?}, errors {errors:?}, unknown {unknown}");
        assert_eq!(unknown, 0, "COMMITs without an answer across a drain: errors {errors:?}");
        assert!(committed.values().sum::<i64>() > 0, "nothing committed before the drain");
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
