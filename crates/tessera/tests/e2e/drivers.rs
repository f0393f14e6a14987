//! More client drivers against a real server: asyncpg and psycopg2 (Python)
//! and pgjdbc (Java). Each script in `drivers/` creates tables, binds
//! parameters of many types, reads results, rolls back, copies and checks
//! SQLSTATEs, printing `all checks passed` at the end.
//!
//! Needs `python3 -m pip install asyncpg psycopg2-binary`, a JDK, and the
//! PostgreSQL JDBC driver in the Maven cache
//! (`mvn dependency:get -Dartifact=org.postgresql:postgresql:42.7.4`) or at
//! `$TESSERA_JDBC_JAR`; `.ci/run` installs them.

use std::path::PathBuf;
use std::process::Command;

use crate::harness::Server;
use crate::psycopg::python;

const DRIVERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/e2e/drivers");

fn run_python(script: &str, module: &str, install: &str) {
    let (present, _, stderr) = python(&["-c", &format!("import {module}")]);
    assert!(present, "python3 cannot import {module}; install it with: {install}\n{stderr}");
    let server = Server::start();
    let path = format!("{DRIVERS}/{script}");
    let (ok, stdout, stderr) = python(&[&path, &server.port().to_string()]);
    assert!(ok, "{script} failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.ends_with("all checks passed\n"), "{script} did not finish\nstdout:\n{stdout}");
}

#[test]
fn asyncpg_client() {
    run_python("asyncpg_check.py", "asyncpg", "python3 -m pip install asyncpg");
}

#[test]
fn psycopg2_client() {
    run_python("psycopg2_check.py", "psycopg2", "python3 -m pip install psycopg2-binary");
}

fn jdbc_jar() -> PathBuf {
    if let Ok(p) = std::env::var("TESSERA_JDBC_JAR") {
        return PathBuf::from(p);
    }
    let home = std::env::var("HOME").unwrap_or_default();
    PathBuf::from(home).join(".m2/repository/org/postgresql/postgresql/42.7.4/postgresql-42.7.4.jar")
}

#[test]
fn pgjdbc_client() {
    let jar = jdbc_jar();
    assert!(
        jar.exists(),
        "the PostgreSQL JDBC driver is missing at {}; fetch it with \
         mvn dependency:get -Dartifact=org.postgresql:postgresql:42.7.4 (or set TESSERA_JDBC_JAR)",
        jar.display()
    );
    let classes = tempfile::tempdir().unwrap();
    let javac = Command::new("javac")
        .arg("-d")
        .arg(classes.path())
        .arg(format!("{DRIVERS}/JdbcCheck.java"))
        .output()
        .expect("javac is needed (a JDK)");
    assert!(javac.status.success(), "javac failed: {}", String::from_utf8_lossy(&javac.stderr));
    let server = Server::start();
    let classpath = format!("{}:{}", jar.display(), classes.path().display());
    let out = Command::new("java")
        .args(["-cp", &classpath, "JdbcCheck", &server.port().to_string()])
        .output()
        .expect("java is needed (a JDK)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "JdbcCheck failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("all checks passed"), "JdbcCheck did not finish\nstdout:\n{stdout}");
}
