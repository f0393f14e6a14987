//! Sequences: values handed out without regard to transactions (as in
//! PostgreSQL), with a durable reservation written every few values — in
//! the sequence's database's home — so that a restart never repeats one.

use std::sync::atomic::Ordering;

use tessera_engine::Isolation;
use tessera_engine::tuple::encode_tuple;

use super::{Catalog, ROWID_SEQUENCE_BATCH, SEQUENCE_BATCH, SequenceDef};
use crate::error::{Result, SqlError, code};

impl Catalog {
    /// The next value of a sequence. Values are handed out without regard to
    /// transactions (as in PostgreSQL); a durable reservation is written
    /// every few values so a restart never repeats one.
    pub fn nextval(&self, seq: &SequenceDef) -> Result<i64> {
        Ok(self.nextval_many(seq, 1)?[0])
    }

    /// The next `n` values of a sequence (for a multi-row INSERT or a COPY),
    /// reserved with one durable write instead of one per
    /// `SEQUENCE_BATCH` values. If the sequence runs out inside the
    /// range, the values up to its end are spent and the error is nextval's.
    pub fn nextval_many(&self, seq: &SequenceDef, n: usize) -> Result<Vec<i64>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let state =
            self.sequences.read().get(&seq.oid).cloned().ok_or_else(|| {
                SqlError::new(code::UNDEFINED_TABLE, format!("sequence \"{}\" does not exist", seq.name))
            })?;
        let mut reserved = state.reserved.lock();
        let v = state.next.load(Ordering::Acquire);
        let steps = i64::try_from(n - 1).unwrap_or(i64::MAX);
        let last = v.checked_add(seq.increment.saturating_mul(steps));
        let beyond = |x: i64| (seq.increment > 0 && x > seq.max) || (seq.increment < 0 && x < seq.min);
        if !beyond(v) && last.is_none_or(beyond) {
            // Runs out inside the range: take values one by one up to the
            // end, as nextval per row would (the values are spent, as in
            // PostgreSQL), and fail there.
            drop(reserved);
            for _ in 0..n {
                self.nextval_many(seq, 1)?;
            }
            return Err(SqlError::internal("a sequence ran out without an error"));
        }
        if beyond(v) {
            let (end, limit) = if seq.increment > 0 { ("maximum", seq.max) } else { ("minimum", seq.min) };
            return Err(SqlError::new(
                code::SEQUENCE_LIMIT,
                format!("nextval: reached {end} value of sequence \"{}\" ({limit})", seq.name),
            ));
        }
        let last = last.expect("checked above");
        let past = if seq.increment > 0 { last > *reserved } else { last < *reserved };
        if past {
            // Hidden row-id sequences reserve more at a time: their gaps
            // after a restart are invisible, their writes are not.
            let batch = if seq.name.starts_with("__rowid_") { ROWID_SEQUENCE_BATCH } else { SEQUENCE_BATCH };
            let ahead = last.saturating_add(seq.increment.saturating_mul(batch - 1));
            let upto = if seq.increment > 0 { ahead.min(seq.max) } else { ahead.max(seq.min) };
            self.write_sequence_mark(seq.oid, upto)?;
            *reserved = upto;
        }
        state.next.store(last.saturating_add(seq.increment), Ordering::Release);
        state.called.store(true, Ordering::Release);
        Ok((0..n as i64).map(|i| v + i * seq.increment).collect())
    }

    /// Sets the sequence so that the next nextval returns `next`.
    pub fn setval(&self, seq: &SequenceDef, value: i64, is_called: bool) -> Result<()> {
        let state = self.sequences.read().get(&seq.oid).cloned();
        let Some(state) = state else { return Ok(()) };
        let mut reserved = state.reserved.lock();
        let next = if is_called { value + seq.increment } else { value };
        self.write_sequence_mark(seq.oid, next - seq.increment)?;
        *reserved = next - seq.increment;
        state.next.store(next, Ordering::Release);
        Ok(())
    }

    /// The value the last nextval returned, if any (across sessions).
    pub fn last_value(&self, seq: &SequenceDef) -> Option<i64> {
        let state = self.sequences.read().get(&seq.oid).cloned()?;
        state.called.load(Ordering::Acquire).then(|| state.next.load(Ordering::Acquire) - seq.increment)
    }

    fn write_sequence_mark(&self, oid: u32, value: i64) -> Result<()> {
        let home = self.sequence_home(oid)?;
        let mut txn = home.engine.begin(Isolation::Snapshot)?;
        let row = encode_tuple(&[Some(&oid.to_be_bytes()), Some(&value.to_be_bytes())]);
        txn.put(&home.sequences, row, tessera_engine::PutCondition::Always)?;
        // A durable commit: wait for the fsync off the runtime's thread.
        crate::storage::blocking(|| txn.commit())?;
        Ok(())
    }
}
