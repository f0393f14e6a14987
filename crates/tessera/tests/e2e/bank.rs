//! A bank workload on a cluster of three real `tessera` processes keeps
//! its books under kills, pauses and network partitions: clients transfer
//! between accounts through whichever node they reach while a nemesis
//! kills and restarts nodes, pauses them (SIGSTOP/SIGCONT) and cuts them
//! off from the others; at the end every acknowledged transfer is there,
//! nothing that was neither acknowledged nor attempted, and each account's
//! balance is its opening plus its transfers.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::client::block_on;
use crate::cluster::{Outcome, free_port, keys, query, run_anywhere, start_cluster_with, try_connect};

/// What the bank's clients saw.
#[derive(Default)]
struct Ledger {
    /// Transfers the server acknowledged: (id, from, to, amount).
    acked: Vec<(i64, i64, i64, i64)>,
    /// Transfers whose outcome is unknown.
    maybe: BTreeSet<i64>,
    failed: usize,
}

const ACCOUNTS: i64 = 8;
const OPENING: i64 = 1000;

/// One client: transfers between random accounts through whichever node
/// it reaches, until `stop`.
async fn bank_client(
    client: i64,
    ports: std::sync::Arc<parking_lot::Mutex<Vec<u16>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Ledger {
    let mut ledger = Ledger::default();
    let mut seed = client as u64 * 7919 + 17;
    let mut next = move |n: i64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as i64
    };
    let mut seq = 0;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let port = {
            let p = ports.lock();
            p[next(p.len() as i64) as usize]
        };
        let Ok(c) = try_connect(port, "bank").await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        // Several transfers per connection, until it breaks.
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            seq += 1;
            let id = client * 1_000_000 + seq;
            let (from, to, amount) = (next(ACCOUNTS) + 1, next(ACCOUNTS) + 1, next(50) + 1);
            let sql = format!(
                "BEGIN ISOLATION LEVEL REPEATABLE READ;
                 UPDATE accounts SET balance = balance - {amount} WHERE id = {from};
                 UPDATE accounts SET balance = balance + {amount} WHERE id = {to};
                 INSERT INTO transfers VALUES ({id}, {from}, {to}, {amount});
                 COMMIT"
            );
            match tokio::time::timeout(Duration::from_secs(20), c.batch_execute(&sql)).await {
                Ok(Ok(())) => ledger.acked.push((id, from, to, amount)),
                Ok(Err(e)) => {
                    let code = e.as_db_error().map(|d| d.code().code().to_string());
                    match code.as_deref() {
                        // Certainly rolled back.
                        Some("40001" | "40P01" | "57P03") => {
                            ledger.failed += 1;
                            let _ = c.batch_execute("ROLLBACK").await;
                        }
                        // 40003, 57P01 (the node stopped being primary) or
                        // a broken connection: it may have committed.
                        _ => {
                            ledger.maybe.insert(id);
                            break;
                        }
                    }
                }
                Err(_) => {
                    ledger.maybe.insert(id);
                    break;
                }
            }
        }
    }
    ledger
}

#[test]
fn bank_transfers_balance_under_kills_pauses_and_partitions() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let rpc: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let net = crate::netfault::Network::start(&rpc);
    let mut nodes = start_cluster_with(&rpc, |i| vec!["--rpc-route".into(), net.routes_of(i, &rpc)]);
    block_on(Duration::from_secs(600), async {
        let all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
        assert_eq!(run_anywhere(&all, "tessera", "CREATE DATABASE bank", Duration::from_secs(60)).await, Outcome::Done);
        let opening: Vec<String> = (1..=ACCOUNTS).map(|a| format!("({a}, {OPENING})")).collect();
        let schema = format!(
            "CREATE TABLE accounts (id bigint PRIMARY KEY, balance bigint NOT NULL);
             CREATE TABLE transfers (id bigint PRIMARY KEY, src bigint, dst bigint, amount bigint);
             INSERT INTO accounts VALUES {}",
            opening.join(", ")
        );
        assert_eq!(run_anywhere(&all, "bank", &schema, Duration::from_secs(60)).await, Outcome::Done);

        let ports = Arc::new(parking_lot::Mutex::new(all.clone()));
        let stop = Arc::new(AtomicBool::new(false));
        let clients: Vec<_> = (1..=4).map(|c| tokio::spawn(bank_client(c, ports.clone(), stop.clone()))).collect();

        // The nemesis: rounds of kill -9 + restart, of SIGSTOP + SIGCONT,
        // and of cutting a node off from the others (clients still reach
        // it), on a different node each time, with the clients running.
        for round in 0..9usize {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            let victim = (round * 2 + 1) % 3;
            let hold = Duration::from_millis(800 + 300 * (round as u64 % 4));
            match round % 3 {
                0 => {
                    nodes[victim].kill9();
                    tokio::time::sleep(hold).await;
                    nodes[victim].restart();
                    ports.lock()[victim] = nodes[victim].port();
                }
                1 => {
                    nodes[victim].pause();
                    tokio::time::sleep(hold).await;
                    nodes[victim].resume();
                }
                _ => {
                    net.isolate(victim);
                    tokio::time::sleep(hold).await;
                    net.heal_all();
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;
        stop.store(true, Ordering::Relaxed);
        let mut ledger = Ledger::default();
        for c in clients {
            let l = c.await.unwrap();
            ledger.acked.extend(l.acked);
            ledger.maybe.extend(l.maybe);
            ledger.failed += l.failed;
        }
        assert!(ledger.acked.len() >= 20, "too few transfers went through: {}", ledger.acked.len());

        // Every acknowledged transfer is there, nothing else but transfers
        // of unknown outcome, and the books balance.
        let all: Vec<u16> = ports.lock().clone();
        let mut present = BTreeSet::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        while present.is_empty() {
            for &p in &all {
                if let Ok(rows) = query(p, "bank", "SELECT id FROM transfers").await {
                    present = keys(&rows);
                    break;
                }
            }
            assert!(Instant::now() < deadline, "no node answered after the nemesis");
        }
        for (id, ..) in &ledger.acked {
            assert!(present.contains(id), "acknowledged transfer {id} is missing");
        }
        let acked: BTreeSet<i64> = ledger.acked.iter().map(|t| t.0).collect();
        for id in &present {
            assert!(
                acked.contains(id) || ledger.maybe.contains(id),
                "transfer {id} was never acknowledged or attempted"
            );
        }
        // Each account's balance is its opening plus the transfers present.
        let per_account = "SELECT a.id, a.balance, coalesce((SELECT sum(amount) FROM transfers WHERE dst = a.id), 0) - coalesce((SELECT sum(amount) FROM transfers WHERE src = a.id), 0) FROM accounts a ORDER BY 1";
        let rows = match query(all[0], "bank", per_account).await {
            Ok(rows) => rows,
            Err(e) => {
                eprintln!("per-account check through the first node failed ({e}); trying the second");
                query(all[1], "bank", per_account).await.unwrap()
            }
        };
        // (All disagreeing accounts are named, with the transfers of each.)
        let wrong: Vec<String> = rows
            .iter()
            .filter(|r| r[1].parse::<i64>().unwrap() != OPENING + r[2].parse::<i64>().unwrap())
            .map(|r| {
                let touching: Vec<String> = ledger
                    .acked
                    .iter()
                    .filter(|t| t.1.to_string() == r[0] || t.2.to_string() == r[0])
                    .map(|t| format!("{t:?}"))
                    .collect();
                format!("account {}: balance {}, net transfers {}; acked {touching:?}", r[0], r[1], r[2])
            })
            .collect();
        assert!(wrong.is_empty(), "accounts disagree with their transfers: {wrong:#?}");
        let sql = "SELECT sum(balance), count(*) FROM accounts";
        let rows = query(all[0], "bank", sql).await.or(query(all[1], "bank", sql).await).unwrap();
        assert_eq!(rows, [vec![(ACCOUNTS * OPENING).to_string(), ACCOUNTS.to_string()]]);
        eprintln!(
            "bank under faults: {} transfers acknowledged, {} of unknown outcome ({} present), {} refused",
            ledger.acked.len(),
            ledger.maybe.len(),
            present.len() - acked.len(),
            ledger.failed
        );
    });
}
