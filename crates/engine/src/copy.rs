//! Copying a table's rows into a new table of the same engine: how a table
//! is rebuilt under a new primary key (ALTER TABLE … ADD PRIMARY KEY).
//!
//! The copy is the engine's, not its caller's, so that it runs where the
//! rows are: on a cluster a partition led by another node is rebuilt by
//! that node, which receives one request naming the two tables and
//! replicates the result through its group like any other commit.

use std::sync::Arc;

use crate::Engine;
use crate::error::{EngineError, Result};
use crate::schema::{PRIMARY, TableSpec};
use crate::table::{Table, index_key};
use crate::txn::{Isolation, KeyRange};

/// Rows above which a copy runs as several transactions at once.
const PARALLEL_COPY_ROWS: usize = 100_000;
/// At most this many transactions (threads) copy at once.
const MAX_COPY_THREADS: usize = 4;

impl Engine {
    /// Creates table `to` and copies every row of table `from` (as of one
    /// snapshot) into it. Refused, with `to` dropped again, when a row has
    /// a NULL in a field of `to`'s primary key ([`EngineError::NullInKey`])
    /// or two rows share a key ([`EngineError::UniqueViolation`]).
    ///
    /// Nobody else writes `to` while this runs (its caller has not made it
    /// visible yet), so a large table is copied by several transactions at
    /// once, each over a contiguous run of the rows; a conflict between
    /// them can only come from two equal keys.
    pub fn copy_table(&self, from: &str, to: TableSpec) -> Result<Arc<Table>> {
        let old = self.table(from).ok_or_else(|| EngineError::NoSuchTable(from.to_string()))?;
        let key_fields = to.primary.columns.clone();
        let (name, index) = (to.name.clone(), to.primary.name.clone());
        let new = self.create_table(to)?;
        let copied = (|| {
            let (mut rows, mut bad) = (Vec::new(), None);
            let mut read = self.begin(Isolation::Snapshot)?;
            read.scan(&old, PRIMARY, &KeyRange::all(), |r| {
                match index_key(&key_fields, r) {
                    Ok((_, false)) => rows.push(r.to_vec()),
                    Ok((_, true)) => bad = Some(EngineError::NullInKey { table: name.clone() }),
                    Err(e) => bad = Some(e),
                }
                bad.is_none()
            })?;
            read.abort();
            if let Some(e) = bad {
                return Err(e);
            }
            self.insert_all(&new, rows, &index)
        })();
        if let Err(e) = copied {
            if let Err(dropped) = self.drop_table(&name) {
                tracing::warn!(table = name, "a table copy that failed left its new table: {dropped}");
            }
            return Err(e);
        }
        Ok(new)
    }

    /// Inserts `rows` into `table`, which nobody else writes.
    fn insert_all(&self, table: &Arc<Table>, mut rows: Vec<Vec<u8>>, index: &str) -> Result<()> {
        let insert_part = |part: Vec<Vec<u8>>| -> Result<()> {
            let mut txn = self.begin(Isolation::Snapshot)?;
            for r in part {
                txn.insert(table, r).map_err(|e| match e {
                    // Only two equal keys make the parts collide.
                    EngineError::Conflict { .. } | EngineError::Deadlock => {
                        EngineError::UniqueViolation { table: table.name().to_string(), index: index.to_string() }
                    }
                    other => other,
                })?;
            }
            txn.commit()?;
            Ok(())
        };
        let threads = if rows.len() < PARALLEL_COPY_ROWS {
            1
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_COPY_THREADS)
        };
        if threads == 1 {
            return insert_part(rows);
        }
        let size = rows.len().div_ceil(threads);
        let mut parts = Vec::with_capacity(threads);
        while rows.len() > size {
            parts.push(rows.split_off(rows.len() - size));
        }
        parts.push(rows);
        let insert_part = &insert_part;
        std::thread::scope(|s| {
            let parts: Vec<_> = parts.into_iter().map(|p| s.spawn(move || insert_part(p))).collect();
            let mut errors: Vec<EngineError> = parts
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(EngineError::Internal("a table copy thread panicked".into()))))
                .filter_map(|r| r.err())
                .collect();
            // The most telling error: a duplicate key over whatever the
            // other parts ran into.
            errors.sort_by_key(|e| !matches!(e, EngineError::UniqueViolation { .. }));
            errors.into_iter().next().map_or(Ok(()), Err)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EngineConfig;
    use crate::schema::IndexKind;
    use crate::tuple::{encode_tuple, push_key_field};

    fn row(id: i64, v: Option<i64>) -> Vec<u8> {
        let v = v.map(|v| v.to_be_bytes());
        encode_tuple(&[Some(&id.to_be_bytes()), v.as_ref().map(|b| &b[..])])
    }

    fn engine_with(rows: &[(i64, Option<i64>)]) -> Engine {
        let e = Engine::open(EngineConfig::in_memory()).unwrap();
        let t = e.create_table(TableSpec::new("old", vec![0], IndexKind::Hash)).unwrap();
        let mut txn = e.begin(Isolation::Snapshot).unwrap();
        for (id, v) in rows {
            txn.insert(&t, row(*id, *v)).unwrap();
        }
        txn.commit().unwrap();
        e
    }

    fn count(e: &Engine, table: &str) -> usize {
        let t = e.table(table).unwrap();
        let mut n = 0;
        e.begin(Isolation::Snapshot)
            .unwrap()
            .scan(&t, PRIMARY, &KeyRange::all(), |_| {
                n += 1;
                true
            })
            .unwrap();
        n
    }

    #[test]
    fn rows_are_copied_under_the_new_key() {
        let e = engine_with(&[(1, Some(10)), (2, Some(20)), (3, Some(30))]);
        let new = e.copy_table("old", TableSpec::new("new", vec![1], IndexKind::Ordered)).unwrap();
        assert_eq!(count(&e, "new"), 3);
        let mut key = Vec::new();
        push_key_field(&mut key, Some(&20i64.to_be_bytes()));
        let got = e.begin(Isolation::Snapshot).unwrap().get(&new, &key).unwrap();
        assert_eq!(got, Some(row(2, Some(20))), "found by the new key");
    }

    #[test]
    fn a_duplicate_or_null_key_refuses_the_copy_and_drops_the_new_table() {
        let e = engine_with(&[(1, Some(10)), (2, Some(10))]);
        let dup = e.copy_table("old", TableSpec::new("new", vec![1], IndexKind::Ordered)).err().expect("refused");
        assert!(matches!(dup, EngineError::UniqueViolation { .. }), "{dup}");
        assert!(e.table("new").is_none(), "the new table is dropped");

        let e = engine_with(&[(1, Some(10)), (2, None)]);
        let null = e.copy_table("old", TableSpec::new("new", vec![1], IndexKind::Ordered)).err().expect("refused");
        assert!(matches!(null, EngineError::NullInKey { .. }), "{null}");
        assert!(e.table("new").is_none(), "the new table is dropped");
        assert_eq!(count(&e, "old"), 2, "the old table is as it was");
    }
}
