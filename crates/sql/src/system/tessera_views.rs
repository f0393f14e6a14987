//! Tessera's own system views, in schema `tessera`: `databases`,
//! `partitions`, `jobs`, and the cluster map: `nodes` and `replicas`.
//! [`TESSERA`] lists them.

use crate::scope::Resolver;
use crate::storage::catalog::DatabaseDef;
use crate::storage::cluster_view::{NodeLoad, NodeRow, ReplicaRow};
use crate::system::view::{View, Views, view_row};

/// Tessera's own system views, in the order the schema lists them.
pub static TESSERA: Views = Views(&[&DATABASES, &PARTITIONS, &JOBS, &NODES, &REPLICAS]);

view_row! {
    /// A row of `databases`: a database, keyed or keyless, with its
    /// partition key. `primary_node`: where the database's sessions run
    /// (on a cluster, its home's primary; NULL on a single node or when
    /// unknown here).
    pub struct Databases {
        name: String,
        kind: &'static str,
        partition_key: Option<String>,
        owner: String,
        primary_node: Option<i64>,
    }
}

pub static DATABASES: View<Databases> = View { name: "databases", rows: databases };

fn databases(r: &Resolver) -> Vec<Databases> {
    let nodes = r.catalog.cluster_nodes();
    let first = nodes.iter().find(|n| n.role == "primary").map(|n| n.id);
    r.catalog
        .databases()
        .iter()
        .map(|d| {
            let own = d.home.and_then(|h| r.catalog.stream_replicas(h));
            let primary = match own {
                Some(replicas) => replicas.iter().find(|x| x.role == "primary").map(|x| x.node_id),
                None => first.filter(|_| nodes.len() > 1),
            };
            Databases {
                name: d.name.clone(),
                kind: if d.partition_key.is_some() { "keyed" } else { "keyless" },
                partition_key: d.partition_key.as_ref().map(|k| k.to_string()),
                owner: d.owner.clone(),
                primary_node: primary.map(|n| n as i64),
            }
        })
        .collect()
}

view_row! {
    /// A row of `partitions`: a partition, its key range (NULL:
    /// unbounded), the rows and bytes of its tables, its schema version.
    /// A database without partitions shows one, its whole key range.
    pub struct Partitions {
        database: String,
        partition: i64,
        stream: i64,
        low: Option<String>,
        high: Option<String>,
        rows: i64,
        bytes: i64,
        schema_version: i64,
    }
}

pub static PARTITIONS: View<Partitions> = View { name: "partitions", rows: partitions };

fn partitions(r: &Resolver) -> Vec<Partitions> {
    let mut rows = Vec::new();
    for d in r.catalog.databases() {
        let totals = partition_totals(r, &d);
        let ty = d.partition_key.as_ref().map(|k| k.ty);
        let bound = |b: Option<&[u8]>| ty.and_then(|ty| crate::storage::partition::describe_bound(ty, b));
        if d.partitions.is_empty() {
            let (n, bytes) = totals[0];
            rows.push(Partitions {
                database: d.name.clone(),
                partition: 1,
                stream: 0,
                low: None,
                high: None,
                rows: n,
                bytes,
                schema_version: 0,
            });
        }
        for (k, p) in d.partitions.iter().enumerate() {
            let (n, bytes) = totals[k];
            rows.push(Partitions {
                database: d.name.clone(),
                partition: k as i64 + 1,
                stream: p.stream as i64,
                low: bound(Some(&p.low)),
                high: bound(p.high.as_deref()),
                rows: n,
                bytes,
                schema_version: p.schema_version as i64,
            });
        }
    }
    rows
}

/// The rows and bytes of the tables of `d` in each of its partitions (at
/// least one).
fn partition_totals(r: &Resolver, d: &DatabaseDef) -> Vec<(i64, i64)> {
    let mut totals = vec![(0i64, 0i64); d.partitions.len().max(1)];
    for t in &r.catalog.tables(&d.name) {
        if let Ok(st) = r.catalog.engine_table(t) {
            for (k, t) in st.parts.iter().enumerate().filter_map(|(k, p)| Some((k, p.table.as_ref()?))) {
                let s = t.stats();
                totals[k].0 += s.rows;
                totals[k].1 += s.bytes;
            }
        }
    }
    totals
}

view_row! {
    /// A row of `jobs`: a schema change of a keyed database and its
    /// progress.
    pub struct Jobs {
        id: i64,
        database: String,
        statement: String,
        schema_version: i64,
        state: &'static str,
        partitions_done: i64,
        partitions: i64,
        error: Option<String>,
        started_ms: i64,
        finished_ms: Option<i64>,
    }
}

pub static JOBS: View<Jobs> = View { name: "jobs", rows: jobs };

fn jobs(r: &Resolver) -> Vec<Jobs> {
    r.catalog
        .jobs()
        .iter()
        .map(|j| Jobs {
            id: j.id as i64,
            database: j.db.clone(),
            statement: j.statement.clone(),
            schema_version: j.schema_version as i64,
            state: j.state.name(),
            partitions_done: j.done as i64,
            partitions: j.partitions as i64,
            error: j.error.clone(),
            started_ms: j.started_ms,
            finished_ms: j.finished_ms,
        })
        .collect()
}

view_row! {
    /// A row of `nodes`: a node of the cluster as the primary sees it,
    /// with its load figures.
    pub struct Nodes {
        node_id: i64,
        rpc_addr: String,
        pg_addr: String,
        failure_domain: String,
        upgrade_domain: String,
        role: String,
        epoch: i64,
        applied_index: Option<i64>,
        behind: Option<i64>,
        connections: Option<i64>,
        cpu_percent: Option<i64>,
        rss_mb: Option<i64>,
        manager: Option<String>,
        draining: bool,
    }
}

pub static NODES: View<Nodes> = View { name: "nodes", rows: nodes };

fn nodes(r: &Resolver) -> Vec<Nodes> {
    r.catalog.cluster_nodes().into_iter().map(node).collect()
}

fn node(n: NodeRow) -> Nodes {
    let load = |f: fn(&NodeLoad) -> u32| n.load.as_ref().map(|l| f(l) as i64);
    Nodes {
        node_id: n.id as i64,
        rpc_addr: n.rpc_addr,
        pg_addr: n.pg_addr,
        failure_domain: n.failure_domain,
        upgrade_domain: n.upgrade_domain,
        role: n.role,
        epoch: n.epoch as i64,
        applied_index: n.applied.map(|a| a as i64),
        behind: n.behind.map(|b| b as i64),
        connections: load(|l| l.connections),
        cpu_percent: load(|l| l.cpu_percent),
        rss_mb: load(|l| l.rss_mb),
        manager: n.manager,
        draining: n.draining,
    }
}

view_row! {
    /// A row of `replicas`: a replica of a partition, the node that holds
    /// it, in which role and epoch, and how far behind the primary it is.
    pub struct Replicas {
        database: String,
        partition: i64,
        stream: i64,
        node_id: i64,
        role: String,
        epoch: i64,
        behind: Option<i64>,
        group_id: i64,
    }
}

pub static REPLICAS: View<Replicas> = View { name: "replicas", rows: replicas };

/// Every replica of every partition. A partition with a group of its own
/// (on a cluster: each of a keyed database's) shows that group's
/// replicas, a keyless database its home's group's; the others
/// (`tessera`, `postgres`, databases of older data directories) are in
/// the first group, whose replicas are the nodes' roles.
fn replicas(r: &Resolver) -> Vec<Replicas> {
    let nodes = r.catalog.cluster_nodes();
    let mut rows = Vec::new();
    for d in r.catalog.databases() {
        let parts: Vec<(i64, i64)> = if d.partitions.is_empty() {
            vec![(1, d.home.unwrap_or(0) as i64)]
        } else {
            d.partitions.iter().enumerate().map(|(k, p)| (k as i64 + 1, p.stream as i64)).collect()
        };
        for (partition, stream) in parts {
            // The partition's group, or its home's; else the nodes' roles
            // (spares hold no replica).
            let own = r.catalog.stream_replicas(stream as u32);
            let replicas = own.or_else(|| d.home.and_then(|h| r.catalog.stream_replicas(h))).unwrap_or_else(|| {
                let holders = nodes.iter().filter(|n| !n.role.contains("spare"));
                let replica = |n: &NodeRow| ReplicaRow {
                    group: 0,
                    node_id: n.id,
                    role: n.role.clone(),
                    epoch: n.epoch,
                    behind: n.behind,
                };
                holders.map(replica).collect()
            });
            for x in replicas {
                rows.push(Replicas {
                    database: d.name.clone(),
                    partition,
                    stream,
                    node_id: x.node_id as i64,
                    role: x.role,
                    epoch: x.epoch as i64,
                    behind: x.behind.map(|b| b as i64),
                    group_id: x.group as i64,
                });
            }
        }
    }
    rows
}
