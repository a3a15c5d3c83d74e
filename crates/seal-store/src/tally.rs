//! How many times an open store read each kind of object ([`Store::reads_by_kind`]): each is a
//! load of something the caller could perhaps have been handed. A test holds the count of a request's loads
//! down (tests/it/loads.rs); it is also the first thing to look at when a request got slower.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::{Key, Store};

/// The counts, shared by a store and its clones.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    counts: Mutex<BTreeMap<String, u64>>,
}

impl Tally {
    pub(crate) fn note(&self, key: &Key) {
        // A poisoned lock only means another thread panicked mid-increment: counts stay usable.
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        *counts.entry(kind(key.as_str())).or_default() += 1;
    }

    fn snapshot(&self) -> BTreeMap<String, u64> {
        self.counts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Store {
    /// Reads so far by kind of object (see [`kind`]), over this store and its clones.
    pub fn reads_by_kind(&self) -> BTreeMap<String, u64> {
        self.tally.snapshot()
    }
}

/// The kind of an object: its key with the run id as `{run}`, a content-addressed object as
/// `cas/{blob}`, a number as `N` and a `-<number>` suffix as `-N`
/// (`runs/{run}/roll-N/judge-a/attempt-N/raw.json`, `log/entries/N`), so that counts from
/// different runs, rolls and log positions add up and the map stays small.
pub fn kind(key: &str) -> String {
    if key.starts_with("cas/") {
        return "cas/{blob}".to_string();
    }
    // A judge policy, by its digest.
    if key.starts_with("policies/") {
        return "policies/{policy}".to_string();
    }
    // A signed reliability report, by its digest.
    if key.starts_with("reports/") {
        return "reports/{report}".to_string();
    }
    let per_run = key.starts_with("runs/") || key.starts_with("receipts/");
    let mut out = Vec::new();
    for (i, seg) in key.split('/').enumerate() {
        if i == 1 && per_run {
            out.push("{run}".to_string());
        } else if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push("N".to_string());
        } else {
            match seg.rsplit_once('-') {
                Some((head, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                    out.push(format!("{head}-N"))
                }
                _ => out.push(seg.to_string()),
            }
        }
    }
    out.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_fold_runs_hashes_and_numbers() {
        assert_eq!(
            kind("runs/run-narrative-0010-pass/roll-1/judge-a/attempt-2/raw.json"),
            "runs/{run}/roll-N/judge-a/attempt-N/raw.json"
        );
        assert_eq!(
            kind("receipts/run-1/header.json"),
            "receipts/{run}/header.json"
        );
        let h = "ab".repeat(32);
        assert_eq!(kind(&format!("cas/sha256/ab/{h}")), "cas/{blob}");
        assert_eq!(kind(&format!("policies/{h}.json")), "policies/{policy}");
        assert_eq!(kind("log/entries/00000000000000000012"), "log/entries/N");
    }

    #[tokio::test]
    async fn reads_are_counted_across_clones() {
        let store = Store::open("memory://").await.unwrap();
        let k = Key::parse("runs/r-1/header.json").unwrap();
        let put = store
            .put(&k, bytes::Bytes::from_static(br#"{"a":1}"#))
            .await
            .unwrap();
        let clone = store.clone();
        clone.get(&k).await.unwrap();
        store.get_verified(&k, &put.stored.hash).await.unwrap();
        assert_eq!(
            store.reads_by_kind().get("runs/{run}/header.json"),
            Some(&2)
        );
    }
}
