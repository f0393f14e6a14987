//! Tessera's own system views, in schema `tessera`: `databases`,
//! `partitions`, `jobs`, and the cluster map: `nodes` and `replicas`.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType::{Int64 as I8, Utf8 as T};
use datafusion::common::ScalarValue as V;
use datafusion::datasource::TableProvider;
use datafusion::error::Result as DfResult;

use crate::scope::Resolver;
use crate::system::pg_catalog::{i, null_s, s, table};

/// Tessera's own system views, in schema `tessera`.
pub const TESSERA_TABLES: &[&str] = &["databases", "partitions", "jobs", "nodes", "replicas"];

pub fn tessera_table(r: &Resolver, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
    let t = match name {
        // Every database, keyed or keyless, with its partition key.
        // `primary_node`: where the database's sessions run (on a cluster,
        // its home's primary; NULL on a single node or when unknown here).
        "databases" => {
            let nodes = r.catalog.cluster_nodes();
            let first = nodes.iter().find(|n| n.role == "primary").map(|n| n.id);
            table(
                &[("name", T), ("kind", T), ("partition_key", T), ("owner", T), ("primary_node", I8)],
                r.catalog
                    .databases()
                    .iter()
                    .map(|d| {
                        let own = d.home.and_then(|h| r.catalog.stream_replicas(h));
                        let primary = match own {
                            Some(replicas) => replicas.iter().find(|x| x.role == "primary").map(|x| x.node_id),
                            None => first.filter(|_| nodes.len() > 1),
                        };
                        vec![
                            s(&d.name),
                            s(if d.partition_key.is_some() { "keyed" } else { "keyless" }),
                            d.partition_key.as_ref().map_or_else(null_s, |k| s(k.to_string())),
                            s(&d.owner),
                            primary.map_or(V::Int64(None), |n| i(n as i64)),
                        ]
                    })
                    .collect(),
            )?
        }
        // Every partition: its key range (NULL: unbounded), the rows and
        // bytes of its tables, its schema version.
        "partitions" => {
            let mut rows = Vec::new();
            for d in r.catalog.databases() {
                let tables = r.catalog.tables(&d.name);
                let mut totals = vec![(0i64, 0i64); d.partitions.len().max(1)];
                for t in &tables {
                    if let Ok(st) = r.catalog.engine_table(t) {
                        for (k, t) in st.parts.iter().enumerate().filter_map(|(k, p)| Some((k, p.table.as_ref()?))) {
                            let s = t.stats();
                            totals[k].0 += s.rows;
                            totals[k].1 += s.bytes;
                        }
                    }
                }
                let ty = d.partition_key.as_ref().map(|k| k.ty);
                let bound = |b: Option<&[u8]>| {
                    ty.and_then(|ty| crate::storage::partition::describe_bound(ty, b)).map_or_else(null_s, s)
                };
                if d.partitions.is_empty() {
                    let (n, bytes) = totals[0];
                    rows.push(vec![s(&d.name), i(1), i(0), null_s(), null_s(), i(n), i(bytes), i(0)]);
                }
                for (k, p) in d.partitions.iter().enumerate() {
                    let (n, bytes) = totals[k];
                    rows.push(vec![
                        s(&d.name),
                        i(k as i64 + 1),
                        i(p.stream as i64),
                        bound(Some(&p.low)),
                        bound(p.high.as_deref()),
                        i(n),
                        i(bytes),
                        i(p.schema_version as i64),
                    ]);
                }
            }
            table(
                &[
                    ("database", T),
                    ("partition", I8),
                    ("stream", I8),
                    ("low", T),
                    ("high", T),
                    ("rows", I8),
                    ("bytes", I8),
                    ("schema_version", I8),
                ],
                rows,
            )?
        }
        // Schema changes of keyed databases and their progress.
        "jobs" => table(
            &[
                ("id", I8),
                ("database", T),
                ("statement", T),
                ("schema_version", I8),
                ("state", T),
                ("partitions_done", I8),
                ("partitions", I8),
                ("error", T),
                ("started_ms", I8),
                ("finished_ms", I8),
            ],
            r.catalog
                .jobs()
                .iter()
                .map(|j| {
                    vec![
                        i(j.id as i64),
                        s(&j.db),
                        s(&j.statement),
                        i(j.schema_version as i64),
                        s(j.state.name()),
                        i(j.done as i64),
                        i(j.partitions as i64),
                        j.error.as_ref().map_or_else(null_s, s),
                        i(j.started_ms),
                        j.finished_ms.map_or(V::Int64(None), i),
                    ]
                })
                .collect(),
        )?,
        // The cluster's nodes as the primary sees them, with their load
        // figures.
        "nodes" => table(
            &[
                ("node_id", I8),
                ("rpc_addr", T),
                ("pg_addr", T),
                ("failure_domain", T),
                ("upgrade_domain", T),
                ("role", T),
                ("epoch", I8),
                ("applied_index", I8),
                ("behind", I8),
                ("connections", I8),
                ("cpu_percent", I8),
                ("rss_mb", I8),
                ("manager", T),
                ("draining", datafusion::arrow::datatypes::DataType::Boolean),
            ],
            r.catalog
                .cluster_nodes()
                .into_iter()
                .map(|n| {
                    let load = |f: fn(&crate::storage::cluster_view::NodeLoad) -> u32| {
                        n.load.as_ref().map_or(V::Int64(None), |l| i(f(l) as i64))
                    };
                    vec![
                        i(n.id as i64),
                        s(&n.rpc_addr),
                        s(&n.pg_addr),
                        s(&n.failure_domain),
                        s(&n.upgrade_domain),
                        s(&n.role),
                        i(n.epoch as i64),
                        n.applied.map_or(V::Int64(None), |a| i(a as i64)),
                        n.behind.map_or(V::Int64(None), |b| i(b as i64)),
                        load(|l| l.connections),
                        load(|l| l.cpu_percent),
                        load(|l| l.rss_mb),
                        n.manager.as_deref().map_or_else(null_s, s),
                        V::Boolean(Some(n.draining)),
                    ]
                })
                .collect(),
        )?,
        // Every replica of every partition: which node holds it, in which
        // role and epoch, and how far behind the primary it is. A partition
        // with a group of its own (on a cluster: each of a keyed database's)
        // shows that group's replicas, a keyless database its home's group's;
        // the others (`tessera`, `postgres`, databases of older data
        // directories) are in the first group, whose replicas are the
        // nodes' roles.
        "replicas" => {
            let nodes = r.catalog.cluster_nodes();
            let mut rows = Vec::new();
            for d in r.catalog.databases() {
                let parts: Vec<(i64, i64)> = if d.partitions.is_empty() {
                    vec![(1, d.home.unwrap_or(0) as i64)]
                } else {
                    d.partitions.iter().enumerate().map(|(k, p)| (k as i64 + 1, p.stream as i64)).collect()
                };
                for (partition, stream) in parts {
                    // The partition's group, or its home's.
                    let own = r.catalog.stream_replicas(stream as u32);
                    if let Some(replicas) = own.or_else(|| d.home.and_then(|h| r.catalog.stream_replicas(h))) {
                        for x in replicas {
                            rows.push(vec![
                                s(&d.name),
                                i(partition),
                                i(stream),
                                i(x.node_id as i64),
                                s(&x.role),
                                i(x.epoch as i64),
                                x.behind.map_or(V::Int64(None), |b| i(b as i64)),
                                i(x.group as i64),
                            ]);
                        }
                        continue;
                    }
                    // Spares hold no replica.
                    for n in nodes.iter().filter(|n| !n.role.contains("spare")) {
                        rows.push(vec![
                            s(&d.name),
                            i(partition),
                            i(stream),
                            i(n.id as i64),
                            s(&n.role),
                            i(n.epoch as i64),
                            n.behind.map_or(V::Int64(None), |b| i(b as i64)),
                            i(0),
                        ]);
                    }
                }
            }
            table(
                &[
                    ("database", T),
                    ("partition", I8),
                    ("stream", I8),
                    ("node_id", I8),
                    ("role", T),
                    ("epoch", I8),
                    ("behind", I8),
                    ("group_id", I8),
                ],
                rows,
            )?
        }
        _ => return Ok(None),
    };
    Ok(Some(t))
}
