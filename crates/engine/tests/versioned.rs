//! The versioned key-value interface: conditional puts and deletes (the
//! reject rules of RAMCloud) and what a concurrent change does to them.

use std::sync::Arc;

use tessera_engine::tuple::{encode_i64, encode_key, encode_tuple};
use tessera_engine::*;

fn row(id: i64, v: i64) -> Vec<u8> {
    encode_tuple(&[Some(&encode_i64(id)), Some(&encode_i64(v))])
}

fn key(id: i64) -> Vec<u8> {
    encode_key(&[Some(&encode_i64(id))])
}

fn setup() -> (Engine, Arc<Table>) {
    let e = Engine::open(EngineConfig::in_memory()).unwrap();
    let t = e.create_table(TableSpec::new("t", vec![0], IndexKind::Hash)).unwrap();
    (e, t)
}

fn version(e: &Engine, t: &Arc<Table>, id: i64) -> Option<RowVersion> {
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    tx.get_versioned(t, &key(id)).unwrap().map(|(_, v)| v)
}

#[test]
fn puts_and_deletes_hold_their_conditions() {
    let (e, t) = setup();
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    assert_eq!(tx.put(&t, row(1, 10), PutCondition::Present).unwrap(), PutOutcome::Rejected { current: None });
    assert_eq!(tx.put(&t, row(1, 10), PutCondition::Absent).unwrap(), PutOutcome::Written);
    // The transaction's own write has the version OWN.
    let own = tx.get_versioned(&t, &key(1)).unwrap().unwrap().1;
    assert_eq!(own, RowVersion::OWN);
    assert_eq!(tx.put(&t, row(1, 11), PutCondition::Absent).unwrap(), PutOutcome::Rejected { current: Some(own) });
    tx.commit().unwrap();

    let v1 = version(&e, &t, 1).unwrap();
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    let stale = RowVersion(v1.0 + 1000);
    assert_eq!(
        tx.put(&t, row(1, 12), PutCondition::VersionIs(stale)).unwrap(),
        PutOutcome::Rejected { current: Some(v1) }
    );
    assert_eq!(tx.put(&t, row(1, 12), PutCondition::VersionIs(v1)).unwrap(), PutOutcome::Written);
    tx.commit().unwrap();
    let v2 = version(&e, &t, 1).unwrap();
    assert_ne!(v1, v2, "a committed write is a new version");

    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    assert_eq!(
        tx.delete_if(&t, &key(1), PutCondition::VersionIs(v1)).unwrap(),
        PutOutcome::Rejected { current: Some(v2) }
    );
    assert_eq!(tx.delete_if(&t, &key(1), PutCondition::Absent).unwrap(), PutOutcome::Rejected { current: Some(v2) });
    assert_eq!(tx.delete_if(&t, &key(2), PutCondition::Always).unwrap(), PutOutcome::Rejected { current: None });
    assert_eq!(tx.delete_if(&t, &key(1), PutCondition::VersionIs(v2)).unwrap(), PutOutcome::Written);
    tx.commit().unwrap();
    assert_eq!(version(&e, &t, 1), None);
}

/// A condition checked against a view that a concurrent commit has since
/// overtaken is a conflict, not a silent overwrite.
#[test]
fn a_concurrent_change_after_the_check_is_a_conflict() {
    for iso in [Isolation::ReadCommitted, Isolation::Snapshot, Isolation::Serializable] {
        let (e, t) = setup();
        let mut tx = e.begin(Isolation::Snapshot).unwrap();
        tx.insert(&t, row(1, 1)).unwrap();
        tx.commit().unwrap();
        let v = version(&e, &t, 1).unwrap();

        let mut a = e.begin(iso).unwrap();
        assert_eq!(a.get_versioned(&t, &key(1)).unwrap().unwrap().1, v);
        let mut b = e.begin(Isolation::Snapshot).unwrap();
        b.update(&t, row(1, 2)).unwrap();
        b.commit().unwrap();

        // Within the statement that read, every level conflicts.
        let r = a.delete_if(&t, &key(1), PutCondition::VersionIs(v));
        assert!(matches!(r, Err(EngineError::Conflict { .. })), "{iso:?}: {r:?}");
        if iso == Isolation::ReadCommitted {
            // A later statement sees the new version: the condition fails.
            let mut a = e.begin(iso).unwrap();
            a.refresh_snapshot();
            let r = a.delete_if(&t, &key(1), PutCondition::VersionIs(v)).unwrap();
            assert!(matches!(r, PutOutcome::Rejected { current: Some(c) } if c != v), "{r:?}");
        }
    }
}
