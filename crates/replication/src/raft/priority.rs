//! Work that takes seconds of CPU runs at a lower priority than the
//! node's Raft threads.

/// Records at least this large are applied (on a secondary) and completed
/// (on the primary) on threads of lower CPU priority.
pub(crate) const LOW_PRIORITY_BYTES: usize = 8 << 20;

/// Raises the calling thread's nice value (Linux: per thread), for work
/// that takes seconds of CPU and must not delay the node's Raft threads
/// where nodes share cores. Best effort.
pub(crate) fn lower_this_threads_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: both calls take and return plain integers and touch no memory
    // of this process: `syscall(SYS_gettid)` has no arguments and returns
    // the calling thread's id, and `setpriority` changes only the
    // scheduling priority of that thread. No Rust value is read, written or
    // aliased, so no invariant can be broken; a failure shows only in the
    // return values, which are ignored (best effort).
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}
