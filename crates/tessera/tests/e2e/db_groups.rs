//! Each keyless database is a replication group of its own, placed by the
//! partition manager: three real `tessera` processes and four databases,
//! their primaries spread over the nodes, each group at its own replica
//! count; every node routes a session to its database's primary; the node
//! leading a database is lost, that database fails over while the others
//! go on, and the node catches up in every group when it returns.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::client::block_on;
use crate::cluster::{
    Outcome, admin, connect_reading_secondary, db_primary, free_port, query, run, run_anywhere, start_cluster_on,
    wait_rows,
};

const DATABASES: [&str; 4] = ["a", "b", "c", "duo"];

/// (node id, role) of each replica of database `db`'s group, as
/// `tessera.replicas` shows it through any of `ports`.
async fn replicas(ports: &[u16], db: &str) -> Vec<(usize, String)> {
    let sql = format!("SELECT node_id, role FROM tessera.replicas WHERE database = '{db}' ORDER BY node_id");
    for &p in ports {
        if let Ok(rows) = query(p, "tessera", &sql).await {
            return rows.iter().map(|r| (r[0].parse().unwrap(), r[1].clone())).collect();
        }
    }
    Vec::new()
}

/// Inserts key `k` into `db` through any of `alive`: acknowledged, or of
/// unknown outcome.
async fn insert_in(alive: &[u16], db: &str, k: i64, acked: &mut BTreeSet<i64>, maybe: &mut BTreeSet<i64>) {
    let sql = format!("INSERT INTO kv VALUES ({k}, 'v{k}')");
    match run_anywhere(alive, db, &sql, Duration::from_secs(60)).await {
        Outcome::Done => acked.insert(k),
        Outcome::Unknown(_) | Outcome::Retry(_) => maybe.insert(k),
    };
}

/// The keys of `db` the node on `port` holds itself (read on it).
async fn local_keys(port: u16, db: &str) -> Result<BTreeSet<i64>, String> {
    let c = connect_reading_secondary(port, db).await.map_err(|e| crate::client::describe(&e))?;
    let rows = c.query("SELECT k FROM kv", &[]).await.map_err(|e| crate::client::describe(&e))?;
    Ok(rows.iter().map(|r| r.get::<_, i32>(0) as i64).collect())
}

#[test]
fn each_database_is_a_group_of_its_own_with_primaries_spread() {
    let rpc: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let addr = format!("127.0.0.1:{}", rpc[0]);
    let mut nodes = start_cluster_on(&rpc);
    let all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
    block_on(Duration::from_secs(500), async {
        create_databases(&all).await;
        each_database_has_its_own_group(&all).await;
        let leaders = primaries_spread(&all).await;

        // Every node takes every database's sessions (served or relayed).
        let mut acked: BTreeMap<&str, BTreeSet<i64>> = BTreeMap::new();
        let mut maybe: BTreeMap<&str, BTreeSet<i64>> = BTreeMap::new();
        insert_through_every_node(&all, &mut acked).await;
        cancel_follows_a_relayed_session(&all).await;
        let (duo_voters, outsider) = duo_is_on_its_voters_only(&all).await;
        // A session of a database with its own group cannot change what
        // is cluster-wide; it is told where to go.
        let refused = run(all[0], "a", "CREATE ROLE someone LOGIN").await;
        assert!(matches!(&refused, Outcome::Unknown(e) if e.contains("0A000")), "{refused:?}");

        // kill -9 the node leading database a: a fails over, and every
        // database whose quorum is left goes on taking writes.
        let victim = leaders["a"];
        nodes[victim - 1].kill9();
        let alive: Vec<u16> = (1..=3).filter(|&i| i != victim).map(|i| all[i - 1]).collect();
        writes_go_on_after_the_loss(&alive, victim, &duo_voters, &mut acked, &mut maybe).await;

        // It returns and catches up in every group it is in.
        nodes[victim - 1].restart();
        let back = nodes[victim - 1].port();
        let all: Vec<u16> = nodes.iter().map(|n| n.port()).collect();
        catches_up_in_every_group(back, victim, &duo_voters, &acked, &maybe).await;
        // duo takes writes again once both its voters are back.
        let sql = "INSERT INTO kv VALUES (200, 'back')";
        assert_eq!(run_anywhere(&all, "duo", sql, Duration::from_secs(60)).await, Outcome::Done);

        drop_database_removes_its_group(&all, &addr).await;

        // Draining a node moves the primaries of the databases it leads to
        // other nodes; a node whose loss would cost duo its quorum (one of
        // two voters) is refused.
        drain_moves_primaries_away(&all, &addr, outsider).await;
        drained_node_stays_drained(&all, &addr, outsider).await;
        status_lists_the_groups(&addr).await;
        let voter = *duo_voters.iter().next().unwrap();
        let (ok, text) = admin(&["node", "drain", &voter.to_string(), "--rpc-addr", &addr]);
        assert!(!ok && text.contains("would cost data group"), "{text}");
    });
}

/// Databases a, b and c with three replicas each, duo with two (five is
/// refused), each with a table kv.
async fn create_databases(all: &[u16]) {
    for db in ["a", "b", "c"] {
        let sql = format!("CREATE DATABASE {db}");
        assert_eq!(run_anywhere(all, "tessera", &sql, Duration::from_secs(60)).await, Outcome::Done);
    }
    let sql = "CREATE DATABASE duo WITH (replicas = 2)";
    assert_eq!(run_anywhere(all, "tessera", sql, Duration::from_secs(60)).await, Outcome::Done);
    // More replicas than nodes is refused, with the reason.
    let too_many = run(all[0], "tessera", "CREATE DATABASE big WITH (replicas = 5)").await;
    assert!(
        matches!(&too_many, Outcome::Unknown(e) if e.contains("22023") && e.contains("the cluster has 3 nodes")),
        "{too_many:?}"
    );
    for db in DATABASES {
        let sql = "CREATE TABLE kv (k int PRIMARY KEY, v text)";
        assert_eq!(run_anywhere(all, db, sql, Duration::from_secs(30)).await, Outcome::Done, "{db}");
    }
}

async fn each_database_has_its_own_group(all: &[u16]) {
    // Each database's own group: three voters (duo: two), one primary.
    let deadline = Instant::now() + Duration::from_secs(60);
    for db in DATABASES {
        let want = if db == "duo" { 2 } else { 3 };
        loop {
            let r = replicas(all, db).await;
            let voting = r.iter().filter(|(_, role)| role == "primary" || role == "secondary").count();
            let primaries = r.iter().filter(|(_, role)| role == "primary").count();
            if voting == want && primaries == 1 && r.len() == want {
                break;
            }
            assert!(Instant::now() < deadline, "{db}: expected {want} replicas, one primary: {r:?}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// Each database's primary node, once every node leads some group.
async fn primaries_spread(all: &[u16]) -> BTreeMap<&'static str, usize> {
    // The primaries are spread: with the first group's, five groups on
    // three nodes, every node leads at least one.
    let deadline = Instant::now() + Duration::from_secs(60);
    let leaders: BTreeMap<&str, usize> = loop {
        let mut leaders = BTreeMap::new();
        for db in DATABASES {
            leaders.insert(db, db_primary(all, db).await);
        }
        let first = query(all[0], "tessera", "SELECT node_id FROM tessera.nodes WHERE role = 'primary'").await;
        let mut leading: BTreeSet<usize> = leaders.values().copied().collect();
        leading.extend(first.unwrap_or_default().iter().map(|r| r[0].parse::<usize>().unwrap()));
        if leading.len() == 3 {
            break leaders;
        }
        assert!(Instant::now() < deadline, "primaries not spread: {leaders:?}, leading {leading:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    eprintln!("db groups: primaries {leaders:?}");
    leaders
}

async fn insert_through_every_node(all: &[u16], acked: &mut BTreeMap<&'static str, BTreeSet<i64>>) {
    for db in DATABASES {
        for k in 1..=9i64 {
            let sql = format!("INSERT INTO kv VALUES ({k}, 'v{k}')");
            let port = all[k as usize % 3];
            assert_eq!(run(port, db, &sql).await, Outcome::Done, "{db} through port {port}");
            acked.entry(db).or_default().insert(k);
        }
    }
}

async fn cancel_follows_a_relayed_session(all: &[u16]) {
    // A cancel request sent to the node a session was relayed through
    // follows the session to its database's primary.
    let lead = db_primary(all, "a").await;
    let through = all[(1..=3).find(|n| *n != lead).unwrap() - 1];
    let c = crate::cluster::try_connect(through, "a").await.unwrap();
    let token = c.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel_query(tokio_postgres::NoTls).await
    });
    let long = "SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b WHERE a % 7 = b % 7";
    let e = c.query_one(long, &[]).await.unwrap_err();
    assert_eq!(e.code().map(|c| c.code()), Some("57014"), "{e}");
    canceller.await.unwrap().expect("sending the cancel request");
    drop(c);
}

/// duo's voters, and the node outside them.
async fn duo_is_on_its_voters_only(all: &[u16]) -> (BTreeSet<usize>, usize) {
    // duo's rows are on its two voters only: the third node has none to read.
    let duo_voters: BTreeSet<usize> = replicas(all, "duo").await.iter().map(|(n, _)| *n).collect();
    let outsider = (1..=3).find(|n| !duo_voters.contains(n)).unwrap();
    let e = local_keys(all[outsider - 1], "duo").await.unwrap_err();
    assert!(e.contains("57P03") && e.contains("holds no replica"), "{e}");
    (duo_voters, outsider)
}

/// With node `victim` lost, database a fails over, and every database
/// whose quorum is left takes writes (through `alive`); duo, if it lost
/// one of its two voters, refuses them.
async fn writes_go_on_after_the_loss(
    alive: &[u16],
    victim: usize,
    duo_voters: &BTreeSet<usize>,
    acked: &mut BTreeMap<&'static str, BTreeSet<i64>>,
    maybe: &mut BTreeMap<&'static str, BTreeSet<i64>>,
) {
    let lost_quorum = |db: &str| db == "duo" && duo_voters.contains(&victim);
    let started = Instant::now();
    // A connection made right after the loss is held by the gateway
    // until a's next primary serves it (for up to 2 s), not refused at
    // once: the survivors still name the dead node for a moment, then
    // none, then the new primary.
    let first = run(alive[0], "a", "INSERT INTO kv VALUES (9000, 'x')").await;
    let took = started.elapsed();
    eprintln!("db groups: a connection made at the loss: {first:?} after {took:?}");
    match first {
        Outcome::Done => acked.entry("a").or_default().insert(9000),
        Outcome::Retry(e) => {
            assert!(took >= Duration::from_millis(1900), "refused after {took:?}, without waiting: {e}");
            false
        }
        Outcome::Unknown(_) => maybe.entry("a").or_default().insert(9000),
    };
    for db in DATABASES.into_iter().filter(|db| !lost_quorum(db)) {
        for k in 10..=19 {
            insert_in(alive, db, k, acked.entry(db).or_default(), maybe.entry(db).or_default()).await;
        }
        assert!((10..=19).any(|k| acked[db].contains(&k)), "{db} took no write after the loss");
    }
    eprintln!("db groups: writes went on after the loss within {:?}", started.elapsed());
    if duo_voters.contains(&victim) {
        // One of duo's two voters is gone: it refuses writes, clearly.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match run(alive[0], "duo", "INSERT INTO kv VALUES (100, 'x')").await {
                Outcome::Retry(e) if e.contains("57P03") => break,
                Outcome::Done => panic!("duo acknowledged a write without its quorum"),
                other => assert!(Instant::now() < deadline, "{other:?}"),
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        maybe.entry("duo").or_default().insert(100);
    }
}

/// Node `victim`, back on port `back`, holds every acknowledged row of
/// each database it has a replica of, and no row never written.
async fn catches_up_in_every_group(
    back: u16,
    victim: usize,
    duo_voters: &BTreeSet<usize>,
    acked: &BTreeMap<&'static str, BTreeSet<i64>>,
    maybe: &BTreeMap<&'static str, BTreeSet<i64>>,
) {
    for db in DATABASES {
        if db == "duo" && !duo_voters.contains(&victim) {
            continue;
        }
        let (a, m) = (acked[db].clone(), maybe.get(db).cloned().unwrap_or_default());
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            match local_keys(back, db).await {
                Ok(got) if a.is_subset(&got) => {
                    assert!(got.iter().all(|k| a.contains(k) || m.contains(k)), "{db}: {got:?}");
                    break;
                }
                other => assert!(Instant::now() < deadline, "{db} did not catch up on node {victim}: {other:?}"),
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
}

async fn drop_database_removes_its_group(all: &[u16], addr: &str) {
    // DROP DATABASE takes the database away from every node, and its
    // group with it; a new one of the same name starts empty, with a
    // group of its own.
    let sql = "SELECT DISTINCT stream FROM tessera.replicas WHERE database = 'c'";
    let old_group = query(all[0], "tessera", sql).await.unwrap()[0][0].clone();
    // A session of c keeps it from being dropped, on whichever node
    // c's primary is (55006, as in PostgreSQL).
    let holder = crate::cluster::try_connect(all[db_primary(all, "c").await - 1], "c").await.unwrap();
    holder.batch_execute("SELECT 1").await.unwrap();
    let refused = run(all[0], "tessera", "DROP DATABASE c").await;
    assert!(matches!(&refused, Outcome::Unknown(e) if e.contains("55006")), "{refused:?}");
    drop(holder);
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match run_anywhere(all, "tessera", "DROP DATABASE c", Duration::from_secs(30)).await {
            Outcome::Done => break,
            // The session's end reaches the server a moment later.
            Outcome::Unknown(e) if e.contains("55006") && Instant::now() < deadline => {}
            other => panic!("DROP DATABASE c: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // (Every node's catalog has the drop once the first group's entry
    // has been applied there: moments later.)
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let gone = run(all[1], "c", "SELECT 1").await;
        if matches!(&gone, Outcome::Retry(e) | Outcome::Unknown(e) if e.contains("3D000")) {
            break;
        }
        assert!(Instant::now() < deadline, "{gone:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (ok, text) = admin(&["status", "--rpc-addr", addr]);
        let groups = text.split("\n\n").nth(1).unwrap_or("").lines().skip(1);
        let listed = groups.map(|l| l.split_whitespace().next()).any(|g| g == Some(old_group.as_str()));
        if ok && !listed {
            break;
        }
        assert!(Instant::now() < deadline, "the dropped database's group {old_group} is still there:\n{text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(run_anywhere(all, "tessera", "CREATE DATABASE c", Duration::from_secs(60)).await, Outcome::Done);
    // (Through a node that may not know the new group's primary yet:
    // 57P03 until it does.)
    let deadline = Instant::now() + Duration::from_secs(15);
    let empty = loop {
        match run(all[2], "c", "SELECT count(*) FROM kv").await {
            Outcome::Retry(e) if Instant::now() < deadline && e.contains("57P03") => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            other => break other,
        }
    };
    assert!(matches!(&empty, Outcome::Unknown(e) if e.contains("42P01")), "{empty:?}");
    let sql = "CREATE TABLE kv (k int PRIMARY KEY, v text); INSERT INTO kv VALUES (1, 'again')";
    assert_eq!(run_anywhere(all, "c", sql, Duration::from_secs(30)).await, Outcome::Done);
}

/// A query for the groups of user databases that node `node` leads.
fn groups_led_by(node: usize) -> String {
    format!(
        "SELECT DISTINCT stream FROM tessera.replicas WHERE role = 'primary' AND node_id = {node} AND database <> 'tessera' AND database <> 'postgres'"
    )
}

async fn drain_moves_primaries_away(all: &[u16], addr: &str, outsider: usize) {
    let outsider_leads = groups_led_by(outsider);
    let deadline = Instant::now() + Duration::from_secs(30);
    let (ok, text) = loop {
        let groups = query(all[0], "tessera", &outsider_leads).await.unwrap_or_default();
        let (ok, text) = admin(&["node", "drain", &outsider.to_string(), "--rpc-addr", addr]);
        let moved =
            groups.iter().all(|g| text.contains(&format!("data group {}'s primary moved from node {outsider}", g[0])));
        if ok && moved {
            break (ok, text);
        }
        // A primary the manager moved meanwhile: ask again.
        assert!(Instant::now() < deadline, "{text} (expected moves of {groups:?})");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(ok && text.contains("can be taken down"), "{text}");
}

async fn drained_node_stays_drained(all: &[u16], addr: &str, outsider: usize) {
    let outsider_leads = groups_led_by(outsider);
    // The drained node stays drained: spreading primaries, the manager
    // would give the node that leads none one back (after a primary
    // has stayed put for 10 s); it moves none there.
    // Every node lists it as draining, and so does `tessera status`.
    let want = vec![vec![outsider.to_string()]];
    for &port in all {
        let sql = "SELECT node_id FROM tessera.nodes WHERE draining";
        wait_rows(&[port], "tessera", sql, "the drained node listed", |r| r == want.as_slice()).await;
    }
    let (_, text) = admin(&["status", "--rpc-addr", addr]);
    let flagged: Vec<&str> = text.lines().filter(|l| l.trim_end().ends_with(" yes")).collect();
    assert!(
        flagged.len() == 1 && flagged[0].split_whitespace().next() == Some(outsider.to_string().as_str()),
        "{text}"
    );
    let until = Instant::now() + Duration::from_secs(13);
    let mut looked = 0;
    while Instant::now() < until {
        if let Ok(leads) = query(all[0], "tessera", &outsider_leads).await {
            assert!(leads.is_empty(), "the drained node {outsider} leads {leads:?} again");
            looked += 1;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(looked >= 10, "tessera.replicas answered {looked} times");
}

async fn status_lists_the_groups(addr: &str) {
    // `tessera status` lists the databases' groups below the nodes (a
    // group whose primary is moving shows none for a moment).
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (ok, text) = admin(&["status", "--rpc-addr", addr]);
        let groups: Vec<&str> = text.split("\n\n").nth(1).unwrap_or("").lines().skip(1).collect();
        let primaries = groups.iter().filter(|l| l.split_whitespace().nth(2) == Some("primary")).count();
        if ok && primaries >= 4 {
            break;
        }
        assert!(Instant::now() < deadline, "{text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
