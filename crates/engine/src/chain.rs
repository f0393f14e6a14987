//! Walking a row's chain of versions: the one place where the chain's
//! pointers become references.
//!
//! Every reader, writer, validator and collector that looks at a row's
//! history goes through [`Row::versions`] (or [`Row::load_head`] when it also
//! needs the head pointer itself, to compare-and-swap it), and the garbage
//! collector frees what it cuts off through [`Detached`]. So the argument
//! for why those pointers may be followed is made once, here.
//!
//! # Why a walk never meets freed memory
//!
//! A version leaves memory in exactly three ways:
//!
//! 1. The garbage collector (`gc.rs`) cuts versions off a chain (a swap of
//!    some version's `next` to null, or the compare-and-swap that tags a dead
//!    row's head removed) and defers their destruction to the epoch
//!    collector ([`Detached::defer_free`]).
//! 2. An aborting writer (`Transaction::undo_from`) unlinks its own newest,
//!    uncommitted version by putting back the head it replaced, and defers
//!    its destruction the same way.
//! 3. [`Row`]'s `Drop` frees the whole chain at once, without deferring:
//!    it runs when the last `Arc<Row>` goes.
//!
//! (A version never published, like the one a failed insert built, is
//! freed by its builder and was never reachable.)
//!
//! The chain only changes in these ways: a writer links a new version on
//! top (its `next` set before it is published), an aborting writer puts the
//! previous head back, GC sets some `next` to null or tags the head removed.
//! From that follow two facts:
//!
//! * **Nothing comes back.** A version unreachable from its row's head never
//!   becomes reachable again: the head an abort puts back was still linked
//!   below the aborted version (GC keeps the version under an uncommitted
//!   one, see `Gc::collect_row`), and a removed row is never written again
//!   (writers start a fresh row).
//! * **`next` only falls to null.** Once a version is published its `next`
//!   changes only to null, so if a reader finds `v.next == w`, then `w` was
//!   linked below `v` all along.
//!
//! Now take a walk under a guard pinned at time `p`. The head it loads was
//! reachable when loaded; each `next` it loads from a version `v` reachable
//! at some instant after `p` names a version that was reachable at that
//! same instant (second fact). So every version the walk reaches was
//! reachable at an instant after `p`, hence (first fact) not yet handed to
//! the epoch collector before `p`. Deferred destruction waits for every
//! guard pinned before the deferral, ours included: ways 1 and 2 cannot
//! free the version while the guard lives. Way 3 cannot either, because
//! the walk borrows the row for as long as the references it yields live
//! (the lifetime `'g` below is both the guard's and the row's borrow), and
//! a borrowed `Arc<Row>` is not the last one.
//!
//! The pointers are loaded with `Acquire`, pairing with the `Release` (or
//! `AcqRel`) store or compare-and-swap that published each version, so its
//! header and bytes, written before publication, are seen complete. The
//! references are shared ones: every field of a version that changes after
//! publication is atomic, and its bytes never change.
//!
//! Cost: the iterator is a few words on the stack, inlined into each
//! caller, with no allocation; it loads a version's `next` only when asked
//! for the version after it, so a reader that stops at the newest version
//! touches no more memory than a hand-written loop would.

use std::sync::atomic::Ordering::Acquire;

use crossbeam_epoch::{Guard, Shared};

use crate::mvcc::{REMOVED_TAG, Row, Version};

/// A row's head pointer, loaded once under an epoch guard. It borrows the
/// row, so the versions reached from it outlive neither the guard nor the
/// row (see the module comment).
#[derive(Clone, Copy)]
pub(crate) struct Head<'g> {
    ptr: Shared<'g, Version>,
    guard: &'g Guard,
}

impl<'g> Head<'g> {
    /// The pointer itself, for a compare-and-swap on the row's head or for
    /// remembering it in a write set. Following it is this module's job.
    #[inline]
    pub(crate) fn ptr(self) -> Shared<'g, Version> {
        self.ptr
    }

    /// Whether GC has removed the row from its indexes (then the row has no
    /// versions: the tag only ever sits on a null head).
    #[inline]
    pub(crate) fn is_removed(self) -> bool {
        self.ptr.tag() == REMOVED_TAG
    }

    /// The newest version, if the row has any.
    #[inline]
    pub(crate) fn newest(self) -> Option<&'g Version> {
        self.versions().next()
    }

    /// The row's versions, newest first, as linked when the head was loaded
    /// (and below it as the walk finds them).
    #[inline]
    pub(crate) fn versions(self) -> Versions<'g> {
        Versions { first: self.ptr, last: None, guard: self.guard }
    }
}

impl Row {
    /// Loads the row's head pointer (`Acquire`).
    #[inline]
    pub(crate) fn load_head<'g>(&'g self, guard: &'g Guard) -> Head<'g> {
        let ptr = self.head.load(Acquire, guard);
        debug_assert!(ptr.tag() != REMOVED_TAG || ptr.is_null(), "a removed row's head is null");
        Head { ptr, guard }
    }

    /// The row's versions, newest first.
    #[inline]
    pub(crate) fn versions<'g>(&'g self, guard: &'g Guard) -> Versions<'g> {
        self.load_head(guard).versions()
    }
}

/// An iterator over a chain of versions, newest first. Made by
/// [`Head::versions`] (a row's chain) or [`Detached::versions`] (a chain GC
/// cut off).
#[derive(Clone)]
pub(crate) struct Versions<'g> {
    /// The pointer to the first version, until it has been returned.
    first: Shared<'g, Version>,
    /// The version returned last; its `next` is loaded by the following
    /// call, not before (see "Cost" above).
    last: Option<&'g Version>,
    guard: &'g Guard,
}

impl<'g> Iterator for Versions<'g> {
    type Item = &'g Version;

    #[inline]
    fn next(&mut self) -> Option<&'g Version> {
        let ptr = match self.last {
            Some(v) => v.next.load(Acquire, self.guard),
            None => self.first,
        };
        // SAFETY: `ptr` is null, or it was loaded under `self.guard` from a
        // row's head, from the swap that cut a detached chain off its row,
        // or from the `next` of a version this walk reached. By the module
        // comment's argument it names a version that was reachable from its
        // row at an instant after the guard was pinned, which the epoch
        // collector therefore frees only after the guard is dropped; and
        // the row cannot free it on drop during `'g` (the walk borrows the
        // row, and a detached chain is no longer the row's). So it is
        // allocated for all of `'g`, and the `Acquire` loads make its
        // initialised contents visible.
        let v = unsafe { ptr.as_ref() }?;
        self.last = Some(v);
        Some(v)
    }
}

/// Versions the garbage collector has cut off a row's chain: reachable
/// from no row any more, and freed by whoever holds this value.
#[must_use = "detached versions leak unless freed"]
pub(crate) struct Detached<'g> {
    first: Shared<'g, Version>,
    guard: &'g Guard,
}

impl<'g> Detached<'g> {
    /// The chain starting at `first`, which the caller has just cut off.
    ///
    /// # Safety
    /// `first` must be null or the value a successful swap or
    /// compare-and-swap of a row's head, or of the `next` of a version
    /// reachable from it, has just returned, under `guard`, and no one
    /// else may free any version of the chain: none of them may be a
    /// running transaction's uncommitted version (its abort frees that
    /// one), and no other collector may cut the same row meanwhile.
    #[inline]
    pub(crate) unsafe fn cut(first: Shared<'g, Version>, guard: &'g Guard) -> Detached<'g> {
        Detached { first, guard }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.first.is_null()
    }

    /// The detached versions, newest first.
    pub(crate) fn versions(&self) -> Versions<'g> {
        Versions { first: self.first, last: None, guard: self.guard }
    }

    /// Hands every detached version to the epoch collector, which frees it
    /// once no reader pinned before now can be walking it. Returns how many.
    pub(crate) fn defer_free(self) -> usize {
        let mut n = 0;
        let mut cur = self.first;
        while !cur.is_null() {
            // SAFETY: `cur` is a version of this chain, still allocated: it
            // was loaded under our guard and each version is deferred only
            // after its `next` was read. `cut`'s contract makes the chain
            // ours alone to free and unreachable from every row, so walks
            // that start later cannot reach it, and the epoch collector
            // frees it only after the walks already under way (whose guards
            // were pinned before this deferral) have dropped their guards.
            unsafe {
                let next = cur.deref().next.load(Acquire, self.guard);
                self.guard.defer_destroy(cur);
                cur = next;
            }
            n += 1;
        }
        n
    }
}
