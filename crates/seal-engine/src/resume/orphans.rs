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
/// Decision: the run folders are listed one by one (a few at once), not as one listing of
/// everything under `runs/`: that listing held every object key of every run at once (~3.6 KB
/// a run), which set `seal verify --all`'s peak memory (82 MiB at 10,000 small runs). What
/// stays is a hash per `cas/` object a run names, and the listing of `cas/` itself. On S3 it
/// costs a LIST per run where one LIST served 1,000 keys (~30 runs).
pub async fn scan(store: &Store) -> Result<Vec<Orphan>, StoreError> {
    let runs = store.runs().await?.runs;
    let mut out = Vec::new();
    let mut referenced: Vec<Named> = Vec::new();
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
        referenced.extend(hashes.iter().map(named));
        out.extend(orphans);
    }
    referenced.sort_unstable();
    referenced.dedup();
    // `cas/` one fan-out folder at a time (`cas/sha256/00` … `ff`), in key order: a listing of
    // the whole of `cas/` held every object key at once (~0.9 KB a run of small frames). A key
    // outside those folders names no hash (`Key::cas_hash`) and was never warned about.
    for prefix in 0..=u8::MAX {
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

/// A `cas/` digest a run names, as the scan holds it: its first 16 bytes, in one sorted list
/// searched by halves.
///
/// Decision: not a set of whole digests (a hash set of 32-byte keys cost ~40-75 bytes a
/// digest, and a run names ten or more: the largest share of `seal verify --all`'s memory
/// after the log). What it risks is one-sided: two digests sharing 128 bits (a collision no
/// one can craft) would keep one unreferenced object off a list of harmless leftovers; no
/// object is ever called unreferenced that a run names.
type Named = [u8; 16];

fn named(hash: &Hash) -> Named {
    let mut short = [0; 16];
    short.copy_from_slice(&hash.to_bytes()[..16]);
    short
}

/// The `cas/` hashes a run's documents name: its proof packages' frames, its metas' answers.
/// Unreadable documents name nothing (verify reports them, this only lists leftovers).
///
/// Decision: only the hashes are read out of each document (one typed pass into the few
/// fields below, other members skipped), not the whole document into a tree and then into
/// its type: a name read here only keeps a `cas/` object off the warning list, which vouches
/// for nothing, and on a store of sealed runs this scan had been a quarter of `seal verify
/// --all`'s parsing.
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
                "the worker resends it",
            ));
        } else if name == "request.json" && !names.contains(sibling("meta.json").as_str()) {
            out.push(Orphan::new(
                "uncommitted_attempt",
                key.dir().to_string(),
                "judge attempt",
                "the next roll POST sends it again",
            ));
        } else if name == "roll.json" && unreceipted {
            out.push(Orphan::new(
                "uncommitted_roll",
                key.to_string(),
                "roll",
                "derived again by the next roll POST",
            ));
        } else if name == "judging.json" {
            out.push(Orphan::new(
                "pending_finalize",
                key.to_string(),
                "finalize",
                "the next finalize decides the run",
            ));
        }
    }
    if out.is_empty() {
        out.push(Orphan::new(
            "open_run",
            format!("runs/{run}"),
            "run",
            "undecided: the worker submits its rolls and finalizes",
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
