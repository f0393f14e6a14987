//! Checkpoints: data + delta files, merging, DDL across checkpoints, and
//! recovery from checkpoint plus log tail.

use std::sync::Arc;

use tessera_engine::tuple::{encode_i64, encode_key, encode_tuple};
use tessera_engine::*;

fn row(id: i64, v: i64) -> Vec<u8> {
    encode_tuple(&[Some(&encode_i64(id)), Some(&encode_i64(v)), Some(&[7u8; 40])])
}
fn key(id: i64) -> Vec<u8> {
    encode_key(&[Some(&encode_i64(id))])
}

fn config(dir: &std::path::Path) -> EngineConfig {
    let mut c = EngineConfig::durable(dir);
    c.checkpoint_log_bytes = 0; // checkpoints only when the test asks
    c.checkpoint_merge_files = 3;
    c.segment_bytes = 64 << 10;
    c
}

fn upsert_all(e: &Engine, t: &Arc<Table>, n: i64, v: i64) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(50) {
        let mut tx = e.begin(Isolation::Snapshot).unwrap();
        for &i in chunk {
            if !tx.update(t, row(i, v)).unwrap() {
                tx.insert(t, row(i, v)).unwrap();
            }
        }
        tx.commit().unwrap();
    }
}

fn all_rows(e: &Engine, t: &Arc<Table>) -> Vec<Vec<u8>> {
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    tx.scan_collect(t, PRIMARY, &KeyRange::all()).unwrap()
}

#[test]
fn checkpoint_files_track_live_data_and_truncate_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(config(dir.path())).unwrap();
    let t = e.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered)).unwrap();
    let mut sizes = Vec::new();
    for round in 0..12 {
        upsert_all(&e, &t, 500, round);
        let s = e.checkpoint().unwrap().unwrap();
        sizes.push(s.total_bytes);
        assert!(s.data_files <= 4, "merge keeps the file count bounded: {s:?}");
    }
    // 500 live rows of ~80 bytes: the files must not grow with the number of updates.
    let max = *sizes.iter().max().unwrap();
    assert!(max < 500 * 100 * 5, "checkpoint bytes {sizes:?}");
    assert!(sizes.last().unwrap() < &(500 * 100 * 3), "checkpoint bytes {sizes:?}");
    // Old log segments are gone: what is left is the tail since the last checkpoint.
    let log = e.log().unwrap();
    assert!(log.start_lsn() > 0, "log truncated");
    drop(e);
    let e = Engine::open(config(dir.path())).unwrap();
    let t = e.table("t").unwrap();
    assert_eq!(all_rows(&e, &t), (0..500).map(|i| row(i, 11)).collect::<Vec<_>>());
}

#[test]
fn recovery_combines_checkpoint_deltas_and_log_tail() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(config(dir.path())).unwrap();
        let t = e.create_table(TableSpec::new("t", vec![0], IndexKind::Hash)).unwrap();
        upsert_all(&e, &t, 200, 1);
        e.checkpoint().unwrap();
        // Deletes of checkpointed rows become delta entries.
        let mut tx = e.begin(Isolation::Snapshot).unwrap();
        for i in 0..50 {
            assert!(tx.delete(&t, &key(i)).unwrap());
        }
        tx.commit().unwrap();
        upsert_all(&e, &t, 100, 2); // re-inserts 0..50, updates 50..100
        e.checkpoint().unwrap();
        // A tail that only the log holds.
        let mut tx = e.begin(Isolation::Snapshot).unwrap();
        tx.delete(&t, &key(150)).unwrap();
        tx.insert(&t, row(999, 3)).unwrap();
        tx.commit().unwrap();
    }
    let e = Engine::open(config(dir.path())).unwrap();
    let t = e.table("t").unwrap();
    let mut rows = all_rows(&e, &t);
    rows.sort();
    let mut expect: Vec<_> =
        (0..100).map(|i| row(i, 2)).chain((100..200).filter(|&i| i != 150).map(|i| row(i, 1))).collect();
    expect.push(row(999, 3));
    expect.sort();
    assert_eq!(rows, expect);
}

#[test]
fn ddl_survives_checkpoints_and_restarts() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(config(dir.path())).unwrap();
        let a = e.create_table(TableSpec::new("a", vec![0], IndexKind::Ordered)).unwrap();
        let b = e.create_table(TableSpec::new("b", vec![0], IndexKind::Ordered)).unwrap();
        upsert_all(&e, &a, 100, 5);
        upsert_all(&e, &b, 100, 6);
        e.checkpoint().unwrap();
        e.create_index("a", IndexSpec::new("a_v", IndexKind::Ordered, false, vec![1])).unwrap();
        e.drop_table("b").unwrap();
        let c = e.create_table(TableSpec::new("c", vec![0], IndexKind::Hash)).unwrap();
        upsert_all(&e, &c, 10, 7);
        e.checkpoint().unwrap();
        upsert_all(&e, &a, 10, 8);
    }
    let e = Engine::open(config(dir.path())).unwrap();
    let names: Vec<_> = e.tables().iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, vec!["a", "c"]);
    let a = e.table("a").unwrap();
    let ix = a.spec().index_by_name("a_v").unwrap().id;
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    let fives = tx.scan_collect(&a, ix, &KeyRange::point(encode_key(&[Some(&encode_i64(5))]))).unwrap();
    assert_eq!(fives.len(), 90);
    let eights = tx.scan_collect(&a, ix, &KeyRange::point(encode_key(&[Some(&encode_i64(8))]))).unwrap();
    assert_eq!(eights.len(), 10);
    // A new table after restart does not reuse a dropped table's id.
    drop(tx);
    let d = e.create_table(TableSpec::new("d", vec![0], IndexKind::Hash)).unwrap();
    assert!(d.id > e.table("c").unwrap().id);
}

#[test]
fn unique_secondary_index_is_enforced_and_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(config(dir.path())).unwrap();
        let spec = TableSpec::new("u", vec![0], IndexKind::Hash).with_index(IndexSpec::new(
            "u_v",
            IndexKind::Hash,
            true,
            vec![1],
        ));
        let t = e.create_table(spec).unwrap();
        let mut tx = e.begin(Isolation::Snapshot).unwrap();
        tx.insert(&t, row(1, 10)).unwrap();
        tx.commit().unwrap();
        let mut tx = e.begin(Isolation::Snapshot).unwrap();
        let err = tx.insert(&t, row(2, 10)).unwrap_err();
        assert!(matches!(err, EngineError::UniqueViolation { .. }), "{err}");
        drop(tx);
        // Moving the value away frees it for another row.
        let mut tx = e.begin(Isolation::Snapshot).unwrap();
        tx.update(&t, row(1, 11)).unwrap();
        tx.insert(&t, row(2, 10)).unwrap();
        tx.commit().unwrap();
        // A unique index cannot be created over duplicates.
        let mut tx = e.begin(Isolation::Snapshot).unwrap();
        tx.insert(&t, row(3, 11)).unwrap_err();
        drop(tx);
        let err = e.create_index("u", IndexSpec::new("u_blob", IndexKind::Ordered, true, vec![2])).unwrap_err();
        assert!(matches!(err, EngineError::UniqueViolation { .. }), "{err}");
    }
    let e = Engine::open(config(dir.path())).unwrap();
    let t = e.table("u").unwrap();
    assert!(t.spec().index_by_name("u_blob").is_none());
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    assert!(matches!(tx.insert(&t, row(4, 10)), Err(EngineError::UniqueViolation { .. })));
}

#[test]
fn truncate_empties_a_table_durably_and_keeps_its_definition() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(config(dir.path())).unwrap();
        let spec = TableSpec::new("t", vec![0], IndexKind::Ordered).with_index(IndexSpec::new(
            "t_v",
            IndexKind::Ordered,
            false,
            vec![1],
        ));
        let t = e.create_table(spec).unwrap();
        let keep = e.create_table(TableSpec::new("keep", vec![0], IndexKind::Hash)).unwrap();
        upsert_all(&e, &t, 100, 1);
        upsert_all(&e, &keep, 10, 1);
        e.checkpoint().unwrap();
        upsert_all(&e, &t, 20, 2);
        let t = e.truncate_table("t").unwrap();
        assert!(all_rows(&e, &t).is_empty());
        upsert_all(&e, &t, 5, 3);
        e.checkpoint().unwrap();
        upsert_all(&e, &t, 7, 4); // the log tail after the checkpoint
    }
    for _ in 0..2 {
        let e = Engine::open(config(dir.path())).unwrap();
        let t = e.table("t").unwrap();
        assert_eq!(all_rows(&e, &t), (0..7).map(|i| row(i, 4)).collect::<Vec<_>>());
        let ix = t.spec().index_by_name("t_v").unwrap().id;
        let mut tx = e.begin(Isolation::Snapshot).unwrap();
        assert_eq!(tx.scan_collect(&t, ix, &KeyRange::point(encode_key(&[Some(&encode_i64(4))]))).unwrap().len(), 7);
        drop(tx);
        assert_eq!(all_rows(&e, &e.table("keep").unwrap()).len(), 10);
        e.checkpoint().unwrap();
    }
}

#[test]
fn table_statistics_follow_commits_and_survive_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let row_len = row(0, 0).len() as i64;
    {
        let e = Engine::open(config(dir.path())).unwrap();
        let t = e.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered)).unwrap();
        upsert_all(&e, &t, 100, 1);
        e.checkpoint().unwrap();
        upsert_all(&e, &t, 50, 2);
        let mut tx = e.begin(Isolation::Snapshot).unwrap();
        for i in 90..100 {
            tx.delete(&t, &key(i)).unwrap();
        }
        tx.insert(&t, row(500, 1)).unwrap();
        tx.delete(&t, &key(500)).unwrap(); // nets out
        tx.commit().unwrap();
        let mut aborted = e.begin(Isolation::Snapshot).unwrap();
        aborted.insert(&t, row(600, 1)).unwrap();
        aborted.abort();
        assert_eq!(t.stats(), TableStats { rows: 90, bytes: 90 * row_len });
    }
    let e = Engine::open(config(dir.path())).unwrap();
    let t = e.table("t").unwrap();
    assert_eq!(t.stats(), TableStats { rows: 90, bytes: 90 * row_len });
    let t = e.truncate_table("t").unwrap();
    assert_eq!(t.stats(), TableStats::default());
}
