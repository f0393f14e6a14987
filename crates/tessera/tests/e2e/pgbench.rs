//! pgbench, unmodified, against the server: `pgbench -i` (CREATE TABLE …
//! WITH (fillfactor), TRUNCATE, COPY … WITH (FREEZE ON), VACUUM ANALYZE,
//! ALTER TABLE … ADD PRIMARY KEY) and short runs of the default TPC-B-like
//! script with each query protocol, `-S`, `-N`, and SERIALIZABLE with
//! `--max-tries`, which must finish and keep the balances consistent. Speed
//! is the benchmark's business (bench/pgbench.sh), not this test's.
//!
//! Needs `pgbench` (Debian: postgresql-client).

use std::process::Command;

use crate::harness::Server;

fn pgbench(server: &Server, args: &[&str]) -> String {
    pgbench_with(server, args, "")
}

fn pgbench_with(server: &Server, args: &[&str], options: &str) -> String {
    let out = Command::new("pgbench")
        .args(["-h", "127.0.0.1", "-p", &server.port().to_string(), "-U", "tessera"])
        .args(args)
        .arg("tessera")
        .env("PGOPTIONS", options)
        .output()
        .expect("pgbench is needed (Debian: postgresql-client)");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "pgbench {args:?} failed:\n{text}");
    text
}

fn psql(server: &Server, sql: &str) -> String {
    let out = Command::new("psql")
        .args(["-X", "-A", "-t", "-h", "127.0.0.1", "-p", &server.port().to_string(), "-U", "tessera", "-c", sql])
        .output()
        .expect("psql is needed (Debian: postgresql-client)");
    assert!(out.status.success(), "psql {sql} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn pgbench_initializes_and_runs_tpcb() {
    let server = Server::start();
    let init = pgbench(&server, &["-i", "-s", "1"]);
    assert!(init.contains("done in"), "{init}");
    assert_eq!(psql(&server, "SELECT count(*) FROM pgbench_accounts"), "100000");
    let run = pgbench(&server, &["-c", "2", "-j", "1", "-t", "15"]);
    assert!(run.contains("number of transactions actually processed: 30/30"), "{run}");
    assert!(run.contains("number of failed transactions: 0 "), "{run}");
    // Every transaction moved the same delta through accounts, tellers and branches.
    let sums = psql(
        &server,
        "SELECT (SELECT sum(abalance) FROM pgbench_accounts) = (SELECT sum(tbalance) FROM pgbench_tellers) \
         AND (SELECT sum(tbalance) FROM pgbench_tellers) = (SELECT sum(bbalance) FROM pgbench_branches) \
         AND (SELECT count(*) FROM pgbench_history) = 30",
    );
    assert_eq!(sums, "t");
}

/// The integers of a one-row result.
fn ints(server: &Server, sql: &str) -> Vec<i64> {
    psql(server, sql).split('|').map(|v| v.parse().unwrap()).collect()
}

/// Accounts, tellers and branches received the same deltas.
fn balances_agree(server: &Server) -> bool {
    psql(
        server,
        "SELECT (SELECT sum(abalance) FROM pgbench_accounts) = (SELECT sum(tbalance) FROM pgbench_tellers) \
         AND (SELECT sum(tbalance) FROM pgbench_tellers) = (SELECT sum(bbalance) FROM pgbench_branches)",
    ) == "t"
}

#[test]
fn pgbench_runs_every_protocol_and_mode() {
    let server = Server::start();
    pgbench(&server, &["-i", "-s", "1", "-q"]);
    for mode in ["simple", "extended", "prepared"] {
        let run = pgbench(&server, &["-c", "3", "-j", "1", "-t", "10", "-M", mode]);
        assert!(run.contains("number of transactions actually processed: 30/30"), "-M {mode}: {run}");
        assert!(run.contains("number of failed transactions: 0 "), "-M {mode}: {run}");
        assert!(balances_agree(&server), "balances disagree after -M {mode}");
    }
    let select_only = pgbench(&server, &["-S", "-M", "prepared", "-c", "2", "-t", "50"]);
    assert!(select_only.contains("actually processed: 100/100"), "{select_only}");
    // -N leaves tellers and branches alone: accounts and history move together.
    let sums =
        "SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT coalesce(sum(delta), 0) FROM pgbench_history)";
    let before = ints(&server, sums);
    let skip = pgbench(&server, &["-N", "-n", "-c", "2", "-t", "10"]);
    assert!(skip.contains("actually processed: 20/20"), "{skip}");
    let after = ints(&server, sums);
    assert_eq!(after[0] - before[0], after[1] - before[1], "accounts and history disagree after -N");
    // SERIALIZABLE: conflicts are 40001 and pgbench retries them; every committed transaction moved the same
    // delta through accounts, tellers and branches (which -N above left apart).
    let three = "SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(tbalance) FROM pgbench_tellers), \
                 (SELECT sum(bbalance) FROM pgbench_branches)";
    let before = ints(&server, three);
    let ser = pgbench_with(
        &server,
        &["-n", "-c", "3", "-j", "1", "-t", "10", "--max-tries=50"],
        "-c default_transaction_isolation=serializable",
    );
    assert!(ser.contains("actually processed: 30/30"), "{ser}");
    let after = ints(&server, three);
    let moved: Vec<i64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    assert!(moved.iter().all(|m| *m == moved[0]), "balances moved apart in the serializable run: {moved:?}");
    assert_eq!(psql(&server, "SHOW default_transaction_isolation"), "read committed");
}

/// `pgbench -i` through a node of a three-node cluster: each table loads in
/// one transaction (the accounts' commit record is about 16 MB, so it
/// travels as many log entries), then a short run; every node ends up
/// holding the same rows and balances, read on the node itself.
#[test]
fn pgbench_loads_and_runs_on_a_three_node_cluster() {
    let nodes = crate::cluster::start_cluster(3);
    // Both nodes used below serve once the cluster has a primary.
    for node in &nodes[..2] {
        let port = node.port();
        crate::client::block_on(std::time::Duration::from_secs(90), async move {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while crate::cluster::query(port, "tessera", "SELECT 1").await.is_err() {
                assert!(std::time::Instant::now() < deadline, "the cluster did not start serving");
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
        });
    }
    let init = pgbench(&nodes[0], &["-i", "-s", "1"]);
    assert!(init.contains("done in"), "{init}");
    let run = pgbench(&nodes[1], &["-c", "2", "-j", "1", "-t", "15"]);
    assert!(run.contains("number of failed transactions: 0 "), "{run}");
    let want = "100000|30|t";
    let sql = "SELECT (SELECT count(*) FROM pgbench_accounts), (SELECT count(*) FROM pgbench_history), \
               (SELECT sum(abalance) FROM pgbench_accounts) = (SELECT sum(bbalance) FROM pgbench_branches)";
    for node in &nodes {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let out = Command::new("psql")
                .args(["-X", "-A", "-t", "-h", "127.0.0.1", "-p", &node.port().to_string(), "-U", "tessera", "-c", sql])
                .env("PGOPTIONS", "-c tessera.read_from=secondary")
                .output()
                .expect("psql");
            let got = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if got == want {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "node on {}: {got} {}",
                node.port(),
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(std::time::Duration::from_millis(250));
        }
    }
}
