//! The write set of one opened store: what *this process* stored moments ago, which the
//! reads of [`crate::reads`] may take instead of the store.
//!
//! Every create-only put that returned `Ok` (this call created the object, or found and
//! re-hashed identical bytes there) records the key's sha256 and size, and for a small object
//! its bytes, in a [`WriteSet`] shared by every clone of the opened [`crate::Store`]. The set
//! is bounded: at most [`MAX_ENTRIES`] keys and [`BYTE_BUDGET`] bytes held; the oldest entries
//! go first (objects are write-once, so the oldest are the least likely to be read again: a
//! run's postguard reads its objects seconds after its roll wrote them).
//!
//! Besides a create of a CAS key this process stored with the same bytes, which returns without
//! a request ([`crate::Store::put`]: the key is the bytes' sha256 and every read of it checks
//! that), only [`crate::OwnWrites`] reads the set, and only the finalPostguard and the daemon's own
//! request path (its run-state loads, the roll guard, the proof-package intake) make one
//! ([`crate::Store::trusting_own_writes`]): they read a run this process has just written, and
//! hashing bytes it hashed itself a moment ago proves nothing new. An absent key is always
//! asked of the store. What it trusts is exactly
//! this: the bytes a put of this process handed to the store, and their sha256 computed then.
//! Anything the set does not hold (written by another replica, evicted, never written) is read
//! from the store and re-hashed as before, and a recorded hash that differs from the expected
//! one is reported as the same [`crate::StoreError::HashMismatch`] a read would give. `seal
//! verify`, replay's source check and imports read through [`crate::Store`] itself, whose reads
//! never look at the set: they re-read and re-hash every byte, so a third party's write after
//! ours is still caught there.

use bytes::Bytes;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use crate::Key;
use seal_core::canonical::Hash;

/// At most this many bytes of object contents are held (the hashes of larger sets stay).
pub const BYTE_BUDGET: usize = 32 * 1024 * 1024;
/// At most this many keys are recorded (~300 bytes each, so ~20 MiB at most).
pub const MAX_ENTRIES: usize = 65_536;
/// Objects up to this size keep their bytes; larger ones (big frames) only their hash.
pub const MAX_HELD_OBJECT: usize = 1024 * 1024;

#[derive(Clone)]
struct Entry {
    hash: Hash,
    size: u64,
    bytes: Option<Bytes>,
}

struct Inner {
    map: HashMap<Key, Entry>,
    /// Keys in the order they were recorded: the front is evicted first.
    order: VecDeque<Key>,
    held: usize,
}

/// What this process stored through one opened store (see the module doc).
pub(crate) struct WriteSet {
    inner: Mutex<Inner>,
    byte_budget: usize,
    max_entries: usize,
}

/// A recorded object: its sha256, its size, and its bytes when they were small enough to keep.
#[derive(Clone)]
pub(crate) struct Recorded {
    pub hash: Hash,
    pub size: u64,
    pub bytes: Option<Bytes>,
}

impl Default for WriteSet {
    fn default() -> WriteSet {
        WriteSet::new(BYTE_BUDGET, MAX_ENTRIES)
    }
}

impl WriteSet {
    pub(crate) fn new(byte_budget: usize, max_entries: usize) -> WriteSet {
        WriteSet {
            inner: Mutex::new(Inner {
                map: HashMap::new(),
                order: VecDeque::new(),
                held: 0,
            }),
            byte_budget,
            max_entries,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves at worst a stale entry of an object that was
        // stored; the set is still consistent enough to use.
        match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Records that `key` holds `bytes`, whose sha256 is `hash` (a put just returned `Ok`).
    pub(crate) fn record(&self, key: &Key, hash: &Hash, bytes: &Bytes) {
        let keep = bytes.len() <= MAX_HELD_OBJECT.min(self.byte_budget);
        self.insert(
            key,
            Entry {
                hash: hash.clone(),
                size: bytes.len() as u64,
                // A copy, so that what is held is exactly what is counted (a body's `Bytes`
                // may be a slice of a larger buffer it would keep alive).
                bytes: keep.then(|| Bytes::copy_from_slice(bytes)),
            },
        );
    }

    /// Records a hash and size only (a large blob linked into place).
    pub(crate) fn record_hash(&self, key: &Key, hash: &Hash, size: u64) {
        self.insert(
            key,
            Entry {
                hash: hash.clone(),
                size,
                bytes: None,
            },
        );
    }

    /// The one way an entry gets in: a key seen again with the same hash is kept as it is;
    /// with another hash both are forgotten; then the oldest entries go until both bounds hold.
    fn insert(&self, key: &Key, entry: Entry) {
        let mut g = self.lock();
        if let Some(old) = g.map.get(key) {
            if old.hash == entry.hash {
                return;
            }
            // Objects are write-once, so two different hashes for one key mean the store
            // changed under us: remember neither, and let reads go to the store.
            if let Some(old) = g.map.remove(key) {
                g.held -= old.bytes.map_or(0, |b| b.len());
            }
            return;
        }
        g.held += entry.bytes.as_ref().map_or(0, Bytes::len);
        g.map.insert(key.clone(), entry);
        g.order.push_back(key.clone());
        // The queue may also hold keys already forgotten (two hashes for one key): it is
        // bounded like the map, so that it cannot grow past it either.
        while g.held > self.byte_budget
            || g.map.len() > self.max_entries
            || g.order.len() > self.max_entries
        {
            let Some(oldest) = g.order.pop_front() else {
                break;
            };
            if let Some(old) = g.map.remove(&oldest) {
                g.held -= old.bytes.map_or(0, |b| b.len());
            }
        }
    }

    pub(crate) fn get(&self, key: &Key) -> Option<Recorded> {
        self.lock().map.get(key).map(|e| Recorded {
            hash: e.hash.clone(),
            size: e.size,
            bytes: e.bytes.clone(),
        })
    }

    #[cfg(test)]
    fn queued(&self) -> usize {
        self.lock().order.len()
    }

    /// Keys recorded and bytes held now (tests of the bound).
    pub(crate) fn usage(&self) -> (usize, usize) {
        let g = self.lock();
        (g.map.len(), g.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: usize) -> Key {
        Key::parse(&format!("runs/r/obj-{i}.json")).unwrap()
    }

    fn put(set: &WriteSet, i: usize, len: usize) -> Hash {
        let bytes = Bytes::from(vec![i as u8; len]);
        let hash = Hash::of(&bytes);
        set.record(&key(i), &hash, &bytes);
        hash
    }

    #[test]
    fn the_byte_budget_holds_and_the_oldest_go_first() {
        let set = WriteSet::new(1000, 1_000);
        for i in 0..50 {
            put(&set, i, 100);
            let (_, held) = set.usage();
            assert!(held <= 1000, "held {held} bytes after {i} puts");
        }
        assert_eq!(set.usage(), (10, 1000));
        assert!(set.get(&key(39)).is_none(), "an old entry survived");
        assert!(set.get(&key(40)).is_some() && set.get(&key(49)).is_some());
    }

    #[test]
    fn the_entry_bound_holds_for_hash_only_entries_too() {
        let set = WriteSet::new(1000, 8);
        for i in 0..40 {
            let h = Hash::of(&[i as u8]);
            set.record_hash(&key(i), &h, 5_000_000);
            assert!(set.usage().0 <= 8);
        }
        assert!(set.get(&key(31)).is_none() && set.get(&key(32)).is_some());
    }

    #[test]
    fn large_objects_keep_only_their_hash() {
        let set = WriteSet::new(BYTE_BUDGET, 16);
        let h = put(&set, 1, MAX_HELD_OBJECT + 1);
        let r = set.get(&key(1)).unwrap();
        assert_eq!(
            (r.hash, r.size, r.bytes),
            (h, MAX_HELD_OBJECT as u64 + 1, None)
        );
        assert_eq!(set.usage(), (1, 0));
    }

    #[test]
    fn two_hashes_for_one_key_forget_the_key() {
        let set = WriteSet::new(1000, 16);
        put(&set, 1, 10);
        let other = Bytes::from_static(b"other bytes");
        set.record(&key(1), &Hash::of(&other), &other);
        assert!(set.get(&key(1)).is_none());
        assert_eq!(set.usage(), (0, 0));
        // Forgotten keys do not pile up in the eviction queue either.
        for i in 0..100 {
            let (a, b) = (Bytes::from(vec![1u8; i + 1]), Bytes::from(vec![2u8; i + 1]));
            set.record(&key(1000 + i), &Hash::of(&a), &a);
            set.record(&key(1000 + i), &Hash::of(&b), &b);
            assert!(set.queued() <= 16, "queue of {} keys", set.queued());
        }
    }
}
