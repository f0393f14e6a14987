//! `InlineKey`: an index key stored inside the hash-map entry when short.
//!
//! Most primary keys are a few integers (an encoded `bigint` is 11 bytes), so
//! keeping them inline saves the cache miss of following a pointer to compare
//! keys during a lookup, and an allocation per row.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

const INLINE: usize = 30;

#[derive(Clone)]
pub enum InlineKey {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl InlineKey {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            InlineKey::Inline { len, bytes } => &bytes[..*len as usize],
            InlineKey::Heap(b) => b,
        }
    }
}

impl From<&[u8]> for InlineKey {
    fn from(k: &[u8]) -> Self {
        if k.len() <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..k.len()].copy_from_slice(k);
            InlineKey::Inline { len: k.len() as u8, bytes }
        } else {
            InlineKey::Heap(k.into())
        }
    }
}

impl std::ops::Deref for InlineKey {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Borrow<[u8]> for InlineKey {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl PartialEq for InlineKey {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for InlineKey {}

// Must hash exactly like `[u8]`, so that lookups by `&[u8]` find entries.
impl Hash for InlineKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}

impl PartialOrd for InlineKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for InlineKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl std::fmt::Debug for InlineKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:02x?}", self.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn inline_and_heap_keys_hash_like_slices() {
        let s = foldhash::fast::RandomState::default();
        for len in [0usize, 5, 30, 31, 100] {
            let raw: Vec<u8> = (0..len as u8).collect();
            let k = InlineKey::from(&raw[..]);
            assert_eq!(&*k, &raw[..]);
            assert_eq!(s.hash_one(&k), s.hash_one(&raw[..]));
        }
    }
}
