//! A few runs' leaves without the whole log: what `seal verify <run>`, `seal explain`,
//! `seal export verdict`, `seal log prove` and their routes read, in O(log n) objects a run
//! instead of every entry (docs/DESIGN.md §13).
//!
//! For each run: its pointers (`log/runs/<run>/<index>`), the entry at each index, and that
//! leaf's hash and inclusion proof from the stored tiles, authenticated against the latest
//! checkpoint a trusted key signed. A pointer only says where to look: the entry must hash to
//! the leaf the signed tree holds, and be about the run, or it is not the run's.
//!
//! Decision: when any of it is missing (a run logged before pointers, a log from before
//! tiles, a pointer to an entry that is gone, tiles that do not hash to the signed root) the
//! answer is "read the whole log" ([`LogView::load`]), never "not logged": the short way
//! only ever finds a run's leaves, so the verdict it gives a run is the one of the whole log,
//! with one difference, written in docs/DESIGN.md §13: it proves the run's own leaves, so a
//! log whose *other* entries were deleted or rewritten is not seen from one run (`seal log
//! verify` and `seal verify --all` read everything and refuse it).

use std::collections::BTreeMap;

use super::tiles::{self, TileCache};
use super::view::{read_checkpoints, LogView};
use super::SealLeaf;
use seal_core::ids::RunId;
use seal_core::tlog::{self, Leaf};
use seal_store::{Key, Store, StoreError};

impl LogView {
    /// The log as `seal verify` checks `runs` against it, read by their pointers and the
    /// tiles (see the module doc); `None` when that cannot be done, and the caller reads the
    /// whole log.
    pub async fn for_runs(
        store: &Store,
        trusted: &[[u8; 32]],
        runs: &[RunId],
    ) -> Result<Option<LogView>, StoreError> {
        let latest = read_checkpoints(store, trusted, false)
            .await?
            .into_iter()
            .find_map(|(_, _, c)| c.ok());
        let Some(latest) = latest else {
            return Ok(None);
        };
        let mut view = LogView::default();
        let mut read = BTreeMap::new();
        let mut tiles = TileCache::new();
        for run in runs {
            let folder = Key::log_run_dir(run);
            for k in store.list(&folder).await?.keys {
                // A stray name there is no pointer; the whole log's readers never look here.
                let Some(index) = k.log_number(&folder) else {
                    continue;
                };
                let Some(bytes) = store.get_opt(&Key::log_entry(index)).await? else {
                    return Ok(None);
                };
                let hash = tlog::leaf_hash(&bytes);
                // A leaf the checkpoint covers is believed only as the signed tree holds it;
                // one past it, as the whole log's readers read it (no checkpoint names it).
                let path = if index < latest.size {
                    match tiles::prove_leaf(store, latest.size, &latest.root, index, &mut tiles)
                        .await?
                    {
                        Some((proven, path)) if proven == hash => Some(path),
                        _ => return Ok(None),
                    }
                } else {
                    None
                };
                match Leaf::from_bytes(&bytes) {
                    Ok(Leaf::Seal(e)) if e.run_id == run.as_str() => {
                        let leaf = SealLeaf::of(index, &e);
                        view.by_run.entry(e.run_id).or_default().push(leaf);
                    }
                    Ok(Leaf::Review(r)) if r.run_id == run.as_str() => {
                        view.reviews.push((index, r));
                    }
                    // Another run's leaf there (the index was rebuilt since): not this run's.
                    Ok(_) => continue,
                    Err(_) => return Ok(None),
                }
                read.insert(index, (hash, path));
            }
            // A run is found by its seal's leaf: one whose only pointers are its reviews'
            // was sealed before pointers, and the whole log holds its seal's leaf.
            if !view.by_run.contains_key(run.as_str()) {
                return Ok(None);
            }
        }
        for leaves in view.by_run.values_mut() {
            leaves.sort_by_key(|l| l.index);
        }
        view.reviews.sort_by_key(|(i, _)| *i);
        view.latest = Some(latest);
        view.partial = Some(read);
        Ok(Some(view))
    }

    /// [`LogView::for_runs`], else the whole log.
    pub async fn load_for(
        store: &Store,
        trusted: &[[u8; 32]],
        runs: &[RunId],
    ) -> Result<LogView, StoreError> {
        match LogView::for_runs(store, trusted, runs).await? {
            Some(view) => Ok(view),
            None => LogView::load(store, trusted).await,
        }
    }

    /// Whether this view answers for `run`: a view of the whole log for every run, one of
    /// some runs ([`LogView::for_runs`]) for those.
    pub fn covers(&self, run: &str) -> bool {
        self.partial.is_none() || self.by_run.contains_key(run)
    }
}
