//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod browser;
pub mod daemon;
#[allow(unused_imports)]
pub use browser::*;
#[allow(unused_imports)]
pub use daemon::*;

use seal_store::Store;

/// The S3-compatible endpoint CI starts (moto), if any.
pub fn s3_endpoint() -> Option<String> {
    std::env::var("SEAL_TEST_S3_ENDPOINT")
        .ok()
        .filter(|s| !s.is_empty())
}

/// The S3 bucket the CI script creates.
pub fn s3_bucket() -> String {
    std::env::var("SEAL_TEST_S3_BUCKET").unwrap_or_else(|_| "seal-test".into())
}

/// An S3 store under a fresh prefix, or None (with the reason printed) when no server is set.
/// In CI (`SEAL_REQUIRE_S3=1`) a missing server is a failure, never a skip.
pub async fn s3_store(test: &str) -> Option<Store> {
    let Some(ep) = s3_endpoint() else {
        if std::env::var("SEAL_REQUIRE_S3").as_deref() == Ok("1") {
            panic!("SEAL_REQUIRE_S3=1 but SEAL_TEST_S3_ENDPOINT is not set");
        }
        eprintln!(
            "SKIPPED {test} on s3://: SEAL_TEST_S3_ENDPOINT is not set (CI starts an \
             S3-compatible server and sets it; see .ci/run)"
        );
        return None;
    };
    let url = scratch_url(&ep, test);
    Some(Store::open(&url).await.expect("open s3 store"))
}

/// An S3 URL of a fresh, empty store (for tests that start processes).
pub fn s3_url(test: &str) -> Option<String> {
    s3_endpoint().map(|ep| scratch_url(&ep, test))
}

/// A store in a bucket of its own ([`seal_testkit::s3::fresh_bucket`] says why), under the
/// prefix `store`.
fn scratch_url(endpoint: &str, test: &str) -> String {
    let bucket = seal_testkit::s3::fresh_bucket(endpoint, test)
        .unwrap_or_else(|e| panic!("S3 test server at {endpoint}: {e}"));
    format!("s3://{bucket}/store?endpoint={endpoint}")
}

/// [`s3_url`], or None with the reason printed when no server is set; in CI
/// (`SEAL_REQUIRE_S3=1`) a missing server is a failure, never a skip.
#[allow(dead_code)]
pub fn s3_url_or_skip(test: &str) -> Option<String> {
    let url = s3_url(test);
    if url.is_none() {
        if std::env::var("SEAL_REQUIRE_S3").as_deref() == Ok("1") {
            panic!("SEAL_REQUIRE_S3=1 but SEAL_TEST_S3_ENDPOINT is not set");
        }
        eprintln!(
            "SKIPPED {test}: SEAL_TEST_S3_ENDPOINT is not set (CI starts an S3-compatible server)"
        );
    }
    url
}

/// `bytes` random bytes as lowercase hex: unique names for scratch folders and prefixes.
pub fn random_hex(bytes: usize) -> String {
    use rand::RngCore;
    let mut b = vec![0u8; bytes];
    rand::thread_rng().fill_bytes(&mut b);
    hex::encode(b)
}

use seal_engine::config::Config;
use seal_engine::engine::Engine;
use seal_testkit::loopback::{Loopback, Persona};
use std::collections::HashMap;
use std::path::PathBuf;

pub const MODEL_A: &str = "loop-judge-a";
pub const MODEL_B: &str = "loop-judge-b";

/// The example run folders (copied from the shared examples into sealed-fixtures/inputs).
pub fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("sealed-fixtures/inputs")
        .join(name)
}

pub const EXAMPLES: [&str; 3] = [
    "run-narrative-0010-pass",
    "run-puzzle-0013-fail-end",
    "run-heritage-0017-disputed-font",
];

/// A config whose judge slots point at `judge` (A lenient about fonts, B strict), with extra
/// env overrides.
pub fn config_for(judge: &Loopback, extra: &[(&str, &str)]) -> Config {
    let mut env: HashMap<String, String> = HashMap::new();
    env.insert("SEAL_JUDGE_A_URL".into(), judge.url());
    env.insert("SEAL_JUDGE_B_URL".into(), judge.url());
    env.insert("SEAL_JUDGE_A_MODEL".into(), MODEL_A.into());
    env.insert("SEAL_JUDGE_B_MODEL".into(), MODEL_B.into());
    env.insert("SEAL_JUDGE_A_KEY".into(), "sk-test-a-0123456789".into());
    env.insert("SEAL_JUDGE_B_KEY".into(), "sk-test-b-9876543210".into());
    env.insert("SEAL_JUDGE_TIMEOUT_MS".into(), "2000".into());
    // Tests script judge outages run after run on one engine: the breaker stays off unless a
    // test turns it on (tests/it/judge_health.rs).
    env.insert("SEAL_JUDGE_BREAKER_FAILURES".into(), "0".into());
    env.insert(
        "SEAL_SEED_SALT".into(),
        "test-salt-0123456789abcdef0123456789abcdef".into(),
    );
    for (k, v) in extra {
        env.insert(k.to_string(), v.to_string());
    }
    let text = seal_engine::config::EMBEDDED
        .replace("backoff_base_ms = 500", "backoff_base_ms = 10")
        .replace("backoff_cap_ms = 8000", "backoff_cap_ms = 40");
    Config::parse("test", &text, &move |k| env.get(k).cloned()).expect("test config")
}

/// The standard personas: A accepts 13 px fonts, B demands 14 px.
pub fn personas(judge: &Loopback) {
    judge.persona(
        MODEL_A,
        Persona {
            min_font_px: 12.0,
            ..Persona::default()
        },
    );
    judge.persona(
        MODEL_B,
        Persona {
            min_font_px: 14.0,
            ..Persona::default()
        },
    );
}

pub async fn engine_with(judge: &Loopback, store_url: &str, extra: &[(&str, &str)]) -> Engine {
    let store = seal_store::Store::open(store_url).await.expect("store");
    Engine::new(
        store,
        config_for(judge, extra),
        Some(seal_fs::keys::generate_signing_key()),
    )
    .expect("engine")
}

/// [`engine_with`] signing with the key of `seed`: replicas of one deployment share their key
/// (the judge policy one logs is another's to trust).
pub async fn engine_keyed(
    judge: &Loopback,
    store_url: &str,
    extra: &[(&str, &str)],
    seed: [u8; 32],
) -> Engine {
    let store = seal_store::Store::open(store_url).await.expect("store");
    let key = seal_core::sealing::SigningKey::from_seed(&seed);
    Engine::new(store, config_for(judge, extra), Some(key)).expect("engine")
}

/// Stores everything of an example run folder except its proof packages; returns the folder.
pub async fn submit_inputs(
    engine: &Engine,
    dir: &std::path::Path,
) -> seal_fs::runfolder::RunFolder {
    use futures::TryStreamExt;
    let folder = seal_fs::runfolder::RunFolder::read(dir, 1 << 26).expect("run folder");
    for (hash, path) in folder.blobs() {
        let file = tokio::fs::File::open(path).await.unwrap();
        let stream = tokio_util::io::ReaderStream::new(file).map_err(|e| e.to_string());
        engine
            .store()
            .put_blob(Box::pin(stream), Some(hash), u64::MAX)
            .await
            .unwrap();
    }
    seal_engine::intake::put_header(
        engine,
        folder.run(),
        folder.header_bytes(),
        seal_engine::intake::Origin::Operator,
    )
    .await
    .unwrap();
    seal_engine::intake::put_brief(engine, folder.run(), folder.brief())
        .await
        .unwrap();
    if let Some(spec) = folder.play_spec() {
        seal_engine::intake::put_play_spec(engine, folder.run(), spec)
            .await
            .unwrap();
    }
    folder
}

/// Submits proof-package bytes as roll `roll` of `run` through the one use case
/// (`roll::submit`): parsed, checked and stored, not judged.
pub async fn submit_roll(
    engine: &Engine,
    run: &seal_core::ids::RunId,
    roll: seal_core::ids::RollId,
    bytes: &[u8],
) -> Result<(), seal_engine::roll::SubmitError> {
    let submission =
        seal_engine::intake::ProofSubmission::parse(bytes, None, engine.store().doc_limit())
            .map_err(|e| seal_engine::intake::IntakeError::submission(run, roll, e))?;
    seal_engine::roll::submit(engine, run, roll, &submission)
        .await
        .map(drop)
}

/// Submits and judges roll 1 of an example folder.
pub async fn judge_roll1(
    engine: &Engine,
    dir: &std::path::Path,
) -> (seal_fs::runfolder::RunFolder, seal_engine::roll::RollReport) {
    let folder = submit_inputs(engine, dir).await;
    let bytes = folder.rolls()[0].canonical();
    submit_roll(engine, folder.run(), seal_core::ids::RollId::R1, bytes)
        .await
        .unwrap();
    let report = seal_engine::roll::judge_roll(engine, folder.run(), seal_core::ids::RollId::R1)
        .await
        .expect("roll");
    (folder, report)
}

/// An engine over a memory store with a config text transformed by `edit`.
pub async fn engine_edited(
    judge: &Loopback,
    extra: &[(&str, &str)],
    edit: &dyn Fn(String) -> String,
) -> Engine {
    let mut env: HashMap<String, String> = HashMap::new();
    for (k, v) in [
        ("SEAL_JUDGE_A_URL", judge.url()),
        ("SEAL_JUDGE_B_URL", judge.url()),
        ("SEAL_JUDGE_A_MODEL", MODEL_A.to_string()),
        ("SEAL_JUDGE_B_MODEL", MODEL_B.to_string()),
        ("SEAL_JUDGE_A_KEY", "sk-test-a-0123456789".to_string()),
        ("SEAL_JUDGE_B_KEY", "sk-test-b-9876543210".to_string()),
        ("SEAL_JUDGE_TIMEOUT_MS", "2000".to_string()),
        (
            "SEAL_SEED_SALT",
            "test-salt-0123456789abcdef0123456789abcdef".to_string(),
        ),
    ] {
        env.insert(k.into(), v);
    }
    for (k, v) in extra {
        env.insert(k.to_string(), v.to_string());
    }
    let text = edit(
        seal_engine::config::EMBEDDED
            .replace("backoff_base_ms = 500", "backoff_base_ms = 10")
            .replace("backoff_cap_ms = 8000", "backoff_cap_ms = 40"),
    );
    let config = Config::parse("test", &text, &move |k| env.get(k).cloned()).expect("config");
    let store = seal_store::Store::open("memory://").await.unwrap();
    Engine::new(store, config, Some(seal_fs::keys::generate_signing_key())).expect("engine")
}

/// The committed sealed fixtures (`sealed-fixtures/`, made by `cargo run -p seal-testkit --bin seal-fixtures`).
pub fn sealed_fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sealed-fixtures")
}

/// The file store of sealed fixture runs.
pub fn fixture_store_dir() -> PathBuf {
    sealed_fixtures().join("store")
}

/// The test-only public key that signed the sealed fixtures.
pub fn fixture_trust_pem() -> PathBuf {
    sealed_fixtures().join("keys/test-only/seal.pub.pem")
}

/// The run ids of the sealed fixtures, sorted.
pub fn fixture_run_ids() -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(fixture_store_dir().join("runs"))
        .expect("sealed-fixtures/store/runs")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    ids.sort();
    ids
}

/// Copies a folder tree (regular files and folders) from `from` to `to`.
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target)
                .unwrap_or_else(|e| panic!("{}: {e}", entry.path().display()));
        }
    }
}

/// A fresh copy of the whole fixture store: (its temp folder, the store root inside it).
pub fn copy_fixture_store() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    copy_tree(&fixture_store_dir(), &root);
    (dir, root)
}

/// `seal verify`'s verdict over `store` under `key`, with no witness policy: what `explain`
/// and `stats` take.
pub async fn verifier(
    store: &Store,
    key: seal_core::sealing::PublicKey,
) -> seal_engine::verify::Verifier {
    let policy = seal_log::cosign::check::Policy::default();
    seal_engine::verify::Verifier::load(
        store,
        vec![key],
        seal_log::DEFAULT_ORIGIN,
        &policy,
        seal_engine::verify::Scope::All,
    )
    .await
    .expect("the log of the store reads")
}

/// The `file://` URL of a store folder.
pub fn file_url(root: &std::path::Path) -> String {
    format!("file://{}", root.display())
}

/// The `seal` binary run from `cwd` (an empty folder, so no config/seal.toml of the checkout is
/// read) with both judge slots pointed at `judge` and the given keys and salt.
pub fn seal_cmd_with(
    cwd: &std::path::Path,
    judge: &Loopback,
    key_a: &str,
    key_b: &str,
    salt: &str,
) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_seal"));
    c.current_dir(cwd)
        .env("SEAL_JUDGE_A_URL", judge.url())
        .env("SEAL_JUDGE_B_URL", judge.url())
        .env("SEAL_JUDGE_A_MODEL", MODEL_A)
        .env("SEAL_JUDGE_B_MODEL", MODEL_B)
        .env("SEAL_JUDGE_A_KEY", key_a)
        .env("SEAL_JUDGE_B_KEY", key_b)
        .env("SEAL_SEED_SALT", salt)
        // Off unless a test turns it on (see `config_for`).
        .env("SEAL_JUDGE_BREAKER_FAILURES", "0");
    c
}

/// Runs a command off the async runtime.
pub async fn run(mut c: std::process::Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap()
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Text a game or a model could send to break a page: a script, a `javascript:` URL, an
/// element that closes the SVG, and attribute-breaking quotes of both kinds.
pub const HOSTILE: [&str; 5] = [
    "<script>document.title='pwned'</script>",
    "javascript:document.title='pwned'",
    "</svg></a><img src=x onerror=\"document.title='pwned'\">",
    "\" onmouseover=\"document.title='pwned'\" x=\"",
    "' autofocus onfocus='document.title=`pwned`' x='",
];

pub fn hostile_text() -> String {
    HOSTILE.join(" | ")
}

/// A sealed run of the pass example whose game text (brief, an obligation description, a
/// floor check, event data and keys) and both judges' rationales are [`HOSTILE`]:
/// (its temp folder, store URL, public key PEM, run id).
pub async fn hostile_sealed_run() -> (tempfile::TempDir, String, PathBuf, String) {
    sealed_run_with_text(&hostile_text(), MODEL_A).await
}

/// [`hostile_sealed_run`] with `evil` as the hostile text and `model_a` as the model judge A
/// is asked for (and answers with).
pub async fn sealed_run_with_text(
    evil: &str,
    model_a: &str,
) -> (tempfile::TempDir, String, PathBuf, String) {
    sealed_run_judged(evil, model_a, "satisfied", seal_core::doc::Outcome::Pass).await
}

/// [`sealed_run_with_text`] where judge B answers `b_verdict` to every obligation (judge A
/// `satisfied`), sealed with `outcome`: `"failed"` gives a disputed, `inconclusive` run.
pub async fn sealed_run_judged(
    evil: &str,
    model_a: &str,
    b_verdict: &str,
    outcome: seal_core::doc::Outcome,
) -> (tempfile::TempDir, String, PathBuf, String) {
    use serde_json::{json, Value};
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    copy_tree(&example("run-narrative-0010-pass"), &input);
    let evil = evil.to_string();
    let brief = format!(
        "{}\n\n{evil}\n",
        std::fs::read_to_string(input.join("brief.md")).unwrap()
    );
    std::fs::write(input.join("brief.md"), &brief).unwrap();
    let read = |p: &std::path::Path| -> Value {
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    };
    let mut header = read(&input.join("header.json"));
    header["briefHash"] = json!(seal_core::canonical::Hash::of(brief.as_bytes()).to_string());
    for o in header["proofObligations"].as_array_mut().unwrap() {
        if o["id"] == "polish.no-placeholder" {
            o["description"] = json!(format!("No placeholder text. {evil}"));
        }
    }
    std::fs::write(
        input.join("header.json"),
        serde_json::to_vec(&header).unwrap(),
    )
    .unwrap();
    let pp = input.join("roll-1/proof-package.json");
    let mut proof = read(&pp);
    proof["floor"]["checks"][0]["detail"] = json!(evil);
    let events = proof["events"].as_array_mut().unwrap();
    let seq = events.len();
    events.push(json!({"seq": seq, "name": "render", "tMs": 5900,
        "data": {"visibleText": evil, "<script>alert(1)</script>": "javascript:alert(1)"}}));
    let frame = proof["frames"][0]["hash"].clone();
    std::fs::write(&pp, serde_json::to_vec(&proof).unwrap()).unwrap();

    let lb = Loopback::start(std::time::Duration::from_millis(1))
        .await
        .unwrap();
    let ids = [
        "brief.theme-visible",
        "core.loop-reached",
        "polish.no-placeholder",
        "progress.score-increased",
        "ui.text-readable",
    ];
    let answer = |verdict: &str| {
        json!({"obligations": ids.iter().map(|id| json!({
            "id": id, "verdict": verdict,
            "sequenceRefs": [{"stream": "events", "from": 11, "to": seq}],
            "frameHashes": [frame],
            "rationale": format!("{id}: {evil}"),
        })).collect::<Vec<_>>()})
    };
    for (model, verdict) in [(model_a, "satisfied"), (MODEL_B, b_verdict)] {
        lb.script(
            model,
            [seal_testkit::loopback::Fault::Content(
                answer(verdict).to_string(),
            )],
        );
    }
    let key = seal_fs::keys::generate_signing_key();
    let (_, pem) = seal_fs::keys::write_key_pair(&key, &dir.path().join("keys")).unwrap();
    let url = file_url(&dir.path().join("store"));
    let store = Store::open(&url).await.unwrap();
    let config = config_for(&lb, &[("SEAL_JUDGE_A_MODEL", model_a)]);
    let engine = Engine::new(store, config, Some(key)).unwrap();
    let folder = seal_fs::runfolder::RunFolder::read(&input, 1 << 26).unwrap();
    let done = seal_engine::judge_run::judge(&engine, &folder)
        .await
        .expect("hostile run seals");
    assert_eq!(
        done.evidence().outcome,
        Some(outcome),
        "{:?}",
        done.evidence().decision
    );
    let run = folder.run().to_string();
    (dir, url, pem, run)
}

/// Serves `engine`'s API in this process on a loopback port: (base URL, stop sender). The
/// engine's own key is the trusted key.
pub async fn start(engine: Engine) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let trusted = vec![engine.key().unwrap().public()];
    let state = seal_server::AppState::new(engine, trusted);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(seal_server::run(listener, state, async move {
        let _ = rx.await;
    }));
    (base, tx)
}

/// An HTTP client for the tests' witnesses (`seal witness serve`, another protocol); the daemon
/// is called through `seal_testkit::client::SealClient`.
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .unwrap()
}

/// `/metrics` parsed by the reference Python parser (tools/metrics_dump.py); None when python3
/// lacks `prometheus_client` (a failure under `SEAL_REQUIRE_PYTHON=1`).
pub fn parse_metrics(exposition: &str) -> Option<serde_json::Value> {
    use std::io::Write;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/metrics_dump.py");
    let has = std::process::Command::new("python3")
        .args(["-c", "import prometheus_client"])
        .output();
    if !has.is_ok_and(|o| o.status.success()) {
        assert_ne!(
            std::env::var("SEAL_REQUIRE_PYTHON").as_deref(),
            Ok("1"),
            "python3 has no prometheus_client"
        );
        eprintln!("skipped: python3 has no prometheus_client");
        return None;
    }
    let mut child = std::process::Command::new("python3")
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(exposition.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}\n{exposition}", text(&out.stderr));
    Some(serde_json::from_slice(&out.stdout).unwrap())
}
