//! A cluster of three real `tessera` processes on 127.0.0.1: any node
//! serves clients; a kill -9 of the primary's node loses no acknowledged
//! commit and writes continue on a new primary; a restarted node catches up
//! from the log; with two of three nodes down writes are refused (57P03)
//! and resume when one returns (the bank workload under faults is in
//! `bank.rs`). The nodes snapshot every 100 log entries, so restarts and
//! catch-ups go through snapshots too.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use tokio_postgres::{Client, NoTls};

use crate::client::block_on;
use crate::harness::Server;

pub(crate) const SECRET: &str = "e2e cluster secret";

/// A port free for a node's RPC listener, below the kernel's range of
/// ephemeral ports (32768 and up on Linux): a node killed and restarted
/// binds its port again, and meanwhile no outgoing connection of another
/// test may take it as its source port (which one from the ephemeral range
/// would be free to do).
pub(crate) fn free_port() -> u16 {
    free_ports(1)
}

/// The first of `n` consecutive free ports, as [`free_port`] finds them
/// (from the same counter: no other test is given one of them).
pub(crate) fn free_ports(n: u32) -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const FIRST: u32 = 20_000;
    const COUNT: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let start = std::process::id().wrapping_mul(37) % COUNT;
    loop {
        let first = FIRST + (start + NEXT.fetch_add(n, Ordering::Relaxed)) % (COUNT - n);
        if (first..first + n).all(|port| std::net::TcpListener::bind(("127.0.0.1", port as u16)).is_ok()) {
            return first as u16;
        }
    }
}

/// Starts `n` nodes that form one cluster.
pub(crate) fn start_cluster(n: u64) -> Vec<Server> {
    start_cluster_on(&(0..n).map(|_| free_port()).collect::<Vec<_>>())
}

/// Starts a cluster whose nodes listen for RPC on `rpc`.
pub(crate) fn start_cluster_on(rpc: &[u16]) -> Vec<Server> {
    start_cluster_with(rpc, |_| Vec::new())
}

/// Starts a cluster; node i (from 0) gets `extra(i)` as further arguments.
pub(crate) fn start_cluster_with(rpc: &[u16], extra: impl Fn(usize) -> Vec<String>) -> Vec<Server> {
    let n = rpc.len() as u64;
    let join = rpc.iter().map(|p| format!("127.0.0.1:{p}")).collect::<Vec<_>>().join(",");
    (0..n)
        .map(|i| {
            let (id, port) = ((i + 1).to_string(), rpc[i as usize].to_string());
            let extra = extra(i as usize);
            let fd = format!("fd{id}");
            let mut args = vec![
                "--node-id",
                &id,
                "--rpc-port",
                &port,
                "--join",
                &join,
                "--cluster-secret",
                SECRET,
                "--failure-domain",
                &fd,
                // Snapshots every 100 entries: restarts load them, the log
                // is purged below them, and a node that returns after a
                // while may need the primary's.
                "--snapshot-every",
                "100",
            ];
            args.extend(extra.iter().map(|s| s.as_str()));
            Server::start_with(&args)
        })
        .collect()
}

/// How a statement sent through some node ended.
#[derive(Debug, PartialEq)]
pub(crate) enum Outcome {
    Done,
    /// Certainly not done (no primary, refused, conflict): try again.
    Retry(String),
    /// The commit may or may not have happened (40003, or the connection
    /// broke while it ran).
    Unknown(String),
}

pub(crate) async fn try_connect(port: u16, db: &str) -> Result<Client, String> {
    let conn_str = format!("host=127.0.0.1 port={port} user=tessera dbname={db} connect_timeout=5");
    match tokio::time::timeout(Duration::from_secs(10), tokio_postgres::connect(&conn_str, NoTls)).await {
        Ok(Ok((client, conn))) => {
            tokio::spawn(conn);
            Ok(client)
        }
        Ok(Err(e)) => Err(crate::client::describe(&e)),
        Err(_) => Err("connect timed out".into()),
    }
}

/// Runs `sql` (one transaction) through the node on `port`.
pub(crate) async fn run(port: u16, db: &str, sql: &str) -> Outcome {
    let c = match try_connect(port, db).await {
        Ok(c) => c,
        Err(e) => return Outcome::Retry(e),
    };
    match tokio::time::timeout(Duration::from_secs(20), c.batch_execute(sql)).await {
        Err(_) => Outcome::Unknown("timed out".into()),
        Ok(Ok(())) => Outcome::Done,
        Ok(Err(e)) => match e.as_db_error().map(|d| d.code().code().to_string()) {
            Some(code) if matches!(code.as_str(), "57P03" | "40001" | "40P01") => {
                Outcome::Retry(crate::client::describe(&e))
            }
            _ => Outcome::Unknown(crate::client::describe(&e)),
        },
    }
}

/// Runs `sql` through any live node until it is done or its outcome is
/// unknown; panics after `limit`.
pub(crate) async fn run_anywhere(ports: &[u16], db: &str, sql: &str, limit: Duration) -> Outcome {
    let deadline = Instant::now() + limit;
    for round in 0.. {
        let port = ports[round % ports.len()];
        match run(port, db, sql).await {
            Outcome::Retry(e) => {
                assert!(Instant::now() < deadline, "{sql}: no node served it within {limit:?}; last error: {e}")
            }
            done => return done,
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    unreachable!()
}

pub(crate) async fn query(port: u16, db: &str, sql: &str) -> Result<Vec<Vec<String>>, String> {
    let c = try_connect(port, db).await?;
    let mut out = Vec::new();
    for m in c.simple_query(sql).await.map_err(|e| crate::client::describe(&e))? {
        if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
            out.push((0..r.len()).map(|i| r.get(i).unwrap_or("NULL").to_string()).collect());
        }
    }
    Ok(out)
}

/// Retries a read through any node until `check` accepts its rows.
pub(crate) async fn wait_rows(ports: &[u16], db: &str, sql: &str, what: &str, check: impl Fn(&[Vec<String>]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = String::new();
    loop {
        for &p in ports {
            match query(p, db, sql).await {
                Ok(rows) if check(&rows) => return,
                Ok(rows) => last = format!("{rows:?}"),
                Err(e) => last = e,
            }
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}; last: {last}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Inserts key `k` through any node, recording whether it was acknowledged.
pub(crate) async fn insert(alive: &[u16], k: i64, acked: &mut BTreeSet<i64>, maybe: &mut BTreeSet<i64>) {
    let sql = format!("INSERT INTO kv VALUES ({k}, 'v{k}')");
    match run_anywhere(alive, "plain", &sql, Duration::from_secs(60)).await {
        Outcome::Done => acked.insert(k),
        Outcome::Unknown(_) | Outcome::Retry(_) => maybe.insert(k),
    };
}

pub(crate) fn keys(rows: &[Vec<String>]) -> BTreeSet<i64> {
    rows.iter().map(|r| r[0].parse().unwrap()).collect()
}

#[test]
fn three_nodes_fail_over_catch_up_and_refuse_without_quorum() {
    let mut nodes = start_cluster(3);
    let ports = |nodes: &[Server], alive: &[usize]| alive.iter().map(|&i| nodes[i].port()).collect::<Vec<u16>>();
    block_on(Duration::from_secs(400), async {
        let all = ports(&nodes, &[0, 1, 2]);
        let created = run_anywhere(&all, "tessera", "CREATE DATABASE plain", Duration::from_secs(60)).await;
        assert_eq!(created, Outcome::Done);
        let sql = "CREATE DATABASE shop WITH (partition_key = 'cid bigint', partitions = 4)";
        assert_eq!(run_anywhere(&all, "tessera", sql, Duration::from_secs(30)).await, Outcome::Done);
        let sql = "CREATE TABLE kv (k int PRIMARY KEY, v text)";
        assert_eq!(run_anywhere(&all, "plain", sql, Duration::from_secs(30)).await, Outcome::Done);
        let sql = "CREATE TABLE accounts (cid bigint PRIMARY KEY, balance bigint)";
        assert_eq!(run_anywhere(&all, "shop", sql, Duration::from_secs(30)).await, Outcome::Done);
        let mut acked = BTreeSet::new();
        let mut maybe = BTreeSet::new();
        for k in 1..=40 {
            insert(&all, k, &mut acked, &mut maybe).await;
        }
        for cid in 1..=40 {
            let sql = format!("INSERT INTO accounts VALUES ({cid}, 100)");
            assert_eq!(run_anywhere(&all, "shop", &sql, Duration::from_secs(30)).await, Outcome::Done);
        }
        // Every node reports in; one is the primary.
        let primary_sql = "SELECT node_id FROM tessera.nodes WHERE role = 'primary'";
        wait_rows(&all, "tessera", "SELECT role FROM tessera.nodes ORDER BY node_id", "three live nodes", |r| {
            r.len() == 3 && r.iter().all(|x| x[0] == "primary" || x[0] == "secondary")
        })
        .await;
        let primary = query(all[0], "tessera", primary_sql).await.unwrap()[0][0].parse::<usize>().unwrap() - 1;

        // kill -9 the primary's node: writes go on through the others.
        nodes[primary].kill9();
        let rest: Vec<usize> = (0..3).filter(|&i| i != primary).collect();
        let alive = ports(&nodes, &rest);
        for k in 41..=80 {
            insert(&alive, k, &mut acked, &mut maybe).await;
        }
        let sql = "UPDATE accounts SET balance = balance + 1 WHERE cid = 7";
        assert_eq!(run_anywhere(&alive, "shop", sql, Duration::from_secs(60)).await, Outcome::Done);
        let check = |acked: &BTreeSet<i64>, maybe: &BTreeSet<i64>| {
            let (acked, maybe) = (acked.clone(), maybe.clone());
            move |rows: &[Vec<String>]| {
                let got = keys(rows);
                acked.is_subset(&got) && got.iter().all(|k| acked.contains(k) || maybe.contains(k))
            }
        };
        let every = check(&acked, &maybe);
        wait_rows(&alive, "plain", "SELECT k FROM kv", "every acknowledged row after the failover", every).await;

        // The killed node returns and catches up from the log.
        nodes[primary].restart();
        let all = ports(&nodes, &[0, 1, 2]);
        wait_rows(
            &all,
            "tessera",
            "SELECT behind FROM tessera.nodes ORDER BY node_id",
            "the returned node to catch up",
            |r| r.len() == 3 && r.iter().all(|x| x[0] == "0"),
        )
        .await;

        // Two of three down: no quorum, writes are refused with 57P03.
        for &i in &rest {
            nodes[i].kill9();
        }
        let lone = nodes[primary].port();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match run(lone, "plain", "INSERT INTO kv VALUES (1000, 'x')").await {
                Outcome::Retry(e) if e.contains("57P03") => break,
                Outcome::Done => panic!("a lone node of three accepted a write"),
                other => assert!(Instant::now() < deadline, "expected 57P03 from the lone node, got {other:?}"),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }

        // One returns: a quorum again, and nothing acknowledged is lost.
        nodes[rest[0]].restart();
        let back = ports(&nodes, &[primary, rest[0]]);
        for k in 81..=90 {
            insert(&back, k, &mut acked, &mut maybe).await;
        }
        let every = check(&acked, &maybe);
        wait_rows(&back, "plain", "SELECT k FROM kv", "every acknowledged row after quorum returns", every).await;
        wait_rows(&back, "shop", "SELECT sum(balance), count(*) FROM accounts", "the keyed database", |r| {
            r == [vec!["4001".to_string(), "40".to_string()]]
        })
        .await;
    });
}

/// Runs a `tessera` administration command; its exit success and output.
pub(crate) fn admin(args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .env("TESSERA_CLUSTER_SECRET", SECRET)
        .output()
        .expect("running tessera");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// The node id of database `db`'s primary (where its sessions run: its
/// home's), as `tessera.databases` shows it through any node, once it has stayed for
/// three seconds (the manager moves a new group's primary to spread
/// primaries over the nodes).
pub(crate) async fn db_primary(ports: &[u16], db: &str) -> usize {
    let sql = format!("SELECT primary_node FROM tessera.databases WHERE name = '{db}' AND primary_node IS NOT NULL");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen: Option<(usize, Instant)> = None;
    loop {
        let mut now = None;
        for &p in ports {
            if let Ok(rows) = query(p, "tessera", &sql).await
                && rows.len() == 1
            {
                now = Some(rows[0][0].parse().unwrap());
                break;
            }
        }
        match (now, seen) {
            (Some(n), Some((m, since))) if n == m => {
                if since.elapsed() >= Duration::from_secs(3) {
                    return n;
                }
            }
            (Some(n), _) => seen = Some((n, Instant::now())),
            (None, _) => seen = None,
        }
        assert!(Instant::now() < deadline, "database {db} shows no settled primary");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The primary's node id per `tessera status` (asked of `rpc`), once every
/// node answers.
pub(crate) fn primary_by_status(rpc: u16, live: usize) -> u64 {
    let addr = format!("127.0.0.1:{rpc}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (ok, text) = admin(&["status", "--rpc-addr", &addr]);
        // (The nodes' table ends at the first blank line; the groups' follows.)
        let rows: Vec<Vec<&str>> =
            text.lines().skip(1).take_while(|l| !l.trim().is_empty()).map(|l| l.split_whitespace().collect()).collect();
        let up =
            rows.iter().filter(|r| r.get(1).is_some_and(|role| *role == "primary" || *role == "secondary")).count();
        if ok
            && up == live
            && let Some(p) = rows.iter().find(|r| r[1] == "primary")
        {
            return p[0].parse().unwrap();
        }
        assert!(Instant::now() < deadline, "no stable status: {text}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn status_and_drain() {
    let rpc: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let mut nodes = start_cluster_on(&rpc);
    let first = primary_by_status(rpc[0], 3);
    // Every node's load figures reach the primary with its registration
    // (twice a second): `tessera status` shows them all.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (ok, text) = admin(&["status", "--rpc-addr", &format!("127.0.0.1:{}", rpc[0])]);
        assert!(ok, "{text}");
        assert!(
            text.lines()
                .next()
                .is_some_and(|h| h.contains("cpu%") && h.contains("rss_mb") && h.ends_with("manager  draining")),
            "{text}"
        );
        let rows: Vec<&str> = text.lines().skip(1).take_while(|l| !l.trim().is_empty()).collect();
        let rss =
            |l: &&str| l.split_whitespace().rev().nth(2).and_then(|v| v.parse::<u64>().ok()).is_some_and(|mb| mb > 0);
        // The three nodes form the partition manager's group: one leads it.
        let manager = |l: &&str| l.split_whitespace().rev().nth(1).unwrap_or("").to_string();
        let leaders = rows.iter().filter(|l| manager(l) == "leader").count();
        let voters = rows.iter().filter(|l| manager(l) == "voter").count();
        if rows.len() == 3 && rows.iter().all(rss) && leaders == 1 && voters == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "the load figures never all reached the primary:\n{text}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // And so does tessera.nodes, where the primary counts this session.
    // (A node the status shows leading may still be finishing its
    // promotion under load: 57P03 for a moment, which a client retries.)
    let rows = block_on(Duration::from_secs(60), async {
        let sql = "SELECT node_id, connections, cpu_percent, rss_mb, manager FROM tessera.nodes ORDER BY node_id";
        loop {
            match query(nodes[first as usize - 1].port(), "tessera", sql).await {
                Ok(rows) => break rows,
                Err(e) if e.contains("57P03") => tokio::time::sleep(Duration::from_millis(100)).await,
                Err(e) => panic!("{e}"),
            }
        }
    });
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows.iter().filter(|r| r[4] == "leader").count(), 1, "{rows:?}");
    assert_eq!(rows.iter().filter(|r| r[4] == "voter").count(), 2, "{rows:?}");
    for r in &rows {
        assert!(r[3].parse::<u64>().is_ok_and(|mb| mb > 0), "{rows:?}");
        assert!(r[2].parse::<u64>().is_ok(), "{rows:?}");
    }
    let own = &rows[first as usize - 1];
    assert!(own[1].parse::<u64>().is_ok_and(|c| c >= 1), "the primary does not count this session: {rows:?}");
    // Draining the primary's node moves the primary elsewhere, and the
    // manager's leadership too when the node holds it (the node that
    // formed the cluster leads both groups at first).
    let manager_leader = rows.iter().find(|r| r[4] == "leader").map(|r| r[0].clone()).unwrap();
    let (ok, text) = admin(&["node", "drain", &first.to_string(), "--rpc-addr", &format!("127.0.0.1:{}", rpc[2])]);
    assert!(ok, "{text}");
    assert!(text.contains(&format!("the primary moved from node {first}")), "{text}");
    if manager_leader == first.to_string() {
        assert!(text.contains(&format!("the manager's leader moved from node {first} to node")), "{text}");
    } else {
        eprintln!("node {manager_leader} led the manager, not the drained node {first}");
    }
    let second = primary_by_status(rpc[0], 3);
    assert_ne!(second, first);
    let (ok, text) = admin(&["status", "--rpc-addr", &format!("127.0.0.1:{}", rpc[0])]);
    let leads_manager = text.lines().skip(1).find(|l| l.split_whitespace().rev().nth(1) == Some("leader"));
    assert!(
        ok && leads_manager.is_some_and(|l| l.split_whitespace().next() != Some(first.to_string().as_str())),
        "{text}"
    );
    // With one node down, draining another would cost the quorum: refused.
    let down = (1..=3u64).find(|&n| n != second).unwrap();
    nodes[down as usize - 1].kill9();
    let _ = primary_by_status(rpc[second as usize - 1], 2);
    let other = (1..=3u64).find(|&n| n != second && n != down).unwrap();
    let (ok, text) =
        admin(&["node", "drain", &other.to_string(), "--rpc-addr", &format!("127.0.0.1:{}", rpc[second as usize - 1])]);
    assert!(!ok && text.contains("would cost the cluster its quorum"), "{text}");
    // A wrong secret is refused.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["status", "--rpc-addr", &format!("127.0.0.1:{}", rpc[second as usize - 1]), "--cluster-secret", "guess"])
        .env_remove("TESSERA_CLUSTER_SECRET")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrong cluster secret"));
}

#[test]
fn demo_starts_a_cluster_and_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    // The demo numbers ports up from the first: three in a row of each,
    // which no other test is given.
    let (port, rpc) = (free_ports(3), free_ports(3));
    let mut demo = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["demo", "--nodes", "3", "--data-dir"])
        .arg(dir.path())
        .args(["--port", &port.to_string(), "--rpc-port", &rpc.to_string()])
        .env_remove("TESSERA_CLUSTER_SECRET")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // What it prints at once: how to connect.
    let mut stdout = std::io::BufReader::new(demo.stdout.take().unwrap());
    let mut printed = String::new();
    while !printed.contains("Press Ctrl-C") {
        let before = printed.len();
        std::io::BufRead::read_line(&mut stdout, &mut printed).unwrap();
        assert!(printed.len() > before, "the demo ended its output early: {printed}");
    }
    let ok = block_on(Duration::from_secs(120), async {
        let sql = "CREATE TABLE greeting (id int PRIMARY KEY, text text); INSERT INTO greeting VALUES (1, 'hello')";
        let ports = [port, port + 1, port + 2];
        assert_eq!(run_anywhere(&ports, "tessera", sql, Duration::from_secs(60)).await, Outcome::Done);
        // Every node answers, whichever is primary.
        for p in ports {
            let rows = query(p, "tessera", "SELECT text FROM greeting").await.unwrap();
            assert_eq!(rows, [vec!["hello".to_string()]]);
        }
        true
    });
    assert!(ok);
    // The printed way to read on a secondary lands on one.
    let reading = printed.lines().find(|l| l.contains("target_session_attrs")).expect("a line to read on a secondary");
    let conninfo = reading.split('"').nth(1).expect("a quoted connection string");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = psql_output(conninfo, "", "SELECT pg_is_in_recovery(), (SELECT text FROM greeting)");
        let got = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if got == "t|hello" {
            break;
        }
        assert!(Instant::now() < deadline, "the printed command did not read on a secondary: {got} {out:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // The printed administration command (with the generated secret) works.
    let admin_line = printed.lines().find(|l| l.contains("tessera status")).expect("a line to administer the cluster");
    let secret = admin_line.split_whitespace().find_map(|w| w.strip_prefix("TESSERA_CLUSTER_SECRET=")).unwrap();
    let addr = admin_line.split_whitespace().last().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["status", "--rpc-addr", addr])
        .env("TESSERA_CLUSTER_SECRET", secret)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("primary"), "{text} {out:?}");
    let status = std::process::Command::new("kill").args(["-TERM", &demo.id().to_string()]).status().unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    while demo.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the demo did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut out = printed;
    std::io::Read::read_to_string(&mut stdout, &mut out).unwrap();
    assert!(out.contains(&format!("psql -h 127.0.0.1 -p {port}")), "{out}");
    assert!(out.contains("target_session_attrs=prefer-standby"), "{out}");
    assert!(out.contains("demo cluster stopped"), "{out}");
    // The nodes are gone with it.
    for i in 0..3 {
        assert!(std::net::TcpStream::connect(("127.0.0.1", port + i)).is_err(), "node {} still listens", i + 1);
    }
}

/// Connects to the node on `port` asking to read there if it is a secondary.
pub(crate) async fn connect_reading_secondary(port: u16, db: &str) -> Result<Client, tokio_postgres::Error> {
    let conn_str = format!(
        "host=127.0.0.1 port={port} user=tessera dbname={db} connect_timeout=5 options='-c tessera.read_from=secondary'"
    );
    let (client, conn) = tokio_postgres::connect(&conn_str, NoTls).await?;
    tokio::spawn(conn);
    Ok(client)
}

fn sqlstate(e: &tokio_postgres::Error) -> String {
    e.code().map(|c| c.code().to_string()).unwrap_or_else(|| e.to_string())
}

#[test]
fn reads_on_a_secondary_are_read_only_and_bounded_in_staleness() {
    let rpc: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let nodes = start_cluster_on(&rpc);
    let ports: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
    let secondary = block_on(Duration::from_secs(300), async {
        let setup = "CREATE DATABASE shop; ";
        assert_eq!(run_anywhere(&ports, "tessera", setup, Duration::from_secs(30)).await, Outcome::Done);
        let sql = "CREATE TABLE items (id int PRIMARY KEY, name text); \
                   INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 500) g";
        assert_eq!(run_anywhere(&ports, "shop", sql, Duration::from_secs(30)).await, Outcome::Done);
        // A node holding a secondary replica of the database.
        ports[db_primary(&ports, "shop").await % 3]
    });
    block_on(Duration::from_secs(300), async {
        // The secondary serves the session itself: it sees the rows once
        // they are applied there, and says where the session runs.
        let c = connect_reading_secondary(secondary, "shop").await.unwrap();
        secondary_shows_the_rows(&c).await;
        secondary_is_a_hot_standby(&c).await;
        secondary_bounds_staleness(&c).await;
        cancel_reaches_the_secondary(&c).await;
        secondary_follows_the_primary(&c, &ports).await;

        // Without the option, the same node relays the session to the primary.
        let rw = try_connect(secondary, "shop").await.unwrap();
        rw.batch_execute("INSERT INTO items VALUES (502, 'via relay')").await.unwrap();
    });
    target_session_attrs_pick_by_role(&ports);
}

/// The reading session sees the rows once the secondary has applied them,
/// within a staleness bound too, and says it reads on a secondary.
async fn secondary_shows_the_rows(c: &Client) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let n: i64 = c.query_one("SELECT count(*) FROM items", &[]).await.unwrap().get(0);
        if n == 500 {
            break;
        }
        assert!(Instant::now() < deadline, "the secondary never showed the 500 rows (saw {n})");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let row = c.query_one("SELECT name FROM items WHERE id = $1", &[&42i32]).await.unwrap();
    assert_eq!(row.get::<_, String>(0), "item 42");
    // Idle for a few seconds, the database's group goes quiet (its
    // primary sends no heartbeats); the secondary still knows how
    // fresh it is, from the rounds of the primary's node.
    tokio::time::sleep(Duration::from_secs(4)).await;
    c.batch_execute("SET tessera.max_staleness = '1s'").await.unwrap();
    for _ in 0..10 {
        let n: i64 = c.query_one("SELECT count(*) FROM items", &[]).await.unwrap().get(0);
        assert_eq!(n, 500);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    c.batch_execute("RESET tessera.max_staleness").await.unwrap();
    let shown: String = c.query_one("SHOW tessera.read_from", &[]).await.unwrap().get(0);
    assert_eq!(shown, "secondary");
}

/// The reading session is read-only, as on a hot standby.
async fn secondary_is_a_hot_standby(c: &Client) {
    // It is a hot standby to drivers, RESET ALL or not.
    c.batch_execute("RESET ALL").await.unwrap();
    let row = c.query_one("SELECT current_setting('in_hot_standby'), pg_is_in_recovery()", &[]).await.unwrap();
    assert_eq!((row.get::<_, String>(0), row.get::<_, bool>(1)), ("on".to_string(), true));
    // As on a hot standby, a transaction cannot be made read-write.
    let e = c.batch_execute("BEGIN READ WRITE").await.unwrap_err();
    assert_eq!(sqlstate(&e), "25006", "{e}");
    let e = c.batch_execute("SET transaction_read_only = off").await.unwrap_err();
    assert_eq!(sqlstate(&e), "25006", "{e}");
    c.batch_execute("SET default_transaction_read_only TO DEFAULT").await.unwrap();
    let shown: String = c.query_one("SHOW default_transaction_read_only", &[]).await.unwrap().get(0);
    assert_eq!(shown, "on");

    // Writes and DDL are refused as in a read-only transaction.
    let e = c.execute("INSERT INTO items VALUES (1000, 'no')", &[]).await.unwrap_err();
    assert_eq!(sqlstate(&e), "25006", "{e}");
    let e = c.batch_execute("UPDATE items SET name = 'no' WHERE id = 1").await.unwrap_err();
    assert_eq!(sqlstate(&e), "25006", "{e}");
    let e = c.batch_execute("CREATE TABLE other (id int PRIMARY KEY)").await.unwrap_err();
    assert_eq!(sqlstate(&e), "25006", "{e}");
}

/// A staleness bound the secondary cannot meet refuses reads.
async fn secondary_bounds_staleness(c: &Client) {
    // A bound tighter than the heartbeat interval (50 ms) is met only
    // just after a heartbeat: most reads are refused (57P03).
    c.batch_execute("SET tessera.max_staleness = '1ms'").await.unwrap();
    let mut refused = 0;
    for _ in 0..20 {
        if let Err(e) = c.query_one("SELECT count(*) FROM items", &[]).await {
            assert_eq!(sqlstate(&e), "57P03", "{e}");
            assert!(format!("{e:?}").contains("behind the primary"), "{e:?}");
            refused += 1;
        }
        tokio::time::sleep(Duration::from_millis(7)).await;
    }
    assert!(refused >= 10, "only {refused} of 20 reads were refused with a 1 ms bound");
    // Reads by key (the fast path) are bounded too.
    let mut refused = 0;
    for _ in 0..20 {
        if let Err(e) = c.query_one("SELECT name FROM items WHERE id = $1", &[&42i32]).await {
            assert_eq!(sqlstate(&e), "57P03", "{e}");
            refused += 1;
        }
        tokio::time::sleep(Duration::from_millis(7)).await;
    }
    assert!(refused >= 10, "only {refused} of 20 key reads were refused with a 1 ms bound");
    c.batch_execute("SET tessera.max_staleness = '10s'").await.unwrap();
}

async fn cancel_reaches_the_secondary(c: &Client) {
    // A cancel request sent to the secondary reaches its reading
    // session there (the primary does not know the session's key).
    let token = c.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel_query(NoTls).await
    });
    let started = Instant::now();
    let long = "SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b WHERE a % 7 = b % 7";
    let e = c.query_one(long, &[]).await.unwrap_err();
    assert_eq!(sqlstate(&e), "57014", "{e}");
    assert!(started.elapsed() < Duration::from_secs(20), "the cancel took {:?}", started.elapsed());
    canceller.await.unwrap().expect("sending the cancel request");
}

/// Rows and tables made on the primary later reach the reading session.
async fn secondary_follows_the_primary(c: &Client, ports: &[u16]) {
    // New rows on the primary reach the reading session.
    assert_eq!(
        run_anywhere(ports, "shop", "INSERT INTO items VALUES (501, 'late')", Duration::from_secs(30)).await,
        Outcome::Done
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while c.query_opt("SELECT name FROM items WHERE id = 501", &[]).await.unwrap().is_none() {
        assert!(Instant::now() < deadline, "the secondary never showed the new row");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A table created on the primary after the session connected
    // reaches it too: its catalog follows replicated DDL.
    let sql = "CREATE TABLE later (id int PRIMARY KEY); INSERT INTO later VALUES (7)";
    assert_eq!(run_anywhere(ports, "shop", sql, Duration::from_secs(30)).await, Outcome::Done);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match c.query_opt("SELECT id FROM later", &[]).await {
            Ok(Some(row)) => {
                assert_eq!(row.get::<_, i32>(0), 7);
                break;
            }
            other => assert!(Instant::now() < deadline, "the secondary session never saw the new table: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn target_session_attrs_pick_by_role(ports: &[u16]) {
    // A reading session reports itself as PostgreSQL's hot standbys do, so
    // libpq's target_session_attrs picks a secondary or the primary from
    // the list of every node, whichever comes first in it.
    let hosts = vec!["127.0.0.1"; ports.len()].join(",");
    let port_list = ports.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",");
    for order in [port_list.clone(), ports.iter().rev().map(|p| p.to_string()).collect::<Vec<_>>().join(",")] {
        for (attrs, standby) in [("standby", "t"), ("read-only", "t"), ("primary", "f"), ("read-write", "f")] {
            let out = psql_output(
                &format!(
                    "host={hosts} port={order} user=tessera dbname=shop connect_timeout=5 target_session_attrs={attrs}"
                ),
                "-c tessera.read_from=secondary",
                "SELECT pg_is_in_recovery(), current_setting('transaction_read_only')",
            );
            assert!(out.status.success(), "{attrs}: {}", String::from_utf8_lossy(&out.stderr));
            let read_only = if standby == "t" { "on" } else { "off" };
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("{standby}|{read_only}"), "{attrs}");
        }
    }
}

/// Runs `sql` with psql on `conninfo`, with `options` as the session's
/// startup options (PGOPTIONS).
fn psql_output(conninfo: &str, options: &str, sql: &str) -> std::process::Output {
    std::process::Command::new("psql")
        .arg(conninfo)
        .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .env("PGOPTIONS", options)
        .output()
        .expect("psql is needed (Debian: postgresql-client)")
}

/// Runs `sql` with psql over TLS (`sslmode=require`) on the node at `port`,
/// with `options` as the session's startup options; returns stdout, or
/// stderr on failure.
fn psql_tls(port: u16, options: &str, sql: &str) -> Result<String, String> {
    let conninfo = format!("host=127.0.0.1 port={port} user=tessera dbname=shop sslmode=require connect_timeout=5");
    let out = psql_output(&conninfo, options, sql);
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// With TLS, a secondary accepts the client's TLS itself to read its
/// options: a reading session is served there, encrypted, and any other
/// session is relayed to the primary.
#[test]
fn reads_on_a_secondary_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = crate::limits::make_certificate(dir.path());
    let rpc: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let tls = vec!["--tls-cert".to_string(), cert.display().to_string(), "--tls-key".into(), key.display().to_string()];
    let nodes = start_cluster_with(&rpc, |_| tls.clone());
    let ports: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
    let primary = block_on(Duration::from_secs(300), async {
        assert_eq!(
            run_anywhere(&ports, "tessera", "CREATE DATABASE shop", Duration::from_secs(30)).await,
            Outcome::Done
        );
        let sql = "CREATE TABLE items (id int PRIMARY KEY, name text); \
                   INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 300) g";
        assert_eq!(run_anywhere(&ports, "shop", sql, Duration::from_secs(30)).await, Outcome::Done);
        db_primary(&ports, "shop").await
    });
    let secondary = ports[primary % 3];
    let reading = "-c tessera.read_from=secondary";
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match psql_tls(secondary, reading, "SELECT count(*) FROM items") {
            Ok(n) if n == "300" => break,
            other => assert!(Instant::now() < deadline, "the secondary never showed the 300 rows over TLS: {other:?}"),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Served by the secondary (read-only there), over TLS.
    let info = psql_tls(secondary, reading, "\\conninfo").unwrap();
    assert!(info.contains("SSL connection"), "{info}");
    assert_eq!(psql_tls(secondary, reading, "SHOW tessera.read_from").unwrap(), "secondary");
    let e = psql_tls(secondary, reading, "INSERT INTO items VALUES (1000, 'no')").unwrap_err();
    assert!(e.contains("cannot execute INSERT on a secondary"), "{e}");
    assert_eq!(psql_tls(secondary, reading, "SELECT name FROM items WHERE id = 42").unwrap(), "item 42");

    // Without the option the same node relays the TLS session to the
    // primary, where it writes.
    let info = psql_tls(secondary, "", "\\conninfo").unwrap();
    assert!(info.contains("SSL connection"), "{info}");
    psql_tls(secondary, "", "INSERT INTO items VALUES (301, 'via relay')").unwrap();
    assert_eq!(psql_tls(ports[primary - 1], "", "SELECT name FROM items WHERE id = 301").unwrap(), "via relay");
    // Channel binding (SCRAM-SHA-256-PLUS) binds to the TLS the client
    // has: a session the secondary serves gets it; a relayed one cannot
    // (the primary's side of the relay is not TLS), as docs/sql.md says.
    block_on(Duration::from_secs(60), async {
        let sql = "CREATE ROLE alice LOGIN PASSWORD 'wonderland'";
        assert_eq!(run_anywhere(&ports, "tessera", sql, Duration::from_secs(30)).await, Outcome::Done);
    });
    let alice = |options: &str| {
        let conninfo = format!(
            "host=127.0.0.1 port={secondary} user=alice password=wonderland dbname=shop sslmode=require \
             channel_binding=require connect_timeout=5"
        );
        psql_output(&conninfo, options, "SELECT count(*) FROM items WHERE id <= 300")
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = alice(reading);
        if out.status.success() {
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "300");
            break;
        }
        // The role reaches the secondary's catalog shortly.
        assert!(Instant::now() < deadline, "{}", String::from_utf8_lossy(&out.stderr));
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(!alice("").status.success(), "channel binding through a relay");
    // A wrong password is refused by the primary through the relay as well.
    let conninfo = format!("host=127.0.0.1 port={secondary} user=nobody dbname=shop sslmode=require connect_timeout=5");
    let out = psql_output(&conninfo, "", "SELECT 1");
    assert!(!out.status.success(), "an unknown role connected through the relay");
}

#[test]
fn a_partitioned_primary_stops_and_the_majority_goes_on() {
    let rpc: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let net = crate::netfault::Network::start(&rpc);
    let nodes = start_cluster_with(&rpc, |i| vec!["--rpc-route".into(), net.routes_of(i, &rpc)]);
    let ports: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
    block_on(Duration::from_secs(300), async {
        let setup = "CREATE DATABASE plain; ";
        assert_eq!(run_anywhere(&ports, "tessera", setup, Duration::from_secs(30)).await, Outcome::Done);
        let sql = "CREATE TABLE kv (k bigint PRIMARY KEY, v text)";
        assert_eq!(run_anywhere(&ports, "plain", sql, Duration::from_secs(30)).await, Outcome::Done);
        // The database's own primary is the node cut off below.
        let old = db_primary(&ports, "plain").await - 1;
        let majority: Vec<u16> = (0..3).filter(|&i| i != old).map(|i| ports[i]).collect();
        let (mut acked, mut maybe) = (BTreeSet::new(), BTreeSet::new());
        for k in 1..=20 {
            insert(&ports, k, &mut acked, &mut maybe).await;
        }
        // A session on the primary itself, open across the cut.
        let held = try_connect(ports[old], "plain").await.unwrap();
        let n: i64 = held.query_one("SELECT count(*) FROM kv", &[]).await.unwrap().get(0);
        assert_eq!(n, 20);
        // Idle for a few seconds, the database's group goes quiet: no Raft
        // heartbeats, the primary's lease resting on its secondaries'
        // confirmations. The cut falls on the quiet group.
        tokio::time::sleep(Duration::from_secs(4)).await;

        // The primary is cut off from both others (clients still reach it).
        net.isolate(old);
        let cut_at = Instant::now();
        // The majority elects a primary and takes writes again.
        for k in 21..=60 {
            insert(&majority, k, &mut acked, &mut maybe).await;
        }
        assert!((21..=60).any(|k| acked.contains(&k)), "the majority never took a write");
        eprintln!("partition: the majority took writes again after {:?}", cut_at.elapsed());
        // The cut-off primary's lease has lapsed: its session no longer
        // reads (it would miss the majority's writes).
        match held.query_one("SELECT count(*) FROM kv", &[]).await {
            Ok(row) => panic!("the cut-off primary still served a read: {} rows", row.get::<_, i64>(0)),
            Err(e) => eprintln!("partition: the cut-off primary's session: {}", crate::client::describe(&e)),
        }
        // The cut-off node never acknowledges a write: it has no quorum.
        // (Writes it was sent may end as unknown while it notices.)
        for k in 1001..=1010 {
            let sql = format!("INSERT INTO kv VALUES ({k}, 'cut off')");
            match run(ports[old], "plain", &sql).await {
                Outcome::Done => panic!("a node cut off from the majority acknowledged a write (key {k})"),
                Outcome::Unknown(_) => {
                    maybe.insert(k);
                }
                Outcome::Retry(_) => {}
            }
        }
        // It says why it refuses.
        let refused = run(ports[old], "plain", "INSERT INTO kv VALUES (2000, 'x')").await;
        assert!(matches!(&refused, Outcome::Retry(e) if e.contains("57P03")), "{refused:?}");

        // The partition heals: the old primary rejoins as a secondary and
        // catches up; writes go on through every node.
        net.heal_all();
        for k in 61..=80 {
            insert(&ports, k, &mut acked, &mut maybe).await;
        }
        // Read each node's own copy (a secondary serves such a session itself).
        for &p in &ports {
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                let have: Option<BTreeSet<i64>> = match connect_reading_secondary(p, "plain").await {
                    Ok(c) => {
                        c.query("SELECT k FROM kv", &[]).await.ok().map(|rows| rows.iter().map(|r| r.get(0)).collect())
                    }
                    Err(_) => None,
                };
                if let Some(have) = &have {
                    assert!(
                        have.iter().all(|k| acked.contains(k) || maybe.contains(k)),
                        "node on port {p} holds keys never acknowledged nor attempted: {:?}",
                        have.iter().filter(|k| !acked.contains(k) && !maybe.contains(k)).collect::<Vec<_>>()
                    );
                    if acked.is_subset(have) {
                        break;
                    }
                }
                assert!(Instant::now() < deadline, "node on port {p} never held every acknowledged key: {have:?}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        eprintln!("partition: {} writes acknowledged, {} of unknown outcome", acked.len(), maybe.len());

        // Now a secondary is cut off: the other two go on, and a session
        // reading on the cut-off node is refused once it is staler than its
        // bound, then reads again (everything) after the partition heals.
        let primary = db_primary(&ports, "plain").await - 1;
        let lonely = (0..3).find(|&i| i != primary).unwrap();
        let c = connect_reading_secondary(ports[lonely], "plain").await.unwrap();
        c.batch_execute("SET tessera.max_staleness = '1s'").await.unwrap();
        net.isolate(lonely);
        let rest: Vec<u16> = (0..3).filter(|&i| i != lonely).map(|i| ports[i]).collect();
        for k in 81..=90 {
            insert(&rest, k, &mut acked, &mut maybe).await;
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let e = c.query_one("SELECT count(*) FROM kv", &[]).await.unwrap_err();
        assert_eq!(sqlstate(&e), "57P03", "{e}");
        net.heal_all();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(rows) = c.query("SELECT k FROM kv", &[]).await {
                let have: BTreeSet<i64> = rows.iter().map(|r| r.get(0)).collect();
                if acked.is_subset(&have) {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "the healed secondary never caught up");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    drop(nodes);
}
