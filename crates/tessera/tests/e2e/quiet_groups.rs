//! Quiet groups under faults: databases written only now and then (so
//! their groups go quiet between writes, their primaries' leases resting
//! on node-level confirmations) while a nemesis cuts nodes off and pauses
//! them. Every acknowledged write is on every node at the end, nothing
//! that was never attempted is, and each database took writes again after
//! every fault.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::client::block_on;
use crate::cluster::{Outcome, connect_reading_secondary, free_port, keys, run, run_anywhere, start_cluster_with};

const DATABASES: [&str; 2] = ["calm", "still"];

#[test]
fn quiet_groups_keep_every_acknowledged_write_under_cuts_and_pauses() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let rpc: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let net = crate::netfault::Network::start(&rpc);
    let nodes = start_cluster_with(&rpc, |i| vec!["--rpc-route".into(), net.routes_of(i, &rpc)]);
    let ports: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
    block_on(Duration::from_secs(600), async {
        for db in DATABASES {
            let sql = format!("CREATE DATABASE {db}");
            assert_eq!(run_anywhere(&ports, "tessera", &sql, Duration::from_secs(60)).await, Outcome::Done);
            let sql = "CREATE TABLE kv (k bigint PRIMARY KEY)";
            assert_eq!(run_anywhere(&ports, db, sql, Duration::from_secs(60)).await, Outcome::Done);
        }
        // One writer per database: a write every 3 s through a node picked
        // in turn, so the group goes quiet (after 2 s idle) before each.
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = DATABASES
            .iter()
            .enumerate()
            .map(|(d, db)| {
                let (stop, ports, db) = (stop.clone(), ports.clone(), db.to_string());
                tokio::spawn(async move {
                    let (mut acked, mut maybe) = (BTreeSet::new(), BTreeSet::new());
                    let mut k = 0i64;
                    while !stop.load(Ordering::Relaxed) {
                        k += 1;
                        let sql = format!("INSERT INTO kv VALUES ({k})");
                        match run(ports[(k as usize + d) % ports.len()], &db, &sql).await {
                            Outcome::Done => acked.insert(k),
                            Outcome::Unknown(_) => maybe.insert(k),
                            Outcome::Retry(_) => false,
                        };
                        tokio::time::sleep(Duration::from_secs(3)).await;
                    }
                    (db, acked, maybe)
                })
            })
            .collect();

        // The nemesis: a node cut off, then one paused, in turn, with quiet
        // spells between.
        for round in 0..6usize {
            tokio::time::sleep(Duration::from_millis(2500)).await;
            let victim = round % 3;
            if round % 2 == 0 {
                net.isolate(victim);
                tokio::time::sleep(Duration::from_millis(2000)).await;
                net.heal_all();
            } else {
                nodes[victim].pause();
                tokio::time::sleep(Duration::from_millis(1500)).await;
                nodes[victim].resume();
            }
        }
        tokio::time::sleep(Duration::from_secs(4)).await;
        stop.store(true, Ordering::Relaxed);

        for w in writers {
            let (db, acked, maybe) = w.await.unwrap();
            assert!(acked.len() >= 5, "{db}: too few writes went through: {acked:?}");
            // Each node's own copy holds every acknowledged write, and only
            // writes that were attempted.
            for &p in &ports {
                let deadline = Instant::now() + Duration::from_secs(60);
                loop {
                    let have: Option<BTreeSet<i64>> = match connect_reading_secondary(p, &db).await {
                        Ok(c) => c.simple_query("SELECT k FROM kv").await.ok().map(|msgs| {
                            let rows: Vec<Vec<String>> = msgs
                                .iter()
                                .filter_map(|m| match m {
                                    tokio_postgres::SimpleQueryMessage::Row(r) => {
                                        Some(vec![r.get(0).unwrap_or_default().to_string()])
                                    }
                                    _ => None,
                                })
                                .collect();
                            keys(&rows)
                        }),
                        Err(_) => None,
                    };
                    if let Some(have) = &have {
                        let stray: Vec<&i64> =
                            have.iter().filter(|k| !acked.contains(k) && !maybe.contains(k)).collect();
                        assert!(stray.is_empty(), "{db} on port {p} holds writes never attempted: {stray:?}");
                        if acked.is_subset(have) {
                            break;
                        }
                    }
                    assert!(
                        Instant::now() < deadline,
                        "{db} on port {p} never held every acknowledged write: has {have:?}, acked {acked:?}"
                    );
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
            eprintln!("quiet groups: {db}: {} writes acknowledged, {} of unknown outcome", acked.len(), maybe.len());
        }
    });
}
