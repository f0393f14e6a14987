//! A node's load figures: the client connections it holds, the CPU and
//! the memory of its process. Every node samples its own and sends them
//! with its report to the manager's leader (and its registration with the
//! system group's primary) twice a second, so the partition manager knows
//! every node's, records them in the directory, shows them in
//! `tessera.nodes` and `tessera status`, and places new replicas on the
//! less busy of otherwise equal nodes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::types::Load;

/// Samples closer together than this keep the previous CPU figure (a
/// shorter interval would be mostly noise).
const MIN_INTERVAL: Duration = Duration::from_millis(200);

pub struct LoadMeter {
    connections: Arc<AtomicUsize>,
    /// When the CPU was last sampled, its reading then (seconds of CPU),
    /// and the figure computed then.
    last: Mutex<Option<(Instant, f64, u32)>>,
}

impl LoadMeter {
    /// `connections`: the node's count of client connections.
    pub fn new(connections: Arc<AtomicUsize>) -> LoadMeter {
        LoadMeter { connections, last: Mutex::new(None) }
    }

    /// The figures now; the CPU's over the time since the previous sample.
    pub fn sample(&self) -> Load {
        let connections = self.connections.load(Ordering::Relaxed).min(u32::MAX as usize) as u32;
        let now = Instant::now();
        let cpu_percent = match process_cpu_seconds() {
            None => 0,
            Some(cpu) => {
                let mut last = self.last.lock();
                match *last {
                    Some((at, _, figure)) if now.duration_since(at) < MIN_INTERVAL => figure,
                    Some((at, before, _)) => {
                        let used = (cpu - before).max(0.0) / now.duration_since(at).as_secs_f64();
                        let figure = (used * 100.0).round() as u32;
                        *last = Some((now, cpu, figure));
                        figure
                    }
                    None => {
                        *last = Some((now, cpu, 0));
                        0
                    }
                }
            }
        };
        let rss_mb = (resident_bytes().unwrap_or(0) >> 20).min(u32::MAX as u64) as u32;
        Load { connections, cpu_percent, rss_mb }
    }
}

/// The user and system CPU time this process has used, in seconds.
#[cfg(target_os = "linux")]
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses and may
    // hold spaces: state is the first, utime the 12th, stime the 13th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: `sysconf` takes an integer name and returns an integer; it
    // has no preconditions and touches no memory of this process. An
    // unknown name returns -1, which is checked below.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (per_second > 0).then(|| ticks as f64 / per_second as f64)
}

#[cfg(not(target_os = "linux"))]
fn process_cpu_seconds() -> Option<f64> {
    None
}

/// The resident memory of this process, in bytes.
#[cfg(target_os = "linux")]
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: as above: `sysconf` takes an integer name and returns an
    // integer, with no preconditions and no memory of this process
    // touched; a failure (-1) is checked below.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    (page > 0).then(|| pages * page as u64)
}

#[cfg(not(target_os = "linux"))]
fn resident_bytes() -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_follow_the_process() {
        let connections = Arc::new(AtomicUsize::new(3));
        let meter = LoadMeter::new(connections.clone());
        let first = meter.sample();
        assert_eq!(first.connections, 3);
        assert!(first.rss_mb > 0, "{first:?}");
        // Use a fifth of a second of CPU (however long that takes on a
        // busy machine): the next sample sees it.
        let (start, cpu) = (Instant::now(), process_cpu_seconds().unwrap());
        let mut x = 0u64;
        while process_cpu_seconds().unwrap() - cpu < 0.2 && start.elapsed() < Duration::from_secs(20) {
            for _ in 0..100_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
        }
        std::hint::black_box(x);
        // Samples closer together than MIN_INTERVAL keep the old figure.
        std::thread::sleep((MIN_INTERVAL + Duration::from_millis(20)).saturating_sub(start.elapsed()));
        connections.store(5, Ordering::Relaxed);
        let busy = meter.sample();
        assert_eq!(busy.connections, 5);
        let floor = (16.0 / start.elapsed().as_secs_f64()) as u32;
        assert!(
            busy.cpu_percent >= floor.min(100),
            "0.2 s of CPU in {:?} shows as {}%",
            start.elapsed(),
            busy.cpu_percent
        );
        // A sample right after keeps the figure rather than measure noise.
        assert_eq!(meter.sample().cpu_percent, busy.cpu_percent);
    }
}
