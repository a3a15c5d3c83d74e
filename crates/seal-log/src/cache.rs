//! What this process knows of the log ([`Cache`]): the tree's hashes, each seal leaf's index
//! and digests, the leaves adopted only once they authenticate (docs/DESIGN.md §11).

use std::collections::{BTreeMap, HashMap};

use crate::error::{corrupt, LogError};
use crate::finding::{planted_entry, Finding};
use crate::leaf::SealLeaf;
use crate::view::LogView;
use seal_core::ids::RunId;
use seal_core::tlog::{self, Leaf, LogEntry, LogTrust, NodeHash, ReadLeaf, Tree};
use seal_store::Key;

/// What this process knows of the log: entries are create-only, so a cached leaf never goes
/// stale.
///
/// No leaf's bytes are kept, only the tree's hashes and, per seal leaf, its index and the two
/// digests appends and retries compare; a rival seal's entry is read back from the store and
/// checked against its leaf hash ([`Log::entry_at`]) (docs/DECISIONS.md, "The log in memory is
/// hashes, not entries").
#[derive(Default)]
pub(super) struct Cache {
    pub(super) tree: Tree,
    pub(super) by_run: HashMap<String, Vec<SealLeaf>>,
    /// The leaves that are not a seal's (reviews, rebuilds), by leaf hash: appending the same
    /// bytes again finds them.
    pub(super) others: HashMap<NodeHash, u64>,
    /// The judge policies registered, by policy sha256: the first leaf of each.
    pub(super) policies: HashMap<String, u64>,
    /// The policies whose leaves below `base` are indexed ([`Log::load_policy`]).
    pub(super) policies_loaded: std::collections::HashSet<String>,
    /// The review leaves seen: (run, review index, review sha256).
    pub(super) reviews: std::collections::HashSet<(String, u64, String)>,
    /// The guard let this process append (once per process: see [`Log::admit`]).
    pub(super) admitted: bool,
    /// The largest checkpoint this process stored (or found stored) for this tree.
    pub(super) published: u64,
    /// The tree's tiles are stored through this size ([`tiles`]): the next checkpoint stores
    /// the ones after it.
    pub(super) tiled: u64,
    /// The pointers ([`store_pointers`]) of the leaves this process knows but has not pointed yet:
    /// the next checkpoint stores them first, as it does the tiles, so that every leaf a
    /// stored checkpoint covers has its pointer (docs/DESIGN.md §13, "Run pointers").
    pub(super) unpointed: BTreeMap<u64, Key>,
    /// The leaves below this index are known by their hash only (the tree this process
    /// started from, read from the tiles: [`history`]); a run's are indexed the first time it
    /// is asked about ([`Log::load_run`]). 0 when every leaf was read.
    pub(super) base: u64,
    /// The runs whose leaves below `base` are indexed.
    pub(super) loaded: std::collections::HashSet<String>,
    /// What the seal scan found (G2, [`Log::scan`]): once set, this process appends nothing.
    pub(super) refused: Option<Vec<Finding>>,
    /// This log's origin and keys: a leaf read past what the process knows is adopted only
    /// when it authenticates under them ([`Cache::push`]).
    pub(super) trust: LogTrust,
}

impl Cache {
    /// Adopts the entry read at the next index, when it authenticates as this log's
    /// ([`LogTrust::authenticate`]). One that does not was planted (or is another log's): the
    /// process refuses it, named, adopts nothing after it and signs nothing over it, from now
    /// on (the refusal sticks, as the seal scan's does), and leaves it for `seal log verify`
    /// and `seal log rebuild`.
    pub(super) fn push(&mut self, bytes: &[u8], key: &Key) -> Result<(), LogError> {
        let at = tlog::Place::next_of(&self.tree)?;
        match self.trust.authenticate(&at, bytes) {
            Ok(read) => self.adopt(bytes, read),
            Err(e) => {
                let problems = vec![planted_entry(key, &e)];
                self.refused = Some(problems.clone());
                Err(LogError::Refused { problems })
            }
        }
    }

    /// Adopts the entry at the next index that the caller has authenticated already (it
    /// signed it, or a view authenticated it: the kept prefix of a rebuild).
    pub(super) fn push_trusted(&mut self, bytes: &[u8], key: &Key) -> Result<(), LogError> {
        let read = ReadLeaf::parse(bytes).map_err(|e| corrupt(key, e))?;
        self.adopt(bytes, read)
    }

    pub(super) fn adopt(&mut self, bytes: &[u8], read: ReadLeaf) -> Result<(), LogError> {
        let index = self.tree.size();
        self.tree.push_leaf_hash(tlog::leaf_hash(bytes))?;
        self.index(index, read.leaf, read.content);
        Ok(())
    }

    /// The cache of a log the guard has just read whole and let through: its tree as the view
    /// hashed it and its leaves as the view indexed them (every entry is in both, or the guard
    /// would have refused), so nothing is read or parsed twice.
    pub(super) fn admitted(view: LogView, trust: &LogTrust) -> Result<Cache, LogError> {
        let leaf_hash = |tree: &Tree, index: u64| {
            tree.leaf(index).ok_or_else(|| {
                corrupt(
                    &Key::log_entry(index),
                    "an entry outside the tree the guard read",
                )
            })
        };
        let mut cache = Cache {
            admitted: true,
            by_run: view.by_run.into_iter().collect(),
            trust: trust.clone(),
            ..Cache::default()
        };
        // The seal leaves come indexed already; the others through the one rule for them.
        let others = (view.reviews.into_iter().map(|(i, r)| (i, Leaf::Review(r))))
            .chain(
                view.rebuilds
                    .into_iter()
                    .map(|(i, r)| (i, Leaf::Rebuild(r))),
            )
            .chain(view.policies.into_iter().map(|(i, p)| (i, Leaf::Policy(p))))
            .chain(view.reports.into_iter().map(|(i, r)| (i, Leaf::Report(r))));
        for (index, leaf) in others {
            leaf_hash(&view.tree, index)?;
            let content = content_of(&leaf).map_err(|e| corrupt(&Key::log_entry(index), e))?;
            cache.index(index, leaf, content);
        }
        for (run, leaves) in &cache.by_run {
            for leaf in leaves {
                cache.unpointed.extend(pointer(run, leaf.index));
            }
        }
        cache.tree = view.tree;
        Ok(cache)
    }

    /// The seal scan's refusal, once it refused: every append of the process answers it.
    pub(super) fn refusal(&self) -> Result<(), LogError> {
        match &self.refused {
            Some(problems) => Err(LogError::Refused {
                problems: problems.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Records that the tiles of the tree of `size` leaves are stored.
    pub(super) fn tiled_through(&mut self, size: u64) {
        // A rebuild may have replaced the tree meanwhile: then its own tiles are due again.
        if self.tree.size() >= size {
            self.tiled = self.tiled.max(size);
        }
    }

    /// Records what leaf `index` (content hash `hash`: [`ReadLeaf::content`]) is, for the
    /// lookups below, and that its pointer is due.
    pub(super) fn index(&mut self, index: u64, leaf: Leaf, hash: NodeHash) {
        match &leaf {
            Leaf::Seal(entry) => self.unpointed.extend(pointer(&entry.run_id, index)),
            Leaf::Review(r) => self.unpointed.extend(pointer(&r.run_id, index)),
            Leaf::Policy(p) => {
                if let Some(h) = p.sha256() {
                    self.unpointed
                        .insert(index, Key::log_policy_leaf(&h, index));
                }
            }
            Leaf::Rebuild(_) | Leaf::Report(_) => {}
        }
        self.know(index, leaf, hash);
    }

    /// Records what leaf `index` (content hash `hash`) is, for the lookups below.
    pub(super) fn know(&mut self, index: u64, leaf: Leaf, hash: NodeHash) {
        match leaf {
            Leaf::Seal(entry) => {
                let sealed = SealLeaf::of(index, &entry, hash);
                self.by_run.entry(entry.run_id).or_default().push(sealed);
            }
            Leaf::Review(r) => {
                self.reviews
                    .insert((r.run_id, r.review_index, r.review_sha256));
                self.others.insert(hash, index);
            }
            Leaf::Policy(p) => {
                let first = self.policies.entry(p.policy_sha256).or_insert(index);
                *first = (*first).min(index);
                self.others.insert(hash, index);
            }
            Leaf::Rebuild(_) | Leaf::Report(_) => {
                self.others.insert(hash, index);
            }
        }
    }

    /// The seal leaves logged for a run, in log order.
    pub(super) fn logged(&self, run: &str) -> &[SealLeaf] {
        self.by_run.get(run).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The index of a leaf of `run` whose content hash is `hash`: that very entry, logged
    /// already (signed for whatever index it is at).
    pub(super) fn find(&self, run: &str, hash: &NodeHash) -> Option<u64> {
        self.logged(run)
            .iter()
            .find(|l| l.content == *hash)
            .map(|l| l.index)
    }

    /// Another seal of the same evidence, already logged (a leaf of the run over the same
    /// evidence that is not this entry): a racing finalizer holding another key logged
    /// first, and it stores that seal.
    pub(super) fn rival(&self, entry: &LogEntry, hash: &NodeHash) -> Option<u64> {
        let evidence = SealLeaf::of(0, entry, *hash).evidence?;
        self.logged(&entry.run_id)
            .iter()
            .find(|l| l.evidence == Some(evidence) && l.content != *hash)
            .map(|l| l.index)
    }
}

/// The content hash of a leaf ([`ReadLeaf::content`]): the hash of its canonical bytes
/// without `auth`.
pub(super) fn content_of(leaf: &Leaf) -> Result<NodeHash, seal_core::canonical::CanonicalError> {
    let bytes = match leaf {
        Leaf::Seal(e) => e.to_bytes()?,
        Leaf::Review(r) => r.to_bytes()?,
        Leaf::Rebuild(r) => r.to_bytes()?,
        Leaf::Policy(p) => p.to_bytes()?,
        Leaf::Report(r) => r.to_bytes()?,
    };
    Ok(tlog::leaf_hash(&bytes))
}

/// The pointer of leaf `index` about `run`: `None` for a run id seal never writes (such an
/// entry is a `log_entries` problem of `seal log verify`, and no reader looks for it).
pub(super) fn pointer(run: &str, index: u64) -> Option<(u64, Key)> {
    let run = RunId::parse(run).ok()?;
    Some((index, Key::log_run_leaf(&run, index)))
}

impl Cache {
    /// The pointers a checkpoint of `size` leaves must be stored after.
    pub(super) fn pointers_due(&self, size: u64) -> Vec<(u64, Key)> {
        let due = self.unpointed.range(..size);
        due.map(|(i, k)| (*i, k.clone())).collect()
    }

    /// Records that the pointers `stored` are (each only if it is still the one due at its
    /// index: a rebuild may have replaced the tree meanwhile).
    pub(super) fn pointed(&mut self, stored: &[(u64, Key)]) {
        for (index, k) in stored {
            if self.unpointed.get(index) == Some(k) {
                self.unpointed.remove(index);
            }
        }
    }
}
