//! TODO layer essay

pub mod catalog;
pub mod cluster_view;
pub mod field_tests;
pub mod jobs;
pub mod keyed;
pub mod partition;
pub mod provider;
pub mod remote;
pub mod row_waits;
pub mod split;
pub mod temp_names;
pub mod txn;

/// Runs `f`, which may block (on a concurrent writer, or on the log's
/// fsync), without stalling the other connections served by this runtime
/// thread: the runtime hands its other work to another thread meanwhile.
pub fn blocking<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}
