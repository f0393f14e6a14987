use std::sync::Arc;

use tessera_engine::tuple::{encode_i64, encode_key, encode_tuple};
use tessera_engine::*;

fn row(id: i64, v: &str) -> Vec<u8> {
    encode_tuple(&[Some(&encode_i64(id)), Some(v.as_bytes())])
}
fn key(id: i64) -> Vec<u8> {
    encode_key(&[Some(&encode_i64(id))])
}

fn setup(e: &Engine) -> Arc<Table> {
    e.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered).with_index(IndexSpec::new(
        "t_v",
        IndexKind::Hash,
        false,
        vec![1],
    )))
    .unwrap()
}

#[test]
fn insert_read_update_delete() {
    let e = Engine::open(EngineConfig::in_memory()).unwrap();
    let t = setup(&e);
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    tx.insert(&t, row(1, "a")).unwrap();
    tx.insert(&t, row(2, "b")).unwrap();
    assert!(matches!(tx.insert(&t, row(1, "x")), Err(EngineError::UniqueViolation { .. })));
    tx.commit().unwrap();

    let mut r = e.begin(Isolation::Snapshot).unwrap();
    assert_eq!(r.get(&t, &key(1)).unwrap(), Some(row(1, "a")));

    let mut w = e.begin(Isolation::Snapshot).unwrap();
    assert!(w.update(&t, row(1, "c")).unwrap());
    assert!(w.delete(&t, &key(2)).unwrap());
    assert_eq!(w.get(&t, &key(1)).unwrap(), Some(row(1, "c")));
    assert_eq!(w.get(&t, &key(2)).unwrap(), None);
    w.commit().unwrap();

    // The old snapshot still sees the old state.
    assert_eq!(r.get(&t, &key(1)).unwrap(), Some(row(1, "a")));
    assert_eq!(r.get(&t, &key(2)).unwrap(), Some(row(2, "b")));
    r.commit().unwrap();

    let mut n = e.begin(Isolation::Snapshot).unwrap();
    assert_eq!(n.scan_collect(&t, PRIMARY, &KeyRange::all()).unwrap(), vec![row(1, "c")]);
    let by_v = n.scan_collect(&t, 1, &KeyRange::point(encode_key(&[Some(b"c")]))).unwrap();
    assert_eq!(by_v, vec![row(1, "c")]);
    assert!(n.scan_collect(&t, 1, &KeyRange::point(encode_key(&[Some(b"a")]))).unwrap().is_empty());
    n.commit().unwrap();
}

#[test]
fn first_writer_wins_and_abort_restores() {
    // `b` waits for `a` on the same thread: it gives up at the lock timeout.
    let mut config = EngineConfig::in_memory();
    config.lock_timeout = std::time::Duration::from_millis(200);
    let e = Engine::open(config).unwrap();
    let t = setup(&e);
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    tx.insert(&t, row(1, "a")).unwrap();
    tx.commit().unwrap();

    let mut a = e.begin(Isolation::Snapshot).unwrap();
    let mut b = e.begin(Isolation::Snapshot).unwrap();
    assert!(a.update(&t, row(1, "A")).unwrap());
    let err = b.update(&t, row(1, "B")).unwrap_err();
    assert!(err.is_retryable(), "{err}");
    a.abort();
    drop(b);
    let mut c = e.begin(Isolation::Snapshot).unwrap();
    assert_eq!(c.get(&t, &key(1)).unwrap(), Some(row(1, "a")));
    assert!(c.update(&t, row(1, "C")).unwrap());
    c.commit().unwrap();
}

#[test]
fn durable_restart_and_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(EngineConfig::durable(dir.path())).unwrap();
        let t = setup(&e);
        for i in 0..100 {
            let mut tx = e.begin(Isolation::Snapshot).unwrap();
            tx.insert(&t, row(i, "v")).unwrap();
            tx.commit().unwrap();
        }
        e.checkpoint().unwrap();
        for i in 0..50 {
            let mut tx = e.begin(Isolation::Snapshot).unwrap();
            tx.update(&t, row(i, "w")).unwrap();
            tx.delete(&t, &key(i + 50)).unwrap();
            tx.commit().unwrap();
        }
        e.checkpoint().unwrap();
        let mut tx = e.begin(Isolation::Snapshot).unwrap();
        tx.insert(&t, row(1000, "tail")).unwrap();
        tx.commit().unwrap();
    }
    let e = Engine::open(EngineConfig::durable(dir.path())).unwrap();
    let t = e.table("t").unwrap();
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    let rows = tx.scan_collect(&t, PRIMARY, &KeyRange::all()).unwrap();
    let mut expect: Vec<_> = (0..50).map(|i| row(i, "w")).collect();
    expect.push(row(1000, "tail"));
    assert_eq!(rows, expect);
    assert_eq!(tx.scan_collect(&t, 1, &KeyRange::point(encode_key(&[Some(b"w")]))).unwrap().len(), 50);
}

#[test]
fn a_data_directory_is_used_by_one_engine_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let first = Engine::open(EngineConfig::durable(dir.path())).unwrap();
    let err = Engine::open(EngineConfig::durable(dir.path())).err().expect("second open must fail");
    assert!(matches!(err, EngineError::DataDirInUse(_)), "{err}");
    assert!(err.to_string().contains("in use"), "{err}");
    drop(first);
    Engine::open(EngineConfig::durable(dir.path())).unwrap();
}

/// `match_tables` makes an engine's tables exactly the given ones: it
/// creates what is missing, drops extra indexes and tables, keeps rows of
/// the tables it keeps and leaves internal (`__…`) tables alone; a second
/// call changes nothing.
#[test]
fn match_tables_makes_the_tables_exactly_these() {
    let e = Engine::open(EngineConfig::in_memory()).unwrap();
    let t = setup(&e);
    e.create_table(TableSpec::new("gone", vec![0], IndexKind::Hash)).unwrap();
    e.create_table(TableSpec::new("__internal", vec![0], IndexKind::Hash)).unwrap();
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    tx.insert(&t, row(1, "a")).unwrap();
    tx.commit().unwrap();

    let want = vec![
        TableSpec::new("t", vec![0], IndexKind::Ordered).with_index(IndexSpec::new(
            "t_w",
            IndexKind::Ordered,
            false,
            vec![1],
        )),
        TableSpec::new("new", vec![0], IndexKind::Ordered),
    ];
    let changed = e.match_tables(&want).unwrap();
    assert_eq!(changed.len(), 4, "{changed:?}");
    let mut names: Vec<String> = e.tables().iter().map(|s| s.name.clone()).collect();
    names.sort();
    assert_eq!(names, ["__internal", "new", "t"]);
    let spec = e.table("t").unwrap().spec();
    assert!(spec.index_by_name("t_v").is_none() && spec.index_by_name("t_w").is_some());
    let mut r = e.begin(Isolation::Snapshot).unwrap();
    assert_eq!(r.get(&e.table("t").unwrap(), &key(1)).unwrap(), Some(row(1, "a")));
    assert!(e.match_tables(&want).unwrap().is_empty(), "a second call changes nothing");
}
