//! Four real `tessera` processes keeping three replicas: the fourth node is
//! a spare (a gateway holding no replica). When a replica's node is lost
//! for longer than `--replace-after-secs`, the primary's partition manager
//! downshifts it and builds a replica on the spare (snapshot, then log),
//! which then votes: the group survives losing a second original node. A
//! lost node that returns is a spare, and is rebuilt in place of the next
//! loss; a new node joins a formed cluster as a spare. The replica count
//! changes at run time (`tessera replicas N`): the manager builds or sheds
//! replicas to match. Database `plain` has a group of its own, which keeps
//! the cluster's count on the nodes holding the catalog: it follows.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::client::block_on;
use crate::cluster::{
    Outcome, SECRET, admin, connect_reading_secondary, free_port, insert, keys, query, run, run_anywhere,
    start_cluster_with, wait_rows,
};
use crate::harness::Server;

/// Creates database `plain` with table `kv` and inserts keys 1..=`rows`:
/// the keys acknowledged, and those whose outcome is unknown.
async fn load_plain(all: &[u16], rows: i64) -> (BTreeSet<i64>, BTreeSet<i64>) {
    assert_eq!(run_anywhere(all, "tessera", "CREATE DATABASE plain", Duration::from_secs(60)).await, Outcome::Done);
    let sql = "CREATE TABLE kv (k int PRIMARY KEY, v text)";
    assert_eq!(run_anywhere(all, "plain", sql, Duration::from_secs(30)).await, Outcome::Done);
    let (mut acked, mut maybe) = (BTreeSet::new(), BTreeSet::new());
    for k in 1..=rows {
        insert(all, k, &mut acked, &mut maybe).await;
    }
    (acked, maybe)
}

/// (node id, role) of every node, as the primary reports them.
async fn roles(ports: &[u16]) -> Vec<(usize, String)> {
    for &p in ports {
        if let Ok(rows) = query(p, "tessera", "SELECT node_id, role FROM tessera.nodes ORDER BY node_id").await {
            return rows.iter().map(|r| (r[0].parse().unwrap(), r[1].clone())).collect();
        }
    }
    Vec::new()
}

/// Waits until the primary's view has exactly `voters` as primary and
/// secondaries (and no other voter); returns the primary.
async fn wait_voters(ports: &[u16], voters: &BTreeSet<usize>, what: &str) -> usize {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let r = roles(ports).await;
        let got: BTreeSet<usize> =
            r.iter().filter(|(_, role)| role == "primary" || role == "secondary").map(|(id, _)| *id).collect();
        if &got == voters
            && let Some((p, _)) = r.iter().find(|(_, role)| role == "primary")
        {
            return *p;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}: {r:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits until database `db`'s own group has exactly `voters` as its
/// primary and secondaries, as `tessera.replicas` shows it.
async fn wait_db_voters(ports: &[u16], db: &str, voters: &BTreeSet<usize>, what: &str) {
    let sql = format!("SELECT node_id, role FROM tessera.replicas WHERE database = '{db}'");
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let mut rows = Vec::new();
        for &p in ports {
            if let Ok(r) = query(p, "tessera", &sql).await {
                rows = r;
                break;
            }
        }
        let got: BTreeSet<usize> =
            rows.iter().filter(|r| r[1] == "primary" || r[1] == "secondary").map(|r| r[0].parse().unwrap()).collect();
        if &got == voters && rows.iter().any(|r| r[1] == "primary") {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}: {rows:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The keys the node on `port` holds itself (read on it as a secondary).
async fn local_keys(port: u16) -> Result<BTreeSet<i64>, String> {
    let c = connect_reading_secondary(port, "plain").await.map_err(|e| e.to_string())?;
    let rows = c.simple_query("SELECT k FROM kv").await.map_err(|e| e.to_string())?;
    Ok(rows
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(|k| k.parse().unwrap()),
            _ => None,
        })
        .collect())
}

/// Waits until the node on `port` itself holds keys that `check` accepts.
async fn wait_local_keys(port: u16, check: impl Fn(&BTreeSet<i64>) -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match local_keys(port).await {
            Ok(got) if check(&got) => return,
            other => assert!(Instant::now() < deadline, "{what}: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[test]
fn a_lost_replica_is_rebuilt_on_a_spare_and_the_group_keeps_three() {
    let rpc: Vec<u16> = (0..4).map(|_| free_port()).collect();
    let mut nodes: Vec<Server> =
        start_cluster_with(&rpc, |_| vec!["--replace-after-secs".to_string(), "2".to_string()]);
    let port = |nodes: &[Server], id: usize| nodes[id - 1].port();
    block_on(Duration::from_secs(400), async {
        let all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
        let (mut acked, mut maybe) = load_plain(&all, 30).await;

        // Three voters and a spare, placed by the founding node.
        let deadline = Instant::now() + Duration::from_secs(60);
        let spare = loop {
            let r = roles(&all).await;
            let voting = r.iter().filter(|(_, role)| role == "primary" || role == "secondary").count();
            if let (3, Some((s, _))) = (voting, r.iter().find(|(_, role)| role == "spare")) {
                break *s;
            }
            assert!(Instant::now() < deadline, "expected three voters and a spare: {r:?}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        // Database plain's own group has its replicas on the same three.
        let three: BTreeSet<usize> = (1..=4).filter(|&i| i != spare).collect();
        wait_db_voters(&all, "plain", &three, "plain's three replicas").await;
        // The spare serves clients (as a gateway) but holds no replica.
        let rows = query(port(&nodes, spare), "plain", "SELECT count(*) FROM kv").await.unwrap();
        assert_eq!(rows[0][0], acked.len().to_string());
        let holders = query(all[0], "tessera", "SELECT DISTINCT node_id FROM tessera.replicas").await.unwrap();
        assert!(!holders.iter().any(|r| r[0] == spare.to_string()), "{holders:?}");
        assert_eq!(holders.len(), 3, "{holders:?}");
        // The spare reads the catalog (a non-voting copy of the first
        // group), so a database may keep a replica there: one of four
        // replicas is built on it, and five are refused (four nodes).
        let five = run(all[0], "tessera", "CREATE DATABASE wide WITH (replicas = 5)").await;
        assert!(matches!(&five, Outcome::Unknown(e) if e.contains("22023")), "{five:?}");
        let sql = "CREATE DATABASE wide WITH (replicas = 4)";
        assert_eq!(run_anywhere(&all, "tessera", sql, Duration::from_secs(60)).await, Outcome::Done);
        let every_node: BTreeSet<usize> = (1..=4).collect();
        wait_db_voters(&all, "wide", &every_node, "wide's four replicas, one on the spare").await;
        let sql = "CREATE TABLE t (k int PRIMARY KEY); INSERT INTO t VALUES (1), (2), (3)";
        assert_eq!(run_anywhere(&all, "wide", sql, Duration::from_secs(60)).await, Outcome::Done);
        let sql = "DROP DATABASE wide";
        assert_eq!(run_anywhere(&all, "tessera", sql, Duration::from_secs(60)).await, Outcome::Done);

        // kill -9 the primary's node and keep writing: after the grace
        // period the new primary downshifts it and builds on the spare.
        let first = wait_voters(&all, &(1..=4).filter(|&i| i != spare).collect(), "three voters").await;
        nodes[first - 1].kill9();
        let alive: Vec<u16> = (1..=4).filter(|&i| i != first).map(|i| port(&nodes, i)).collect();
        for k in 31..=60 {
            insert(&alive, k, &mut acked, &mut maybe).await;
        }
        let group: BTreeSet<usize> = (1..=4).filter(|&i| i != first).collect();
        let primary = wait_voters(&alive, &group, "the spare to replace the lost node").await;
        let every = |acked: &BTreeSet<i64>, maybe: &BTreeSet<i64>| {
            let (acked, maybe) = (acked.clone(), maybe.clone());
            move |got: &BTreeSet<i64>| {
                acked.is_subset(got) && got.iter().all(|k| acked.contains(k) || maybe.contains(k))
            }
        };
        // The new replica holds every acknowledged row itself.
        wait_local_keys(port(&nodes, spare), every(&acked, &maybe), "the rebuilt replica's rows").await;

        // It votes, in the first group and in plain's: losing a second
        // original node leaves a quorum (the survivor and the rebuilt
        // replica), and writes go on.
        wait_db_voters(&alive, "plain", &group, "plain's replica on the spare").await;
        // The manager group replaces the lost node too (the spare, a reader
        // of the catalog, was promoted at once; the manager group builds
        // its replacement from nothing) before the next loss.
        wait_manager_group(alive[0], &group, "the manager group to replace the lost node").await;
        let second = *group.iter().find(|&&i| i != spare && i != primary).unwrap();
        nodes[second - 1].kill9();
        let alive: Vec<u16> = (1..=4).filter(|&i| i != first && i != second).map(|i| port(&nodes, i)).collect();
        for k in 61..=80 {
            insert(&alive, k, &mut acked, &mut maybe).await;
        }
        let check = every(&acked, &maybe);
        wait_rows(&alive, "plain", "SELECT k FROM kv", "every acknowledged row", |r| check(&keys(r))).await;

        // The first lost node returns: no longer a member, it is a spare,
        // and the manager rebuilds it in place of the second loss.
        nodes[first - 1].restart();
        let alive: Vec<u16> = (1..=4).filter(|&i| i != second).map(|i| port(&nodes, i)).collect();
        let group: BTreeSet<usize> = (1..=4).filter(|&i| i != second).collect();
        wait_voters(&alive, &group, "the returned node to replace the second loss").await;
        for k in 81..=90 {
            insert(&alive, k, &mut acked, &mut maybe).await;
        }
        wait_local_keys(port(&nodes, first), every(&acked, &maybe), "the returned node's rows").await;

        // A new node joins the formed cluster by naming one of its nodes:
        // it becomes a spare, and serves clients at once.
        let rpc5 = free_port().to_string();
        let join = format!("127.0.0.1:{}", rpc[first - 1]);
        let args = ["--node-id", "5", "--rpc-port", &rpc5, "--join", &join, "--cluster-secret", SECRET];
        let fifth = Server::start_with(&args);
        let deadline = Instant::now() + Duration::from_secs(60);
        while !roles(&alive).await.contains(&(5, "spare".to_string())) {
            assert!(Instant::now() < deadline, "node 5 did not join as a spare: {:?}", roles(&alive).await);
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let check = every(&acked, &maybe);
        wait_rows(&[fifth.port()], "plain", "SELECT k FROM kv", "a read through the new node", |r| check(&keys(r)))
            .await;

        // With five nodes the partition manager's group grows to five
        // voters, placed on live nodes: the four up now (the second loss
        // is still down), one of them leading it.
        let want: BTreeSet<usize> = (1..=5).filter(|&i| i != second).collect();
        wait_manager_group(alive[0], &want, "the manager group to grow to the live nodes").await;
    });
}

/// Waits until the manager group's voters (its leader among them) are
/// `want`, as `tessera.nodes` through the node on `port` shows them.
async fn wait_manager_group(port: u16, want: &BTreeSet<usize>, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let rows = query(port, "tessera", "SELECT node_id, manager FROM tessera.nodes ORDER BY node_id")
            .await
            .unwrap_or_default();
        let members: BTreeSet<usize> =
            rows.iter().filter(|r| r[1] == "leader" || r[1] == "voter").map(|r| r[0].parse().unwrap()).collect();
        let leaders = rows.iter().filter(|r| r[1] == "leader").count();
        if &members == want && leaders == 1 {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}: {rows:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[test]
fn the_replica_count_changes_at_run_time() {
    let rpc: Vec<u16> = (0..4).map(|_| free_port()).collect();
    let nodes: Vec<Server> = start_cluster_with(&rpc, |_| Vec::new());
    let addr = format!("127.0.0.1:{}", rpc[3]);
    block_on(Duration::from_secs(300), async {
        let all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
        let (mut acked, mut maybe) = load_plain(&all, 20).await;
        // Three voters and a spare at first; four replicas asked for: the
        // spare is built and votes.
        let deadline = Instant::now() + Duration::from_secs(60);
        let spare = loop {
            let r = roles(&all).await;
            if let Some((s, _)) = r.iter().find(|(_, role)| role == "spare") {
                break *s;
            }
            assert!(Instant::now() < deadline, "expected a spare: {r:?}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        // The manager hears of every node within a second of its start;
        // until then it refuses with the count it knows (and, while its
        // leader is not known here, with that): ask again.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (ok, text) = admin(&["replicas", "4", "--rpc-addr", &addr]);
            if ok {
                assert!(text.contains("keeps 4 replicas"), "{text}");
                break;
            }
            assert!(Instant::now() < deadline, "{text}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let every: BTreeSet<usize> = (1..=4).collect();
        wait_voters(&all, &every, "four voters").await;
        wait_local_keys(port_of(&nodes, spare), |got| got.len() == acked.len(), "the new replica's rows").await;

        // Down to two: two voters go, never the primary, and writes go on
        // (a quorum of two is both).
        let (ok, text) = admin(&["replicas", "2", "--rpc-addr", &addr]);
        assert!(ok, "{text}");
        let deadline = Instant::now() + Duration::from_secs(60);
        let primary = loop {
            let r = roles(&all).await;
            let voting: Vec<usize> =
                r.iter().filter(|(_, role)| role == "primary" || role == "secondary").map(|(id, _)| *id).collect();
            let spares = r.iter().filter(|(_, role)| role == "spare").count();
            if let (2, 2, Some((p, _))) = (voting.len(), spares, r.iter().find(|(_, role)| role == "primary")) {
                break *p;
            }
            assert!(Instant::now() < deadline, "expected two voters and two spares: {r:?}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        for k in 21..=30 {
            insert(&all, k, &mut acked, &mut maybe).await;
        }
        let rows = query(port_of(&nodes, primary), "plain", "SELECT count(*) FROM kv").await.unwrap();
        assert_eq!(rows[0][0], acked.len().to_string());

        // More replicas than nodes, or none, is refused with the reason.
        let (ok, text) = admin(&["replicas", "9", "--rpc-addr", &addr]);
        assert!(!ok && text.contains("the cluster has 4 nodes"), "{text}");
        let (ok, text) = admin(&["replicas", "0", "--rpc-addr", &addr]);
        assert!(!ok && text.contains("between 1 and 4"), "{text}");
    });
}

fn port_of(nodes: &[Server], id: usize) -> u16 {
    nodes[id - 1].port()
}
