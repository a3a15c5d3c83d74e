//! Racing finalizers: ≥ 8 at once on one run, on the file store and on S3. Exactly one writes
//! the decided evidence; every caller returns the written result and the one seal.

use crate::common;

use common::*;
use seal_core::sealing::SigningKey;
use seal_engine::engine::Engine;
use seal_store::Store;
use seal_testkit::loopback::Loopback;
use std::time::Duration;

async fn race(store_url: &str) {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    // Eight finalizers, each a "replica" with its own engine and signing key, trusting the
    // others' (`keys.trusted`): a leaf or checkpoint by a key a replica does not trust is
    // planted to it (docs/DESIGN.md §11).
    let keys: Vec<SigningKey> = (0..8)
        .map(|_| seal_fs::keys::generate_signing_key())
        .collect();
    let pems = tempfile::tempdir().unwrap();
    let trusted: Vec<std::path::PathBuf> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let dir = pems.path().join(i.to_string());
            seal_fs::keys::write_key_pair(k, &dir).unwrap().1
        })
        .collect();
    // The replica that judged the roll is one of them: it logged the judge policy with its
    // key, which the others trust.
    let judged_with = seal_fs::keys::load_signing_key(&pems.path().join("0/seal.key.pem")).unwrap();
    let first = {
        let mut config = config_for(&lb, &[]);
        config.trusted_keys = trusted.clone();
        Engine::new(
            Store::open(store_url).await.unwrap(),
            config,
            Some(judged_with),
        )
        .unwrap()
    };
    let (folder, report) = judge_roll1(&first, &example("run-narrative-0010-pass")).await;
    assert_eq!(report.roll().roll_outcome, seal_core::doc::Outcome::Pass);
    let mut engines = Vec::new();
    for key in keys {
        let store = Store::open(store_url).await.unwrap();
        let mut config = config_for(&lb, &[]);
        config.trusted_keys = trusted.clone();
        engines.push(Engine::new(store, config, Some(key)).unwrap());
    }
    let tasks: Vec<_> = engines
        .into_iter()
        .map(|e| {
            let run = folder.run().clone();
            tokio::spawn(async move { seal_engine::postguard::finalize(&e, &run).await })
        })
        .collect();
    let mut results = Vec::new();
    for t in tasks {
        results.push(
            t.await
                .unwrap()
                .expect("every finalizer returns the result"),
        );
    }
    let writers = results.iter().filter(|r| r.wrote()).count();
    assert_eq!(writers, 1, "exactly one finalizer writes the evidence");
    for r in &results {
        assert_eq!(r.evidence_hash(), results[0].evidence_hash());
        assert_eq!(
            r.envelope_hash(),
            results[0].envelope_hash(),
            "one seal for everybody"
        );
    }
    let store = Store::open(store_url).await.unwrap();
    let keys = store
        .list(&format!("runs/{}", folder.run()))
        .await
        .unwrap()
        .keys;
    assert_eq!(
        keys.iter()
            .filter(|k| k.as_str().ends_with("evidence.json"))
            .count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_finalizers_on_the_file_store() {
    let dir = tempfile::tempdir().unwrap();
    race(&format!("file://{}", dir.path().display())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_finalizers_on_s3() {
    let Some(url) = s3_url("finalize-race") else {
        let _ = s3_store("finalize-race").await; // prints SKIPPED (or fails in CI)
        return;
    };
    race(&url).await;
}
