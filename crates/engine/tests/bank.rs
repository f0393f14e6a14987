//! The bank: concurrent transfers between accounts must conserve money.
//!
//! Worker threads move random amounts between random accounts (read both
//! balances, write both, retry on retryable conflicts) while an auditor
//! thread repeatedly sums every balance in one transaction. Every audit must
//! see the initial total, no balance may go negative (transfers check the
//! source balance they write), and at the end the total is exact. The
//! durable variant also checkpoints while the transfers run, then reopens
//! the engine and checks that recovery restores exactly the final balances.
//!
//! Runs are time-bounded (a few seconds), so the number of transfers varies;
//! the assertions only concern invariants, never timing.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tessera_engine::tuple::{Tuple, decode_i64, encode_i64, encode_key, encode_tuple};
use tessera_engine::*;

const ACCOUNTS: i64 = 50;
const INITIAL: i64 = 1_000;
const TOTAL: i64 = ACCOUNTS * INITIAL;
const WORKERS: usize = 4;
const RUN_FOR: Duration = Duration::from_millis(2_500);

fn account(id: i64, balance: i64) -> Vec<u8> {
    encode_tuple(&[Some(&encode_i64(id)), Some(&encode_i64(balance))])
}

fn key(id: i64) -> Vec<u8> {
    encode_key(&[Some(&encode_i64(id))])
}

fn decode(r: &[u8]) -> (i64, i64) {
    let t = Tuple::parse(r).expect("row");
    let field = |i| decode_i64(t.field(i).expect("field")).expect("i64");
    (field(0), field(1))
}

fn open_bank(e: &Engine) -> Arc<Table> {
    let t = e.create_table(TableSpec::new("accounts", vec![0], IndexKind::Ordered)).unwrap();
    let mut tx = e.begin(Isolation::Serializable).unwrap();
    for id in 0..ACCOUNTS {
        tx.insert(&t, account(id, INITIAL)).unwrap();
    }
    tx.commit().unwrap();
    t
}

/// Every balance, in account order, read in one transaction.
fn balances(e: &Engine, t: &Arc<Table>, isolation: Isolation) -> Vec<(i64, i64)> {
    let mut tx = e.begin(isolation).unwrap();
    let rows = tx.scan_collect(t, PRIMARY, &KeyRange::all()).unwrap();
    tx.commit().unwrap();
    rows.iter().map(|r| decode(r)).collect()
}

#[derive(Default)]
struct Counters {
    commits: AtomicU64,
    insufficient: AtomicU64,
    ww: AtomicU64,
    read_validation: AtomicU64,
    phantom: AtomicU64,
    /// Writers at every level wait for a row's holder, so two transfers
    /// between the same accounts in opposite directions can deadlock; the
    /// youngest gives up, retryably.
    deadlocks: AtomicU64,
    audits: AtomicU64,
}

impl Counters {
    fn conflicts(&self) -> u64 {
        self.ww.load(Relaxed)
            + self.read_validation.load(Relaxed)
            + self.phantom.load(Relaxed)
            + self.deadlocks.load(Relaxed)
    }
}

enum Transfer {
    Done,
    Insufficient,
}

/// One attempt at moving `amount` from `from` to `to`.
fn try_transfer(
    e: &Engine,
    t: &Arc<Table>,
    isolation: Isolation,
    from: i64,
    to: i64,
    amount: i64,
) -> Result<Transfer, EngineError> {
    let mut tx = e.begin(isolation)?;
    let read = |tx: &mut Transaction, id: i64| -> Result<i64, EngineError> {
        let r = tx.get(t, &key(id))?.expect("accounts are never deleted");
        Ok(decode(&r).1)
    };
    let a = read(&mut tx, from)?;
    let b = read(&mut tx, to)?;
    if a < amount {
        tx.abort();
        return Ok(Transfer::Insufficient);
    }
    assert!(tx.update(t, account(from, a - amount))?, "account {from} vanished");
    assert!(tx.update(t, account(to, b + amount))?, "account {to} vanished");
    tx.commit()?;
    Ok(Transfer::Done)
}

fn worker(e: &Engine, t: &Arc<Table>, isolation: Isolation, seed: u64, stop: &AtomicBool, c: &Counters) {
    let mut rng = StdRng::seed_from_u64(seed);
    while !stop.load(Relaxed) {
        let from = rng.random_range(0..ACCOUNTS);
        let to = (from + rng.random_range(1..ACCOUNTS)) % ACCOUNTS;
        let amount = rng.random_range(1..=200);
        // Retry the same transfer until it goes through (or time is up).
        while !stop.load(Relaxed) {
            match try_transfer(e, t, isolation, from, to, amount) {
                Ok(Transfer::Done) => {
                    c.commits.fetch_add(1, Relaxed);
                    break;
                }
                Ok(Transfer::Insufficient) => {
                    c.insufficient.fetch_add(1, Relaxed);
                    break;
                }
                Err(EngineError::Conflict { reason }) => {
                    match reason {
                        ConflictReason::WriteWrite => &c.ww,
                        ConflictReason::ReadValidation => &c.read_validation,
                        ConflictReason::Phantom => &c.phantom,
                        ConflictReason::PartitionChanged => panic!("no partition is split here"),
                    }
                    .fetch_add(1, Relaxed);
                    std::thread::yield_now();
                }
                Err(EngineError::Deadlock) => {
                    c.deadlocks.fetch_add(1, Relaxed);
                    std::thread::yield_now();
                }
                Err(e) => panic!("transfer failed with a non-retryable error: {e}"),
            }
        }
    }
}

/// Sums all balances in one transaction, over and over, until told to stop.
fn auditor(e: &Engine, t: &Arc<Table>, isolation: Isolation, stop: &AtomicBool, c: &Counters) {
    while !stop.load(Relaxed) {
        let rows = balances(e, t, isolation);
        assert_eq!(rows.len(), ACCOUNTS as usize, "an audit saw the wrong number of accounts");
        let total: i64 = rows.iter().map(|(_, b)| b).sum();
        assert_eq!(total, TOTAL, "an audit ({isolation:?}) saw money appear or vanish: {rows:?}");
        assert!(rows.iter().all(|(_, b)| *b >= 0), "an audit saw a negative balance: {rows:?}");
        c.audits.fetch_add(1, Relaxed);
    }
}

/// Runs the workers and the auditor for `RUN_FOR`; `during` runs on the
/// calling thread meanwhile (until the deadline).
fn run_bank(e: &Engine, t: &Arc<Table>, isolation: Isolation, mut during: impl FnMut()) -> Counters {
    let counters = Counters::default();
    let stop = AtomicBool::new(false);
    let start = Barrier::new(WORKERS + 2);
    let began = Instant::now();
    std::thread::scope(|s| {
        for i in 0..WORKERS {
            let (stop, counters, start) = (&stop, &counters, &start);
            s.spawn(move || {
                start.wait();
                worker(e, t, isolation, 0xBA4C + i as u64, stop, counters)
            });
        }
        s.spawn(|| {
            start.wait();
            auditor(e, t, isolation, &stop, &counters)
        });
        start.wait();
        // If `during` panics (say, a failed checkpoint), still stop the threads, or the scope would never end.
        struct StopOnDrop<'a>(&'a AtomicBool);
        impl Drop for StopOnDrop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Relaxed);
            }
        }
        let _stop = StopOnDrop(&stop);
        while began.elapsed() < RUN_FOR {
            during();
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    println!(
        "{isolation:?}: {} transfers committed, {} conflicts (write-write {}, read validation {}, phantom {}, deadlock {}), \
         {} refused for insufficient funds, {} audits, in {:?}",
        counters.commits.load(Relaxed),
        counters.conflicts(),
        counters.ww.load(Relaxed),
        counters.read_validation.load(Relaxed),
        counters.phantom.load(Relaxed),
        counters.deadlocks.load(Relaxed),
        counters.insufficient.load(Relaxed),
        counters.audits.load(Relaxed),
        began.elapsed(),
    );
    counters
}

fn check_final(e: &Engine, t: &Arc<Table>, c: &Counters) -> Vec<(i64, i64)> {
    assert!(c.commits.load(Relaxed) > 0, "no transfer committed");
    assert!(c.audits.load(Relaxed) > 0, "no audit completed");
    let rows = balances(e, t, Isolation::Serializable);
    assert_eq!(rows.len(), ACCOUNTS as usize);
    assert_eq!(rows.iter().map(|(_, b)| b).sum::<i64>(), TOTAL);
    assert!(rows.iter().all(|(_, b)| *b >= 0), "negative balance: {rows:?}");
    rows
}

#[test]
fn bank_serializable() {
    let e = Engine::open(EngineConfig::in_memory()).unwrap();
    let t = open_bank(&e);
    let c = run_bank(&e, &t, Isolation::Serializable, || {});
    check_final(&e, &t, &c);
}

/// Snapshot isolation conserves money too: each transfer writes both rows
/// it read, so any two overlapping transfers that share an account conflict
/// (first writer wins), and write skew cannot occur.
#[test]
fn bank_snapshot() {
    let e = Engine::open(EngineConfig::in_memory()).unwrap();
    let t = open_bank(&e);
    let c = run_bank(&e, &t, Isolation::Snapshot, || {});
    check_final(&e, &t, &c);
}

/// Durable engine with synchronous commits and checkpoints taken while the
/// transfers run; after a clean close, recovery must restore exactly the
/// final balances.
#[test]
fn bank_durable_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let e = Engine::open(EngineConfig::durable(dir.path())).unwrap();
        let t = open_bank(&e);
        let mut checkpoints = 0;
        let mut last = Instant::now();
        let c = run_bank(&e, &t, Isolation::Serializable, || {
            if last.elapsed() >= Duration::from_millis(700) {
                e.checkpoint().expect("checkpoint during transfers");
                checkpoints += 1;
                last = Instant::now();
            }
        });
        println!("durable: {checkpoints} checkpoints during the run");
        let rows = check_final(&e, &t, &c);
        e.close().unwrap();
        rows
    };
    let e = Engine::open(EngineConfig::durable(dir.path())).unwrap();
    let t = e.table("accounts").expect("the table survives a restart");
    let after = balances(&e, &t, Isolation::Serializable);
    assert_eq!(after.iter().map(|(_, b)| b).sum::<i64>(), TOTAL);
    assert_eq!(after, before, "recovery did not restore the final balances");
    // And the recovered engine keeps working.
    let mut tx = e.begin(Isolation::Serializable).unwrap();
    let (a, b) = (decode(&tx.get(&t, &key(0)).unwrap().unwrap()).1, decode(&tx.get(&t, &key(1)).unwrap().unwrap()).1);
    tx.update(&t, account(0, a + b)).unwrap();
    tx.update(&t, account(1, 0)).unwrap();
    tx.commit().unwrap();
    assert_eq!(balances(&e, &t, Isolation::Snapshot).iter().map(|(_, b)| b).sum::<i64>(), TOTAL);
}
