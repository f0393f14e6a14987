//! Versions, rows and the visibility rule.
//!
//! A [`Row`] is the history of one primary-key value: a singly linked chain of
//! [`Version`]s, newest first. Each version carries `begin` and `end`
//! timestamps; a committed version is visible to a reader whose read time `t`
//! satisfies `begin <= t < end`. While a transaction is in flight, the versions
//! it creates carry its *marker* (the high bit plus its transaction id) in
//! `begin`, and a version it replaces or deletes carries its marker in `end`;
//! putting a marker into `end` with a compare-and-swap is how a writer claims a
//! row (first writer wins). At commit the markers are replaced by the commit
//! timestamp; at abort the new versions are unlinked and the claims released.
//!
//! Readers never wait: the commit sequencer (see `clock.rs`) only publishes a
//! read time once every transaction with a smaller commit timestamp has
//! finished stamping, so a reader meets a marker only for changes that lie in
//! its future, and treats them as such.
//!
//! Memory: versions are reclaimed through `crossbeam-epoch`, so a reader can
//! walk a chain while the garbage collector cuts its tail.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use std::alloc::Layout;

use crossbeam_epoch::{Atomic, Guard, Owned, Pointable, Shared};

use crate::key::InlineKey;

pub type Timestamp = u64;
pub type TxnId = u64;

/// High bit: the value is a transaction marker, not a timestamp.
pub const MARKER_BIT: u64 = 1 << 63;
/// `end` of a version nobody has replaced; `begin` of an aborted version.
pub const INFINITY: Timestamp = MARKER_BIT - 1;
/// Tag on a row's head pointer: the row was removed from its indexes by GC.
pub const REMOVED_TAG: usize = 1;

#[inline]
pub fn is_marker(v: u64) -> bool {
    v & MARKER_BIT != 0
}

#[inline]
pub fn marker(txn: TxnId) -> u64 {
    MARKER_BIT | txn
}

#[inline]
pub fn marker_txn(v: u64) -> TxnId {
    v & !MARKER_BIT
}

/// One version of a row: a fixed header followed, in the same allocation,
/// by the row bytes (one cache miss and one allocation fewer than a
/// separately boxed row).
#[repr(C)]
pub struct Version {
    pub begin: AtomicU64,
    pub end: AtomicU64,
    /// The next older version. Immutable once published, except that GC may
    /// cut it to null.
    pub next: Atomic<Version>,
    len: usize,
    pub data: [u8],
}

/// How a version is built: its begin stamp and the bytes to copy. Private
/// fields: only [`Version::new`] makes one, from a live slice.
pub struct VersionInit {
    begin: u64,
    data: *const u8,
    len: usize,
}

const HEADER: usize = 32;

fn version_layout(len: usize) -> Layout {
    Layout::from_size_align(HEADER + len, 8).expect("row too large")
}

impl Pointable for Version {
    const ALIGN: usize = 8;
    type Init = VersionInit;

    unsafe fn init(init: VersionInit) -> usize {
        unsafe {
            let layout = version_layout(init.len);
            let p = std::alloc::alloc(layout);
            if p.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            (p as *mut AtomicU64).write(AtomicU64::new(init.begin));
            (p.add(8) as *mut AtomicU64).write(AtomicU64::new(INFINITY));
            (p.add(16) as *mut Atomic<Version>).write(Atomic::null());
            (p.add(24) as *mut usize).write(init.len);
            std::ptr::copy_nonoverlapping(init.data, p.add(HEADER), init.len);
            p as usize
        }
    }

    unsafe fn deref<'a>(ptr: usize) -> &'a Self {
        unsafe {
            let len = *((ptr + 24) as *const usize);
            &*(std::ptr::slice_from_raw_parts(ptr as *const u8, len) as *const Version)
        }
    }

    unsafe fn deref_mut<'a>(ptr: usize) -> &'a mut Self {
        unsafe {
            let len = *((ptr + 24) as *const usize);
            &mut *(std::ptr::slice_from_raw_parts_mut(ptr as *mut u8, len) as *mut Version)
        }
    }

    unsafe fn drop(ptr: usize) {
        unsafe {
            let len = *((ptr + 24) as *const usize);
            std::alloc::dealloc(ptr as *mut u8, version_layout(len));
        }
    }
}

impl Version {
    pub fn new(begin: u64, data: &[u8]) -> Owned<Version> {
        Owned::init(VersionInit { begin, data: data.as_ptr(), len: data.len() })
    }

    /// The address of a version, for keeping in write and read sets.
    pub fn addr(&self) -> usize {
        self as *const Version as *const u8 as usize
    }

    /// The version at `addr`.
    ///
    /// # Safety
    /// `addr` must come from [`Version::addr`] of a version that is still allocated.
    pub unsafe fn at<'a>(addr: usize) -> &'a Version {
        unsafe { <Version as Pointable>::deref(addr) }
    }
}

/// The history of one primary-key value.
pub struct Row {
    pub key: InlineKey,
    pub head: Atomic<Version>,
    /// Serializes garbage collection of this row's chain.
    pub gc_busy: AtomicBool,
}

impl Row {
    pub fn new(key: InlineKey) -> Row {
        Row { key, head: Atomic::null(), gc_busy: AtomicBool::new(false) }
    }

    pub fn is_removed(&self, guard: &Guard) -> bool {
        self.head.load(Ordering::Acquire, guard).tag() == REMOVED_TAG
    }

    /// The version of this row visible to a reader at `read_ts` that is
    /// transaction `me` (pass `me = 0` for a reader without writes).
    #[inline]
    pub fn visible<'g>(&self, read_ts: Timestamp, me: u64, guard: &'g Guard) -> Option<&'g Version> {
        let mut cur = self.head.load(Ordering::Acquire, guard);
        if cur.tag() == REMOVED_TAG {
            return None;
        }
        while let Some(v) = unsafe { cur.as_ref() } {
            match v.visibility(read_ts, me) {
                Seen::Visible => return Some(v),
                Seen::Older => cur = v.next.load(Ordering::Acquire, guard),
                Seen::Gone => return None,
            }
        }
        None
    }
}

/// What a reader concludes from one version.
#[derive(Debug, PartialEq, Eq)]
pub enum Seen {
    Visible,
    /// Not this one; an older version may be visible.
    Older,
    /// This version was visible at some point before the reader and has since
    /// been ended in the reader's past (or by the reader): no older version can be visible.
    Gone,
}

impl Version {
    #[inline]
    pub fn visibility(&self, read_ts: Timestamp, me: u64) -> Seen {
        let begin = self.begin.load(Ordering::Acquire);
        if is_marker(begin) {
            if begin != me {
                return Seen::Older;
            }
            // Our own write: visible unless we replaced or deleted it since.
            return if self.end.load(Ordering::Acquire) == me { Seen::Gone } else { Seen::Visible };
        }
        if begin > read_ts {
            return Seen::Older;
        }
        let end = self.end.load(Ordering::Acquire);
        if is_marker(end) {
            return if end == me { Seen::Gone } else { Seen::Visible };
        }
        if read_ts < end { Seen::Visible } else { Seen::Gone }
    }
}

impl Drop for Row {
    fn drop(&mut self) {
        // No reader can reach this row any more (its last Arc is gone and
        // every index entry pointing at it was removed under an epoch), so the
        // chain can be freed at once.
        unsafe {
            let guard = crossbeam_epoch::unprotected();
            let mut cur = self.head.load(Ordering::Relaxed, guard).with_tag(0);
            while !cur.is_null() {
                let next = cur.deref().next.load(Ordering::Relaxed, guard);
                drop(cur.into_owned());
                cur = next;
            }
        }
    }
}

/// Frees a detached chain starting at `first` once no reader can hold it.
///
/// # Safety
/// `first` and everything reachable from it must be unreachable from any
/// row head or live version.
pub unsafe fn defer_free_chain(first: Shared<'_, Version>, guard: &Guard) -> usize {
    let mut n = 0;
    let mut cur = first;
    while !cur.is_null() {
        let next = unsafe { cur.deref() }.next.load(Ordering::Acquire, guard);
        unsafe { guard.defer_destroy(cur) };
        n += 1;
        cur = next;
    }
    n
}
