//! A randomized model test: long runs of random transactions against the
//! engine and against a plain `BTreeMap`, compared after every transaction.
//! Transactions run one after another (the concurrent behaviour has its own
//! tests), but they insert, update, delete, roll back to savepoints, abort,
//! change indexed columns, and the engine is checkpointed, garbage
//! collected and reopened in between, so index maintenance, GC, checkpoint
//! merges and recovery all get exercised against a trivially correct oracle.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tessera_engine::tuple::{Tuple, decode_i64, encode_i64, encode_key, encode_tuple};
use tessera_engine::*;

type Model = BTreeMap<i64, (i64, String)>;

fn row(id: i64, v: i64, s: &str) -> Vec<u8> {
    encode_tuple(&[Some(&encode_i64(id)), Some(&encode_i64(v)), Some(s.as_bytes())])
}
fn key(id: i64) -> Vec<u8> {
    encode_key(&[Some(&encode_i64(id))])
}
fn decode(r: &[u8]) -> (i64, (i64, String)) {
    let t = Tuple::parse(r).unwrap();
    (
        decode_i64(t.field(0).unwrap()).unwrap(),
        (decode_i64(t.field(1).unwrap()).unwrap(), String::from_utf8(t.field(2).unwrap().to_vec()).unwrap()),
    )
}

fn config(dir: &std::path::Path) -> EngineConfig {
    let mut c = EngineConfig::durable(dir);
    c.checkpoint_log_bytes = 0;
    c.checkpoint_merge_files = 2;
    c.segment_bytes = 8 << 10;
    c
}

fn setup(e: &Engine) {
    let spec = TableSpec::new("t", vec![0], IndexKind::Ordered)
        .with_index(IndexSpec::new("t_v", IndexKind::Ordered, false, vec![1]))
        .with_index(IndexSpec::new("t_s", IndexKind::Hash, true, vec![2]));
    e.create_table(spec).unwrap();
}

/// Checks every access path of the engine against the model.
fn check(e: &Engine, model: &Model, context: &str) {
    let t = e.table("t").unwrap();
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    let all: Model = tx.scan_collect(&t, PRIMARY, &KeyRange::all()).unwrap().iter().map(|r| decode(r)).collect();
    assert_eq!(&all, model, "{context}: full scan");
    let bytes: usize = model.iter().map(|(id, (v, s))| row(*id, *v, s).len()).sum();
    assert_eq!(t.stats(), TableStats { rows: model.len() as i64, bytes: bytes as i64 }, "{context}: statistics");
    let v_ix = t.spec().index_by_name("t_v").unwrap().id;
    let s_ix = t.spec().index_by_name("t_s").unwrap().id;
    for v in 0..5 {
        let mut got: Vec<i64> = tx
            .scan_collect(&t, v_ix, &KeyRange::point(encode_key(&[Some(&encode_i64(v))])))
            .unwrap()
            .iter()
            .map(|r| decode(r).0)
            .collect();
        got.sort();
        let want: Vec<i64> = model.iter().filter(|(_, (mv, _))| *mv == v).map(|(k, _)| *k).collect();
        assert_eq!(got, want, "{context}: secondary index t_v = {v}");
    }
    for (id, (_, s)) in model {
        let got = tx.scan_collect(&t, s_ix, &KeyRange::point(encode_key(&[Some(s.as_bytes())]))).unwrap();
        assert_eq!(got.len(), 1, "{context}: unique index t_s = {s}");
        assert_eq!(decode(&got[0]).0, *id, "{context}: unique index t_s = {s}");
    }
    for id in 0..40 {
        let got = tx.get(&t, &key(id)).unwrap().map(|r| decode(&r).1);
        assert_eq!(got.as_ref(), model.get(&id), "{context}: get {id}");
    }
    let lo = encode_key(&[Some(&encode_i64(10))]);
    let hi = encode_key(&[Some(&encode_i64(20))]);
    let range = KeyRange { lower: std::ops::Bound::Included(lo), upper: std::ops::Bound::Excluded(hi) };
    let got: Vec<i64> = tx.scan_collect(&t, PRIMARY, &range).unwrap().iter().map(|r| decode(r).0).collect();
    let want: Vec<i64> = model.range(10..20).map(|(k, _)| *k).collect();
    assert_eq!(got, want, "{context}: primary range");
}

fn run(seed: u64, steps: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut engine = Engine::open(config(dir.path())).unwrap();
    setup(&engine);
    let mut model = Model::new();
    let mut unique_counter = 0u64;
    let (mut checkpoints, mut reopens, mut commits) = (0, 0, 0);
    for step in 0..steps {
        let t: Arc<Table> = engine.table("t").unwrap();
        let level = [Isolation::ReadCommitted, Isolation::Snapshot, Isolation::RepeatableRead, Isolation::Serializable]
            [rng.random_range(0..4)];
        let mut tx = engine.begin(level).unwrap();
        let mut pending = model.clone();
        let mut sp: Option<(Savepoint, Model)> = None;
        for _ in 0..rng.random_range(1..8) {
            tx.refresh_snapshot();
            let id = rng.random_range(0..40);
            let v = rng.random_range(0..5);
            unique_counter += 1;
            let s = format!("s{unique_counter}");
            match rng.random_range(0..10) {
                0..=2 => {
                    let r = tx.insert(&t, row(id, v, &s));
                    match pending.contains_key(&id) {
                        true => assert!(matches!(r, Err(EngineError::UniqueViolation { .. })), "step {step}: {r:?}"),
                        false => {
                            r.unwrap();
                            pending.insert(id, (v, s));
                        }
                    }
                }
                3..=5 => {
                    let written = tx.update(&t, row(id, v, &s)).unwrap();
                    assert_eq!(written, pending.contains_key(&id), "step {step}: update {id}");
                    if written {
                        pending.insert(id, (v, s));
                    }
                }
                6 => {
                    let deleted = tx.delete(&t, &key(id)).unwrap();
                    assert_eq!(deleted, pending.remove(&id).is_some(), "step {step}: delete {id}");
                }
                7 => {
                    // A unique violation on the secondary index: reuse another row's s.
                    if let Some((&other, (_, taken))) = pending.iter().find(|(k, _)| **k != id) {
                        let taken = taken.clone();
                        let before = tx.savepoint();
                        let r = if pending.contains_key(&id) {
                            tx.update(&t, row(id, v, &taken)).map(|_| ())
                        } else {
                            tx.insert(&t, row(id, v, &taken))
                        };
                        assert!(matches!(r, Err(EngineError::UniqueViolation { .. })), "step {step}: {other} {r:?}");
                        tx.rollback_to(before).unwrap();
                    }
                }
                8 => {
                    sp = Some((tx.savepoint(), pending.clone()));
                }
                _ => {
                    if let Some((point, saved)) = sp.take() {
                        tx.rollback_to(point).unwrap();
                        pending = saved;
                    }
                }
            }
        }
        if rng.random_range(0..6) == 0 {
            tx.abort();
        } else {
            tx.commit().unwrap();
            model = pending;
            commits += 1;
        }
        match rng.random_range(0..40) {
            0 => {
                engine.checkpoint().unwrap();
                checkpoints += 1;
            }
            1 => engine.collect_garbage(),
            2 => {
                drop(t);
                drop(engine);
                engine = Engine::open(config(dir.path())).unwrap();
                reopens += 1;
            }
            _ => {}
        }
        if step % 25 == 0 {
            check(&engine, &model, &format!("seed {seed} step {step}"));
        }
    }
    check(&engine, &model, &format!("seed {seed} end"));
    assert!(checkpoints > 0 && reopens > 0 && commits > steps / 2, "seed {seed}: {checkpoints} {reopens} {commits}");
    assert!(!model.is_empty(), "seed {seed}: the run should leave rows behind");
    drop(engine);
    let engine = Engine::open(config(dir.path())).unwrap();
    check(&engine, &model, &format!("seed {seed} after reopen"));
}

/// `MODEL_SEEDS=500 cargo test --release --test model` runs a longer hunt.
#[test]
fn random_transactions_match_the_model() {
    let seeds: u64 = std::env::var("MODEL_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(8);
    for seed in 1..=seeds {
        run(seed, 600);
    }
}
