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
    // SAFETY: plain system calls on the calling thread; no memory is shared.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}
