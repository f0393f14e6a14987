//! Writers contending for shared row groups keep committing.
//!
//! Each client runs `BEGIN; UPDATE t … WHERE cid = $1 AND id = 1; UPDATE t …
//! WHERE cid = $1 AND id = 2; COMMIT` on row groups drawn from a few shared
//! ones, so every transaction but the first on a row group waits for the
//! one before it. A waiting writer must not hold a thread that the holder's
//! session needs to reach its COMMIT (with one session thread, as here,
//! that would stop every session), nor wait on the wrong engine's
//! transaction (in a keyed database the holder is a transaction of the
//! partition's engine, not of the home's). Checked: commits never stop for
//! long, the server's memory stays flat, no transaction fails with anything
//! but a retryable error (no deadlock: every client updates in the same
//! order), and the table ends equal to the clients' journal.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::client::{block_on, connect, describe, exec, query_text};
use crate::harness::Server;

const LIMIT: Duration = Duration::from_secs(240);
/// Far longer than a transaction waits in a queue of 64 in a debug build;
/// a stall that never ends is what this catches.
const LONGEST_STALL: Duration = Duration::from_secs(3);
/// What may be retried: serialization failures, timeouts.
const RETRYABLE: &[&str] = &["40001", "55P03", "57014"];

struct Journal {
    committed: Vec<u64>,
    retried: Vec<String>,
    failed: Vec<String>,
}

fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A row group's key, spread over the key space (and so the partitions).
fn group_key(g: usize) -> i64 {
    ((g as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) % (1 << 62)) as i64 - (1 << 61)
}

/// How each transaction writes its row group's two rows.
#[derive(Clone, Copy)]
enum Writes {
    /// Two UPDATEs by primary key (the fast path).
    ByKey,
    /// One UPDATE of both rows through a range (the general path).
    ByRange,
}

async fn run(server: &Server, db: &str, keyed: bool, writes: Writes, clients: usize, groups: usize, seconds: u64) {
    let label = format!("{db}: {clients} clients over {groups} row groups");
    let admin = connect(server).await;
    let with = if keyed { " WITH (partition_key = 'cid bigint', partitions = 4)" } else { "" };
    exec(&admin, &format!("CREATE DATABASE {db}{with}")).await;
    let conn_str = server.conn_str().replace("dbname=tessera", &format!("dbname={db}"));
    let open = || async {
        let (client, connection) = tokio_postgres::connect(&conn_str, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        exec(&client, "SET statement_timeout = 10000").await;
        client
    };
    let setup = open().await;
    exec(&setup, "CREATE TABLE t (cid bigint, id int, v bigint NOT NULL, PRIMARY KEY (cid, id))").await;
    for g in 0..groups {
        let k = group_key(g);
        exec(&setup, &format!("INSERT INTO t VALUES ({k}, 1, 0), ({k}, 2, 0)")).await;
    }

    let journal = Arc::new(Mutex::new(Journal { committed: vec![0; groups], retried: vec![], failed: vec![] }));
    let total = Arc::new(AtomicU64::new(0));
    let rss_start = rss_kb(server.pid());
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for c in 0..clients {
        let client = open().await;
        let (journal, total) = (journal.clone(), total.clone());
        tasks.push(tokio::spawn(async move {
            let (one, two) = match writes {
                Writes::ByKey => (
                    "UPDATE t SET v = v + 1 WHERE cid = $1 AND id = 1",
                    "UPDATE t SET v = v + 1 WHERE cid = $1 AND id = 2",
                ),
                Writes::ByRange => ("UPDATE t SET v = v + 1 WHERE cid = $1 AND id >= 1", "SELECT $1::bigint"),
            };
            let one = client.prepare(one).await.unwrap();
            let two = client.prepare(two).await.unwrap();
            let mut seed = c as u64 + 1;
            while Instant::now() < end {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let g = (seed >> 33) as usize % groups;
                let key = group_key(g);
                let outcome = async {
                    client.batch_execute("BEGIN").await?;
                    client.execute(&one, &[&key]).await?;
                    client.execute(&two, &[&key]).await?;
                    client.batch_execute("COMMIT").await
                }
                .await;
                match outcome {
                    Ok(()) => {
                        journal.lock().committed[g] += 1;
                        total.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(e) => {
                        let code = e.as_db_error().map(|d| d.code().code().to_string());
                        {
                            let mut j = journal.lock();
                            match code {
                                Some(code) if RETRYABLE.contains(&code.as_str()) => j.retried.push(describe(&e)),
                                _ => j.failed.push(describe(&e)),
                            }
                        }
                        let _ = client.batch_execute("ROLLBACK").await;
                    }
                }
            }
        }));
    }

    // Watch the commits: how long did they ever stop?
    let (mut last, mut last_change, mut longest) = (0, Instant::now(), Duration::ZERO);
    let mut rss_max = rss_start;
    while Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = total.load(Ordering::SeqCst);
        if now != last {
            longest = longest.max(last_change.elapsed());
            (last, last_change) = (now, Instant::now());
        }
        rss_max = rss_max.max(rss_kb(server.pid()));
    }
    longest = longest.max(last_change.elapsed());
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(30), t)
            .await
            .unwrap_or_else(|_| panic!("{label}: a client was still in a statement 30 s after the run"))
            .unwrap();
    }

    let rows = query_text(&setup, "SELECT cid, id, v FROM t ORDER BY cid, id").await;
    let j = journal.lock();
    assert!(j.failed.is_empty(), "{label}: transactions failed: {:?}", &j.failed[..j.failed.len().min(5)]);
    assert!(last > 0, "{label}: nothing committed");
    assert!(longest < LONGEST_STALL, "{label}: commits stopped for {longest:?} ({last} committed)");
    // The regression grew by gigabytes; a debug build's own churn is far less.
    let growth_mb = rss_max.saturating_sub(rss_start) / 1024;
    assert!(growth_mb < 200, "{label}: the server's memory grew by {growth_mb} MB");
    for g in 0..groups {
        for id in ["1", "2"] {
            let key = group_key(g).to_string();
            let row = rows.iter().find(|r| r[0].as_deref() == Some(&key) && r[1].as_deref() == Some(id));
            let got = row.and_then(|r| r[2].clone());
            assert_eq!(
                got,
                Some(j.committed[g].to_string()),
                "{label}: cid {key} id {id} holds what the journal does not"
            );
        }
    }
    eprintln!(
        "{label}: {last} committed in {seconds} s, longest stall {longest:?}, {} retried, memory +{growth_mb} MB",
        j.retried.len()
    );
}

/// One session thread: a waiting writer that held it would stop everyone.
#[test]
fn keyed_writers_sharing_row_groups_keep_committing() {
    let server = Server::start_with(&["--session-threads", "1"]);
    block_on(LIMIT, async {
        run(&server, "keyed4", true, Writes::ByKey, 4, 4, 4).await;
        run(&server, "keyed16", true, Writes::ByKey, 16, 1, 3).await;
        run(&server, "keyed64", true, Writes::ByKey, 64, 64, 3).await;
        run(&server, "keyed_range", true, Writes::ByRange, 8, 2, 3).await;
    });
}

#[test]
fn keyless_writers_sharing_row_groups_keep_committing() {
    let server = Server::start_with(&["--session-threads", "1"]);
    block_on(LIMIT, async {
        run(&server, "keyless4", false, Writes::ByKey, 4, 4, 3).await;
        run(&server, "keyless16", false, Writes::ByKey, 16, 1, 3).await;
        run(&server, "keyless_range", false, Writes::ByRange, 8, 2, 3).await;
    });
}
