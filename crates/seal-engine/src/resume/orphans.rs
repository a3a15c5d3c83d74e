//! What honest crashes leave behind (docs/DESIGN.md §2, "Crash safety"): objects written before
//! a step's commit object that no commit object names yet. Each is harmless (content-addressed,
//! redone identically, or waiting for the worker's resend); they are listed, as warnings, by
//! `seal verify --all` and `seal gc --dry-run`, never reported as problems of a run.
//!
//! Presence checks only: no secret is held here, so nothing is authenticated and a warning
//! vouches for nothing. A sealed run is never looked into (verify judges every object of it).

use std::collections::HashSet;

use futures::StreamExt;

use seal_core::canonical::Hash;
use seal_core::ids::RunId;
use seal_store::{Key, Store, StoreError};

/// Run folders listed at once by [`scan`].
const LISTINGS_AT_ONCE: usize = 16;

/// One orphaned object (or an undecided run folder).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Orphan {
    /// What kind of leftover: `uncommitted_input`, `uncommitted_attempt`, `uncommitted_roll`,
    /// `pending_finalize`, `pending_import`, `open_run`, `unreferenced_cas`, `staging_upload`.
    pub warning: &'static str,
    /// The object (or run folder) it is about.
    pub object: String,
    /// The step it belongs to.
    pub step: &'static str,
    /// What completes it, or why it is harmless.
    pub redo: &'static str,
}

impl Orphan {
    fn new(
        warning: &'static str,
        object: impl Into<String>,
        step: &'static str,
        redo: &'static str,
    ) -> Orphan {
        Orphan {
            warning,
            object: object.into(),
            step,
            redo,
        }
    }
}

/// Every orphan of the store: per undecided or unsealed run, then `cas/` and `tmp/uploads/`.
///
/// The run folders are listed one by one (a few at once), not `runs/` in one listing
/// (docs/DECISIONS.md, "The leftover scan keeps its memory small").
pub async fn scan(store: &Store) -> Result<Vec<Orphan>, StoreError> {
    let mut scan = Scan::new();
    scan.look_into(store, store.runs().await?.runs).await?;
    scan.finish(store).await
}

/// [`scan`] in steps, for a caller that reads the runs anyway: `seal verify --all` hands it
/// the `cas/` objects each verified run names ([`Scan::named`]) and has it
/// look into the other runs' folders ([`Scan::look_into`]), so that a sealed run's folder is
/// not listed and its proof packages and metas not read a second time (~12% of `verify
/// --all`'s CPU on a store of small sealed runs).
pub struct Scan {
    referenced: Referenced,
    out: Vec<Orphan>,
}

impl Default for Scan {
    fn default() -> Scan {
        Scan::new()
    }
}

impl Scan {
    pub fn new() -> Scan {
        Scan {
            referenced: Referenced::new(SPILL_AT),
            out: Vec::new(),
        }
    }

    /// A run proven sealed: the `cas/` objects it names (`VerifiedRun::named`: its frames
    /// and raw answers, the hashes [`Scan::look_into`] reads out of its proof packages and
    /// metas); a sealed run leaves nothing else to warn about.
    pub fn named<'a>(&mut self, hashes: impl IntoIterator<Item = &'a Hash>) {
        for h in hashes {
            self.referenced.add(named(h));
        }
    }

    /// Runs looked into by their folders: the `cas/` objects their proof packages and metas
    /// name, and, for one not sealed, its leftovers.
    pub async fn look_into(&mut self, store: &Store, runs: Vec<RunId>) -> Result<(), StoreError> {
        let per_run = futures::stream::iter(runs.into_iter().map(|run| async move {
            let keys = store.list(&Key::run_dir(&run)).await?.keys;
            let hashes = referenced_hashes(store, &keys).await;
            // A sealed run leaves nothing to warn about (`run_orphans`): its receipts are not
            // listed (one listing a run was most of this scan's time on a store of sealed runs).
            if keys.contains(&Key::seal(&run)) {
                return Ok::<_, StoreError>((hashes, Vec::new()));
            }
            let receipts: HashSet<String> = store
                .list(&format!("receipts/{run}"))
                .await?
                .keys
                .into_iter()
                .map(|k| k.to_string())
                .collect();
            Ok((hashes, run_orphans(&run, &keys, &receipts)))
        }))
        .buffered(LISTINGS_AT_ONCE);
        futures::pin_mut!(per_run);
        while let Some(found) = per_run.next().await {
            let (hashes, orphans) = found?;
            for h in &hashes {
                self.referenced.add(named(h));
            }
            self.out.extend(orphans);
        }
        Ok(())
    }

    /// The orphans found in the runs, then every `cas/` object no run names, then upload
    /// scratch.
    pub async fn finish(mut self, store: &Store) -> Result<Vec<Orphan>, StoreError> {
        let mut out = std::mem::take(&mut self.out);
        // `cas/` one fan-out folder at a time (`cas/sha256/00` … `ff`), in key order: a
        // listing of the whole of `cas/` held every object key at once (~0.9 KB a run of small
        // frames). A key outside those folders names no hash (`Key::cas_hash`) and was never
        // warned about.
        for prefix in 0..=u8::MAX {
            let referenced = self.referenced.take(prefix)?;
            for key in store.list(&format!("cas/sha256/{prefix:02x}")).await?.keys {
                let hash = key.cas_hash().map(|h| named(&h));
                if hash.is_some_and(|d| referenced.binary_search(&d).is_err()) {
                    out.push(Orphan::new(
                        "unreferenced_cas",
                        key.to_string(),
                        "judge attempt or frame upload",
                        "an answer whose meta was never stored (the call is redone), or a frame no proof package names: harmless",
                    ));
                }
            }
        }
        for key in store.list("tmp/uploads").await?.keys {
            out.push(Orphan::new(
                "staging_upload",
                key.to_string(),
                "large blob upload",
                "scratch: lifecycle rules may delete it",
            ));
        }
        Ok(out)
    }
}

/// A `cas/` digest a run names, as the scan holds it: its first 16 bytes, in one sorted list
/// searched by halves.
///
/// Not a set of whole digests: 128 bits are enough to keep an object off the leftover list
/// (docs/DECISIONS.md, "The leftover scan keeps its memory small").
type Named = [u8; 16];

/// Digests [`Referenced`] holds in memory before it writes them out (16 bytes each: 1 MiB).
const SPILL_AT: usize = 1 << 16;

/// The `cas/` digests the runs name, by first byte (the `cas/sha256/<xx>` folder they are
/// looked up in); past `spill_at` in memory they are appended to one temp file per first
/// byte, and each folder's are read back, sorted, when that folder is listed.
///
/// Memory is `spill_at` digests plus one folder's (1/256 of them); when the temp folder cannot
/// be written the digests stay in memory, with a warning (docs/DECISIONS.md, "The leftover scan
/// keeps its memory small").
struct Referenced {
    buckets: Vec<Vec<Named>>,
    held: usize,
    spill_at: usize,
    spilled: Option<tempfile::TempDir>,
    /// The first bytes that have a temp file.
    on_disk: [bool; 256],
    /// Writing to the temp folder failed once: keep everything in memory from then on.
    in_memory: bool,
}

impl Referenced {
    fn new(spill_at: usize) -> Referenced {
        Referenced {
            buckets: vec![Vec::new(); 256],
            held: 0,
            spill_at,
            spilled: None,
            on_disk: [false; 256],
            in_memory: false,
        }
    }

    fn add(&mut self, digest: Named) {
        self.buckets[usize::from(digest[0])].push(digest);
        self.held += 1;
        if self.held >= self.spill_at && !self.in_memory {
            match self.spill() {
                Ok(()) => self.held = 0,
                Err(e) => {
                    tracing::warn!(error = %e, "the digests of the crash-leftover scan stay in memory: the temp folder cannot be written");
                    self.in_memory = true;
                }
            }
        }
    }

    fn spill(&mut self) -> std::io::Result<()> {
        use std::io::Write;
        let dir = match &self.spilled {
            Some(d) => d.path().to_path_buf(),
            None => {
                let d = tempfile::Builder::new().prefix("seal-scan-").tempdir()?;
                let path = d.path().to_path_buf();
                self.spilled = Some(d);
                path
            }
        };
        for (prefix, bucket) in self.buckets.iter_mut().enumerate() {
            if bucket.is_empty() {
                continue;
            }
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join(format!("{prefix:02x}")))?;
            f.write_all(bucket.as_flattened())?;
            self.on_disk[prefix] = true;
            bucket.clear();
            bucket.shrink_to_fit();
        }
        Ok(())
    }

    /// Every digest named under first byte `prefix`, sorted, once.
    fn take(&mut self, prefix: u8) -> Result<Vec<Named>, StoreError> {
        let mut all = std::mem::take(&mut self.buckets[usize::from(prefix)]);
        if let (Some(dir), true) = (&self.spilled, self.on_disk[usize::from(prefix)]) {
            let path = dir.path().join(format!("{prefix:02x}"));
            match std::fs::read(&path) {
                Ok(bytes) => all.extend(
                    bytes
                        .chunks_exact(16)
                        .filter_map(|c| <Named>::try_from(c).ok()),
                ),
                // Names lost would call named objects unreferenced: stop instead.
                Err(e) => {
                    return Err(StoreError::Backend {
                        key: format!("cas/sha256/{prefix:02x}"),
                        op: "read back the digests the runs name",
                        detail: format!("{}: {e}", path.display()),
                    })
                }
            }
        }
        all.sort_unstable();
        all.dedup();
        Ok(all)
    }
}

fn named(hash: &Hash) -> Named {
    let mut short = [0; 16];
    short.copy_from_slice(&hash.to_bytes()[..16]);
    short
}

/// The `cas/` hashes a run's documents name: its proof packages' frames, its metas' answers.
/// Unreadable documents name nothing (verify reports them, this only lists leftovers).
///
/// Only the hashes are read out of each document (one typed pass into the few fields below,
/// other members skipped) (docs/DECISIONS.md, "The leftover scan keeps its memory small").
async fn referenced_hashes(store: &Store, keys: &[Key]) -> Vec<Hash> {
    #[derive(serde::Deserialize)]
    struct Frames {
        frames: Vec<Named>,
    }
    #[derive(serde::Deserialize)]
    struct Named {
        hash: Hash,
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Answer {
        raw_hash: Hash,
    }
    let mut out = Vec::new();
    for key in keys {
        let name = key.as_str().rsplit('/').next().unwrap_or("");
        if name != "proof-package.json" && name != "meta.json" {
            continue;
        }
        let Ok(Some(bytes)) = store.get_opt(key).await else {
            continue;
        };
        if bytes.len() as u64 > store.doc_limit() {
            continue;
        }
        if name == "proof-package.json" {
            if let Ok(p) = serde_json::from_slice::<Frames>(&bytes) {
                out.extend(p.frames.into_iter().map(|f| f.hash));
            }
        } else if let Ok(m) = serde_json::from_slice::<Answer>(&bytes) {
            out.push(m.raw_hash);
        }
    }
    out
}

/// The leftovers of one run folder, from its keys and its receipts' keys.
pub fn run_orphans(run: &RunId, keys: &[Key], receipts: &HashSet<String>) -> Vec<Orphan> {
    let names: HashSet<&str> = keys.iter().map(Key::as_str).collect();
    let has = |file: &str| names.contains(format!("runs/{run}/{file}").as_str());
    if has("seal.dsse.json") {
        return Vec::new();
    }
    if has("evidence.json") {
        return vec![Orphan::new(
            "pending_finalize",
            Key::evidence(run).to_string(),
            "finalize",
            "decided, not sealed yet: the next finalize (or the import's rerun) stores the seal",
        )];
    }
    if receipts.is_empty() && keys.iter().any(|k| !is_input(k)) {
        return vec![Orphan::new(
            "pending_import",
            format!("runs/{run}"),
            "import (seal replay --from)",
            "a partial import: run the import again",
        )];
    }
    // A replay's steps are the replay's, not a worker's: re-running it completes them.
    let replay = run.is_replay_id();
    let by =
        |worker: &'static str, replay_hint: &'static str| if replay { replay_hint } else { worker };
    let mut out = Vec::new();
    for key in keys {
        let receipt = Key::receipt_for(key).map(|r| r.to_string());
        let unreceipted = receipt.is_some_and(|r| !receipts.contains(&r));
        let name = key.as_str().rsplit('/').next().unwrap_or("");
        let sibling = |file: &str| format!("{}/{file}", key.dir());
        if is_input(key) && unreceipted {
            out.push(Orphan::new(
                "uncommitted_input",
                key.to_string(),
                "intake",
                by(
                    "the worker resends it",
                    "re-running the replay (seal replay <source run>, or --all) copies it again",
                ),
            ));
        } else if name == "request.json" && !names.contains(sibling("meta.json").as_str()) {
            out.push(Orphan::new(
                "uncommitted_attempt",
                key.dir().to_string(),
                "judge attempt",
                by(
                    "the next roll POST sends it again",
                    "re-running the replay (seal replay <source run>, or --all) finishes it; a live replay pays for this attempt again",
                ),
            ));
        } else if name == "roll.json" && unreceipted {
            out.push(Orphan::new(
                "uncommitted_roll",
                key.to_string(),
                "roll",
                by(
                    "derived again by the next roll POST",
                    "derived again by re-running the replay (seal replay <source run>, or --all)",
                ),
            ));
        } else if name == "judging.json" {
            out.push(Orphan::new(
                "pending_finalize",
                key.to_string(),
                "finalize",
                by(
                    "the next finalize decides the run",
                    "re-running the replay (seal replay <source run>, or --all) decides it",
                ),
            ));
        }
    }
    if out.is_empty() {
        out.push(Orphan::new(
            "open_run",
            format!("runs/{run}"),
            "run",
            by(
                "undecided: the worker submits its rolls and finalizes",
                "an interrupted replay: seal replay --all (or of its source run) finishes it under this id",
            ),
        ));
    }
    out
}

/// A worker input: header, brief, play-spec, a roll's proof package.
fn is_input(key: &Key) -> bool {
    let parts: Vec<&str> = key.as_str().split('/').collect();
    match parts.as_slice() {
        ["runs", _, "header.json" | "brief.md" | "play-spec.json"] => true,
        ["runs", _, roll, "proof-package.json"] => roll.starts_with("roll-"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(i: u32) -> Named {
        named(&Hash::of(&i.to_be_bytes()))
    }

    /// Spilled to temp files every few digests or held in memory, the digests of each first
    /// byte come back the same: sorted, once each, none lost (duplicates across spills too).
    #[test]
    fn spilled_digests_come_back_as_held_ones() {
        let mut spilled = Referenced::new(7);
        let mut held = Referenced::new(usize::MAX);
        for i in (0..3000).chain(0..500) {
            spilled.add(digest(i));
            held.add(digest(i));
        }
        assert!(spilled.spilled.is_some() && held.spilled.is_none());
        let mut total = 0;
        for prefix in 0..=u8::MAX {
            let (a, b) = (spilled.take(prefix).unwrap(), held.take(prefix).unwrap());
            assert!(a.windows(2).all(|w| w[0] < w[1]) && a.iter().all(|d| d[0] == prefix));
            assert_eq!(a, b, "first byte {prefix:02x}");
            total += a.len();
        }
        assert_eq!(total, 3000);
    }

    /// A temp folder that cannot be written keeps the digests in memory; one whose files
    /// were deleted under the scan is an error naming the folder, never a shorter list
    /// (which would call named objects unreferenced).
    #[test]
    fn a_temp_folder_lost_is_an_error_and_one_unwritable_keeps_digests_in_memory() {
        let mut r = Referenced::new(4);
        for i in 0..4 {
            r.add(digest(i));
        }
        let dir = r.spilled.as_ref().unwrap().path().to_path_buf();
        std::fs::remove_dir_all(&dir).unwrap();
        for i in 4..40 {
            r.add(digest(i));
        }
        assert!(r.in_memory);
        let first = digest(0)[0];
        let e = r.take(first).unwrap_err().to_string();
        assert!(e.contains(&format!("cas/sha256/{first:02x}")), "{e}");
        let later = digest(39)[0];
        if !(0..4).any(|i| digest(i)[0] == later) {
            assert!(r.take(later).unwrap().contains(&digest(39)));
        }
    }

    /// Every `cas/` object no run names is listed, in key order, across fan-out folders; a
    /// named one is not; an object under `cas/` that names no hash is no warning.
    #[tokio::test]
    async fn every_unreferenced_cas_object_is_listed_once_in_key_order() {
        let store = Store::open("memory://").await.unwrap();
        // Enough frames that their hashes spread over many of the 256 fan-out folders.
        let frames: Vec<Hash> = (0..64u32).map(|i| Hash::of(&i.to_be_bytes())).collect();
        for h in &frames {
            store
                .put(&Key::cas(h), bytes::Bytes::from_static(b"f"))
                .await
                .unwrap();
        }
        store
            .put(
                &Key::parse("cas/sha256/zz/not-a-hash").unwrap(),
                bytes::Bytes::from_static(b"x"),
            )
            .await
            .unwrap();
        // One run names every third frame.
        let named: Vec<&Hash> = frames.iter().step_by(3).collect();
        let package = serde_json::json!({
            "frames": named.iter().map(|h| serde_json::json!({"hash": h.to_string()})).collect::<Vec<_>>()
        });
        store
            .put(
                &Key::parse("runs/r-1/roll-1/proof-package.json").unwrap(),
                bytes::Bytes::from(package.to_string()),
            )
            .await
            .unwrap();
        let listed: Vec<String> = scan(&store)
            .await
            .unwrap()
            .into_iter()
            .filter(|o| o.warning == "unreferenced_cas")
            .map(|o| o.object)
            .collect();
        let mut want: Vec<String> = frames
            .iter()
            .filter(|h| !named.contains(h))
            .map(|h| Key::cas(h).to_string())
            .collect();
        want.sort();
        assert_eq!(listed, want);
        let folders: HashSet<&str> = listed.iter().map(|k| &k[..13]).collect();
        assert!(folders.len() > 16, "{folders:?}");
    }

    fn keys(run: &str, files: &[&str]) -> Vec<Key> {
        files
            .iter()
            .map(|f| Key::parse(&format!("runs/{run}/{f}")).unwrap())
            .collect()
    }

    #[test]
    fn an_uncommitted_attempt_and_an_unreceipted_input_are_named() {
        let run = RunId::parse("r-1").unwrap();
        let ks = keys(
            "r-1",
            &[
                "header.json",
                "brief.md",
                "roll-1/proof-package.json",
                "roll-1/judge-a/attempt-1/request.json",
            ],
        );
        let receipts: HashSet<String> = ["receipts/r-1/header.json", "receipts/r-1/brief.md"]
            .map(String::from)
            .into();
        let found: Vec<&str> = run_orphans(&run, &ks, &receipts)
            .iter()
            .map(|o| o.warning)
            .collect();
        assert_eq!(found, ["uncommitted_input", "uncommitted_attempt"]);
    }

    /// A replay's leftovers point at re-running the replay, never at a worker's roll POST
    /// (issue 49, item 8: after SIGTERM, `gc` told the operator of a replay to wait for a
    /// worker that will never come).
    #[test]
    fn a_replay_s_leftovers_are_completed_by_re_running_the_replay() {
        for (run, worker) in [("r-1", true), ("r-1.replay-2", false)] {
            let id = RunId::parse(run).unwrap();
            let receipts: HashSet<String> = [format!("receipts/{run}/header.json")].into();
            let ks = keys(
                run,
                &["header.json", "roll-1/judge-a/attempt-1/request.json"],
            );
            let orphans = run_orphans(&id, &ks, &receipts);
            let redo = orphans
                .iter()
                .find(|o| o.warning == "uncommitted_attempt")
                .map(|o| o.redo)
                .unwrap();
            assert_eq!(redo.contains("roll POST"), worker, "{run}: {redo}");
            assert_eq!(redo.contains("seal replay"), !worker, "{run}: {redo}");
            let open = run_orphans(&id, &keys(run, &["header.json"]), &receipts);
            assert_eq!(open[0].warning, "open_run");
            assert_eq!(open[0].redo.contains("seal replay --all"), !worker, "{run}");
        }
    }

    #[test]
    fn a_sealed_run_has_no_orphans_and_an_unsealed_decided_one_is_pending() {
        let run = RunId::parse("r-1").unwrap();
        let none = HashSet::new();
        assert!(run_orphans(
            &run,
            &keys("r-1", &["evidence.json", "seal.dsse.json"]),
            &none
        )
        .is_empty());
        let pending = run_orphans(&run, &keys("r-1", &["evidence.json"]), &none);
        assert_eq!(pending[0].warning, "pending_finalize");
    }
}
