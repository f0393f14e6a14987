//! A node that joins a running cluster gets its share: the partition
//! manager moves databases' replicas to it (each built there, caught up and
//! voting before the replica it replaces leaves, so every group keeps three
//! voters throughout) and then primaries, without losing a row.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::client::block_on;
use crate::cluster::{Outcome, SECRET, free_port, query, run_anywhere, start_cluster_on};
use crate::harness::Server;

const DATABASES: [&str; 6] = ["d1", "d2", "d3", "d4", "d5", "d6"];

/// (database, node, role) of every database's replicas, as any node answers.
async fn replicas(ports: &[u16]) -> Vec<(String, usize, String)> {
    let sql = "SELECT database, node_id, role FROM tessera.replicas WHERE database LIKE 'd_' ORDER BY 1, 2";
    for &p in ports {
        if let Ok(rows) = query(p, "tessera", sql).await {
            return rows.iter().map(|r| (r[0].clone(), r[1].parse().unwrap(), r[2].clone())).collect();
        }
    }
    Vec::new()
}

#[test]
fn a_node_that_joins_gets_replicas_and_primaries() {
    let rpc: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let nodes = start_cluster_on(&rpc);
    let mut all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
    block_on(Duration::from_secs(600), async {
        for db in DATABASES {
            let sql = format!("CREATE DATABASE {db}");
            assert_eq!(run_anywhere(&all, "tessera", &sql, Duration::from_secs(60)).await, Outcome::Done);
            let sql = "CREATE TABLE kv (k int PRIMARY KEY, v text)";
            assert_eq!(run_anywhere(&all, db, sql, Duration::from_secs(60)).await, Outcome::Done, "{db}");
            for k in 1..=20 {
                let sql = format!("INSERT INTO kv VALUES ({k}, 'v{k}')");
                assert_eq!(run_anywhere(&all, db, &sql, Duration::from_secs(60)).await, Outcome::Done, "{db}");
            }
        }

        // Node 4 joins, in a failure domain of its own.
        let rpc4 = free_port().to_string();
        let join = format!("127.0.0.1:{}", rpc[0]);
        let args = [
            "--node-id",
            "4",
            "--rpc-port",
            &rpc4,
            "--join",
            &join,
            "--cluster-secret",
            SECRET,
            "--failure-domain",
            "fd4",
            "--snapshot-every",
            "100",
        ];
        let joined = Server::start_with(&args);
        all.push(joined.port());
        let started = Instant::now();

        // Within a minute or two (a debug build), node 4 holds replicas and
        // leads a group; every group has three voters and one primary all
        // along.
        let deadline = started + Duration::from_secs(180);
        let mut fewest_voters = usize::MAX;
        loop {
            let r = replicas(&all).await;
            let mut by_db: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
            for (db, _, role) in &r {
                let e = by_db.entry(db.as_str()).or_default();
                e.0 += usize::from(role == "primary" || role == "secondary");
                e.1 += usize::from(role == "primary");
            }
            if by_db.len() == DATABASES.len() {
                fewest_voters = fewest_voters.min(by_db.values().map(|(v, _)| *v).min().unwrap_or(0));
            }
            let on4: Vec<&(String, usize, String)> = r.iter().filter(|(_, n, _)| *n == 4).collect();
            let voting4 = on4.iter().filter(|(_, _, role)| role == "primary" || role == "secondary").count();
            let leads4 = on4.iter().filter(|(_, _, role)| role == "primary").count();
            if voting4 >= 3 && leads4 >= 1 && by_db.values().all(|(v, p)| *v == 3 && *p == 1) {
                eprintln!("join: node 4 votes in {voting4} groups and leads {leads4} after {:?}", started.elapsed());
                break;
            }
            assert!(Instant::now() < deadline, "node 4 did not get its share: {r:?}");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        // A group between two steps of a move has four voters (built
        // first), never two.
        assert!(fewest_voters >= 3, "a group fell to {fewest_voters} voters during a move");
        // Each node holds between 3 and 6 of the 18 replicas, none more
        // than it did before the join.
        let r = replicas(&all).await;
        let per_node: BTreeMap<usize, usize> = r.iter().fold(BTreeMap::new(), |mut m, (_, n, _)| {
            *m.entry(*n).or_default() += 1;
            m
        });
        assert!(per_node.values().all(|c| (3..=6).contains(c)), "{per_node:?}");

        // Every row is still there, read through the new node.
        let through4 = [joined.port()];
        for db in DATABASES {
            // (A primary may be on its way to another node: ask again.)
            let deadline = Instant::now() + Duration::from_secs(30);
            let rows = loop {
                match query(joined.port(), db, "SELECT k FROM kv").await {
                    Ok(rows) => break rows,
                    Err(e) => assert!(Instant::now() < deadline, "{db}: {e}"),
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            };
            let keys: BTreeSet<i64> = rows.iter().map(|r| r[0].parse().unwrap()).collect();
            assert_eq!(keys, (1..=20).collect(), "{db}");
            let sql = "INSERT INTO kv VALUES (100, 'after the join')";
            assert_eq!(run_anywhere(&through4, db, sql, Duration::from_secs(60)).await, Outcome::Done, "{db}");
        }
    });
}
