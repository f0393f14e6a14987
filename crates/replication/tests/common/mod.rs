//! What the replication tests share: nodes in one process, each with its
//! own Raft log on disk and real RPC over 127.0.0.1, and ways to write,
//! read and wait for them.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tessera_engine::tuple::{Tuple, decode_i64, encode_i64, encode_tuple};
use tessera_engine::{EngineConfig, Isolation, KeyRange, PRIMARY};
use tessera_replication::{ClusterSecret, NodeInfo, ReplicationConfig, ReplicationNode, Role};

pub const SECRET: &[u8] = b"test cluster secret";

pub struct TestNode {
    pub id: u64,
    pub dir: PathBuf,
    pub addr: String,
    pub group: Option<ReplicationNode>,
    /// Entries between snapshots (0: none).
    pub snapshot_every: u64,
    /// How long a voter may be gone before the manager replaces it.
    pub replace_after: Duration,
}

pub fn config(id: u64, dir: &Path, addr: &str, join: &[String]) -> ReplicationConfig {
    let info = NodeInfo { rpc_addr: addr.to_string(), pg_addr: String::new(), ..Default::default() };
    let mut c = ReplicationConfig::new(id, info, dir.join("raft-log"), ClusterSecret::new(SECRET));
    c.join = join.to_vec();
    c.heartbeat_ms = 50;
    c.election_timeout_ms = (300, 600);
    // A tiny cache: replicas catching up and restarts read entries back from disk.
    c.log_cache_bytes = 512;
    c
}

impl TestNode {
    pub fn start(&mut self, join: &[String]) {
        // The port was free when reserved; something else may hold it for a
        // moment (an outgoing connection's port), so try for a while.
        let listener =
            wait_for("the node's port", Duration::from_secs(20), || std::net::TcpListener::bind(&self.addr).ok());
        let mut c = config(self.id, &self.dir, &self.addr, join);
        c.snapshot_every = self.snapshot_every;
        c.log_kept_below_snapshot = 10;
        c.replace_after = self.replace_after;
        self.group = Some(ReplicationNode::start(c, EngineConfig::in_memory(), listener).unwrap());
    }

    pub fn stop(&mut self) {
        self.group.take().unwrap().shutdown().unwrap();
    }

    pub fn group(&self) -> &ReplicationNode {
        self.group.as_ref().unwrap()
    }

    pub fn role(&self) -> Role {
        self.group.as_ref().map_or(Role::Starting, |g| g.role().borrow().clone())
    }
}

pub fn cluster(root: &Path) -> (Vec<TestNode>, Vec<String>) {
    cluster_with(root, 0)
}

pub fn cluster_with(root: &Path, snapshot_every: u64) -> (Vec<TestNode>, Vec<String>) {
    cluster_of(root, 3, snapshot_every, Duration::from_secs(30))
}

pub fn cluster_of(root: &Path, n: u64, snapshot_every: u64, replace_after: Duration) -> (Vec<TestNode>, Vec<String>) {
    let mut nodes = Vec::new();
    for id in 1..=n {
        // Reserve a port, then free it for the node to bind.
        let addr = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
        nodes.push(TestNode { id, dir: root.join(format!("n{id}")), addr, group: None, snapshot_every, replace_after });
    }
    let join: Vec<String> = nodes.iter().map(|n| n.addr.clone()).collect();
    for n in &mut nodes {
        n.start(&join);
    }
    (nodes, join)
}

pub fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn primary(nodes: &[TestNode]) -> usize {
    wait_for("a primary", Duration::from_secs(30), || {
        let p: Vec<usize> = (0..nodes.len()).filter(|&i| nodes[i].role() == Role::Primary).collect();
        (p.len() == 1).then(|| p[0])
    })
}

pub fn row(id: i64) -> Vec<u8> {
    encode_tuple(&[Some(&encode_i64(id)), Some(&encode_i64(id * 10))])
}

/// The sorted keys of `table` in `engine` (none: no such table yet).
pub fn table_ids(engine: &tessera_engine::Engine, table: &str) -> Vec<i64> {
    let Some(t) = engine.table(table) else { return Vec::new() };
    let mut tx = engine.begin(Isolation::Snapshot).unwrap();
    let mut out: Vec<i64> = tx
        .scan_collect(&t, PRIMARY, &KeyRange::all())
        .unwrap()
        .iter()
        .map(|r| decode_i64(Tuple::parse(r).unwrap().field(0).unwrap()).unwrap())
        .collect();
    out.sort();
    out
}

/// Logs to the test's output (`RUST_LOG`, warnings by default).
pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()))
        .with_test_writer()
        .try_init();
}

/// Rows of table `u` in stream `stream`'s engine on `node` (none: no engine yet).
pub fn ids_in(node: &TestNode, stream: u32) -> Vec<i64> {
    node.group().node().partition(stream).map_or_else(Vec::new, |engine| table_ids(&engine, "u"))
}

pub fn insert_in(node: &TestNode, stream: u32, ids: std::ops::RangeInclusive<i64>) {
    let engine = node.group().node().partition(stream).expect("the partition's engine");
    let t = engine.table("u").expect("table u");
    for id in ids {
        let mut tx = engine.begin(Isolation::Snapshot).unwrap();
        tx.insert(&t, row(id)).unwrap();
        tx.commit().unwrap();
    }
}

/// The node whose role in data group `group` is primary.
pub fn primary_of(nodes: &[TestNode], group: u32) -> usize {
    wait_for(&format!("a primary of group {group}"), Duration::from_secs(30), || {
        let p: Vec<usize> = (0..nodes.len())
            .filter(|&i| {
                nodes[i].group.as_ref().and_then(|g| g.role_of(group)).is_some_and(|r| *r.borrow() == Role::Primary)
            })
            .collect();
        (p.len() == 1).then(|| p[0])
    })
}
