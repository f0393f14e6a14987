//! A database's *home*: the engine that holds its catalog entries (tables,
//! sequences), its sequences' reservations and, for a keyless database,
//! its tables' rows.
//!
//! A database created by CREATE DATABASE gets an engine of its own (a
//! stream), so that everything a transaction of that database touches —
//! data and schema — lives apart from the other databases: a keyless
//! database's rows are in its home, a keyed one's in its partitions, whose
//! layout the home keeps too (`catalog/layout.rs`). That is what lets a
//! database be replicated as a group of its own, its primary on any node
//! (see `docs/design/cluster.md`). The system engine (stream 0) keeps what
//! is cluster-wide — databases, roles, the stream counter — and is the
//! home of the bootstrap databases (`tessera`, `postgres`) and of
//! databases created before homes existed.

use std::sync::Arc;

use tessera_engine::{Engine, IndexKind, Isolation, KeyRange, PRIMARY, Table, TableSpec};

use super::{CATALOG_TABLE, Catalog, Entry, SEQUENCE_TABLE};
use crate::error::{Result, SqlError};
use crate::storage::partition::PartitionDef;

/// The bits of an oid below a home's block number: each home hands out
/// the oids of its database's objects from a block of its own, `stream <<
/// HOME_OID_BITS` onwards, apart from the system engine's counter (which
/// stays below the first block) and from every other home's.
const HOME_OID_BITS: u32 = 20;
/// Homes take streams below this, so that every block fits in an oid.
pub(super) const MAX_HOME_STREAM: u32 = (1 << (32 - HOME_OID_BITS)) - 1;

/// The first oid of home `stream`'s block.
pub(super) fn oid_block(stream: u32) -> u32 {
    u32::try_from(u64::from(stream) << HOME_OID_BITS).unwrap_or(u32::MAX)
}

/// The home whose block holds `oid` (None: the system engine's counter).
pub(super) fn block_of(oid: u32) -> Option<u32> {
    let stream = oid >> HOME_OID_BITS;
    (stream > 0).then_some(stream)
}

/// Rows as an engine scan returns them.
type Rows = Vec<Vec<u8>>;

/// The engine holding a database's catalog entries, and its two tables.
#[derive(Clone)]
pub struct Home {
    pub stream: u32,
    pub engine: Arc<Engine>,
    pub(super) catalog: Arc<Table>,
    pub(super) sequences: Arc<Table>,
    /// The engine's restore count when the two tables were looked up: a
    /// snapshot installed since replaced them (see [`Home::is_current`]).
    restores: u64,
}

impl Home {
    /// The home in `engine`: its two tables, created when `create` (a new
    /// home) and looked up otherwise (None if they are not there yet, as
    /// on a secondary the creation has not reached).
    pub(super) fn in_engine(stream: u32, engine: Arc<Engine>, create: bool) -> Result<Option<Home>> {
        // Read before the tables: a restore finishing after this is seen.
        let restores = engine.restores();
        let table = |name: &str| -> Result<Option<Arc<Table>>> {
            match engine.table(name) {
                Some(t) => Ok(Some(t)),
                None if create => Ok(Some(engine.create_table(TableSpec::new(name, vec![0], IndexKind::Hash))?)),
                None => Ok(None),
            }
        };
        let (Some(catalog), Some(sequences)) = (table(CATALOG_TABLE)?, table(SEQUENCE_TABLE)?) else {
            return Ok(None);
        };
        Ok(Some(Home { stream, engine, catalog, sequences, restores }))
    }

    /// Whether these are still the tables of the home's engine on `node`:
    /// not when a snapshot has been installed into the engine since they
    /// were looked up (a replica rebuilt, or restarted, from its group's
    /// snapshot), which replaces every table, nor when the partition was
    /// dropped and opened again.
    pub(super) fn is_current(&self, node: &tessera_engine::Node) -> bool {
        // (Stream 0 is the system engine, which is never replaced.)
        node.partition(self.stream).is_some_and(|e| Arc::ptr_eq(&e, &self.engine))
            && self.engine.restores() == self.restores
    }

    /// Its catalog rows and sequence reservations, read at one snapshot.
    pub(super) fn scan(&self) -> Result<(Rows, Rows)> {
        let mut txn = self.engine.begin(Isolation::Snapshot)?;
        let rows = txn.scan_collect(&self.catalog, PRIMARY, &KeyRange::all())?;
        let seq_rows = txn.scan_collect(&self.sequences, PRIMARY, &KeyRange::all())?;
        txn.abort();
        Ok((rows, seq_rows))
    }

    /// How often its catalog table changed (a replica reloads on a change).
    pub(super) fn changes(&self) -> i64 {
        self.catalog.changes()
    }
}

impl Catalog {
    /// The system engine as a home.
    pub(super) fn system_home(&self) -> Home {
        self.system.read().clone()
    }

    /// Makes a home for a new keyless database: a new stream, its engine
    /// and its two tables. The caller records the stream in the database's
    /// entry; a crash before that leaves a stream no database owns, which
    /// the next start removes.
    pub fn create_home(&self, replicas: Option<usize>) -> Result<u32> {
        Ok(self.create_keyed_home(replicas, Vec::new())?.0)
    }

    /// Makes a home for a new keyed database and its partitions with these
    /// key ranges, their streams from the home's block (see
    /// `catalog/layout.rs`): the home, the partitions, and the stream the
    /// next partition takes. On a cluster they are one replication group.
    pub fn create_keyed_home(
        &self,
        replicas: Option<usize>,
        ranges: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<(u32, Vec<PartitionDef>, u32)> {
        if self.groups().is_none() && replicas.is_some_and(|n| n > 1) {
            return Err(SqlError::new(
                crate::error::code::INVALID_PARAMETER_VALUE,
                "a single-node server keeps one replica of each database; replicas above 1 need a cluster",
            ));
        }
        let stream = {
            let mut s = self.counters.lock();
            let stream = s.next_stream;
            if stream >= MAX_HOME_STREAM {
                return Err(SqlError::new(
                    crate::error::code::PROGRAM_LIMIT,
                    format!("this cluster cannot make more databases: their streams are used up ({stream})"),
                ));
            }
            s.next_stream += 1;
            stream
        };
        let parts: Vec<u32> =
            (1..=ranges.len() as u32).map(|i| super::layout::block_stream(stream, i)).collect::<Result<_>>()?;
        self.write_entries(&[Entry::Streams { next: stream + 1 }])?;
        // On a cluster the home is a replication group of its own, formed
        // before anything is written to it (its first write goes to it).
        // Each partition is a group of its own too: the unit of
        // replication and failover, with primaries spread over the nodes.
        if let Some(groups) = self.groups() {
            use crate::storage::cluster_view::GroupsError;
            let each: Vec<Vec<u32>> = std::iter::once(stream).chain(parts.iter().copied()).map(|s| vec![s]).collect();
            groups.create(&each, replicas).map_err(|e| match e {
                GroupsError::Invalid(why) => SqlError::new(crate::error::code::INVALID_PARAMETER_VALUE, why),
                GroupsError::Unavailable(why) => SqlError::new(
                    crate::error::code::CANNOT_CONNECT_NOW,
                    format!("cannot make the new database's replicas: {why}"),
                ),
            })?;
        }
        let engine = self.node.open_partition(stream, true)?;
        let home = Home::in_engine(stream, engine, true)?.expect("created");
        self.homes.write().insert(stream, home);
        let mut defs = Vec::with_capacity(ranges.len());
        for ((low, high), part) in ranges.into_iter().zip(&parts) {
            self.node.open_partition(*part, true)?;
            defs.push(PartitionDef { stream: *part, low, high, schema_version: 0, dirty: false });
        }
        Ok((stream, defs, parts.len() as u32 + 1))
    }

    /// Once a new database's entry is written: on a cluster, hands its
    /// group's primary to a node leading fewer groups (before that, the
    /// home must stay writable here).
    pub fn place_home(&self, stream: u32, partitions: &[PartitionDef]) {
        if let Some(groups) = self.groups() {
            groups.place(stream);
            for p in partitions.iter().filter(|p| groups.group_of(p.stream) == Some(p.stream)) {
                groups.place(p.stream);
            }
        }
    }

    /// Undoes [`Self::create_keyed_home`] when the database's entry could not
    /// be written: its group (on a cluster), its engines, its partitions'.
    pub fn abandon_home(&self, stream: u32, partitions: &[PartitionDef]) {
        if let Some(groups) = self.groups() {
            let own = partitions.iter().map(|p| p.stream).filter(|s| groups.group_of(*s) == Some(*s));
            for group in std::iter::once(stream).chain(own) {
                if let Err(e) = groups.remove(group) {
                    tracing::warn!(group, "a group made for a database that failed stays: {}", e.reason());
                }
            }
        }
        let dropped = self.drop_home(stream).and_then(|()| self.drop_partitions(partitions));
        if let Err(e) = dropped {
            tracing::warn!(stream, "the engines of a database that failed stay until the next start: {}", e.message);
        }
    }

    /// Tells the catalog how the cluster replicates each database (once).
    pub fn set_groups(&self, groups: Arc<dyn crate::storage::cluster_view::DatabaseGroups>) {
        let _ = self.groups.set(groups);
    }

    pub(crate) fn groups(&self) -> Option<&Arc<dyn crate::storage::cluster_view::DatabaseGroups>> {
        self.groups.get()
    }

    /// The replicas of a database home's own group, when it has one.
    pub fn stream_replicas(&self, stream: u32) -> Option<Vec<crate::storage::cluster_view::ReplicaRow>> {
        self.cluster.get().and_then(|c| c.stream_replicas(stream))
    }

    /// A replica's catalog (one serving the databases whose groups this
    /// node leads) writes only their homes: what is cluster-wide —
    /// databases, roles — is written where the cluster's catalog is
    /// primary, which sessions of `tessera` and `postgres` reach.
    pub(super) fn check_writable(&self, home: &Home) -> Result<()> {
        if self.replica && home.stream == tessera_engine::SYSTEM_STREAM {
            return Err(SqlError::new(
                crate::error::code::FEATURE_NOT_SUPPORTED,
                "this statement changes the cluster's catalog (databases, roles), which a session of a database with replicas of its own cannot do",
            )
            .with_hint("Connect to database \"tessera\" or \"postgres\" to run it."));
        }
        Ok(())
    }

    /// Forgets a dropped database's home and deletes its engine.
    pub fn drop_home(&self, stream: u32) -> Result<()> {
        self.homes.write().remove(&stream);
        self.node.drop_partition(stream)?;
        Ok(())
    }

    /// The home with this stream, attached when first asked for: opened
    /// (and recovered) on a primary; on a replica, only once replication
    /// has created it (None before).
    pub(super) fn attach_home(&self, stream: u32) -> Result<Option<Home>> {
        if let Some(h) = self.homes.read().get(&stream) {
            return Ok(Some(h.clone()));
        }
        let engine =
            if self.replica { self.node.partition(stream) } else { Some(self.node.open_partition(stream, false)?) };
        let Some(engine) = engine else { return Ok(None) };
        let home = Home::in_engine(stream, engine, false)?;
        if let Some(h) = &home {
            self.homes.write().insert(stream, h.clone());
        }
        Ok(home)
    }

    /// The home of database `db` (the system engine when it has none of
    /// its own, or does not exist).
    pub(super) fn home_of(&self, db: &str) -> Result<Home> {
        let stream = self.schema().database(db).and_then(|d| d.home);
        match stream {
            None => Ok(self.system_home()),
            Some(s) => self.attach_home(s)?.ok_or_else(|| {
                SqlError::new(
                    crate::error::code::CANNOT_CONNECT_NOW,
                    format!("database \"{db}\" has not reached this node yet"),
                )
            }),
        }
    }

    /// The engine a transaction of database `db` starts on (its home), and
    /// its stream.
    pub fn base_engine(&self, db: &str) -> Result<(u32, Arc<Engine>)> {
        let h = self.home_of(db)?;
        Ok((h.stream, h.engine))
    }

    /// Where a catalog entry is kept: a table's or sequence's in its
    /// database's home, everything else in the system engine.
    pub(super) fn entry_home(&self, e: &Entry) -> Result<Home> {
        match e {
            Entry::Table(t) => self.home_of(&t.db),
            Entry::Sequence(s) => self.home_of(&s.db),
            Entry::Job(j) => self.home_of(&j.db),
            Entry::Type(t) => self.home_of(&t.db),
            Entry::View(v) => self.home_of(&v.db),
            Entry::Layout(l) => self.attach_home(l.home)?.ok_or_else(|| {
                SqlError::new(
                    crate::error::code::CANNOT_CONNECT_NOW,
                    "the database's home has not reached this node yet",
                )
            }),
            _ => Ok(self.system_home()),
        }
    }

    /// `items` grouped by the home `home_of` says each is kept in, in
    /// order of first appearance.
    pub(super) fn by_home<'a, T>(
        &self,
        items: &'a [T],
        home_of: impl Fn(&T) -> Result<Home>,
    ) -> Result<Vec<(Home, Vec<&'a T>)>> {
        let mut groups: Vec<(Home, Vec<&T>)> = Vec::new();
        for item in items {
            let home = home_of(item)?;
            match groups.iter_mut().find(|(h, _)| h.stream == home.stream) {
                Some((_, these)) => these.push(item),
                None => groups.push((home, vec![item])),
            }
        }
        Ok(groups)
    }

    /// Where the entry with this key is kept (see [`Self::entry_home`]).
    pub(super) fn key_home(&self, key: &str) -> Result<Home> {
        let (kind, oid) = key.split_once(':').unwrap_or((key, ""));
        let oid: u32 = oid.parse().unwrap_or(u32::MAX);
        let db = self.schema().db_of_key(kind, oid).map(str::to_string);
        match db {
            Some(db) => self.home_of(&db),
            None => Ok(self.system_home()),
        }
    }

    /// The home holding sequence `oid`'s reservations.
    pub(super) fn sequence_home(&self, oid: u32) -> Result<Home> {
        self.key_home(&format!("sequence:{oid}"))
    }

    /// Whether a database's home that was missing when the catalog was
    /// loaded (a replica's, before replication created it) is there now.
    pub(super) fn home_arrived(&self) -> bool {
        let wanted: Vec<u32> = self.schema().databases().filter_map(|d| d.home).collect();
        let homes = self.homes.read();
        wanted.iter().any(|s| {
            !homes.contains_key(s) && self.node.partition(*s).is_some_and(|e| e.table(CATALOG_TABLE).is_some())
        })
    }

    /// The change count of every attached home's catalog table.
    pub(super) fn home_changes(&self) -> i64 {
        self.homes.read().values().map(Home::changes).sum()
    }

    /// Whether a snapshot replaced the tables of the system engine or of
    /// an attached home since they were looked up (a replica's catalog
    /// then looks them up again and reloads).
    pub(super) fn homes_replaced(&self) -> bool {
        !self.system.read().is_current(&self.node) || self.homes.read().values().any(|h| !h.is_current(&self.node))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_home_has_its_own_block_of_oids_above_the_system_counter() {
        assert_eq!(
            block_of(crate::storage::catalog::FIRST_USER_OID),
            None,
            "the system counter's oids are in no block"
        );
        assert_eq!(block_of((1 << 20) - 1), None);
        assert_eq!(oid_block(1), 1 << 20);
        assert_eq!(block_of(oid_block(7) + 123), Some(7));
        assert_eq!(block_of(oid_block(8) - 1), Some(7));
        assert_eq!(block_of(oid_block(MAX_HOME_STREAM)), Some(MAX_HOME_STREAM));
        assert_eq!(oid_block(MAX_HOME_STREAM + 1), u32::MAX, "no block past the last stream");
    }
}
