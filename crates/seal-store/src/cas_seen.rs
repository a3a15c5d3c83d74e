//! The content-addressed objects this process has stored through one opened store, by sha256
//! and size: a create of the same blob again (a frame sent again, two judges' identical
//! answers) returns without a request. Only `cas/` keys, whose name is the sha256 of their bytes
//! and every read of which checks that; nothing here is ever read back as an object's bytes,
//! and any other key taken is asked of the store, where a rewrite since is found.
//!
//! Bounded: at most [`MAX_ENTRIES`] hashes, the oldest forgotten first.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use seal_core::canonical::Hash;

/// At most this many blobs are remembered (~100 bytes each).
pub const MAX_ENTRIES: usize = 65_536;

#[derive(Default)]
struct Inner {
    sizes: HashMap<Hash, u64>,
    /// Hashes in the order they were recorded: the front is forgotten first.
    order: VecDeque<Hash>,
}

/// See the module doc.
pub(crate) struct CasSeen {
    inner: Mutex<Inner>,
    max_entries: usize,
}

impl Default for CasSeen {
    fn default() -> CasSeen {
        CasSeen::new(MAX_ENTRIES)
    }
}

impl CasSeen {
    pub(crate) fn new(max_entries: usize) -> CasSeen {
        CasSeen {
            inner: Mutex::new(Inner::default()),
            max_entries,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves at worst one hash more or less: still a set
        // of blobs that were stored.
        match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// The blob `hash` (of `size` bytes) is stored: a put just returned `Ok` for it.
    pub(crate) fn record(&self, hash: &Hash, size: u64) {
        let mut g = self.lock();
        if g.sizes.insert(hash.clone(), size).is_none() {
            g.order.push_back(hash.clone());
        }
        while g.sizes.len() > self.max_entries {
            let Some(oldest) = g.order.pop_front() else {
                break;
            };
            g.sizes.remove(&oldest);
        }
    }

    /// The size of the blob `hash`, if this process stored it.
    pub(crate) fn size(&self, hash: &Hash) -> Option<u64> {
        self.lock().sizes.get(hash).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_holds_and_the_oldest_go_first() {
        let set = CasSeen::new(8);
        let hashes: Vec<Hash> = (0..40u8).map(|i| Hash::of(&[i])).collect();
        for (i, h) in hashes.iter().enumerate() {
            set.record(h, i as u64);
            set.record(h, i as u64);
        }
        assert!(set.size(&hashes[31]).is_none());
        assert_eq!(set.size(&hashes[32]), Some(32));
        assert_eq!(set.size(&hashes[39]), Some(39));
    }
}
