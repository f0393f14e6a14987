//! How fresh a secondary's data is, for reads served there.
//!
//! Every AppendEntries from the primary (heartbeats included) carries the
//! primary's commit index. A secondary notes when it heard each new commit
//! index; once it has applied index `c`, its data is at least as new as the
//! primary's committed state at the moment it heard `c` (minus the message's
//! flight time). Its staleness is the time since the newest such moment: a
//! few heartbeat intervals on a healthy replica, growing without bound on
//! one cut off from the primary or falling behind.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Commit indexes heard but not yet applied are kept up to this many.
const MAX_HEARD: usize = 4096;

pub struct Freshness {
    /// (when first heard or last heard again, commit index), ascending.
    heard: Mutex<VecDeque<(Instant, u64)>>,
    applied: Arc<dyn Fn() -> Option<u64> + Send + Sync>,
}

impl Freshness {
    pub fn new(applied: Arc<dyn Fn() -> Option<u64> + Send + Sync>) -> Freshness {
        Freshness { heard: Mutex::new(VecDeque::new()), applied }
    }

    /// The primary says it has committed up to `commit`.
    pub fn heard(&self, commit: u64) {
        let now = Instant::now();
        let mut q = self.heard.lock();
        match q.back_mut() {
            Some((at, c)) if *c == commit => *at = now,
            Some((_, c)) if *c > commit => {} // an older message, overtaken
            _ => {
                q.push_back((now, commit));
                if q.len() > MAX_HEARD {
                    q.pop_front();
                }
            }
        }
    }

    /// Time since the primary last announced a commit index this node has
    /// applied; None if it never has.
    pub fn staleness(&self) -> Option<Duration> {
        let applied = (self.applied)()?;
        let mut q = self.heard.lock();
        while q.len() >= 2 && q[1].1 <= applied {
            q.pop_front();
        }
        match q.front() {
            Some((at, c)) if *c <= applied => Some(at.elapsed()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn staleness_follows_what_was_applied() {
        let applied = Arc::new(AtomicU64::new(0));
        let a = applied.clone();
        let f = Freshness::new(Arc::new(move || Some(a.load(Ordering::SeqCst))));
        assert_eq!(f.staleness(), None);
        f.heard(5);
        assert_eq!(f.staleness(), None, "5 is not applied yet");
        applied.store(5, Ordering::SeqCst);
        assert!(f.staleness().unwrap() < Duration::from_secs(1));
        std::thread::sleep(Duration::from_millis(30));
        f.heard(9);
        // Applied 5 of 9: as fresh as when 5 was heard.
        assert!(f.staleness().unwrap() >= Duration::from_millis(30));
        applied.store(9, Ordering::SeqCst);
        assert!(f.staleness().unwrap() < Duration::from_millis(30));
        // Heartbeats repeating the same index keep it fresh.
        std::thread::sleep(Duration::from_millis(30));
        f.heard(9);
        assert!(f.staleness().unwrap() < Duration::from_millis(30));
    }
}
