//! Each partition of a keyed database is a replication group of its own,
//! with its primary wherever the partition manager puts it. The
//! database's sessions run on its home's primary and work on partitions
//! led by other nodes there: reads, scans through a secondary index,
//! transactions with savepoints and rollbacks, schema changes (a table
//! rebuilt under a new primary key included). A node
//! leading a partition is lost: that partition fails over by itself, the
//! others keep their primaries, and no acknowledged order is lost.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use tokio_postgres::Client;

use crate::client::block_on;
use crate::cluster::{Outcome, db_primary, free_port, query, run, run_anywhere, start_cluster_on, try_connect};

/// A customer in each of the four partitions (bigint split evenly: below
/// -2^62, below 0, below 2^62, the rest), and a few more in each.
fn customers() -> Vec<i64> {
    let mut out = Vec::new();
    for base in [-6_000_000_000_000_000_000i64, -1_000_000, 1_000_000, 6_000_000_000_000_000_000] {
        out.extend((0..5).map(|i| base + i));
    }
    out
}

/// Each partition's primary node, as `tessera.replicas` shows it.
async fn partition_primaries(port: u16) -> BTreeMap<i64, i64> {
    let sql = "SELECT partition, node_id FROM tessera.replicas WHERE database = 'shop' AND role = 'primary'";
    query(port, "tessera", sql)
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| (r[0].parse().unwrap(), r[1].parse().unwrap()))
        .collect()
}

async fn orders(ports: &[u16]) -> Result<BTreeSet<i64>, String> {
    let mut last = String::new();
    for &p in ports {
        match query(p, "shop", "SELECT cid FROM orders").await {
            Ok(rows) => return Ok(rows.iter().map(|r| r[0].parse().unwrap()).collect()),
            Err(e) => last = e,
        }
    }
    Err(last)
}

#[test]
fn each_partition_fails_over_by_itself_and_sessions_reach_partitions_led_elsewhere() {
    let rpc: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let mut nodes = start_cluster_on(&rpc);
    let all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
    block_on(Duration::from_secs(500), async {
        create_shop(&all).await;
        let (home, primaries) = partitions_spread(&all).await;
        let acked = orders_in_every_partition(&all).await;

        // A customer of a partition led by another node than the one serving
        // the database's sessions (on `port`).
        let remote = primaries.iter().find(|(_, n)| **n != home).map(|(p, _)| *p).unwrap();
        let cid = customers()[(remote as usize - 1) * 5];
        transaction_in_a_partition_led_elsewhere(&all, cid).await;
        let port = all[home as usize - 1];
        statement_timeout_holds_elsewhere(port, cid).await;
        reads_across_partitions(&all, port, cid).await;
        primary_key_added_in_every_partition(&all, port, cid).await;
        copy_into_every_partition(&all, port).await;

        // kill -9 a node leading a partition but not the database's
        // sessions: that partition elects another primary, the others
        // keep theirs, and the sessions on the home's primary go on.
        let victim = *primaries.get(&remote).unwrap();
        let others: BTreeMap<i64, i64> =
            partition_primaries(all[0]).await.into_iter().filter(|(_, n)| *n != victim).collect();
        nodes[victim as usize - 1].kill9();
        let alive: Vec<u16> = (1..=3).filter(|&i| i != victim).map(|i| all[i as usize - 1]).collect();
        partition_fails_over_by_itself(&alive, remote, victim, &others).await;

        // The lost node returns and catches up in every group.
        nodes[victim as usize - 1].restart();
        let back = nodes[victim as usize - 1].port();
        returned_node_catches_up(back).await;
        let all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
        assert_eq!(orders(&all).await.unwrap(), acked);

        // kill -9 the node running the database's sessions while one of
        // them holds a row of a partition led elsewhere: that partition's
        // primary lets the dead node's transaction go as soon as its
        // connections close, so a writer of the row through another node
        // waits for the failover of the home, not for an idle timeout.
        let (home, held) = home_and_a_row_led_elsewhere(&all).await;
        let holder = try_connect(all[home as usize - 1], "shop").await.unwrap();
        holder.batch_execute(&format!("BEGIN; UPDATE orders SET qty = qty + 7 WHERE cid = {held}")).await.unwrap();
        nodes[home as usize - 1].kill9();
        let killed = Instant::now();
        let alive: Vec<u16> = (1..=3).filter(|&i| i != home).map(|i| all[i as usize - 1]).collect();
        row_is_freed_with_the_dead_session(&alive, held, killed, holder).await;
        nodes[home as usize - 1].restart();
        let all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();

        dropping_removes_every_group(&rpc, &all).await;
    });
}

async fn create_shop(all: &[u16]) {
    let sql = "CREATE DATABASE shop WITH (partition_key = 'cid bigint', partitions = 4)";
    assert_eq!(run_anywhere(all, "tessera", sql, Duration::from_secs(90)).await, Outcome::Done);
    let sql =
        "CREATE TABLE orders (cid bigint PRIMARY KEY, what text, qty int); CREATE INDEX orders_what ON orders (what)";
    assert_eq!(run_anywhere(all, "shop", sql, Duration::from_secs(60)).await, Outcome::Done);
}

/// The node serving the database's sessions, and each partition's
/// primary, once some partition is led by another node.
async fn partitions_spread(all: &[u16]) -> (i64, BTreeMap<i64, i64>) {
    // Four groups, each with its primary and two secondaries; their
    // primaries spread: some partition is led by a node other than
    // the one serving the database's sessions.
    let deadline = Instant::now() + Duration::from_secs(60);
    let (home, primaries) = loop {
        let home = db_primary(all, "shop").await as i64;
        let p = partition_primaries(all[0]).await;
        if p.len() == 4 && p.values().any(|n| *n != home) {
            break (home, p);
        }
        assert!(Instant::now() < deadline, "the partitions' primaries did not spread: home {home}, {p:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    let rows = query(
        all[0],
        "tessera",
        "SELECT partition, count(*) FROM tessera.replicas WHERE database = 'shop' GROUP BY 1 ORDER BY 1",
    )
    .await
    .unwrap();
    assert_eq!(rows.iter().map(|r| r[1].as_str()).collect::<Vec<_>>(), ["3", "3", "3", "3"], "{rows:?}");
    (home, primaries)
}

/// The orders acknowledged: every one.
async fn orders_in_every_partition(all: &[u16]) -> BTreeSet<i64> {
    // Writes to every partition, through any node.
    let (mut acked, mut maybe) = (BTreeSet::new(), BTreeSet::new());
    for cid in customers() {
        let sql = format!("INSERT INTO orders VALUES ({cid}, 'w{}', 1)", cid.rem_euclid(3));
        match run_anywhere(all, "shop", &sql, Duration::from_secs(60)).await {
            Outcome::Done => acked.insert(cid),
            _ => maybe.insert(cid),
        };
    }
    assert_eq!(acked.len(), 20, "every order is acknowledged before any loss ({maybe:?})");
    acked
}

async fn transaction_in_a_partition_led_elsewhere(all: &[u16], cid: i64) {
    // A transaction in one row group, on whichever node leads it:
    // savepoints undo, a rolled-back transaction leaves nothing, a
    // committed one everything.
    let sql = format!(
        "BEGIN;
         UPDATE orders SET qty = qty + 10 WHERE cid = {cid};
         SAVEPOINT s;
         UPDATE orders SET qty = qty + 100 WHERE cid = {cid};
         ROLLBACK TO SAVEPOINT s;
         UPDATE orders SET what = 'changed' WHERE cid = {cid};
         COMMIT"
    );
    assert_eq!(run_anywhere(all, "shop", &sql, Duration::from_secs(60)).await, Outcome::Done);
    let sql = format!("BEGIN; DELETE FROM orders WHERE cid = {cid}; ROLLBACK");
    assert_eq!(run_anywhere(all, "shop", &sql, Duration::from_secs(60)).await, Outcome::Done);
    let got = query(all[0], "shop", &format!("SELECT qty, what FROM orders WHERE cid = {cid}")).await.unwrap();
    assert_eq!(got, vec![vec!["11".to_string(), "changed".to_string()]]);
}

async fn statement_timeout_holds_elsewhere(port: u16, cid: i64) {
    // A statement's own timeout holds on a partition led elsewhere,
    // for a later statement of a transaction too: an UPDATE waiting
    // there for the row's holder is canceled at its deadline.
    let holder = try_connect(port, "shop").await.unwrap();
    holder.batch_execute(&format!("BEGIN; UPDATE orders SET qty = qty WHERE cid = {cid}")).await.unwrap();
    let waiter = try_connect(port, "shop").await.unwrap();
    waiter.batch_execute(&format!("BEGIN; SELECT qty FROM orders WHERE cid = {cid}")).await.unwrap();
    waiter.batch_execute("SET statement_timeout = 500").await.unwrap();
    let started = Instant::now();
    let e = waiter.batch_execute(&format!("UPDATE orders SET qty = qty + 1 WHERE cid = {cid}")).await.unwrap_err();
    let waited = started.elapsed();
    assert_eq!(e.code().map(|c| c.code()), Some("57014"), "{e:?}");
    assert!(waited >= Duration::from_millis(400) && waited < Duration::from_secs(5), "waited {waited:?}");
    waiter.batch_execute("ROLLBACK").await.unwrap();
    holder.batch_execute("ROLLBACK").await.unwrap();
    drop((waiter, holder));
}

async fn reads_across_partitions(all: &[u16], port: u16, cid: i64) {
    // Reads across partitions: a count, and a scan through the
    // secondary index in every partition (by its name on each).
    let got = query(all[1], "shop", "SELECT count(*), sum(qty) FROM orders").await.unwrap();
    assert_eq!(got, vec![vec!["20".to_string(), "30".to_string()]]);
    let got = query(all[2], "shop", "SELECT count(*) FROM orders WHERE what = 'w1'").await.unwrap();
    let want = customers().iter().filter(|c| c.rem_euclid(3) == 1 && **c != cid).count();
    assert_eq!(got, vec![vec![want.to_string()]]);
    // A scan of every partition, on the home's primary, reads the
    // partitions led elsewhere at once, each in the transaction's own
    // part there: it sees the transaction's write.
    let reader = try_connect(port, "shop").await.unwrap();
    reader.batch_execute(&format!("BEGIN; UPDATE orders SET qty = qty + 1000 WHERE cid = {cid}")).await.unwrap();
    let rows = reader.query("SELECT cid, qty FROM orders", &[]).await.unwrap();
    let got: BTreeMap<i64, i32> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(got.keys().copied().collect::<Vec<_>>(), customers(), "every partition's rows, once");
    assert_eq!((rows.len(), got[&cid], got.values().sum::<i32>()), (20, 1011, 1030));
    reader.batch_execute("ROLLBACK").await.unwrap();
    drop(reader);
    // Rows read elsewhere bring the columns the query reads, its
    // filter's among them, and not the others.
    let got = query(port, "shop", "SELECT sum(qty), count(*) FROM orders WHERE what <> 'w1'").await.unwrap();
    let others = customers().iter().filter(|c| **c != cid && c.rem_euclid(3) != 1).count();
    assert_eq!(got, vec![vec![(others + 11).to_string(), (others + 1).to_string()]]);
}

async fn primary_key_added_in_every_partition(all: &[u16], port: u16, cid: i64) {
    // A table without a primary key gets one: each partition's rows
    // are copied under the new key by the partition's primary, on the
    // partitions led elsewhere too. A duplicate key, or a NULL in the
    // key, refuses it with nothing changed.
    let sql = "CREATE TABLE notes (cid bigint NOT NULL, n int, body text)";
    assert_eq!(run_anywhere(all, "shop", sql, Duration::from_secs(60)).await, Outcome::Done);
    for c in customers() {
        let sql = format!("INSERT INTO notes VALUES ({c}, 1, 'n{c}')");
        assert_eq!(run_anywhere(all, "shop", &sql, Duration::from_secs(60)).await, Outcome::Done);
    }
    let add = "ALTER TABLE notes ADD PRIMARY KEY (cid, n)";
    let bad = [(format!("({cid}, 1, 'dup')"), "23505"), (format!("({cid}, NULL, 'null')"), "23502")];
    for (row, code) in bad {
        let sql = format!("INSERT INTO notes VALUES {row}");
        assert_eq!(run_anywhere(all, "shop", &sql, Duration::from_secs(60)).await, Outcome::Done);
        let refused = run(port, "shop", add).await;
        assert!(matches!(&refused, Outcome::Unknown(e) if e.contains(code)), "{code}: {refused:?}");
        let sql = format!("DELETE FROM notes WHERE cid = {cid} AND body <> 'n{cid}'");
        assert_eq!(run_anywhere(all, "shop", &sql, Duration::from_secs(60)).await, Outcome::Done);
    }
    assert_eq!(run(port, "shop", add).await, Outcome::Done);
    let got = query(all[0], "shop", "SELECT count(*) FROM notes").await.unwrap();
    assert_eq!(got, vec![vec!["20".to_string()]]);
    let got = query(all[1], "shop", &format!("SELECT body FROM notes WHERE cid = {cid} AND n = 1")).await.unwrap();
    assert_eq!(got, vec![vec![format!("n{cid}")]]);
    let dup = run(port, "shop", &format!("INSERT INTO notes VALUES ({cid}, 1, 'again')")).await;
    assert!(matches!(&dup, Outcome::Unknown(e) if e.contains("23505")), "the new key holds: {dup:?}");
}

async fn copy_into_every_partition(all: &[u16], port: u16) {
    // One COPY over every partition, those led elsewhere too: all its
    // rows are there (each partition asked whether it can commit first).
    let rows: String = customers().iter().map(|c| format!("{c}\t2\tcopied {c}\n")).collect();
    let c = try_connect(port, "shop").await.unwrap();
    crate::limits::copy_rows(&c, "COPY notes (cid, n, body) FROM STDIN", &rows).await.unwrap();
    let got = query(all[2], "shop", "SELECT count(*) FROM notes WHERE n = 2 AND body LIKE 'copied %'").await.unwrap();
    assert_eq!(got, vec![vec![customers().len().to_string()]]);
}

/// With node `victim` lost, partition `remote` has a new primary, the
/// partitions it did not lead (`others`) keep one, and no write is lost.
async fn partition_fails_over_by_itself(alive: &[u16], remote: i64, victim: i64, others: &BTreeMap<i64, i64>) {
    for cid in customers() {
        let sql = format!("UPDATE orders SET qty = qty + 1 WHERE cid = {cid}");
        match run_anywhere(alive, "shop", &sql, Duration::from_secs(60)).await {
            Outcome::Done => {}
            other => panic!("an update after the loss: {other:?}"),
        }
    }
    let after = partition_primaries(alive[0]).await;
    assert_ne!(after.get(&remote), Some(&victim), "the lost node's partition has a new primary: {after:?}");
    for (p, n) in others {
        // (The manager may move a primary to spread them again; a
        // partition whose primary was alive was not failed over.)
        assert!(after.contains_key(p), "partition {p} has a primary after the loss: {after:?} (was {n})");
    }
    let got = query(alive[0], "shop", "SELECT count(*), sum(qty) FROM orders").await.unwrap();
    assert_eq!(got, vec![vec!["20".to_string(), "50".to_string()]], "every acknowledged write is there");
}

async fn returned_node_catches_up(back: u16) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let c = crate::cluster::connect_reading_secondary(back, "shop").await;
        let got = match c {
            Ok(c) => c.query("SELECT count(*), sum(qty) FROM orders", &[]).await.ok().map(|r| {
                let (n, s): (i64, i64) = (r[0].get(0), r[0].get(1));
                (n, s)
            }),
            Err(_) => None,
        };
        if got == Some((20, 50)) {
            break;
        }
        assert!(Instant::now() < deadline, "the returned node holds {got:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// The node serving the database's sessions, and an order in a partition
/// another node leads.
async fn home_and_a_row_led_elsewhere(all: &[u16]) -> (i64, i64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let (home, held) = loop {
        let home = db_primary(all, "shop").await as i64;
        let p = partition_primaries(all[0]).await;
        if let Some((part, _)) = p.iter().find(|(_, n)| **n != home) {
            break (home, customers()[(*part as usize - 1) * 5 + 1]);
        }
        assert!(Instant::now() < deadline, "every partition is led by the home's primary: {p:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    (home, held)
}

/// Order `held`, updated by `holder` in a transaction on the node killed
/// at `killed`, is written through `alive` soon after, and the dead
/// session's update is not committed.
async fn row_is_freed_with_the_dead_session(alive: &[u16], held: i64, killed: Instant, holder: Client) {
    let sql = format!("UPDATE orders SET qty = qty + 1 WHERE cid = {held}");
    assert_eq!(run_anywhere(alive, "shop", &sql, Duration::from_secs(60)).await, Outcome::Done);
    assert!(killed.elapsed() < Duration::from_secs(20), "the row was free only after {:?}", killed.elapsed());
    drop(holder);
    let got = query(alive[0], "shop", &format!("SELECT qty FROM orders WHERE cid = {held}")).await.unwrap();
    assert_eq!(got, vec![vec!["3".to_string()]], "the dead session's update was not committed");
}

async fn dropping_removes_every_group(rpc: &[u16], all: &[u16]) {
    // Dropping the database removes every group of it: its home's and
    // its partitions'.
    let addr = format!("127.0.0.1:{}", rpc[0]);
    // (`tessera status` lists each group's replicas: five groups of three.)
    let groups = crate::orphan_groups::listed_groups(&addr).unwrap();
    assert_eq!(groups.iter().collect::<BTreeSet<_>>().len(), 5, "{groups:?}");
    assert_eq!(run_anywhere(all, "tessera", "DROP DATABASE shop", Duration::from_secs(60)).await, Outcome::Done);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let groups = crate::orphan_groups::listed_groups(&addr);
        if groups.as_ref().is_some_and(|g| g.is_empty()) {
            break;
        }
        assert!(Instant::now() < deadline, "the dropped database's groups stay: {groups:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
