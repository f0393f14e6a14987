//! In-process benchmark of the storage engine (see `bench/README.md`).
//!
//! ```text
//! cargo run --release -p tessera-engine --example engine_bench -- [options]
//! ```
//!
//! Figures go to stdout, one line each, in the form
//! `BENCH <name> <value> <unit> target=<target> ratio=<value/target>`;
//! everything else (progress, variants, engine stats) goes to stderr.
//!
//! Options (each also readable from the environment variable in brackets):
//!
//! * `--rows N` [`ROWS`]: rows in the table (default 10 000 000).
//! * `--secs S` [`SECS`]: measured seconds per throughput run (default 5).
//! * `--warmup S` [`WARMUP`]: unmeasured seconds before each run (default 1).
//! * `--lookup-batch N` [`LOOKUP_BATCH`]: lookups per read-only transaction
//!   in the batched lookup variant (default 100).
//! * `--writers N` [`WRITERS`]: writer threads for `updates_durable` (default 8).
//! * `--dir PATH` [`BENCH_DIR`]: where the durable engine's temporary
//!   directory is created (default: the system temp dir; use a real disk).
//! * `--only LIST` [`ONLY`]: comma-separated subset of `memory` (load,
//!   bytes_per_row, lookups, updates) and `durable` (updates_durable,
//!   recovery); `lookups` or `updates` alone run the memory load plus that
//!   workload (handy under a profiler). Default: everything.
//!
//! Worker threads are named `<workload>x<threads>-<i>`: `lookup1` (one
//! lookup per transaction), `lookupN` (batched), `update1` (one row per
//! transaction), `updateN` (100 rows), `durable`; loaders are `load-<i>` and
//! recovery runs in `recovery`. So a profile of the whole run can be split by
//! workload: `perf report --comms lookupNx2-0,lookupNx2-1`.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tessera_engine::tuple::{encode_i64, encode_tuple, push_key_field};
use tessera_engine::{Engine, EngineConfig, IndexKind, Isolation, Table, TableSpec};

/// Bytes of the non-key field of every row.
const VALUE_BYTES: usize = 100;
/// Rows per load transaction.
const LOAD_BATCH: u64 = 1000;
/// Threads loading the table.
const LOAD_THREADS: u64 = 2;

const TARGET_LOOKUPS: f64 = 2.7e6;
const TARGET_UPDATES: f64 = 1.9e6;
const TARGET_RECOVERY: f64 = 5.0;

// ---------------------------------------------------------------- options

struct Opts {
    rows: u64,
    secs: f64,
    warmup: f64,
    lookup_batch: usize,
    writers: usize,
    dir: Option<PathBuf>,
    memory: bool,
    lookups: bool,
    updates: bool,
    durable: bool,
}

fn parse_num(what: &str, s: &str) -> f64 {
    let cleaned: String = s.chars().filter(|c| *c != '_').collect();
    let (digits, mult) = match cleaned.to_ascii_uppercase().chars().last() {
        Some('K') => (&cleaned[..cleaned.len() - 1], 1e3),
        Some('M') => (&cleaned[..cleaned.len() - 1], 1e6),
        _ => (&cleaned[..], 1.0),
    };
    match digits.parse::<f64>() {
        Ok(v) if v > 0.0 => v * mult,
        _ => die(&format!("{what}: expected a positive number, got {s:?}")),
    }
}

fn die(msg: &str) -> ! {
    eprintln!("engine_bench: {msg}");
    std::process::exit(2)
}

impl Opts {
    fn parse() -> Opts {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let mut rows = env("ROWS");
        let mut secs = env("SECS");
        let mut warmup = env("WARMUP");
        let mut batch = env("LOOKUP_BATCH");
        let mut writers = env("WRITERS");
        let mut dir = env("BENCH_DIR");
        let mut only = env("ONLY");
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            let slot = match a.as_str() {
                "--rows" => &mut rows,
                "--secs" => &mut secs,
                "--warmup" => &mut warmup,
                "--lookup-batch" => &mut batch,
                "--writers" => &mut writers,
                "--dir" => &mut dir,
                "--only" => &mut only,
                "-h" | "--help" => {
                    eprintln!(
                        "usage: engine_bench [--rows N] [--secs S] [--warmup S] [--lookup-batch N] [--writers N] \
                         [--dir PATH] [--only memory,lookups,updates,durable]"
                    );
                    std::process::exit(0)
                }
                other => die(&format!("unknown argument {other:?} (try --help)")),
            };
            *slot = Some(args.next().unwrap_or_else(|| die(&format!("{a} needs a value"))));
        }
        let mut o = Opts {
            rows: rows.map_or(10_000_000, |s| parse_num("rows", &s) as u64),
            secs: secs.map_or(5.0, |s| parse_num("secs", &s)),
            warmup: warmup.map_or(1.0, |s| s.parse().unwrap_or_else(|_| die("warmup: expected seconds"))),
            lookup_batch: batch.map_or(100, |s| parse_num("lookup-batch", &s) as usize),
            writers: writers.map_or(8, |s| parse_num("writers", &s) as usize),
            dir: dir.map(PathBuf::from),
            memory: false,
            lookups: false,
            updates: false,
            durable: false,
        };
        for part in only.as_deref().unwrap_or("memory,durable").split(',').map(str::trim) {
            match part {
                "memory" => {
                    o.memory = true;
                    o.lookups = true;
                    o.updates = true;
                }
                "lookups" => o.lookups = true,
                "updates" => o.updates = true,
                "durable" => o.durable = true,
                "all" => {
                    o.memory = true;
                    o.lookups = true;
                    o.updates = true;
                    o.durable = true;
                }
                other => die(&format!("--only: unknown part {other:?}")),
            }
        }
        if o.rows < LOAD_BATCH {
            die("--rows must be at least 1000");
        }
        o
    }
}

// ---------------------------------------------------------------- rows and keys

fn value_for(id: i64, generation: u64) -> [u8; VALUE_BYTES] {
    let mut v = [0u8; VALUE_BYTES];
    let mut x = (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ generation;
    for chunk in v.chunks_mut(8) {
        x ^= x >> 29;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    v
}

/// A row: (bigint id, 100-byte value), in the engine's tuple layout.
fn make_row(id: i64, generation: u64) -> Vec<u8> {
    encode_tuple(&[Some(&encode_i64(id)), Some(&value_for(id, generation))])
}

/// The encoded primary key of `id`, written into a reused buffer.
fn key_into(buf: &mut Vec<u8>, id: i64) {
    buf.clear();
    push_key_field(buf, Some(&encode_i64(id)));
}

fn row_bytes() -> usize {
    make_row(0, 0).len()
}

// ---------------------------------------------------------------- measurement helpers

/// CPU time consumed by the calling thread (Linux), so that "per core"
/// figures do not depend on what else the machine is running.
#[cfg(target_os = "linux")]
fn thread_cpu() -> Duration {
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    unsafe extern "C" {
        fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes one `struct timespec` through the
    // pointer, and `ts` is a live, writable value of that layout (`repr(C)`,
    // two 64-bit fields, as on the 64-bit Linux targets we build for).
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[cfg(not(target_os = "linux"))]
fn thread_cpu() -> Duration {
    Duration::ZERO
}

/// CPU time of the whole process (utime + stime from /proc/self/stat).
fn process_cpu() -> Duration {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return Duration::ZERO };
    let Some(after_comm) = stat.rfind(')').map(|i| &stat[i + 2..]) else { return Duration::ZERO };
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    // Fields 14 and 15 of stat(5) are utime and stime; `after_comm` starts at field 3.
    let ticks: u64 = fields.get(11..13).map_or(0, |f| f.iter().filter_map(|v| v.parse::<u64>().ok()).sum());
    Duration::from_millis(ticks * 10) // USER_HZ is 100 on Linux
}

/// Resident set size of this process, in bytes.
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// What one worker thread did during the measured interval.
#[derive(Default, Clone, Copy)]
struct Sample {
    ops: u64,
    txns: u64,
    aborts: u64,
    wall: Duration,
    cpu: Duration,
}

/// Aggregate of one run.
struct RunResult {
    threads: usize,
    ops: u64,
    txns: u64,
    aborts: u64,
    /// Sum over threads of ops / that thread's wall time.
    wall_rate: f64,
    /// Ops per CPU-second consumed by the worker threads.
    per_cpu: f64,
    cpu_util: f64,
}

/// Runs `threads` copies of `body` for `warmup` + `secs` seconds. `body`
/// gets a `step` callback to call before each transaction
/// (false: stop) and the sample to count into. Each thread calls `body`
/// twice: once for the warm-up (its counts are dropped), once measured.
fn run_threads<F>(name: &str, threads: usize, warmup: f64, secs: f64, body: F) -> RunResult
where
    F: Fn(&dyn Fn() -> bool, &mut Sample) + Sync,
{
    let stop = AtomicBool::new(false);
    let measuring = AtomicBool::new(false);
    let samples: Vec<Sample> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (stop, measuring, body) = (&stop, &measuring, &body);
                std::thread::Builder::new()
                    .name(format!("{name}x{threads}-{i}"))
                    .spawn_scoped(s, move || {
                        // Warm-up with a throwaway sample until the measured interval starts.
                        let mut warm = Sample::default();
                        body(&|| !stop.load(Relaxed) && !measuring.load(Relaxed), &mut warm);
                        let mut sample = Sample::default();
                        if !stop.load(Relaxed) {
                            let (wall, cpu) = (Instant::now(), thread_cpu());
                            body(&|| !stop.load(Relaxed), &mut sample);
                            sample.wall = wall.elapsed();
                            sample.cpu = thread_cpu().saturating_sub(cpu);
                        }
                        sample
                    })
                    .expect("spawning a worker")
            })
            .collect();
        std::thread::sleep(Duration::from_secs_f64(warmup));
        measuring.store(true, Relaxed);
        std::thread::sleep(Duration::from_secs_f64(secs));
        stop.store(true, Relaxed);
        handles.into_iter().map(|h| h.join().expect("worker panicked")).collect()
    });
    let ops: u64 = samples.iter().map(|s| s.ops).sum();
    let cpu: f64 = samples.iter().map(|s| s.cpu.as_secs_f64()).sum();
    let wall: f64 = samples.iter().map(|s| s.wall.as_secs_f64()).sum();
    let wall_rate = samples.iter().map(|s| s.ops as f64 / s.wall.as_secs_f64().max(1e-9)).sum();
    RunResult {
        threads,
        ops,
        txns: samples.iter().map(|s| s.txns).sum(),
        aborts: samples.iter().map(|s| s.aborts).sum(),
        wall_rate,
        per_cpu: if cpu > 0.0 { ops as f64 / cpu } else { wall_rate / threads as f64 },
        cpu_util: if wall > 0.0 { cpu / wall } else { 0.0 },
    }
}

/// Average latency of one dependent random memory access (a pointer chase
/// over 256 MiB, beyond the caches): the unit in which point lookups are paid.
fn dram_latency_ns() -> f64 {
    const N: usize = 64 << 20;
    let mut rng = SmallRng::seed_from_u64(7);
    // One random cycle through all slots (Sattolo's shuffle).
    let mut next: Vec<u32> = (0..N as u32).collect();
    for i in (1..N).rev() {
        let j = rng.random_range(0..i);
        next.swap(i, j);
    }
    let steps = 4_000_000;
    let mut p = 0usize;
    let started = thread_cpu();
    for _ in 0..steps {
        p = next[p] as usize;
    }
    black_box(p);
    thread_cpu().saturating_sub(started).as_nanos() as f64 / steps as f64
}

fn info_run(what: &str, r: &RunResult) {
    eprintln!(
        "INFO {what} threads={} ops={} txns={} aborts={} total_per_s={:.0} per_core_wall={:.0} per_cpu_second={:.0} \
         cpu_util={:.2} ns_per_op_cpu={:.0}",
        r.threads,
        r.ops,
        r.txns,
        r.aborts,
        r.wall_rate,
        r.wall_rate / r.threads as f64,
        r.per_cpu,
        r.cpu_util,
        1e9 / r.per_cpu.max(1e-9),
    );
}

fn bench_line(name: &str, value: f64, unit: &str, target: f64) {
    let v = if value >= 100.0 { format!("{value:.0}") } else { format!("{value:.2}") };
    let t = if target >= 100.0 { format!("{target:.0}") } else { format!("{target}") };
    println!("BENCH {name} {v} {unit} target={t} ratio={:.3}", value / target);
}

fn bench_report(name: &str, value: f64, unit: &str) {
    let v = if value >= 100.0 { format!("{value:.0}") } else { format!("{value:.2}") };
    println!("BENCH {name} {v} {unit} target=report ratio=n/a");
}

fn stats(phase: &str, e: &Engine, t: &Table) {
    let s = e.stats();
    eprintln!(
        "STATS phase={phase} versions={} versions_freed={} rows_removed={} gc_pending={} active_txns={} \
         last_commit_ts={} directory_rows={} rss_mib={}",
        s.versions,
        s.versions_freed,
        s.rows_removed,
        s.gc_pending,
        s.active_transactions,
        s.last_commit_ts,
        t.directory_len(),
        rss_bytes() >> 20
    );
}

// ---------------------------------------------------------------- workloads

fn create_table(e: &Engine) -> Arc<Table> {
    e.create_table(TableSpec::new("bench", vec![0], IndexKind::Hash)).expect("create table")
}

/// Inserts ids `0..rows` from `LOAD_THREADS` threads, `LOAD_BATCH` rows per
/// transaction. Returns rows per second.
fn load(e: &Engine, t: &Arc<Table>, rows: u64) -> f64 {
    let started = Instant::now();
    let done = AtomicU64::new(0);
    let batches = rows.div_ceil(LOAD_BATCH);
    std::thread::scope(|s| {
        for th in 0..LOAD_THREADS {
            let done = &done;
            std::thread::Builder::new()
                .name(format!("load-{th}"))
                .spawn_scoped(s, move || {
                    let mut b = th;
                    while b < batches {
                        let mut tx = e.begin(Isolation::Snapshot).expect("begin");
                        let (lo, hi) = (b * LOAD_BATCH, ((b + 1) * LOAD_BATCH).min(rows));
                        for id in lo..hi {
                            tx.insert(t, make_row(id as i64, 0)).expect("insert");
                        }
                        tx.commit().expect("load commit");
                        let n = done.fetch_add(hi - lo, Relaxed) + (hi - lo);
                        if n / 1_000_000 != (n - (hi - lo)) / 1_000_000 {
                            eprintln!("  loaded {}M rows ({:.1}s)", n / 1_000_000, started.elapsed().as_secs_f64());
                        }
                        b += LOAD_THREADS;
                    }
                })
                .expect("spawning a loader");
        }
    });
    rows as f64 / started.elapsed().as_secs_f64()
}

/// Random point lookups, `batch` per read-only snapshot transaction.
fn lookups(e: &Engine, t: &Arc<Table>, o: &Opts, threads: usize, batch: usize) -> RunResult {
    let rows = o.rows;
    run_threads(if batch == 1 { "lookup1" } else { "lookupN" }, threads, o.warmup, o.secs, |step, sample| {
        let mut rng = SmallRng::from_rng(&mut rand::rng());
        let mut key = Vec::with_capacity(32);
        let mut sum = 0u64;
        while step() {
            let mut tx = e.begin(Isolation::Snapshot).expect("begin");
            for _ in 0..batch {
                let id = rng.random_range(0..rows) as i64;
                key_into(&mut key, id);
                // Touch the row's bytes as a caller would (length and a field byte).
                let got = tx.get_with(t, &key, |d| d.len() as u64 + d[d.len() - 1] as u64).expect("get");
                sum = sum.wrapping_add(got.expect("row present"));
            }
            tx.commit().expect("read commit");
            sample.ops += batch as u64;
            sample.txns += 1;
        }
        black_box(sum);
    })
}

/// Random updates, `per_txn` rows per snapshot transaction (1 = the
/// single-row update transaction of the `updates_*` figures).
fn updates(e: &Engine, t: &Arc<Table>, rows: u64, name: &str, threads: usize, warmup: f64, secs: f64) -> RunResult {
    updates_n(e, t, rows, name, threads, warmup, secs, 1)
}

#[allow(clippy::too_many_arguments)]
fn updates_n(
    e: &Engine,
    t: &Arc<Table>,
    rows: u64,
    name: &str,
    threads: usize,
    warmup: f64,
    secs: f64,
    per_txn: usize,
) -> RunResult {
    let generation = AtomicU64::new(1);
    run_threads(name, threads, warmup, secs, |step, sample| {
        let mut rng = SmallRng::from_rng(&mut rand::rng());
        let g = generation.fetch_add(1, Relaxed);
        while step() {
            let mut tx = e.begin(Isolation::Snapshot).expect("begin");
            let mut ok = true;
            for _ in 0..per_txn {
                let id = rng.random_range(0..rows) as i64;
                match tx.update(t, make_row(id, g)) {
                    Ok(true) => {}
                    Ok(false) => panic!("row {id} missing"),
                    Err(err) if err.is_retryable() => {
                        ok = false;
                        break;
                    }
                    Err(err) => panic!("update: {err}"),
                }
            }
            if !ok {
                sample.aborts += 1;
                drop(tx);
                continue;
            }
            match tx.commit() {
                Ok(_) => {
                    sample.ops += per_txn as u64;
                    sample.txns += 1;
                }
                Err(err) if err.is_retryable() => sample.aborts += 1,
                Err(err) => panic!("commit: {err}"),
            }
        }
    })
}

// ---------------------------------------------------------------- phases

fn memory_phase(o: &Opts) {
    eprintln!("== in-memory engine: {} rows, hash primary key, {} B rows", o.rows, row_bytes());
    let rss_before = rss_bytes();
    let e = Engine::open(EngineConfig::in_memory()).expect("open in-memory engine");
    let t = create_table(&e);
    let rate = load(&e, &t, o.rows);
    e.collect_garbage();
    let rss_after = rss_bytes();
    eprintln!("INFO load rows={} rows_per_s={rate:.0} threads={LOAD_THREADS} rows_per_txn={LOAD_BATCH}", o.rows);
    stats("load", &e, &t);
    let per_row = rss_after.saturating_sub(rss_before) as f64 / o.rows as f64;
    eprintln!(
        "INFO memory rss_before_mib={} rss_after_mib={} bytes_per_row={per_row:.1} row_data_bytes={}",
        rss_before >> 20,
        rss_after >> 20,
        row_bytes()
    );
    if o.memory {
        bench_report("bytes_per_row", per_row, "B/row");
    }

    if o.lookups {
        let mut per_core = Vec::new();
        for threads in [1, 2] {
            let r = lookups(&e, &t, o, threads, 1);
            info_run("lookups single-lookup-txn", &r);
            let r = lookups(&e, &t, o, threads, o.lookup_batch);
            info_run(&format!("lookups batch={}", o.lookup_batch), &r);
            per_core.push(r.per_cpu);
        }
        stats("lookups", &e, &t);
        let v = per_core.iter().copied().fold(f64::INFINITY, f64::min);
        bench_line("lookups_per_core", v, "lookups/s", TARGET_LOOKUPS);
    }

    if o.updates {
        let mut per_core = Vec::new();
        for threads in [1, 2] {
            let r = updates(&e, &t, o.rows, "update1", threads, o.warmup, o.secs);
            info_run("updates single-row-txn", &r);
            per_core.push(r.per_cpu);
            stats(&format!("updates-{threads}t"), &e, &t);
        }
        // For the analysis only: the per-update cost without per-transaction overhead.
        let r = updates_n(&e, &t, o.rows, "updateN", 1, o.warmup, o.secs, 100);
        info_run("updates 100-rows-per-txn (not a BENCH figure)", &r);
        stats("updates", &e, &t);
        let v = per_core.iter().copied().fold(f64::INFINITY, f64::min);
        bench_line("updates_per_core", v, "txn/s", TARGET_UPDATES);
    }
    let started = Instant::now();
    drop(t);
    drop(e);
    eprintln!("INFO teardown in-memory engine {:.1}s", started.elapsed().as_secs_f64());
}

fn dir_bytes(path: &std::path::Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(path) else { return 0 };
    rd.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

fn durable_phase(o: &Opts) {
    let tmp = match &o.dir {
        Some(d) => {
            std::fs::create_dir_all(d).expect("creating --dir");
            tempfile::Builder::new().prefix("engine-bench-").tempdir_in(d)
        }
        None => tempfile::Builder::new().prefix("engine-bench-").tempdir(),
    }
    .expect("creating a temporary directory");
    let dir = tmp.path().to_path_buf();
    eprintln!("== durable engine in {}: {} rows", dir.display(), o.rows);

    let e = Engine::open(EngineConfig::durable(&dir)).expect("open durable engine");
    let t = create_table(&e);
    let rate = load(&e, &t, o.rows);
    eprintln!("INFO durable-load rows={} rows_per_s={rate:.0}", o.rows);
    stats("durable-load", &e, &t);
    let started = Instant::now();
    let ck = e.checkpoint().expect("checkpoint").expect("a durable engine checkpoints");
    eprintln!(
        "INFO checkpoint secs={:.2} data_rows={} data_files={} total_bytes={} merged={}",
        started.elapsed().as_secs_f64(),
        ck.data_rows,
        ck.data_files,
        ck.total_bytes,
        ck.merged
    );

    // updates_durable: synchronous group commit, `writers` threads. Its
    // commits are also the log tail that recovery has to replay.
    let log_before = e.log().expect("log").stats();
    let cpu_before = process_cpu();
    let r = updates(&e, &t, o.rows, "durable", o.writers, o.warmup.min(1.0), o.secs);
    let cpu = process_cpu().saturating_sub(cpu_before);
    let log_after = e.log().expect("log").stats();
    info_run("updates_durable", &r);
    let fsyncs = log_after.fsyncs - log_before.fsyncs;
    let records = log_after.records - log_before.records;
    eprintln!(
        "INFO updates_durable fsyncs={fsyncs} log_records={records} records_per_fsync={:.1} log_bytes={} \
         process_cpu_us_per_txn={:.1}",
        records as f64 / fsyncs.max(1) as f64,
        log_after.bytes - log_before.bytes,
        cpu.as_secs_f64() * 1e6 / records.max(1) as f64,
    );
    stats("durable-updates", &e, &t);
    bench_report("updates_durable", r.wall_rate, "txn/s");

    // Recovery: close, then time Engine::open.
    let tail = e.log().expect("log").stats();
    e.close().expect("close");
    drop(t);
    drop(e);
    let on_disk = dir_bytes(&dir);
    let ckpt_bytes = dir_bytes(&dir.join("checkpoint"));
    let log_bytes = dir_bytes(&dir.join("log"));
    eprintln!(
        "INFO on-disk total_bytes={on_disk} checkpoint_bytes={ckpt_bytes} log_bytes={log_bytes} log_tail_bytes={}",
        tail.end_lsn.saturating_sub(ck.replay_from)
    );
    let rss_before = rss_bytes();
    // Recovery runs in a thread named `recovery` (its helper threads inherit
    // the name), so that it can be told apart in a profile.
    let (e, secs) = std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("recovery".into())
            .spawn_scoped(s, || {
                let started = Instant::now();
                let e = Engine::open(EngineConfig::durable(&dir)).expect("recovery");
                (e, started.elapsed().as_secs_f64())
            })
            .expect("spawning the recovery thread")
            .join()
            .expect("recovery panicked")
    });
    let t = e.table("bench").expect("table after recovery");
    let live = t.directory_len() as u64;
    let logical = live as f64 * row_bytes() as f64 / 1e9;
    eprintln!(
        "INFO recovery secs={secs:.2} live_rows={live} logical_gb={logical:.3} (rows x {} B encoded row) \
         rss_delta_mib={} threads={}",
        row_bytes(),
        rss_bytes().saturating_sub(rss_before) >> 20,
        EngineConfig::durable(&dir).recovery_threads
    );
    stats("recovered", &e, &t);
    // Spot-check that the recovered table answers.
    let mut tx = e.begin(Isolation::Snapshot).expect("begin");
    let mut key = Vec::new();
    for id in [0, o.rows as i64 / 2, o.rows as i64 - 1] {
        key_into(&mut key, id);
        assert!(tx.get(&t, &key).expect("get").is_some(), "row {id} lost by recovery");
    }
    drop(tx);
    assert_eq!(live, o.rows, "recovery restored a different number of rows");
    bench_line("recovery_seconds_per_gb", secs / logical, "s/GB", TARGET_RECOVERY);
    e.close().expect("close");
}

fn main() {
    let o = Opts::parse();
    eprintln!(
        "engine_bench: rows={} secs={} warmup={} lookup_batch={} writers={} cores={}",
        o.rows,
        o.secs,
        o.warmup,
        o.lookup_batch,
        o.writers,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    if o.memory || o.lookups {
        eprintln!("INFO calibration dependent_random_access_ns={:.0} (pointer chase over 256 MiB)", dram_latency_ns());
    }
    if o.memory || o.lookups || o.updates {
        memory_phase(&o);
    }
    if o.durable {
        durable_phase(&o);
    }
}
