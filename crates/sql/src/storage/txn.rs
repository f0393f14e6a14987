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
//!
//! On a cluster a partition may be led by another node (each partition is
//! a replication group of its own): the part of the transaction there is a
//! [`RemotePart`], whose calls go to that node. Which it is is decided
//! when the transaction first touches the partition, and holds to its end:
//! if the partition's primary changes meanwhile, the part fails (40001) as
//! a local one would if its node stopped being the primary. A read of
//! every row in several partitions ([`Txn::scan_parts_collect`]) reads the
//! partitions led elsewhere at the same time, each through its own part.

use tessera_engine::mvcc::TxnId;
use tessera_engine::row_filter::{FieldTest, passes};
use tessera_engine::{
    CommitStart, Durability, Engine, EngineError, IndexId, Isolation, KeyRange, PutCondition, PutOutcome, Result,
    RowVersion, RowWait, Transaction,
};

use crate::error::Result as SqlResult;
use crate::storage::partition::{GateHold, StoredTable};
use tessera_engine::remote::{PartitionRoutes, RemoteBegin, RemotePart};

/// One partition's part of a transaction: an engine transaction here, or
/// one on the partition's primary elsewhere.
enum PartTxn {
    Local(Transaction),
    Remote(Box<dyn RemotePart>),
}

impl PartTxn {
    fn is_read_only(&self) -> bool {
        match self {
            PartTxn::Local(t) => t.is_read_only(),
            PartTxn::Remote(r) => r.is_read_only(),
        }
    }

    fn abort(self) {
        match self {
            PartTxn::Local(t) => t.abort(),
            PartTxn::Remote(r) => r.abort(),
        }
    }
}

/// A partition's savepoint.
#[derive(Debug, Clone, Copy)]
enum Mark {
    Local(tessera_engine::Savepoint),
    Remote(u32),
}

/// A point to roll back to. Copy, like the engine's: the savepoints of the
/// partitions other than the home one are kept in the transaction.
#[derive(Debug, Clone, Copy)]
pub struct Savepoint {
    system: tessera_engine::Savepoint,
    /// Index into `Txn::marks` (None: no other partition was open).
    mark: Option<u32>,
}

pub struct Txn {
    isolation: Isolation,
    /// Open parts by stream; the home engine's first (always local).
    parts: Vec<(u32, PartTxn)>,
    /// The savepoint of each partition after the home one (`parts[1..]`)
    /// at the moment it was begun (empty).
    initial: Vec<Mark>,
    marks: Vec<Vec<Mark>>,
    durability: Option<Durability>,
    deadline: Option<std::time::Instant>,
    may_wait: bool,
    /// COPY may write several partitions.
    multi_partition_writes: bool,
    /// The partitions this transaction writes, held against a split.
    holds: Vec<(u32, GateHold)>,
    /// Local parts of partitions with groups of their own, counted by
    /// their groups' move gates (see `PartitionRoutes::local_work`).
    work: Vec<Box<dyn std::any::Any + Send>>,
    /// Where the partitions' primaries are (a cluster's keyed database).
    routes: Option<std::sync::Arc<dyn PartitionRoutes>>,
    /// The stream of the local part whose write last answered
    /// `WouldBlock`: the holder it names is a transaction of that part's
    /// engine, and is waited for there ([`Txn::row_wait`]).
    blocked_on: Option<u32>,
}

/// At most this many threads read one scan's partitions led elsewhere.
const REMOTE_SCANS_AT_ONCE: usize = 8;

/// The rows of partition `p` that `scan` visits (a part read while it is
/// being split also holds rows that are no longer the partition's).
fn part_rows(
    table: &StoredTable,
    p: usize,
    scan: impl FnOnce(&mut dyn FnMut(&[u8]) -> bool) -> Result<()>,
) -> Result<Vec<Vec<u8>>> {
    let mut rows = Vec::new();
    scan(&mut |r: &[u8]| {
        if table.row_in_part(p, r) {
            rows.push(r.to_vec());
        }
        true
    })?;
    Ok(rows)
}

/// The engine transaction of a local part, or the remote part.
enum On<'a> {
    Local(&'a mut Transaction, &'a std::sync::Arc<tessera_engine::Table>),
    Remote(&'a mut Box<dyn RemotePart>, &'a str),
}

impl Txn {
    /// Begins on `base`, the database's home engine (stream `stream`).
    pub fn begin(base: &Engine, stream: u32, isolation: Isolation) -> SqlResult<Txn> {
        let t = base.begin(isolation)?;
        Ok(Txn {
            isolation,
            parts: vec![(stream, PartTxn::Local(t))],
            initial: Vec::new(),
            marks: Vec::new(),
            durability: None,
            deadline: None,
            may_wait: true,
            multi_partition_writes: false,
            holds: Vec::new(),
            work: Vec::new(),
            routes: None,
            blocked_on: None,
        })
    }

    /// The home engine's transaction (catalog-level work, keyless data).
    pub fn system(&mut self) -> &mut Transaction {
        // A write through it that must wait names a home transaction.
        self.blocked_on = None;
        self.home_mut()
    }

    fn home_mut(&mut self) -> &mut Transaction {
        match &mut self.parts[0].1 {
            PartTxn::Local(t) => t,
            PartTxn::Remote(_) => unreachable!("the home part is always local"),
        }
    }

    fn home(&self) -> &Transaction {
        match &self.parts[0].1 {
            PartTxn::Local(t) => t,
            PartTxn::Remote(_) => unreachable!("the home part is always local"),
        }
    }

    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// The transaction's identity (its home engine transaction's id).
    pub fn id(&self) -> TxnId {
        self.home().id()
    }

    pub fn is_read_only(&self) -> bool {
        self.parts.iter().all(|(_, t)| t.is_read_only())
    }

    /// Durability of the parts begun from now on (and of the local ones
    /// begun already).
    pub fn set_durability(&mut self, d: Durability) {
        self.durability = Some(d);
        for (_, t) in &mut self.parts {
            if let PartTxn::Local(t) = t {
                t.set_durability(d);
            }
        }
    }

    /// Whether a write may wait for a row's holder (local parts; a remote
    /// part's writes wait on its primary, up to the deadline).
    pub fn set_wait(&mut self, allowed: bool) {
        self.may_wait = allowed;
        for (_, t) in &mut self.parts {
            if let PartTxn::Local(t) = t {
                t.set_wait(allowed);
            }
        }
    }

    /// The current statement's deadline, for every part (a remote part
    /// sends it with its next calls).
    pub fn set_wait_deadline(&mut self, deadline: Option<std::time::Instant>) {
        self.deadline = deadline;
        for (_, t) in &mut self.parts {
            match t {
                PartTxn::Local(t) => t.set_wait_deadline(deadline),
                PartTxn::Remote(r) => r.set_wait_deadline(deadline),
            }
        }
    }

    pub fn refresh_snapshot(&mut self) {
        for (_, t) in &mut self.parts {
            match t {
                PartTxn::Local(t) => t.refresh_snapshot(),
                PartTxn::Remote(r) => r.refresh_snapshot(),
            }
        }
    }

    /// Lets this transaction write several partitions (bulk loads).
    pub fn allow_multi_partition_writes(&mut self) {
        self.multi_partition_writes = true;
    }

    /// A future that resolves when `holder` ends: the transaction named by
    /// the `WouldBlock` that this transaction's last blocked write answered.
    /// Transaction ids are per engine, so the wait is on the engine of the
    /// part that answered it (a partition's, or the home's), never another:
    /// there the id would name an unrelated transaction, or none.
    pub fn row_wait(&self, holder: TxnId) -> RowWait {
        let blocked = self.blocked_on.and_then(|stream| self.parts.iter().find(|(s, _)| *s == stream));
        match blocked {
            Some((_, PartTxn::Local(t))) => t.row_wait(holder),
            _ => self.home().row_wait(holder),
        }
    }

    /// Notes the part a write answered `WouldBlock` on (see `row_wait`).
    fn noting_block<T>(&mut self, table: &StoredTable, part: usize, r: Result<T>) -> Result<T> {
        if let Err(EngineError::WouldBlock { .. }) = &r {
            self.blocked_on = Some(table.parts[part].def.stream);
        }
        r
    }

    /// The part on partition `part` of `table`, begun if needed: locally,
    /// or on the partition's primary when another node leads it.
    fn on<'a>(&'a mut self, table: &'a StoredTable, part: usize) -> Result<On<'a>> {
        let p = &table.parts[part];
        let stream = p.def.stream;
        let i = match self.parts.iter().position(|(s, _)| *s == stream) {
            Some(i) => i,
            None => {
                let how =
                    RemoteBegin { isolation: self.isolation, durability: self.durability, deadline: self.deadline };
                let remote = match &p.routes {
                    Some(routes) => {
                        if self.routes.is_none() {
                            self.routes = Some(routes.clone());
                        }
                        routes.begin(stream, how)?
                    }
                    None => None,
                };
                let (t, mark) = match remote {
                    Some(r) => (PartTxn::Remote(r), Mark::Remote(0)),
                    None => {
                        if let Some(work) = p.routes.as_ref().and_then(|r| r.local_work(stream)) {
                            self.work.push(work);
                        }
                        let mut t = p.engine.begin(self.isolation)?;
                        if let Some(d) = self.durability {
                            t.set_durability(d);
                        }
                        t.set_wait(self.may_wait);
                        t.set_wait_deadline(self.deadline);
                        let mark = Mark::Local(t.savepoint());
                        (PartTxn::Local(t), mark)
                    }
                };
                self.initial.push(mark);
                self.parts.push((stream, t));
                self.parts.len() - 1
            }
        };
        Ok(match &mut self.parts[i].1 {
            PartTxn::Local(t) => On::Local(t, p.local_table(&table.name)?),
            PartTxn::Remote(r) => On::Remote(r, &table.name),
        })
    }

    /// Like [`Self::on`], for a write: refuses a second written partition
    /// and a partition being split (or split since the statement looked
    /// the table up; both retryable).
    fn writing<'a>(&'a mut self, table: &'a StoredTable, part: usize) -> Result<On<'a>> {
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
            Some(p) => match self.on(table, p)? {
                On::Local(t, tab) => t.get_with(tab, key, f),
                On::Remote(r, name) => Ok(r.get(name, key)?.map(|d| f(&d))),
            },
            None => {
                let mut f = Some(f);
                for p in 0..table.parts.len() {
                    let mut out = None;
                    match self.on(table, p)? {
                        On::Local(t, tab) => {
                            t.get_with(tab, key, |d| out = f.take().map(|f| f(d)))?;
                        }
                        On::Remote(r, name) => {
                            if let Some(d) = r.get(name, key)? {
                                out = f.take().map(|f| f(&d));
                            }
                        }
                    }
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
        f: impl FnMut(&[u8]) -> bool,
    ) -> Result<()> {
        self.scan_parts_selected(table, parts, index, range, (None, &[]), f)
    }

    /// [`Self::scan_parts`], visiting only the rows that pass `tests`,
    /// and of the rows read on other nodes only `fields` (with the
    /// partition key's; the others NULL), `(fields, tests)` being `select`.
    fn scan_parts_selected(
        &mut self,
        table: &StoredTable,
        parts: Option<&[usize]>,
        index: IndexId,
        range: &KeyRange,
        (fields, tests): (Option<&[u32]>, &[FieldTest]),
        mut f: impl FnMut(&[u8]) -> bool,
    ) -> Result<()> {
        let fields = fields.map(|f| table.fields_with_route(f));
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
            let mut visit = |r: &[u8]| {
                if !table.row_in_part(p, r) {
                    return true;
                }
                go_on = f(r);
                go_on
            };
            match self.on(table, p)? {
                On::Local(t, tab) => t.scan(tab, index, range, |r| !passes(r, tests) || visit(r))?,
                On::Remote(r, name) => {
                    let index = table.index_name(index)?;
                    r.scan(name, index.as_deref(), range, fields.as_deref(), tests, &mut visit)?;
                }
            }
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
        self.scan_parts_collect(table, None, index, range, (None, &[]))
    }

    /// Every row of `range` in `index` in the given partitions (None: all),
    /// in the order [`Self::scan_parts`] visits them. The partitions led by
    /// other nodes are read at the same time, on threads of their own (up
    /// to [`REMOTE_SCANS_AT_ONCE`]), while this thread reads those led
    /// here: their primaries walk their rows side by side, where a visit
    /// partition after partition would wait for each walk in turn. With
    /// `fields`, the rows read elsewhere carry only those fields (the
    /// others NULL; the partition key's is added), so that the columns a
    /// query does not read stay where they are; with `tests`, only the rows
    /// that pass them are kept, tested where they are read. `select` is
    /// `(fields, tests)`.
    pub fn scan_parts_collect(
        &mut self,
        table: &StoredTable,
        parts: Option<&[usize]>,
        index: IndexId,
        range: &KeyRange,
        select: (Option<&[u32]>, &[FieldTest]),
    ) -> Result<Vec<Vec<u8>>> {
        let parts: Vec<usize> = match parts {
            Some(p) => p.to_vec(),
            None => (0..table.parts.len()).collect(),
        };
        // Begin every part now (a remote one on its primary).
        let mut remote = 0;
        for &p in &parts {
            if matches!(self.on(table, p)?, On::Remote(..)) {
                remote += 1;
            }
        }
        if remote == 0 || parts.len() < 2 {
            let mut out = Vec::new();
            self.scan_parts_selected(table, Some(&parts), index, range, select, |r| {
                out.push(r.to_vec());
                true
            })?;
            return Ok(out);
        }
        let index_name = table.index_name(index)?;
        let (fields, tests) = select;
        let fields = fields.map(|f| table.fields_with_route(f));
        // The partitions each open part reads, by the part's stream (two
        // partitions share a stream while one is being split off the other).
        let mut wanted: Vec<(u32, Vec<(usize, usize)>)> = Vec::new();
        for (slot, &p) in parts.iter().enumerate() {
            let stream = table.parts[p].def.stream;
            match wanted.iter_mut().find(|(s, _)| *s == stream) {
                Some((_, list)) => list.push((slot, p)),
                None => wanted.push((stream, vec![(slot, p)])),
            }
        }
        type Job<'a, T> = (&'a mut T, Vec<(usize, usize)>);
        let mut local: Vec<Job<'_, Transaction>> = Vec::new();
        let mut remote: Vec<Job<'_, Box<dyn RemotePart>>> = Vec::new();
        for (stream, t) in &mut self.parts {
            let Some(i) = wanted.iter().position(|(s, _)| s == stream) else { continue };
            let list = wanted.swap_remove(i).1;
            match t {
                PartTxn::Local(t) => local.push((t, list)),
                PartTxn::Remote(r) => remote.push((r, list)),
            }
        }
        // Spread the remote parts over the threads, round robin.
        let threads = remote.len().min(REMOTE_SCANS_AT_ONCE);
        let mut shares: Vec<Vec<Job<'_, Box<dyn RemotePart>>>> = (0..threads).map(|_| Vec::new()).collect();
        for (i, job) in remote.into_iter().enumerate() {
            shares[i % threads].push(job);
        }
        let mut found: Vec<Option<Result<Vec<Vec<u8>>>>> = parts.iter().map(|_| None).collect();
        std::thread::scope(|s| -> Result<()> {
            let mut running = Vec::new();
            for share in shares {
                let (index_name, fields) = (index_name.as_deref(), fields.as_deref());
                let spawned = std::thread::Builder::new().name("tessera-part-scan".into()).spawn_scoped(s, move || {
                    let mut got = Vec::new();
                    for (r, list) in share {
                        for (slot, p) in list {
                            got.push((
                                slot,
                                part_rows(table, p, |visit| {
                                    r.scan(&table.name, index_name, range, fields, tests, visit)
                                }),
                            ));
                        }
                    }
                    got
                });
                running.push(spawned.map_err(|e| {
                    EngineError::Unavailable(format!("could not start a thread to read a partition: {e}"))
                })?);
            }
            let mut got = Vec::new();
            for (t, list) in local {
                for (slot, p) in list {
                    match table.parts[p].local_table(&table.name) {
                        Ok(tab) => got.push((
                            slot,
                            part_rows(table, p, |visit| t.scan(tab, index, range, |r| !passes(r, tests) || visit(r))),
                        )),
                        Err(e) => got.push((slot, Err(e))),
                    }
                }
            }
            for handle in running {
                match handle.join() {
                    Ok(rows) => got.extend(rows),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            for (slot, rows) in got {
                found[slot] = Some(rows);
            }
            Ok(())
        })?;
        let mut out = Vec::new();
        for rows in found {
            let rows = rows.expect("every partition was read")?;
            if out.is_empty() {
                out = rows;
            } else {
                out.extend(rows);
            }
        }
        Ok(out)
    }

    // ----- writes -----

    pub fn insert(&mut self, table: &StoredTable, data: Vec<u8>) -> Result<()> {
        let p = table.part_of_row(&data)?;
        let r = match self.writing(table, p)? {
            On::Local(t, tab) => t.insert(tab, data),
            On::Remote(r, name) => r.insert(name, data),
        };
        self.noting_block(table, p, r)
    }

    pub fn update(&mut self, table: &StoredTable, data: Vec<u8>) -> Result<bool> {
        let p = table.part_of_row(&data)?;
        let r = match self.writing(table, p)? {
            On::Local(t, tab) => t.update(tab, data),
            On::Remote(r, name) => r.update(name, data),
        };
        self.noting_block(table, p, r)
    }

    pub fn update_with(
        &mut self,
        table: &StoredTable,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> Option<Vec<u8>>,
    ) -> Result<bool> {
        let p = match table.part_of_key(key) {
            Some(p) => Some(p),
            None => self.find(table, key)?,
        };
        let Some(p) = p else { return Ok(false) };
        let r = match self.writing(table, p)? {
            On::Local(t, tab) => t.update_with(tab, key, f),
            On::Remote(r, name) => {
                // The engine's update_with in two calls: claim the row (it
                // waits for a holder, and read committed gets the newest
                // version), then write what `f` makes of it — or undo the
                // claim when `f` declines.
                let before = r.savepoint();
                let Some(current) = r.claim(name, key)? else { return Ok(false) };
                match f(&current) {
                    Some(new) => r.update(name, new),
                    None => {
                        r.rollback_to(before)?;
                        Ok(false)
                    }
                }
            }
        };
        self.noting_block(table, p, r)
    }

    pub fn delete(&mut self, table: &StoredTable, key: &[u8]) -> Result<bool> {
        let p = match table.part_of_key(key) {
            Some(p) => Some(p),
            None => self.find(table, key)?,
        };
        let Some(p) = p else { return Ok(false) };
        let r = match self.writing(table, p)? {
            On::Local(t, tab) => t.delete(tab, key),
            On::Remote(r, name) => r.delete(name, key),
        };
        self.noting_block(table, p, r)
    }

    /// The row with primary key `key` and its version (for conditional
    /// writes: the versioned key-value interface of `docs/storage-contract.md`).
    pub fn get_versioned(&mut self, table: &StoredTable, key: &[u8]) -> Result<Option<(Vec<u8>, RowVersion)>> {
        let p = match table.part_of_key(key) {
            Some(p) => Some(p),
            None => self.find(table, key)?,
        };
        match p {
            Some(p) => match self.on(table, p)? {
                On::Local(t, tab) => t.get_versioned(tab, key),
                On::Remote(r, name) => r.get_versioned(name, key),
            },
            None => Ok(None),
        }
    }

    /// Writes `data` if `cond` holds for the row with its primary key.
    pub fn put(&mut self, table: &StoredTable, data: Vec<u8>, cond: PutCondition) -> Result<PutOutcome> {
        let p = table.part_of_row(&data)?;
        let r = match self.writing(table, p)? {
            On::Local(t, tab) => t.put(tab, data, cond),
            On::Remote(r, name) => r.put(name, data, cond),
        };
        self.noting_block(table, p, r)
    }

    /// Deletes the row with primary key `key` if `cond` holds for it.
    pub fn delete_if(&mut self, table: &StoredTable, key: &[u8], cond: PutCondition) -> Result<PutOutcome> {
        let p = match table.part_of_key(key) {
            Some(p) => Some(p),
            None => self.find(table, key)?,
        };
        let Some(p) = p else { return Ok(PutOutcome::Rejected { current: None }) };
        let r = match self.writing(table, p)? {
            On::Local(t, tab) => t.delete_if(tab, key, cond),
            On::Remote(r, name) => r.delete_if(name, key, cond),
        };
        self.noting_block(table, p, r)
    }

    /// The partition where the row with primary key `key` is visible.
    fn find(&mut self, table: &StoredTable, key: &[u8]) -> Result<Option<usize>> {
        for p in 0..table.parts.len() {
            let found = match self.on(table, p)? {
                On::Local(t, tab) => t.get_with(tab, key, |_| ())?.is_some(),
                On::Remote(r, name) => r.get(name, key)?.is_some(),
            };
            if found {
                return Ok(Some(p));
            }
        }
        Ok(None)
    }

    // ----- savepoints, commit, abort -----

    pub fn savepoint(&mut self) -> Savepoint {
        let system = self.home_mut().savepoint();
        if self.parts.len() == 1 {
            return Savepoint { system, mark: None };
        }
        let marks = self.parts[1..]
            .iter_mut()
            .map(|(_, t)| match t {
                PartTxn::Local(t) => Mark::Local(t.savepoint()),
                PartTxn::Remote(r) => Mark::Remote(r.savepoint()),
            })
            .collect();
        self.marks.push(marks);
        Savepoint { system, mark: Some((self.marks.len() - 1) as u32) }
    }

    /// Undoes every write made after `sp`, in every partition.
    pub fn rollback_to(&mut self, sp: Savepoint) -> Result<()> {
        self.home_mut().rollback_to(sp.system)?;
        let marked: Vec<Mark> = match sp.mark {
            Some(m) => self.marks[m as usize].clone(),
            None => Vec::new(),
        };
        for i in 1..self.parts.len() {
            // A partition begun after the savepoint goes back to empty.
            let to = marked.get(i - 1).copied().unwrap_or(self.initial[i - 1]);
            match (&mut self.parts[i].1, to) {
                (PartTxn::Local(t), Mark::Local(m)) => t.rollback_to(m)?,
                (PartTxn::Remote(r), Mark::Remote(m)) => r.rollback_to(m)?,
                _ => return Err(EngineError::Internal("a savepoint of another kind of part".into())),
            }
        }
        if let Some(m) = sp.mark {
            self.marks.truncate(m as usize + 1);
        }
        Ok(())
    }

    /// Commits: the read-only parts first (nothing to log), then each part
    /// that wrote, awaiting its durability (a remote part's on its
    /// primary's quorum).
    pub async fn commit(mut self) -> SqlResult<()> {
        // The gate holds drop with `self.holds`, after the last commit.
        let _holds = std::mem::take(&mut self.holds);
        let _work = std::mem::take(&mut self.work);
        if self.parts.len() == 1 {
            // The usual case (a keyless database): no partition bookkeeping.
            let (_, t) = self.parts.pop().expect("the home part");
            return commit_part(t).await;
        }
        let (written, read): (Vec<_>, Vec<_>) = self.parts.into_iter().partition(|(_, t)| !t.is_read_only());
        let mut read = read.into_iter();
        while let Some((_, t)) = read.next() {
            if let Err(e) = commit_part(t).await {
                for (_, rest) in read.chain(written) {
                    rest.abort();
                }
                return Err(e);
            }
        }
        let parts = written.len();
        let mut written = written;
        if parts > 1 && !self.routes.as_ref().is_none_or(|routes| all_ready(routes.as_ref(), &mut written)) {
            for (_, t) in written {
                t.abort();
            }
            return Err(crate::error::SqlError::new(
                crate::error::code::SERIALIZATION,
                "a partition this transaction wrote is changing primaries: nothing was committed",
            )
            .with_hint("Run it again: the move takes about a second."));
        }
        let mut written = written.into_iter().enumerate();
        while let Some((i, (_, t))) = written.next() {
            if let Err(e) = commit_part(t).await {
                for (_, (_, rest)) in written {
                    rest.abort();
                }
                return Err(if i == 0 { e } else { partly_committed(e, i, parts) });
            }
        }
        Ok(())
    }

    /// Commits from a thread that may block (DDL, tools).
    pub fn commit_blocking(self) -> SqlResult<()> {
        let _holds = self.holds;
        let (written, read): (Vec<_>, Vec<_>) = self.parts.into_iter().partition(|(_, t)| !t.is_read_only());
        for (_, t) in read.into_iter().chain(written) {
            match t {
                PartTxn::Local(t) => {
                    t.commit()?;
                }
                PartTxn::Remote(r) => futures::executor::block_on(r.commit())?,
            }
        }
        Ok(())
    }

    pub fn abort(self) {
        for (_, t) in self.parts {
            t.abort();
        }
    }
}

/// Whether every partition a commit over several writes is about to
/// commit on can commit now (its primary holds its lease and serves),
/// asked before any commits: a move of one of
/// their primaries then refuses the whole commit rather than keep some
/// partitions' writes. (A primary lost between this and its commit still
/// can: atomic commits across partitions are the transactions-across-
/// partitions work.)
fn all_ready(routes: &dyn PartitionRoutes, parts: &mut [(u32, PartTxn)]) -> bool {
    parts.iter_mut().all(|(stream, t)| match t {
        PartTxn::Local(_) => routes.ready_here(*stream),
        PartTxn::Remote(r) => r.ready().is_ok(),
    })
}

/// The error of a commit over several partitions (a bulk load allowed to
/// span them) that failed after `done` of its `parts` partitions had
/// committed: said as it is, never as a plain failure the client would
/// take for "nothing committed". (Atomic commits across partitions are
/// the transactions-across-partitions work.)
fn partly_committed(e: crate::error::SqlError, done: usize, parts: usize) -> crate::error::SqlError {
    crate::error::SqlError::new(
        crate::error::code::COMPLETION_UNKNOWN,
        format!(
            "committed in part: the rows written to {done} of the {parts} partitions were committed, those written to the other {} were not ({})",
            parts - done,
            e.message
        ),
    )
    .with_hint("Check which rows are there before loading again; set tessera.copy_commit_rows to load in parts that commit one by one.")
}

/// Commits one part, awaiting its durability.
async fn commit_part(t: PartTxn) -> SqlResult<()> {
    match t {
        PartTxn::Local(t) => {
            if let CommitStart::Pending(pending) = t.commit_start()? {
                pending.await?;
            }
        }
        PartTxn::Remote(r) => r.commit().await?,
    }
    Ok(())
}
