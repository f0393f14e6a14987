//! A cluster of three real `tessera` processes on 127.0.0.1: any node
//! serves clients; a kill -9 of the primary's node loses no acknowledged
//! commit and writes continue on a new primary; a restarted node catches up
//! from the log; with two of three nodes down writes are refused (57P03)
//! and resume when one returns.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use tokio_postgres::{Client, NoTls};

use crate::client::block_on;
use crate::harness::Server;

const SECRET: &str = "e2e cluster secret";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts `n` nodes that form one cluster.
pub(crate) fn start_cluster(n: u64) -> Vec<Server> {
    let rpc: Vec<u16> = (0..n).map(|_| free_port()).collect();
    let join = rpc.iter().map(|p| format!("127.0.0.1:{p}")).collect::<Vec<_>>().join(",");
    (0..n)
        .map(|i| {
            let (id, port) = ((i + 1).to_string(), rpc[i as usize].to_string());
            Server::start_with(&[
                "--node-id",
                &id,
                "--rpc-port",
                &port,
                "--join",
                &join,
                "--cluster-secret",
                SECRET,
                "--failure-domain",
                &format!("fd{id}"),
            ])
        })
        .collect()
}

/// How a statement sent through some node ended.
#[derive(Debug, PartialEq)]
pub(crate) enum Outcome {
    Done,
    /// Certainly not done (no primary, refused, conflict): try again.
    Retry(String),
    /// The commit may or may not have happened (40003, or the connection
    /// broke while it ran).
    Unknown(String),
}

pub(crate) async fn try_connect(port: u16, db: &str) -> Result<Client, String> {
    let conn_str = format!("host=127.0.0.1 port={port} user=tessera dbname={db} connect_timeout=5");
    match tokio::time::timeout(Duration::from_secs(10), tokio_postgres::connect(&conn_str, NoTls)).await {
        Ok(Ok((client, conn))) => {
            tokio::spawn(conn);
            Ok(client)
        }
        Ok(Err(e)) => Err(crate::client::describe(&e)),
        Err(_) => Err("connect timed out".into()),
    }
}

/// Runs `sql` (one transaction) through the node on `port`.
pub(crate) async fn run(port: u16, db: &str, sql: &str) -> Outcome {
    let c = match try_connect(port, db).await {
        Ok(c) => c,
        Err(e) => return Outcome::Retry(e),
    };
    match tokio::time::timeout(Duration::from_secs(20), c.batch_execute(sql)).await {
        Err(_) => Outcome::Unknown("timed out".into()),
        Ok(Ok(())) => Outcome::Done,
        Ok(Err(e)) => match e.as_db_error().map(|d| d.code().code().to_string()) {
            Some(code) if matches!(code.as_str(), "57P03" | "40001" | "40P01") => {
                Outcome::Retry(crate::client::describe(&e))
            }
            _ => Outcome::Unknown(crate::client::describe(&e)),
        },
    }
}

/// Runs `sql` through any live node until it is done or its outcome is
/// unknown; panics after `limit`.
pub(crate) async fn run_anywhere(ports: &[u16], db: &str, sql: &str, limit: Duration) -> Outcome {
    let deadline = Instant::now() + limit;
    for round in 0.. {
        let port = ports[round % ports.len()];
        match run(port, db, sql).await {
            Outcome::Retry(e) => {
                assert!(Instant::now() < deadline, "{sql}: no node served it within {limit:?}; last error: {e}")
            }
            done => return done,
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    unreachable!()
}

pub(crate) async fn query(port: u16, db: &str, sql: &str) -> Result<Vec<Vec<String>>, String> {
    let c = try_connect(port, db).await?;
    let mut out = Vec::new();
    for m in c.simple_query(sql).await.map_err(|e| crate::client::describe(&e))? {
        if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
            out.push((0..r.len()).map(|i| r.get(i).unwrap_or("NULL").to_string()).collect());
        }
    }
    Ok(out)
}

/// Retries a read through any node until `check` accepts its rows.
async fn wait_rows(ports: &[u16], db: &str, sql: &str, what: &str, check: impl Fn(&[Vec<String>]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = String::new();
    loop {
        for &p in ports {
            match query(p, db, sql).await {
                Ok(rows) if check(&rows) => return,
                Ok(rows) => last = format!("{rows:?}"),
                Err(e) => last = e,
            }
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}; last: {last}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Inserts key `k` through any node, recording whether it was acknowledged.
async fn insert(alive: &[u16], k: i64, acked: &mut BTreeSet<i64>, maybe: &mut BTreeSet<i64>) {
    let sql = format!("INSERT INTO kv VALUES ({k}, 'v{k}')");
    match run_anywhere(alive, "plain", &sql, Duration::from_secs(60)).await {
        Outcome::Done => acked.insert(k),
        Outcome::Unknown(_) | Outcome::Retry(_) => maybe.insert(k),
    };
}

fn keys(rows: &[Vec<String>]) -> BTreeSet<i64> {
    rows.iter().map(|r| r[0].parse().unwrap()).collect()
}

#[test]
fn three_nodes_fail_over_catch_up_and_refuse_without_quorum() {
    let mut nodes = start_cluster(3);
    let ports = |nodes: &[Server], alive: &[usize]| alive.iter().map(|&i| nodes[i].port()).collect::<Vec<u16>>();
    block_on(Duration::from_secs(400), async {
        let all = ports(&nodes, &[0, 1, 2]);
        let created = run_anywhere(&all, "tessera", "CREATE DATABASE plain", Duration::from_secs(60)).await;
        assert_eq!(created, Outcome::Done);
        let sql = "CREATE DATABASE shop WITH (partition_key = 'cid bigint', partitions = 4)";
        assert_eq!(run_anywhere(&all, "tessera", sql, Duration::from_secs(30)).await, Outcome::Done);
        let sql = "CREATE TABLE kv (k int PRIMARY KEY, v text)";
        assert_eq!(run_anywhere(&all, "plain", sql, Duration::from_secs(30)).await, Outcome::Done);
        let sql = "CREATE TABLE accounts (cid bigint PRIMARY KEY, balance bigint)";
        assert_eq!(run_anywhere(&all, "shop", sql, Duration::from_secs(30)).await, Outcome::Done);
        let mut acked = BTreeSet::new();
        let mut maybe = BTreeSet::new();
        for k in 1..=40 {
            insert(&all, k, &mut acked, &mut maybe).await;
        }
        for cid in 1..=40 {
            let sql = format!("INSERT INTO accounts VALUES ({cid}, 100)");
            assert_eq!(run_anywhere(&all, "shop", &sql, Duration::from_secs(30)).await, Outcome::Done);
        }
        // Every node reports in; one is the primary.
        let primary_sql = "SELECT node_id FROM tessera.nodes WHERE role = 'primary'";
        wait_rows(&all, "tessera", "SELECT role FROM tessera.nodes ORDER BY node_id", "three live nodes", |r| {
            r.len() == 3 && r.iter().all(|x| x[0] == "primary" || x[0] == "secondary")
        })
        .await;
        let primary = query(all[0], "tessera", primary_sql).await.unwrap()[0][0].parse::<usize>().unwrap() - 1;

        // kill -9 the primary's node: writes go on through the others.
        nodes[primary].kill9();
        let rest: Vec<usize> = (0..3).filter(|&i| i != primary).collect();
        let alive = ports(&nodes, &rest);
        for k in 41..=80 {
            insert(&alive, k, &mut acked, &mut maybe).await;
        }
        let sql = "UPDATE accounts SET balance = balance + 1 WHERE cid = 7";
        assert_eq!(run_anywhere(&alive, "shop", sql, Duration::from_secs(60)).await, Outcome::Done);
        let check = |acked: &BTreeSet<i64>, maybe: &BTreeSet<i64>| {
            let (acked, maybe) = (acked.clone(), maybe.clone());
            move |rows: &[Vec<String>]| {
                let got = keys(rows);
                acked.is_subset(&got) && got.iter().all(|k| acked.contains(k) || maybe.contains(k))
            }
        };
        let every = check(&acked, &maybe);
        wait_rows(&alive, "plain", "SELECT k FROM kv", "every acknowledged row after the failover", every).await;

        // The killed node returns and catches up from the log.
        nodes[primary].restart();
        let all = ports(&nodes, &[0, 1, 2]);
        wait_rows(
            &all,
            "tessera",
            "SELECT behind FROM tessera.nodes ORDER BY node_id",
            "the returned node to catch up",
            |r| r.len() == 3 && r.iter().all(|x| x[0] == "0"),
        )
        .await;

        // Two of three down: no quorum, writes are refused with 57P03.
        for &i in &rest {
            nodes[i].kill9();
        }
        let lone = nodes[primary].port();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match run(lone, "plain", "INSERT INTO kv VALUES (1000, 'x')").await {
                Outcome::Retry(e) if e.contains("57P03") => break,
                Outcome::Done => panic!("a lone node of three accepted a write"),
                other => assert!(Instant::now() < deadline, "expected 57P03 from the lone node, got {other:?}"),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }

        // One returns: a quorum again, and nothing acknowledged is lost.
        nodes[rest[0]].restart();
        let back = ports(&nodes, &[primary, rest[0]]);
        for k in 81..=90 {
            insert(&back, k, &mut acked, &mut maybe).await;
        }
        let every = check(&acked, &maybe);
        wait_rows(&back, "plain", "SELECT k FROM kv", "every acknowledged row after quorum returns", every).await;
        wait_rows(&back, "shop", "SELECT sum(balance), count(*) FROM accounts", "the keyed database", |r| {
            r == [vec!["4001".to_string(), "40".to_string()]]
        })
        .await;
    });
}
