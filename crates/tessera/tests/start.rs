//! `tessera start`: the binary opens (or creates) its data directory, says
//! `engine ready`, and on SIGTERM or SIGINT closes the engine and exits with
//! status 0 after printing `stopped cleanly`. A restart on the same
//! directory recovers what is there.

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tessera_engine::tuple::{encode_i64, encode_tuple};
use tessera_engine::{Engine, EngineConfig, IndexKind, Isolation, KeyRange, PRIMARY, TableSpec};

const READY_TIMEOUT: Duration = Duration::from_secs(60);
const EXIT_TIMEOUT: Duration = Duration::from_secs(60);

/// A directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let name =
            format!("tessera-start-test-{}-{}-{nanos}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let path = std::env::temp_dir().join(name);
        fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A running `tessera start`, killed with SIGKILL if a test fails mid-way.
struct Server {
    child: Child,
    lines: Receiver<String>,
    stdout: Vec<String>,
    stderr: Option<JoinHandle<String>>,
}

impl Server {
    fn start(data_dir: &Path, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
            .arg("start")
            .arg("--data-dir")
            .arg(data_dir)
            .args(["--port", "0"])
            .args(extra)
            .env("TESSERA_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting the tessera binary");
        let stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        Server { child, lines, stdout: Vec::new(), stderr: Some(stderr) }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for a stdout line containing `needle` and returns it.
    fn wait_for(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            match self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => {
                    self.stdout.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(e) => {
                    let _ = self.child.kill();
                    let status = self.child.wait();
                    let stderr = self.take_stderr();
                    panic!(
                        "no {needle:?} on stdout ({e:?}); status {status:?}; stdout {:?}; stderr:\n{stderr}",
                        self.stdout
                    );
                }
            }
        }
    }

    fn signal(&self, name: &str) {
        let status =
            Command::new("kill").arg(format!("-{name}")).arg(self.pid().to_string()).status().expect("running kill");
        assert!(status.success(), "kill -{name} failed: {status}");
    }

    fn take_stderr(&mut self) -> String {
        self.stderr.take().map(|h| h.join().unwrap_or_default()).unwrap_or_default()
    }

    /// Waits for the process to exit; returns its status, all of its stdout and its stderr.
    fn wait_exit(mut self) -> (ExitStatus, Vec<String>, String) {
        let deadline = Instant::now() + EXIT_TIMEOUT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let stderr = self.take_stderr();
                panic!("tessera did not exit; stdout {:?}; stderr:\n{stderr}", self.stdout);
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut stdout = std::mem::take(&mut self.stdout);
        // The reader thread ends at end of file, which has come with the exit.
        stdout.extend(self.lines.iter());
        let stderr = self.take_stderr();
        (status, stdout, stderr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Starts the server, waits until it is ready, sends `signal`, and checks
/// that it stopped cleanly. Returns the ready line.
fn start_and_stop(data_dir: &Path, extra: &[&str], signal: &str) -> String {
    let mut server = Server::start(data_dir, extra);
    let ready = server.wait_for("engine ready");
    server.signal(signal);
    let (status, stdout, stderr) = server.wait_exit();
    assert!(status.success(), "exit status {status} after SIG{signal}; stdout {stdout:?}; stderr:\n{stderr}");
    assert_eq!(status.code(), Some(0));
    let all = stdout.join("\n");
    assert!(all.contains(&format!("received SIG{signal}")), "stdout {stdout:?}");
    assert!(stdout.last().is_some_and(|l| l.contains("stopped cleanly")), "stdout {stdout:?}; stderr:\n{stderr}");
    ready
}

fn assert_has_log(data_dir: &Path) {
    let log = data_dir.join("log");
    assert!(log.is_dir(), "{} is missing", log.display());
    let segments = fs::read_dir(&log).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".log"));
    assert!(segments.count() >= 1, "no log segment in {}", log.display());
}

#[test]
fn sigterm_stops_cleanly_and_a_restart_recovers() {
    let tmp = TempDir::new();
    // A directory that does not exist yet, two levels down.
    let data = tmp.path().join("nested").join("data");
    let ready = start_and_stop(&data, &[], "TERM");
    assert!(ready.contains(&data.display().to_string()), "{ready}");
    assert!(ready.contains("0 tables"), "{ready}");
    assert_has_log(&data);

    // The first start created the SQL catalog's two tables.
    let again = start_and_stop(&data, &[], "TERM");
    assert!(again.contains("2 tables"), "{again}");
    assert_has_log(&data);
}

#[test]
fn sigint_stops_cleanly_and_a_restart_recovers() {
    let tmp = TempDir::new();
    let data = tmp.path().join("data");
    start_and_stop(&data, &[], "INT");
    assert_has_log(&data);
    start_and_stop(&data, &["--lazy-commit"], "INT");
    assert_has_log(&data);
}

/// The binary recovers data written through the engine, and its clean
/// shutdown leaves it intact.
#[test]
fn the_binary_recovers_existing_data() {
    let tmp = TempDir::new();
    let data = tmp.path().join("data");
    let last_commit = {
        let e = Engine::open(EngineConfig::durable(&data)).unwrap();
        // A `__` name: engine tables without a SQL catalog entry are otherwise
        // dropped at start as leftovers of interrupted DDL.
        let t = e.create_table(TableSpec::new("__probe", vec![0], IndexKind::Ordered)).unwrap();
        for i in 0..20 {
            let mut tx = e.begin(Isolation::Snapshot).unwrap();
            tx.insert(&t, encode_tuple(&[Some(&encode_i64(i)), Some(b"v")])).unwrap();
            tx.commit().unwrap();
            if i == 9 {
                e.checkpoint().unwrap();
            }
        }
        e.stats().last_commit_ts
    };
    let ready = start_and_stop(&data, &[], "TERM");
    assert!(ready.contains("1 tables"), "{ready}");
    assert!(ready.contains(&format!("last commit {last_commit},")), "{ready}");
    // Now with the SQL catalog's two tables as well.
    let ready = start_and_stop(&data, &[], "INT");
    assert!(ready.contains("3 tables"), "{ready}");
    let e = Engine::open(EngineConfig::durable(&data)).unwrap();
    let t = e.table("__probe").unwrap();
    let mut tx = e.begin(Isolation::Snapshot).unwrap();
    assert_eq!(tx.scan_collect(&t, PRIMARY, &KeyRange::all()).unwrap().len(), 20);
}

/// Damaged files: the binary refuses to start, says why, and exits non-zero.
#[test]
fn the_binary_refuses_a_corrupt_data_dir() {
    let tmp = TempDir::new();
    let data = tmp.path().join("data");
    {
        let e = Engine::open(EngineConfig::durable(&data)).unwrap();
        e.create_table(TableSpec::new("t", vec![0], IndexKind::Ordered)).unwrap();
        e.checkpoint().unwrap();
    }
    let manifest = fs::read_dir(data.join("checkpoint"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("MANIFEST-"))
        .expect("a manifest");
    let mut bytes = fs::read(&manifest).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5A;
    fs::write(&manifest, bytes).unwrap();

    let server = Server::start(&data, &[]);
    let (status, stdout, stderr) = server.wait_exit();
    assert!(!status.success(), "started on a corrupt manifest; stdout {stdout:?}");
    assert!(!stdout.iter().any(|l| l.contains("engine ready")), "stdout {stdout:?}");
    let name = manifest.file_name().unwrap().to_string_lossy().into_owned();
    assert!(stderr.contains(&name) && stderr.contains("corrupt"), "stderr should explain:\n{stderr}");
}
