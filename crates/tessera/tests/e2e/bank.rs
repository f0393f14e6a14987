//! A bank workload on a cluster of three real `tessera` processes keeps
//! its books under kills, pauses and network partitions: clients transfer
//! between accounts through whichever node they reach while a nemesis
//! kills and restarts nodes, pauses them (SIGSTOP/SIGCONT) and cuts them
//! off from the others; at the end every acknowledged transfer is there,
//! nothing that was neither acknowledged nor attempted, and each account's
//! balance is its opening plus its transfers.
//!
//! Twice: in a keyless database (one group), and in a keyed one whose
//! accounts are in branches (the row groups) spread over four partitions,
//! each a group of its own with its primary anywhere: there a transfer
//! works on its branch's partition wherever that partition is led.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::client::block_on;
use crate::cluster::{Outcome, free_port, query, run_anywhere, start_cluster_with, try_connect};

/// What the bank's clients saw.
#[derive(Default)]
struct Ledger {
    /// Transfers the server acknowledged: (id, branch, from, to, amount).
    acked: Vec<(i64, i64, i64, i64, i64)>,
    /// Transfers whose outcome is unknown.
    maybe: BTreeSet<i64>,
    failed: usize,
}

const ACCOUNTS: i64 = 8;
const OPENING: i64 = 1000;

/// The bank's shape: one set of accounts, or a set per branch.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Keyless,
    /// Branches in each of four partitions (bigint split evenly).
    Keyed,
}

const BRANCHES: [i64; 4] = [-6_000_000_000_000_000_000, -7, 7, 6_000_000_000_000_000_000];

impl Shape {
    fn db(self) -> &'static str {
        match self {
            Shape::Keyless => "bank",
            Shape::Keyed => "kbank",
        }
    }

    fn branches(self) -> &'static [i64] {
        match self {
            Shape::Keyless => &[0],
            Shape::Keyed => &BRANCHES,
        }
    }

    fn create(self) -> String {
        match self {
            Shape::Keyless => "CREATE DATABASE bank".into(),
            Shape::Keyed => "CREATE DATABASE kbank WITH (partition_key = 'branch bigint', partitions = 4)".into(),
        }
    }

    /// The tables and the opening balances, as statements run one by one
    /// (a keyed database's transaction stays in one row group: one INSERT
    /// per branch, each in a transaction of its own).
    fn schema(self) -> Vec<String> {
        let mut out = vec![match self {
            Shape::Keyless => {
                "CREATE TABLE accounts (id bigint PRIMARY KEY, balance bigint NOT NULL);
                 CREATE TABLE transfers (id bigint PRIMARY KEY, src bigint, dst bigint, amount bigint)"
            }
            Shape::Keyed => {
                "CREATE TABLE accounts (branch bigint, id bigint, balance bigint NOT NULL, PRIMARY KEY (branch, id));
                 CREATE TABLE transfers (branch bigint, id bigint, src bigint, dst bigint, amount bigint, PRIMARY KEY (branch, id))"
            }
        }
        .to_string()];
        for b in self.branches() {
            let rows: Vec<String> = (1..=ACCOUNTS)
                .map(|a| match self {
                    Shape::Keyless => format!("({a}, {OPENING})"),
                    Shape::Keyed => format!("({b}, {a}, {OPENING})"),
                })
                .collect();
            out.push(format!("INSERT INTO accounts VALUES {}", rows.join(", ")));
        }
        out
    }

    fn transfer(self, branch: i64, id: i64, from: i64, to: i64, amount: i64) -> String {
        let (at, row) = match self {
            Shape::Keyless => (String::new(), format!("{id}, {from}, {to}, {amount}")),
            Shape::Keyed => (format!(" AND branch = {branch}"), format!("{branch}, {id}, {from}, {to}, {amount}")),
        };
        format!(
            "BEGIN ISOLATION LEVEL REPEATABLE READ;
             UPDATE accounts SET balance = balance - {amount} WHERE id = {from}{at};
             UPDATE accounts SET balance = balance + {amount} WHERE id = {to}{at};
             INSERT INTO transfers VALUES ({row});
             COMMIT"
        )
    }

    /// Transfers present: id → (branch, src, dst, amount).
    fn transfers_sql(self) -> &'static str {
        match self {
            Shape::Keyless => "SELECT id, 0, src, dst, amount FROM transfers",
            Shape::Keyed => "SELECT id, branch, src, dst, amount FROM transfers",
        }
    }

    fn accounts_sql(self) -> &'static str {
        match self {
            Shape::Keyless => "SELECT 0, id, balance FROM accounts",
            Shape::Keyed => "SELECT branch, id, balance FROM accounts",
        }
    }
}

/// One client: transfers between random accounts (of a random branch)
/// through whichever node it reaches, until `stop`.
async fn bank_client(
    shape: Shape,
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
        let Ok(c) = try_connect(port, shape.db()).await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        // Several transfers per connection, until it breaks.
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            seq += 1;
            let id = client * 1_000_000 + seq;
            let branches = shape.branches();
            let branch = branches[next(branches.len() as i64) as usize];
            let (from, to, amount) = (next(ACCOUNTS) + 1, next(ACCOUNTS) + 1, next(50) + 1);
            let sql = shape.transfer(branch, id, from, to, amount);
            match tokio::time::timeout(Duration::from_secs(20), c.batch_execute(&sql)).await {
                Ok(Ok(())) => ledger.acked.push((id, branch, from, to, amount)),
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

/// Reads `sql` through the first node that answers, as numbers.
async fn numbers(all: &[u16], db: &str, sql: &str) -> Vec<Vec<i64>> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        for &p in all {
            match query(p, db, sql).await {
                Ok(rows) => return rows.iter().map(|r| r.iter().map(|v| v.parse().unwrap()).collect()).collect(),
                Err(e) => eprintln!("{sql} through port {p}: {e}"),
            }
        }
        assert!(Instant::now() < deadline, "no node answered {sql} after the nemesis");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn bank_under_faults(shape: Shape) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let rpc: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let net = crate::netfault::Network::start(&rpc);
    let mut nodes = start_cluster_with(&rpc, |i| vec!["--rpc-route".into(), net.routes_of(i, &rpc)]);
    block_on(Duration::from_secs(600), async {
        let all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
        let db = shape.db();
        assert_eq!(run_anywhere(&all, "tessera", &shape.create(), Duration::from_secs(90)).await, Outcome::Done);
        for sql in shape.schema() {
            assert_eq!(run_anywhere(&all, db, &sql, Duration::from_secs(60)).await, Outcome::Done, "{sql}");
        }

        let ports = Arc::new(parking_lot::Mutex::new(all.clone()));
        let stop = Arc::new(AtomicBool::new(false));
        let clients: Vec<_> =
            (1..=4).map(|c| tokio::spawn(bank_client(shape, c, ports.clone(), stop.clone()))).collect();

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
        let transfers = numbers(&all, db, shape.transfers_sql()).await;
        let present: BTreeSet<i64> = transfers.iter().map(|t| t[0]).collect();
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
        let mut net_of: BTreeMap<(i64, i64), i64> = BTreeMap::new();
        for t in &transfers {
            let (branch, src, dst, amount) = (t[1], t[2], t[3], t[4]);
            *net_of.entry((branch, src)).or_default() -= amount;
            *net_of.entry((branch, dst)).or_default() += amount;
        }
        let accounts = numbers(&all, db, shape.accounts_sql()).await;
        assert_eq!(accounts.len(), shape.branches().len() * ACCOUNTS as usize, "accounts: {accounts:?}");
        // (All disagreeing accounts are named, with the transfers of each.)
        let wrong: Vec<String> = accounts
            .iter()
            .filter(|a| a[2] != OPENING + net_of.get(&(a[0], a[1])).copied().unwrap_or(0))
            .map(|a| {
                let touching: Vec<String> = ledger
                    .acked
                    .iter()
                    .filter(|t| (shape == Shape::Keyless || t.1 == a[0]) && (t.2 == a[1] || t.3 == a[1]))
                    .map(|t| format!("{t:?}"))
                    .collect();
                format!("account {}/{}: balance {}; acked {touching:?}", a[0], a[1], a[2])
            })
            .collect();
        assert!(wrong.is_empty(), "accounts disagree with their transfers: {wrong:#?}");
        let total: i64 = accounts.iter().map(|a| a[2]).sum();
        assert_eq!(total, shape.branches().len() as i64 * ACCOUNTS * OPENING);
        eprintln!(
            "bank ({db}) under faults: {} transfers acknowledged, {} of unknown outcome ({} present), {} refused",
            ledger.acked.len(),
            ledger.maybe.len(),
            present.len() - acked.len(),
            ledger.failed
        );
    });
}

#[test]
fn bank_transfers_balance_under_kills_pauses_and_partitions() {
    bank_under_faults(Shape::Keyless);
}

#[test]
fn keyed_bank_transfers_balance_with_partitions_led_anywhere_under_faults() {
    bank_under_faults(Shape::Keyed);
}
