//! Work a node's death cuts short, finished by the next primary.
//!
//! A CREATE DATABASE cut after forming the new database's group, before
//! writing the database's entry, leaves a group no database owns: the
//! first group's next primary removes it from every node, the node that
//! died included when it returns, and the name can be used again. A split
//! cut after switching the ranges, before deleting the rows it copied
//! away, leaves them in the old partition: the database's next primary
//! deletes them.

use std::time::{Duration, Instant};

use crate::client::block_on;
use crate::cluster::{Outcome, admin, db_primary, free_port, query, run, run_anywhere, start_cluster_with};

/// The ids of the databases' groups `tessera status` lists (asked of `addr`).
pub(crate) fn listed_groups(addr: &str) -> Option<Vec<String>> {
    let (ok, text) = admin(&["status", "--rpc-addr", addr]);
    let groups = text.split("\n\n").nth(1).unwrap_or("").lines().skip(1);
    ok.then(|| groups.filter_map(|l| l.split_whitespace().next().map(str::to_string)).collect())
}

#[test]
fn a_group_left_by_a_create_database_cut_short_is_removed() {
    let rpc: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let mut nodes = start_cluster_with(&rpc, |_| vec!["--crash-points".to_string()]);
    let all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
    block_on(Duration::from_secs(300), async {
        // The node holding the cluster's catalog is where CREATE DATABASE runs.
        let primary_sql = "SELECT node_id FROM tessera.nodes WHERE role = 'primary'";
        let deadline = Instant::now() + Duration::from_secs(60);
        let first = loop {
            if let Ok(rows) = query(all[0], "tessera", primary_sql).await
                && rows.len() == 1
            {
                break rows[0][0].parse::<usize>().unwrap();
            }
            assert!(Instant::now() < deadline, "no primary of the first group");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        std::fs::write(nodes[first - 1].data_dir().join("crash-point"), "create-database-after-group").unwrap();
        let cut = run(all[first - 1], "tessera", "CREATE DATABASE lost").await;
        assert!(!matches!(cut, Outcome::Done), "the node was to die before the database was made: {cut:?}");
        // It died at the point (it removes the file first), which comes
        // once a quorum of the new group's replicas holds it.
        assert!(
            !nodes[first - 1].data_dir().join("crash-point").exists(),
            "the node did not reach the crash point: {cut:?}"
        );
        nodes[first - 1].kill9();
        let alive: Vec<usize> = (1..=3).filter(|&i| i != first).collect();
        let addr = format!("127.0.0.1:{}", rpc[alive[0] - 1]);

        // The first group's next primary removes the group.
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let groups = listed_groups(&addr);
            if groups.as_ref().is_some_and(|g| g.is_empty()) {
                break;
            }
            assert!(Instant::now() < deadline, "the group no database owns stays: {groups:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let alive_ports: Vec<u16> = alive.iter().map(|&i| all[i - 1]).collect();
        let exists = query(alive_ports[0], "tessera", "SELECT count(*) FROM pg_database WHERE datname = 'lost'").await;
        assert_eq!(exists.unwrap(), vec![vec!["0".to_string()]], "the database was never made");

        // The node returns: it removes its replica of the group too.
        nodes[first - 1].restart();
        let back = format!("127.0.0.1:{}", rpc[first - 1]);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let groups = listed_groups(&back);
            if groups.as_ref().is_some_and(|g| g.is_empty()) {
                break;
            }
            assert!(Instant::now() < deadline, "the returned node keeps the group: {groups:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }

        // The name is free: the database is made, and takes writes.
        let all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
        let made = run_anywhere(&all, "tessera", "CREATE DATABASE lost", Duration::from_secs(60)).await;
        assert_eq!(made, Outcome::Done);
        let sql = "CREATE TABLE kv (k int PRIMARY KEY); INSERT INTO kv VALUES (1)";
        assert_eq!(run_anywhere(&all, "lost", sql, Duration::from_secs(60)).await, Outcome::Done);
    });
}

/// Splits shop at 21 through the node on `port`, which is to die on the
/// way; a split refused with nothing done (its partition's primary
/// moving, say) is run again.
async fn split_until_cut(port: u16) -> Outcome {
    let mut cut = run(port, "shop", "ALTER DATABASE shop SPLIT AT (21)").await;
    for _ in 0..20 {
        if !matches!(&cut, Outcome::Retry(e) if e.contains("40001") || e.contains("57P03")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        cut = run(port, "shop", "ALTER DATABASE shop SPLIT AT (21)").await;
    }
    assert!(!matches!(cut, Outcome::Done), "the node was to die before the split ended: {cut:?}");
    cut
}

#[test]
fn a_split_cut_short_is_finished_by_the_next_primary() {
    let rpc: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let mut nodes = start_cluster_with(&rpc, |_| vec!["--crash-points".to_string()]);
    let all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
    block_on(Duration::from_secs(300), async {
        let sql = "CREATE DATABASE shop WITH (partition_key = 'cid bigint')";
        assert_eq!(run_anywhere(&all, "tessera", sql, Duration::from_secs(60)).await, Outcome::Done);
        let sql = "CREATE TABLE orders (cid bigint PRIMARY KEY, what text)";
        assert_eq!(run_anywhere(&all, "shop", sql, Duration::from_secs(60)).await, Outcome::Done);
        // (One row group per transaction.)
        for cid in 1..=40 {
            let sql = format!("INSERT INTO orders VALUES ({cid}, 'o')");
            assert_eq!(run_anywhere(&all, "shop", &sql, Duration::from_secs(60)).await, Outcome::Done);
        }

        // The database's primary copies the rows into the new partition's
        // group, then dies before switching the ranges: the next primary
        // removes that group once a session of the database starts there.
        let primary = db_primary(&all, "shop").await;
        std::fs::write(nodes[primary - 1].data_dir().join("crash-point"), "split-before-switch").unwrap();
        let cut = split_until_cut(all[primary - 1]).await;
        assert!(!nodes[primary - 1].data_dir().join("crash-point").exists(), "no crash point reached: {cut:?}");
        nodes[primary - 1].kill9();
        let alive: Vec<usize> = (1..=3).filter(|&i| i != primary).collect();
        let addr = format!("127.0.0.1:{}", rpc[alive[0] - 1]);
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            // (A session of shop on its next primary looks for such groups.)
            let count = query(all[alive[0] - 1], "shop", "SELECT count(*) FROM orders").await;
            // (One line per replica: the home's group and partition 1's.)
            let groups = listed_groups(&addr).map(|g| g.into_iter().collect::<std::collections::BTreeSet<_>>());
            if count.as_ref().is_ok_and(|c| c == &vec![vec!["40".to_string()]])
                && groups.as_ref().is_some_and(|g| g.len() == 2)
            {
                break;
            }
            assert!(Instant::now() < deadline, "after a split cut before its switch: {count:?}, groups {groups:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let sql = "SELECT count(*) FROM tessera.partitions WHERE database = 'shop'";
        let parts = query(all[alive[0] - 1], "shop", sql).await;
        assert_eq!(parts.unwrap(), vec![vec!["1".to_string()]], "the cut split left the ranges as they were");
        nodes[primary - 1].restart();
        let all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();

        // The database's primary switches the ranges, then dies before
        // deleting the rows it copied into the new partition.
        let primary = db_primary(&all, "shop").await;
        std::fs::write(nodes[primary - 1].data_dir().join("crash-point"), "split-after-switch").unwrap();
        let cut = split_until_cut(all[primary - 1]).await;
        assert!(
            !nodes[primary - 1].data_dir().join("crash-point").exists(),
            "the node did not reach the crash point: {cut:?}"
        );
        nodes[primary - 1].kill9();
        let alive: Vec<u16> = (1..=3).filter(|&i| i != primary).map(|i| all[i - 1]).collect();

        // The next primary has the two partitions, and deletes the copies
        // from the first once a session of the database starts there.
        let sql = "SELECT partition, rows FROM tessera.partitions WHERE database = 'shop' ORDER BY partition";
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let parts = query(alive[0], "shop", sql).await;
            let want = vec![vec!["1".to_string(), "20".to_string()], vec!["2".to_string(), "20".to_string()]];
            if parts.as_ref().is_ok_and(|p| *p == want) {
                break;
            }
            assert!(Instant::now() < deadline, "shop's partitions after the cut split: {parts:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // Through the other node too (it may take a moment to learn where
        // the new primary is).
        let deadline = Instant::now() + Duration::from_secs(30);
        let count = loop {
            match query(alive[1], "shop", "SELECT count(*), sum(cid) FROM orders").await {
                Ok(count) => break count,
                Err(e) => assert!(Instant::now() < deadline, "shop's orders through port {}: {e}", alive[1]),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert_eq!(count, vec![vec!["40".to_string(), "820".to_string()]]);
    });
}
