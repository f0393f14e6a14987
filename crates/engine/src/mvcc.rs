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
//! walk a chain while the garbage collector cuts its tail. Every walk goes
//! through `chain.rs`, which holds the argument for why that is sound.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use std::alloc::Layout;

use crossbeam_epoch::{Atomic, Guard, Owned, Pointable};

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
        // SAFETY: the allocation is checked for null and has room for the
        // header and `len` bytes, 8-aligned, so each header field is written
        // in bounds and aligned (offsets 0, 8, 16 and 24 of `HEADER`, the
        // layout `#[repr(C)]` gives `Version`). `VersionInit` is only made
        // by `Version::new` from a live slice of `len` bytes, which cannot
        // overlap a fresh allocation.
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
        // SAFETY: the caller (crossbeam-epoch's `Shared`/`Owned`, or
        // `Version::at`) passes the address `init` returned, of a version
        // not yet freed; its `len` field (offset 24) was written by `init`
        // and never changes, so the fat pointer covers exactly the header
        // and the row bytes of that allocation.
        unsafe {
            let len = *((ptr + 24) as *const usize);
            &*(std::ptr::slice_from_raw_parts(ptr as *const u8, len) as *const Version)
        }
    }

    unsafe fn deref_mut<'a>(ptr: usize) -> &'a mut Self {
        // SAFETY: as for `deref`; crossbeam-epoch calls this only for an
        // `Owned` version, which has no other reference.
        unsafe {
            let len = *((ptr + 24) as *const usize);
            &mut *(std::ptr::slice_from_raw_parts_mut(ptr as *mut u8, len) as *mut Version)
        }
    }

    unsafe fn drop(ptr: usize) {
        // SAFETY: `ptr` is the address `init` returned, freed once (the
        // caller's contract); `len` is read before the memory goes, and
        // `version_layout(len)` is the layout it was allocated with. The
        // header holds no value with a destructor (atomics and an
        // `Atomic` pointer, which owns nothing).
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
        // SAFETY: the caller guarantees that `addr` is a live version's
        // address, which is what `Pointable::deref` requires.
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
        self.load_head(guard).is_removed()
    }

    /// The version of this row visible to a reader at `read_ts` that is
    /// transaction `me` (pass `me = 0` for a reader without writes).
    #[inline]
    pub fn visible<'g>(&'g self, read_ts: Timestamp, me: u64, guard: &'g Guard) -> Option<&'g Version> {
        for v in self.versions(guard) {
            match v.visibility(read_ts, me) {
                Seen::Visible => return Some(v),
                Seen::Older => {}
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
        // SAFETY: `drop` has the row to itself (`&mut self`), and whatever
        // follows a version pointer holds the row: a walk borrows it
        // (`chain.rs`), and the addresses in a transaction's read and write
        // sets sit beside an `Arc` of their row. So no one is reading the
        // chain, and `unprotected` is enough. The chain reachable from the
        // head (its tag cleared) is the row's own: versions cut off it were
        // handed to the epoch collector by whoever cut them and are no
        // longer reachable from here, so each version is freed once.
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
