//! Starts a real `tessera` server process for end-to-end tests.
//!
//! The server is started with `--port 0` and announces the port it bound on stdout
//! (`tessera: listening on 127.0.0.1:<port>`), so tests can run in parallel without
//! picking ports themselves.

// Each test module uses a different subset of this API.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// A debug build recovering a large log can be slow; anything longer is a hang.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
const STOP_TIMEOUT: Duration = Duration::from_secs(20);
const LISTENING: &str = "listening on 127.0.0.1:";

/// A running `tessera start`. Dropping it kills the process; the data directory lives as long as the `Server`, so
/// a test can kill the process and restart on the same data.
pub struct Server {
    child: Option<Child>,
    port: u16,
    /// Everything the current process wrote to stderr, returned when it exits (for failure messages).
    stderr: Option<JoinHandle<String>>,
    dir: PathBuf,
    /// `None` when the caller owns the directory (`start_in`).
    temp: Option<TempDir>,
    /// Extra flags for `tessera start`.
    args: Vec<String>,
    /// What the earlier processes on this data directory wrote to stderr
    /// (a test that kills and restarts a node keeps their story).
    history: String,
}

/// Lines of each server's log shown when a test fails.
const LOG_TAIL_LINES: usize = 300;

impl Server {
    /// Starts a server on a fresh, empty data directory.
    pub fn start() -> Server {
        let temp = tempfile::Builder::new().prefix("tessera-e2e-").tempdir().expect("creating a temp data dir");
        let mut server = Server::start_in(temp.path());
        server.temp = Some(temp);
        server
    }

    /// Starts a server on `dir`, which the caller keeps (and removes).
    pub fn start_in(dir: &Path) -> Server {
        let mut server = Server {
            child: None,
            port: 0,
            stderr: None,
            dir: dir.to_path_buf(),
            temp: None,
            args: Vec::new(),
            history: String::new(),
        };
        server.spawn();
        server
    }

    /// Starts a server on a fresh data directory with extra `tessera start` flags.
    pub fn start_with(args: &[&str]) -> Server {
        let temp = tempfile::Builder::new().prefix("tessera-e2e-").tempdir().expect("creating a temp data dir");
        let mut server = Server {
            child: None,
            port: 0,
            stderr: None,
            dir: temp.path().to_path_buf(),
            temp: Some(temp),
            args: args.iter().map(|a| a.to_string()).collect(),
            history: String::new(),
        };
        server.spawn();
        server
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The running process's id (for its memory in /proc).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the server is not running").id()
    }

    pub fn data_dir(&self) -> &Path {
        &self.dir
    }

    /// A libpq-style connection string, as `tokio_postgres::connect` takes it.
    pub fn conn_str(&self) -> String {
        format!("host=127.0.0.1 port={} user=tessera dbname=tessera", self.port)
    }

    /// Panics, with the exit status and everything the process wrote to stderr, if the server process has exited.
    pub fn assert_running(&mut self) {
        let child = self.child.as_mut().expect("the server was stopped by the test");
        if let Some(status) = child.try_wait().expect("polling the server process") {
            self.child = None;
            let stderr = self.take_stderr();
            panic!("the server process exited ({status}); stderr:\n{stderr}");
        }
    }

    /// Kills the process with SIGKILL (no chance to flush or close anything) and waits for it.
    pub fn kill9(&mut self) {
        self.kill_child();
        self.take_stderr();
    }

    /// Freezes the process (SIGSTOP): it holds its sockets but answers nothing.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a paused process run again (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let child = self.child.as_ref().expect("the server is not running");
        let status = Command::new("kill").args([signal, &child.id().to_string()]).status();
        assert!(status.as_ref().is_ok_and(|s| s.success()), "kill {signal} failed: {status:?}");
    }

    /// Sends SIGTERM and waits for a clean exit, panicking if the process needs more than 20 s.
    pub fn stop(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("the server is not running");
        let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        assert!(status.as_ref().is_ok_and(|s| s.success()), "sending SIGTERM to the server failed: {status:?}");
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            if let Some(status) = child.try_wait().expect("waiting for the server") {
                self.take_stderr();
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                let stderr = self.take_stderr();
                panic!("the server did not stop within {STOP_TIMEOUT:?} of SIGTERM; stderr:\n{stderr}");
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts a new process on the same data directory, stopping the current one first (SIGTERM) if it still runs.
    /// The port usually changes.
    pub fn restart(&mut self) {
        if self.child.is_some() {
            self.stop();
        }
        self.spawn();
    }

    fn spawn(&mut self) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["start", "--data-dir"])
            .arg(&self.dir)
            .args(["--port", "0"])
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning the tessera binary");
        let stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        // With TESSERA_E2E_LOGS=DIR, each process's log is also kept there
        // (one file per data directory), for looking into a failure.
        let keep = std::env::var_os("TESSERA_E2E_LOGS").map(|dir| {
            let name = self.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            std::path::PathBuf::from(dir).join(format!("{name}.log"))
        });
        self.stderr = Some(thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            if let Some(path) = keep
                && let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path)
            {
                use std::io::Write;
                let _ = f.write_all(text.as_bytes());
            }
            text
        }));
        let (port_tx, port_rx) = mpsc::channel();
        // Keeps reading after the port is known: a server blocked on a full stdout pipe would look like a hang.
        // The sender is dropped at EOF, which tells the waiting side that the process exited.
        thread::spawn(move || {
            let mut port_tx = Some(port_tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(port) = line.split_once(LISTENING).and_then(|(_, p)| p.trim().parse::<u16>().ok())
                    && let Some(tx) = port_tx.take()
                {
                    let _ = tx.send(port);
                }
            }
        });
        self.child = Some(child);
        match port_rx.recv_timeout(READY_TIMEOUT) {
            Ok(port) => self.port = port,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                self.kill_child();
                let stderr = self.take_stderr();
                panic!("tessera did not report `{LISTENING}<port>` within {READY_TIMEOUT:?}; stderr:\n{stderr}");
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = self.child.take().map(|mut c| c.wait());
                let stderr = self.take_stderr();
                panic!("tessera exited before listening ({status:?}); stderr:\n{stderr}");
            }
        }
    }

    fn kill_child(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn take_stderr(&mut self) -> String {
        let text = self.stderr.take().and_then(|h| h.join().ok()).unwrap_or_default();
        self.history.push_str(&text);
        text
    }
}

impl Drop for Server {
    /// Kills the process. When the test is failing, shows the end of the
    /// server's log (across its restarts), for looking into the failure.
    fn drop(&mut self) {
        self.kill_child();
        if thread::panicking() {
            self.take_stderr();
            let lines: Vec<&str> = self.history.lines().collect();
            let tail = &lines[lines.len().saturating_sub(LOG_TAIL_LINES)..];
            eprintln!("--- the last {} log lines of the server in {} ---", tail.len(), self.dir.display());
            for line in tail {
                eprintln!("{line}");
            }
        }
    }
}
