//! psycopg 3, the Python driver, against the server: `psycopg_check.py` connects, creates a table, inserts with
//! `executemany`, rolls back, fetches several types in text and binary format, writes with `cursor.copy` and maps
//! server errors to psycopg's exception classes by SQLSTATE; then, separately, psycopg's automatic server-side
//! prepared statements.
//!
//! Needs `python3` with psycopg 3: `python3 -m pip install "psycopg[binary]"`; without it this test fails.

use std::io::Read;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::harness::Server;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/e2e/psycopg_check.py");
const INSTALL: &str = "python3 -m pip install \"psycopg[binary]\"";
/// The script does a few thousand round trips; a debug server needs a few seconds.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs `python3 <args>` and returns (success, stdout, stderr), killing it after `SCRIPT_TIMEOUT`.
pub(crate) fn python(args: &[&str]) -> (bool, String, String) {
    let mut child = Command::new("python3")
        .args(args)
        // No PG* variable of the machine may redirect the connection or change its settings.
        .env_remove("PGHOST")
        .env_remove("PGOPTIONS")
        .env_remove("PGTZ")
        .env_remove("PGDATESTYLE")
        .env_remove("PGCLIENTENCODING")
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run python3 ({e}); it must be on PATH, with psycopg 3: {INSTALL}"));
    let read = |mut pipe: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + SCRIPT_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for python3") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
            panic!("python3 {args:?} did not finish within {SCRIPT_TIMEOUT:?}\nstdout:\n{stdout}\nstderr:\n{stderr}");
        }
        thread::sleep(Duration::from_millis(20));
    };
    (status.success(), stdout.join().unwrap(), stderr.join().unwrap())
}

/// Runs the checks of `group` in `psycopg_check.py` against a fresh server.
fn run_checks(group: &str) {
    let (has_psycopg, _, stderr) = python(&["-c", "import psycopg"]);
    assert!(has_psycopg, "python3 cannot import psycopg 3; install it with: {INSTALL}\n{stderr}");

    let server = Server::start();
    let (ok, stdout, stderr) = python(&[SCRIPT, &server.port().to_string(), group]);
    assert!(ok, "psycopg_check.py {group} failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.ends_with("all checks passed\n"), "psycopg_check.py {group} did not finish\nstdout:\n{stdout}");
}

#[test]
fn psycopg_client() {
    run_checks("main");
}

/// psycopg's automatic server-side prepared statements, which it later drops with `DEALLOCATE`.
#[test]
fn psycopg_prepared_statements() {
    run_checks("prepared");
}
