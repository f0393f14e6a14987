//! A keyed database's home (its schema) and each of its partitions are
//! replication groups of their own, placed by the partition manager; the
//! database's sessions run on its home's primary and work on partitions
//! led elsewhere there. A split makes the new partition a group of its
//! own, with the replica count of the partition it splits, and every
//! replica takes it up from that group's log; the home's primary is lost and the database goes on with every
//! acknowledged row of every partition, the new one included; the lost
//! node returns and holds them all.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::client::block_on;
use crate::cluster::{Outcome, connect_reading_secondary, db_primary, query, run, run_anywhere, start_cluster};

/// Inserts the order of customer `cid` through any of `alive`.
async fn order(alive: &[u16], cid: i64, acked: &mut BTreeSet<i64>, maybe: &mut BTreeSet<i64>) {
    let sql = format!("INSERT INTO orders VALUES ({cid}, 'o{cid}')");
    match run_anywhere(alive, "shop", &sql, Duration::from_secs(60)).await {
        Outcome::Done => acked.insert(cid),
        Outcome::Unknown(e) | Outcome::Retry(e) => {
            eprintln!("order {cid}: outcome unknown: {e}");
            maybe.insert(cid)
        }
    };
}

/// Splits keyed database `db` at `at` through any of `all`. A session cut
/// while the split runs (57P01: the manager moved the database's primary
/// meanwhile, or its connection lost) leaves its outcome unknown; the split is one catalog write, so
/// it either happened or did not, and trying again tells which.
async fn split_anywhere(all: &[u16], db: &str, at: i64) {
    let sql = format!("ALTER DATABASE {db} SPLIT AT ({at})");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut cut = false;
    loop {
        match run_anywhere(all, db, &sql, Duration::from_secs(60)).await {
            Outcome::Done => return,
            Outcome::Unknown(e) if cut && e.contains("already starts at") => return,
            Outcome::Unknown(e)
                if (e.contains("57P01") || e.starts_with("client error")) && Instant::now() < deadline =>
            {
                eprintln!("{sql}: cut, trying again: {e}");
                cut = true;
            }
            other => panic!("{sql}: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The customers whose orders the node on `port` holds itself.
async fn local_orders(port: u16) -> Result<BTreeSet<i64>, String> {
    let c = connect_reading_secondary(port, "shop").await.map_err(|e| crate::client::describe(&e))?;
    let rows = c.query("SELECT cid FROM orders", &[]).await.map_err(|e| crate::client::describe(&e))?;
    Ok(rows.iter().map(|r| r.get::<_, i64>(0)).collect())
}

/// Waits until partition 3 of `db` (made by a split) shows as a group of
/// its own in `tessera.replicas` (its group named by its stream, apart
/// from every other partition's) with `want` replicas: one primary and
/// the rest secondaries; as the node serving `tessera` sees it, and every
/// other node knowing the database's partitions (a session reading there;
/// a node outside the database's home does not know them), those outside
/// the new partition's group included.
async fn split_into_own_group(all: &[u16], db: &str, want: usize) {
    let sql = format!(
        "SELECT partition, stream, group_id, role FROM tessera.replicas WHERE database = '{db}' ORDER BY 1, 3, 4"
    );
    check_split(db, "the node serving tessera", want, || async { query(all[0], "tessera", &sql).await }).await;
    for port in all {
        let seen = || async {
            let c = connect_reading_secondary(*port, "tessera").await.map_err(|e| crate::client::describe(&e))?;
            let rows = c.query(&sql, &[]).await.map_err(|e| crate::client::describe(&e))?;
            Ok(rows
                .iter()
                .map(|r| {
                    let (p, s, g): (i64, i64, i64) = (r.get(0), r.get(1), r.get(2));
                    vec![p.to_string(), s.to_string(), g.to_string(), r.get::<_, String>(3)]
                })
                .collect())
        };
        check_split(db, &format!("port {port}"), want, seen).await;
    }
}

/// Waits until the rows `fetch` gets show partition 3 as a group of its
/// own with `want` replicas (see `split_into_own_group`); at once when they
/// show no partition 2 (a node that does not know the database's
/// partitions).
async fn check_split<F, Fut>(db: &str, from: &str, want: usize, fetch: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Vec<Vec<String>>, String>>,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let rows = fetch().await.unwrap_or_default();
        if !rows.is_empty() && !rows.iter().any(|r| r[0] == "2") {
            return;
        }
        let of = |p: &str| rows.iter().filter(|r| r[0] == p).cloned().collect::<Vec<_>>();
        let new = of("3");
        let own = !new.is_empty()
            && new.iter().all(|r| r[2] == r[1])
            && rows.iter().filter(|r| r[0] != "3").all(|r| r[2] != new[0][2]);
        let roles = new.len() == want
            && new.iter().filter(|r| r[3] == "primary").count() == 1
            && new.iter().filter(|r| r[3] == "secondary").count() == want - 1;
        if own && roles && !of("1").is_empty() && !of("2").is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "{db}'s groups after its split, seen from {from}: {rows:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[test]
fn a_keyed_database_is_a_group_of_its_own_and_its_splits_replicate() {
    let mut nodes = start_cluster(3);
    let all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
    block_on(Duration::from_secs(400), async {
        let sql = "CREATE DATABASE shop WITH (partition_key = 'cid bigint', partitions = 2)";
        assert_eq!(run_anywhere(&all, "tessera", sql, Duration::from_secs(60)).await, Outcome::Done);
        let sql = "CREATE TABLE orders (cid bigint PRIMARY KEY, what text)";
        assert_eq!(run_anywhere(&all, "shop", sql, Duration::from_secs(30)).await, Outcome::Done);
        let (mut acked, mut maybe) = (BTreeSet::new(), BTreeSet::new());
        for cid in -20..20 {
            order(&all, cid, &mut acked, &mut maybe).await;
        }

        // A keyed database keeps its own count of replicas too.
        let sql = "CREATE DATABASE pair WITH (partition_key = 'cid bigint', partitions = 2, replicas = 2)";
        assert_eq!(run_anywhere(&all, "tessera", sql, Duration::from_secs(60)).await, Outcome::Done);

        // Each partition a group of its own: one primary and the rest
        // secondaries, each partition on the database's count of nodes.
        for (db, want) in [("shop", 3), ("pair", 2)] {
            let sql =
                format!("SELECT partition, node_id, role FROM tessera.replicas WHERE database = '{db}' ORDER BY 1, 2");
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                let rows = query(all[0], "tessera", &sql).await.unwrap_or_default();
                let each_right = ["1", "2"].iter().all(|p| {
                    let of: Vec<_> = rows.iter().filter(|r| r[0] == *p).collect();
                    of.len() == want
                        && of.iter().filter(|r| r[2] == "primary").count() == 1
                        && of.iter().filter(|r| r[2] == "secondary").count() == want - 1
                });
                if rows.len() == 2 * want && each_right {
                    break;
                }
                assert!(Instant::now() < deadline, "{db}'s groups: {rows:?}");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }

        // On a cluster it is split from a session of its own, where its
        // group's primary is.
        let elsewhere = run(all[0], "tessera", "ALTER DATABASE shop SPLIT AT (1000)").await;
        assert!(
            matches!(&elsewhere, Outcome::Unknown(e) if e.contains("0A000") && e.contains("split from a session of its own")),
            "{elsewhere:?}"
        );
        split_anywhere(&all, "shop", 1000).await;
        let parts = query(all[1], "shop", "SELECT count(*) FROM tessera.partitions WHERE database = 'shop'").await;
        assert_eq!(parts.unwrap(), vec![vec!["3".to_string()]]);
        // The new partition is a group of its own, named by its stream,
        // with a primary and two secondaries like the others.
        split_into_own_group(&all, "shop", 3).await;
        // One of a database keeping two replicas keeps two.
        split_anywhere(&all, "pair", 1000).await;
        split_into_own_group(&all, "pair", 2).await;
        // The cluster's catalog (sessions of `tessera`) follows it too.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let sql = "SELECT count(*) FROM tessera.partitions WHERE database = 'shop'";
            let parts = query(all[2], "tessera", sql).await;
            if parts.as_ref().is_ok_and(|p| p == &vec![vec!["3".to_string()]]) {
                break;
            }
            assert!(Instant::now() < deadline, "the cluster's catalog shows {parts:?} partitions of shop");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        for cid in 1000..1030 {
            order(&all, cid, &mut acked, &mut maybe).await;
        }
        // (A primary the manager moves meanwhile ends the sessions there,
        // 57P01, or a commit's answer: those orders' outcomes are unknown.)
        assert_eq!(acked.len() + maybe.len(), 70);
        assert!(acked.len() >= 60, "most orders before the loss are acknowledged: {maybe:?}");

        // kill -9 the node leading shop: it fails over with every row.
        let victim = db_primary(&all, "shop").await;
        nodes[victim - 1].kill9();
        let alive: Vec<u16> = (1..=3).filter(|&i| i != victim).map(|i| all[i - 1]).collect();
        for cid in (20..30).chain(1030..1040) {
            order(&alive, cid, &mut acked, &mut maybe).await;
        }
        assert!(acked.contains(&1039) || maybe.contains(&1039));
        assert!((1030..1040).any(|c| acked.contains(&c)), "the new partition took no write after the loss");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let got = query(alive[0], "shop", "SELECT cid FROM orders")
                .await
                .map(|rows| rows.iter().map(|r| r[0].parse::<i64>().unwrap()).collect::<BTreeSet<i64>>());
            if let Ok(got) = &got
                && acked.is_subset(got)
            {
                assert!(got.iter().all(|c| acked.contains(c) || maybe.contains(c)), "rows never attempted");
                break;
            }
            assert!(Instant::now() < deadline, "not every acknowledged order after the failover: {got:?}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }

        // A schema change runs on the new primary, over every partition.
        let sql = "CREATE INDEX orders_what ON orders (what)";
        assert_eq!(run_anywhere(&alive, "shop", sql, Duration::from_secs(60)).await, Outcome::Done);
        let sql = "SELECT state, partitions_done, partitions FROM tessera.jobs WHERE statement LIKE 'CREATE INDEX%'";
        // (Attempts made while a partition's primary moved after the loss
        // failed, were undone, and were retried.)
        let jobs = query(alive[0], "shop", sql).await.unwrap();
        assert_eq!(jobs.last().unwrap(), &vec!["done".to_string(), "3".to_string(), "3".to_string()], "{jobs:?}");
        assert!(jobs[..jobs.len() - 1].iter().all(|j| j[0] == "failed"), "{jobs:?}");

        // The lost node returns and holds every partition's rows, the
        // split's included (taken up from the group's log or snapshot).
        nodes[victim - 1].restart();
        let back = nodes[victim - 1].port();
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let got = local_orders(back).await;
            if got.as_ref().is_ok_and(|g| acked.is_subset(g)) {
                break;
            }
            assert!(Instant::now() < deadline, "the returned node lacks orders: {got:?}");
            tokio::time::sleep(Duration::from_millis(300)).await;
        }

        // Dropping a keyed database removes its group, partitions and all;
        // the name starts afresh.
        let all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
        assert_eq!(run_anywhere(&all, "tessera", "DROP DATABASE pair", Duration::from_secs(60)).await, Outcome::Done);
        let sql = "CREATE DATABASE pair WITH (partition_key = 'cid bigint', replicas = 2)";
        assert_eq!(run_anywhere(&all, "tessera", sql, Duration::from_secs(60)).await, Outcome::Done);
        let sql = "SELECT count(*) FROM tessera.partitions WHERE database = 'pair'";
        let parts = query(all[0], "tessera", sql).await.unwrap();
        assert_eq!(parts, vec![vec!["1".to_string()]], "the new pair has one partition");
    });
}
