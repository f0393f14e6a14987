//! Tasks waiting for a counter to pass a value (or for a transaction to
//! end), woken without polling.
//!
//! The engine's waits (a commit waiting for the visible watermark) are short
//! but not instant: a commit can be durable an fsync before an earlier
//! timestamp is. A task that yields and looks again burns the CPU that the
//! earlier commit needs; instead it registers its waker here and the thread
//! that moves the counter wakes it.
//!
//! Lost wake-ups are ruled out by a Dekker-style handshake on `count`: the
//! waiter registers (incrementing `count`) and then re-reads the counter;
//! the mover stores the counter and then reads `count`, all `SeqCst`. Either
//! the waiter sees the new value, or the mover sees the waiter.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::Waker;

use parking_lot::Mutex;

#[derive(Default)]
pub(crate) struct Waiters {
    count: AtomicUsize,
    list: Mutex<Vec<(u64, Waker)>>,
}

impl Waiters {
    /// Registers `waker` to be woken once the counter reaches `target`. The
    /// caller re-reads the counter afterwards (see the module notes).
    pub fn register(&self, target: u64, waker: &Waker) {
        let mut list = self.list.lock();
        if !list.iter().any(|(t, w)| *t == target && w.will_wake(waker)) {
            list.push((target, waker.clone()));
            self.count.fetch_add(1, SeqCst);
        }
    }

    /// Takes back a registration that turned out unnecessary (the re-read
    /// found the target reached). Needed where a target, once reached, is
    /// never reached again (a transaction's end), or the entry would stay.
    pub fn deregister(&self, target: u64, waker: &Waker) {
        let mut list = self.list.lock();
        let before = list.len();
        list.retain(|(t, w)| !(*t == target && w.will_wake(waker)));
        self.count.fetch_sub(before - list.len(), SeqCst);
    }

    /// Call after moving the counter to `reached`.
    pub fn reached(&self, reached: u64) {
        self.wake_where(|target| target <= reached)
    }

    /// Wakes the waiters whose target satisfies `done` (call after the
    /// change that satisfies them).
    pub fn wake_where(&self, done: impl Fn(u64) -> bool) {
        if self.count.load(SeqCst) == 0 {
            return;
        }
        let mut ready = Vec::new();
        {
            let mut list = self.list.lock();
            list.retain(|(t, w)| {
                if done(*t) {
                    ready.push(w.clone());
                    false
                } else {
                    true
                }
            });
            self.count.fetch_sub(ready.len(), SeqCst);
        }
        for w in ready {
            w.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    use super::*;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, SeqCst);
        }
    }

    #[test]
    fn wakes_what_is_reached_and_keeps_the_rest() {
        let w = Waiters::default();
        let woken = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(woken.clone());
        w.register(5, &waker);
        w.register(5, &waker); // the same waker for the same target: once
        w.register(9, &waker);
        assert_eq!(w.count.load(SeqCst), 2);
        w.reached(7);
        assert_eq!(woken.0.load(SeqCst), 1);
        assert_eq!(w.count.load(SeqCst), 1);
        w.wake_where(|t| t == 9);
        assert_eq!(woken.0.load(SeqCst), 2);
        assert_eq!(w.count.load(SeqCst), 0);
    }

    #[test]
    fn a_deregistered_waiter_leaves_nothing_behind() {
        let w = Waiters::default();
        let waker = Waker::from(Arc::new(Count(AtomicUsize::new(0))));
        w.register(3, &waker);
        w.deregister(3, &waker);
        assert_eq!(w.count.load(SeqCst), 0);
        assert!(w.list.lock().is_empty());
    }
}
