//! pgbench, unmodified, against the server: `pgbench -i` (CREATE TABLE …
//! WITH (fillfactor), TRUNCATE, COPY … WITH (FREEZE ON), VACUUM ANALYZE,
//! ALTER TABLE … ADD PRIMARY KEY) and a short run of the default TPC-B-like
//! script, which must finish without failed transactions and keep the
//! balances consistent. Speed is the benchmark's business (bench/), not this
//! test's.
//!
//! Needs `pgbench` (Debian: postgresql-client).

use std::process::Command;

use crate::harness::Server;

fn pgbench(server: &Server, args: &[&str]) -> String {
    let out = Command::new("pgbench")
        .args(["-h", "127.0.0.1", "-p", &server.port().to_string(), "-U", "tessera"])
        .args(args)
        .arg("tessera")
        .env_remove("PGOPTIONS")
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
