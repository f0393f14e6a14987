//! A session's transaction over the partitions it touches.
//!
//! Each partition is an engine with its own clock, so a SQL transaction is a
//! set of engine transactions: one on the database's home engine (its own,
//! or the system engine), begun at once (it serves keyless databases), and
//! one per partition of a keyed database,
//! begun when a statement first touches that partition, at the same
//! isolation level. Reads across partitions therefore see each partition at
//! its own snapshot — the read-committed fan-out of the Cloud SQL Server
//! paper, documented for users.
//!
//! Writes go to one partition: a keyed database's row-group rule keeps a
//! transaction inside one row group, hence one partition, and [`Txn::commit`]
//! commits the read-only parts (which costs nothing) and then the one that
//! wrote. Only a bulk load (COPY) may write several partitions; it commits
//! them one after another, each atomically (see `docs/sql.md`).
//!
//! The methods mirror the engine's [`Transaction`] with a [`StoredTable`]
//! in place of an engine table, and route by the row or primary key given:
//! a key that does not name its partition (a table whose primary key lacks
//! the partition key) is looked for in every partition.

use tessera_engine::mvcc::TxnId;
use tessera_engine::{
    CommitStart, Durability, Engine, EngineError, IndexId, Isolation, KeyRange, PutCondition, PutOutcome, Result,
    RowVersion, RowWait, Transaction,
};

use crate::error::Result as SqlResult;
use crate::partition::{GateHold, StoredTable};

/// A point to roll back to. Copy, like the engine's: the savepoints of the
/// partitions other than the system one are kept in the transaction.
#[derive(Debug, Clone, Copy)]
pub struct Savepoint {
    system: tessera_engine::Savepoint,
    /// Index into `Txn::marks` (None: no other partition was open).
    mark: Option<u32>,
}

pub struct Txn {
    isolation: Isolation,
    /// Open engine transactions by stream; the system engine's first.
    parts: Vec<(u32, Transaction)>,
    /// The savepoint of each partition after the system one (`parts[1..]`)
    /// at the moment it was begun (empty).
    initial: Vec<tessera_engine::Savepoint>,
    marks: Vec<Vec<tessera_engine::Savepoint>>,
    durability: Option<Durability>,
    deadline: Option<std::time::Instant>,
    may_wait: bool,
    /// COPY may write several partitions.
    multi_partition_writes: bool,
    /// The partitions this transaction writes, held against a split.
    holds: Vec<(u32, GateHold)>,
}

impl Txn {
    /// Begins on `base`, the database's home engine (stream `stream`).
    pub fn begin(base: &Engine, stream: u32, isolation: Isolation) -> SqlResult<Txn> {
        let t = base.begin(isolation)?;
        Ok(Txn {
            isolation,
            parts: vec![(stream, t)],
            initial: Vec::new(),
            marks: Vec::new(),
            durability: None,
            deadline: None,
            may_wait: true,
            multi_partition_writes: false,
            holds: Vec::new(),
        })
    }

    /// The system engine's transaction (catalog-level work, keyless data).
    pub fn system(&mut self) -> &mut Transaction {
        &mut self.parts[0].1
    }

    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// The transaction's identity (its system engine transaction's id).
    pub fn id(&self) -> TxnId {
        self.parts[0].1.id()
    }

    pub fn is_read_only(&self) -> bool {
        self.parts.iter().all(|(_, t)| t.is_read_only())
    }

    pub fn set_durability(&mut self, d: Durability) {
        self.durability = Some(d);
        for (_, t) in &mut self.parts {
            t.set_durability(d);
        }
    }

    pub fn set_wait(&mut self, allowed: bool) {
        self.may_wait = allowed;
        for (_, t) in &mut self.parts {
            t.set_wait(allowed);
        }
    }

    pub fn set_wait_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.deadline = deadline;
        for (_, t) in &mut self.parts {
            t.set_wait_deadline(deadline);
        }
    }

    pub fn refresh_snapshot(&mut self) {
        for (_, t) in &mut self.parts {
            t.refresh_snapshot();
        }
    }

    /// Lets this transaction write several partitions (bulk loads).
    pub fn allow_multi_partition_writes(&mut self) {
        self.multi_partition_writes = true;
    }

    /// A future that resolves when `holder` (which made a write of this
    /// transaction's system part report `WouldBlock`) ends.
    pub fn row_wait(&self, holder: TxnId) -> RowWait {
        self.parts[0].1.row_wait(holder)
    }

    /// The engine transaction on partition `part` of `table`, begun if needed.
    fn on(&mut self, table: &StoredTable, part: usize) -> Result<&mut Transaction> {
        let p = &table.parts[part];
        let stream = p.def.stream;
        let i = match self.parts.iter().position(|(s, _)| *s == stream) {
            Some(i) => i,
            None => {
                let mut t = p.engine.begin(self.isolation)?;
                if let Some(d) = self.durability {
                    t.set_durability(d);
                }
                t.set_wait(self.may_wait);
                t.set_wait_deadline(self.deadline);
                self.initial.push(t.savepoint());
                self.parts.push((stream, t));
                self.parts.len() - 1
            }
        };
        Ok(&mut self.parts[i].1)
    }

    /// Like [`Self::on`], for a write: refuses a second written partition
    /// and a partition being split (or split since the statement looked
    /// the table up; both retryable).
    fn writing(&mut self, table: &StoredTable, part: usize) -> Result<&mut Transaction> {
        let stream = table.parts[part].def.stream;
        if let Some((gate, epoch)) = &table.parts[part].gate {
            match self.holds.iter().find(|(s, _)| *s == stream) {
                Some(_) => gate.check(*epoch)?,
                None => {
                    let hold = gate.enter(*epoch)?;
                    self.holds.push((stream, hold));
                }
            }
        }
        if !self.multi_partition_writes
            && let Some((other, _)) = self.parts.iter().find(|(s, t)| *s != stream && !t.is_read_only())
        {
            // The row-group rule keeps a transaction in one partition;
            // reaching this is a bug of the layer above.
            return Err(EngineError::Internal(format!(
                "a transaction writes one partition: it wrote partition {other} and cannot write partition {stream}"
            )));
        }
        self.on(table, part)
    }

    // ----- reads -----

    pub fn get_with<R>(&mut self, table: &StoredTable, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        match table.part_of_key(key) {
            Some(p) => self.on(table, p)?.get_with(&table.parts[p].table, key, f),
            None => {
                let mut f = Some(f);
                for p in 0..table.parts.len() {
                    let t = self.on(table, p)?;
                    let mut out = None;
                    t.get_with(&table.parts[p].table, key, |d| out = f.take().map(|f| f(d)))?;
                    if out.is_some() {
                        return Ok(out);
                    }
                }
                Ok(None)
            }
        }
    }

    pub fn get(&mut self, table: &StoredTable, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_with(table, key, |d| d.to_vec())
    }

    /// Visits the rows of `range` in `index` in the given partitions
    /// (None: all), partition after partition. `f` returns false to stop.
    pub fn scan_parts(
        &mut self,
        table: &StoredTable,
        parts: Option<&[usize]>,
        index: IndexId,
        range: &KeyRange,
        mut f: impl FnMut(&[u8]) -> bool,
    ) -> Result<()> {
        let all: Vec<usize>;
        let parts = match parts {
            Some(p) => p,
            None => {
                all = (0..table.parts.len()).collect();
                &all
            }
        };
        for &p in parts {
            let mut go_on = true;
            self.on(table, p)?.scan(&table.parts[p].table, index, range, |r| {
                if !table.row_in_part(p, r) {
                    return true;
                }
                go_on = f(r);
                go_on
            })?;
            if !go_on {
                break;
            }
        }
        Ok(())
    }

    pub fn scan(
        &mut self,
        table: &StoredTable,
        index: IndexId,
        range: &KeyRange,
        f: impl FnMut(&[u8]) -> bool,
    ) -> Result<()> {
        self.scan_parts(table, None, index, range, f)
    }

    pub fn scan_collect(&mut self, table: &StoredTable, index: IndexId, range: &KeyRange) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        self.scan(table, index, range, |r| {
            out.push(r.to_vec());
            true
        })?;
        Ok(out)
    }

    // ----- writes -----

    pub fn insert(&mut self, table: &StoredTable, data: Vec<u8>) -> Result<()> {
        let p = table.part_of_row(&data)?;
        self.writing(table, p)?.insert(&table.parts[p].table, data)
    }

    pub fn update(&mut self, table: &StoredTable, data: Vec<u8>) -> Result<bool> {
        let p = table.part_of_row(&data)?;
        self.writing(table, p)?.update(&table.parts[p].table, data)
    }

    pub fn update_with(
        &mut self,
        table: &StoredTable,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> Option<Vec<u8>>,
    ) -> Result<bool> {
        match table.part_of_key(key) {
            Some(p) => self.writing(table, p)?.update_with(&table.parts[p].table, key, f),
            None => {
                let p = self.find(table, key)?;
                match p {
                    Some(p) => self.writing(table, p)?.update_with(&table.parts[p].table, key, f),
                    None => Ok(false),
                }
            }
        }
    }

    pub fn delete(&mut self, table: &StoredTable, key: &[u8]) -> Result<bool> {
        let p = match table.part_of_key(key) {
            Some(p) => Some(p),
            None => self.find(table, key)?,
        };
        match p {
            Some(p) => self.writing(table, p)?.delete(&table.parts[p].table, key),
            None => Ok(false),
        }
    }

    /// The row with primary key `key` and its version (for conditional
    /// writes: the versioned key-value interface of `docs/storage-contract.md`).
    pub fn get_versioned(&mut self, table: &StoredTable, key: &[u8]) -> Result<Option<(Vec<u8>, RowVersion)>> {
        let p = match table.part_of_key(key) {
            Some(p) => Some(p),
            None => self.find(table, key)?,
        };
        match p {
            Some(p) => self.on(table, p)?.get_versioned(&table.parts[p].table, key),
            None => Ok(None),
        }
    }

    /// Writes `data` if `cond` holds for the row with its primary key.
    pub fn put(&mut self, table: &StoredTable, data: Vec<u8>, cond: PutCondition) -> Result<PutOutcome> {
        let p = table.part_of_row(&data)?;
        self.writing(table, p)?.put(&table.parts[p].table, data, cond)
    }

    /// Deletes the row with primary key `key` if `cond` holds for it.
    pub fn delete_if(&mut self, table: &StoredTable, key: &[u8], cond: PutCondition) -> Result<PutOutcome> {
        let p = match table.part_of_key(key) {
            Some(p) => Some(p),
            None => self.find(table, key)?,
        };
        match p {
            Some(p) => self.writing(table, p)?.delete_if(&table.parts[p].table, key, cond),
            None => Ok(PutOutcome::Rejected { current: None }),
        }
    }

    /// The partition where the row with primary key `key` is visible.
    fn find(&mut self, table: &StoredTable, key: &[u8]) -> Result<Option<usize>> {
        for p in 0..table.parts.len() {
            if self.on(table, p)?.get_with(&table.parts[p].table, key, |_| ())?.is_some() {
                return Ok(Some(p));
            }
        }
        Ok(None)
    }

    // ----- savepoints, commit, abort -----

    pub fn savepoint(&mut self) -> Savepoint {
        let system = self.parts[0].1.savepoint();
        if self.parts.len() == 1 {
            return Savepoint { system, mark: None };
        }
        self.marks.push(self.parts[1..].iter().map(|(_, t)| t.savepoint()).collect());
        Savepoint { system, mark: Some((self.marks.len() - 1) as u32) }
    }

    /// Undoes every write made after `sp`, in every partition.
    pub fn rollback_to(&mut self, sp: Savepoint) -> Result<()> {
        self.parts[0].1.rollback_to(sp.system)?;
        let marked: &[tessera_engine::Savepoint] = match sp.mark {
            Some(m) => &self.marks[m as usize],
            None => &[],
        };
        let marked = marked.to_vec();
        for i in 1..self.parts.len() {
            // A partition begun after the savepoint goes back to empty.
            let to = marked.get(i - 1).copied().unwrap_or(self.initial[i - 1]);
            self.parts[i].1.rollback_to(to)?;
        }
        if let Some(m) = sp.mark {
            self.marks.truncate(m as usize + 1);
        }
        Ok(())
    }

    /// Commits: the read-only parts first (nothing to validate or log),
    /// then each part that wrote, awaiting its durability.
    pub async fn commit(mut self) -> SqlResult<()> {
        // The gate holds drop with `self.holds`, after the last commit.
        let _holds = std::mem::take(&mut self.holds);
        if self.parts.len() == 1 {
            // The usual case (a keyless database): no partition bookkeeping.
            let (_, t) = self.parts.pop().expect("the system part");
            if let CommitStart::Pending(pending) = t.commit_start()? {
                pending.await?;
            }
            return Ok(());
        }
        let (written, read): (Vec<_>, Vec<_>) = self.parts.into_iter().partition(|(_, t)| !t.is_read_only());
        for (_, t) in read {
            t.commit_start()?;
        }
        let mut written = written.into_iter();
        while let Some((_, t)) = written.next() {
            let started = match t.commit_start() {
                Ok(s) => s,
                Err(e) => {
                    for (_, rest) in written {
                        rest.abort();
                    }
                    return Err(e.into());
                }
            };
            if let CommitStart::Pending(pending) = started {
                pending.await?;
            }
        }
        Ok(())
    }

    /// Commits from a thread that may block (DDL, tools).
    pub fn commit_blocking(self) -> SqlResult<()> {
        let _holds = self.holds;
        let (written, read): (Vec<_>, Vec<_>) = self.parts.into_iter().partition(|(_, t)| !t.is_read_only());
        for (_, t) in read.into_iter().chain(written) {
            t.commit()?;
        }
        Ok(())
    }

    pub fn abort(self) {
        for (_, t) in self.parts {
            t.abort();
        }
    }
}
