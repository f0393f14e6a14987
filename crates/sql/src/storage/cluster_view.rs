//! What the SQL layer can show of the cluster it runs in: the views
//! `tessera.nodes` and `tessera.replicas` read it. The replication layer
//! provides it (the binary wires the two together); a single node has none
//! and shows itself as the primary of everything.

/// One node of the cluster as the primary sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRow {
    pub id: u64,
    pub rpc_addr: String,
    pub pg_addr: String,
    pub failure_domain: String,
    pub upgrade_domain: String,
    /// `primary`, `secondary`, or `unreachable` (no answer lately).
    pub role: String,
    /// The primary's epoch (Raft term).
    pub epoch: u64,
    /// The last log index known to be on the node (None: unknown).
    pub applied: Option<u64>,
    /// How many log entries the node is behind the primary (None: unknown).
    pub behind: Option<u64>,
    /// Load figures, as the node last reported them (None: not known here).
    pub load: Option<NodeLoad>,
    /// Its part in the partition manager's group: `leader`, `voter` or
    /// `learner` (None: not a member).
    pub manager: Option<String>,
    /// Being drained (`tessera node drain`), until it restarts.
    pub draining: bool,
}

/// A node's load figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLoad {
    /// Client connections it serves or relays.
    pub connections: u32,
    /// CPU its process used lately (100 = one core).
    pub cpu_percent: u32,
    /// Resident memory of its process, in MiB.
    pub rss_mb: u32,
}

pub trait ClusterView: Send + Sync {
    fn nodes(&self) -> Vec<NodeRow>;

    /// The replicas of the group replicating `stream` (a database's home),
    /// as this node knows them; None when the stream has no group of its
    /// own (the nodes' roles are then its replicas').
    fn stream_replicas(&self, _stream: u32) -> Option<Vec<ReplicaRow>> {
        None
    }

    /// Whether this node may serve a statement of a database whose home is
    /// `home` (None: the cluster's first group) as its primary now: it
    /// leads the database's group with a lease. Checked before each
    /// statement on a primary.
    fn holds_lease(&self, _home: Option<u32>) -> bool {
        true
    }
}

/// One replica of a database's own group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaRow {
    /// The replication group holding it (named by its first stream).
    pub group: u32,
    pub node_id: u64,
    /// `primary`, `secondary`, `building` or `unreachable`.
    pub role: String,
    pub epoch: u64,
    pub behind: Option<u64>,
}

/// Why something asked of a database's group could not be done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupsError {
    /// What was asked cannot be done (more replicas than nodes).
    Invalid(String),
    /// Not now: too few nodes took a replica in time, no primary.
    Unavailable(String),
}

impl GroupsError {
    /// Why, in words.
    pub fn reason(&self) -> &str {
        match self {
            GroupsError::Invalid(why) | GroupsError::Unavailable(why) => why,
        }
    }
}

/// How a cluster replicates each database on its own: the catalog asks it
/// for a new database's group before anything is written to its home.
pub trait DatabaseGroups: Send + Sync {
    /// Creates a new database's replication groups, each named by its
    /// first stream and replicating its streams (the home's; each of a
    /// keyed database's partitions'), keeping `replicas` replicas (None:
    /// the cluster's count), and returns once this node is the primary of
    /// each with a quorum of voters, so that their first writes are
    /// acknowledged only on more than one node. On failure none is left.
    fn create(&self, groups: &[Vec<u32>], replicas: Option<usize>) -> Result<(), GroupsError>;

    /// Adds `partition` to group `group` (a split on the group's primary,
    /// here), before anything is written to it.
    fn adopt(&self, group: u32, partition: u32) -> Result<(), GroupsError>;

    /// Makes a group of its own for `partition`, a new partition split
    /// from the one on stream `parent` (whose group this node leads): with
    /// the replica count of `parent`'s group, and returning once this node
    /// is its primary with a quorum of voters (as [`Self::create`]), before
    /// anything is written to it.
    fn split_off(&self, parent: u32, partition: u32) -> Result<(), GroupsError>;

    /// The groups the cluster lists in home `home`'s block of streams
    /// (its partitions' groups; a split cut short may have left one that
    /// no partition has).
    fn partition_groups(&self, _home: u32) -> Vec<u32> {
        Vec::new()
    }

    /// The group replicating `stream`, when it has one of its own (None:
    /// the cluster's first group).
    fn group_of(&self, _stream: u32) -> Option<u32> {
        None
    }

    /// Once the home's tables are made: hands its primary to a node
    /// leading fewer groups, if the cluster would move it there anyway
    /// (best effort; the database's sessions then start there).
    fn place(&self, stream: u32);

    /// Removes the group of the home on `stream` (its database was
    /// dropped): every node stops replicating it and frees what it held.
    fn remove(&self, stream: u32) -> Result<(), GroupsError>;

    /// How many sessions the primary of the home on `stream` serves (on
    /// whichever node it is).
    fn sessions_on(&self, stream: u32) -> Result<usize, GroupsError>;

    /// Where the primaries of partitions replicated by groups of their
    /// own are (None: every partition is its database's home's group's).
    fn routes(&self) -> Option<std::sync::Arc<dyn tessera_engine::remote::PartitionRoutes>> {
        None
    }
}

/// What a secondary knows of its own freshness, for sessions that read
/// there (`tessera.read_from = secondary`).
pub trait SecondaryState: Send + Sync {
    /// How far behind the primary this node's data may be: the time since
    /// the primary last told it a commit index it has applied. None when
    /// it cannot say (no primary heard from, or not caught up at all).
    fn staleness(&self) -> Option<std::time::Duration>;
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use tessera_engine::{EngineConfig, Node};

    use super::*;

    /// A cluster view whose lease the test turns on and off.
    struct Lease(AtomicBool);

    impl ClusterView for Lease {
        fn nodes(&self) -> Vec<NodeRow> {
            Vec::new()
        }

        fn holds_lease(&self, _home: Option<u32>) -> bool {
            self.0.load(Ordering::SeqCst)
        }
    }

    #[test]
    fn a_primary_runs_no_statement_once_its_lease_lapsed() {
        let node = Arc::new(Node::open(EngineConfig::in_memory()).unwrap());
        let sql = crate::SqlEngine::open(node).unwrap();
        let lease = Arc::new(Lease(AtomicBool::new(true)));
        sql.catalog.set_cluster(lease.clone());
        let mut s = sql.session("tessera", "tessera").unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (_, err) = rt.block_on(s.execute_sql("CREATE TABLE t (k int PRIMARY KEY); INSERT INTO t VALUES (1)"));
        assert!(err.is_none(), "{err:?}");

        lease.0.store(false, Ordering::SeqCst);
        // Neither a query nor a key read (the fast path) runs. (Writes
        // need their commit's quorum anyway.)
        for sql in ["SELECT count(*) FROM t", "SELECT k FROM t WHERE k = 1"] {
            let (_, err) = rt.block_on(s.execute_sql(sql));
            let err = err.unwrap_or_else(|| panic!("{sql} ran on a lapsed lease"));
            assert_eq!(err.code, "57P03", "{sql}: {err:?}");
            assert!(err.message.contains("lease"), "{}", err.message);
        }

        // The lease back (a quorum answered again): statements run.
        lease.0.store(true, Ordering::SeqCst);
        let (out, err) = rt.block_on(s.execute_sql("SELECT k FROM t WHERE k = 1"));
        assert!(err.is_none(), "{err:?}");
        assert_eq!(out.len(), 1);
    }
}
