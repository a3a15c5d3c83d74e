//! Secure defaults and the small holes of issue 22, each pinned by a test named after the rule:
//! no constant salt (keygen writes the deployment secret; commands that judge refuse without
//! one, read-only commands never ask), `keygen --out` makes a private folder and refuses links,
//! `seal serve` refuses a non-loopback address without a token, the `Bearer` scheme is
//! case-insensitive and the metrics token opens `/metrics` only, planted leases neither hold a
//! judge call back nor fail it, `log verify --checkpoint` reads through `fsio`, read-only
//! commands never create a store folder, bidi controls are shown on the pages, and a leftover
//! staging file is judged alike by `seal verify` and `replay --from`.

use crate::common;

use common::*;
use seal_core::ids::{RollId, RunId, Slot};
use seal_store::{Key, Store};
use seal_testkit::client::{Method, RequestBuilder, SealClient};
use seal_testkit::loopback::Loopback;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A secret long enough for the rule (the tests' own; never a default).
const SALT: &str = "secure-defaults-salt-0123456789abcdef";

/// The `seal` binary in `cwd` with no secret or token from the test's own environment.
fn seal_in(cwd: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_seal"));
    c.current_dir(cwd)
        .env_remove("SEAL_SEED_SALT")
        .env_remove("SEAL_API_TOKEN")
        .env_remove("SEAL_METRICS_TOKEN");
    c
}

/// Runs `c` for at most `secs`: (exit code, or None when it had to be killed; stdout; stderr).
/// Both pipes are drained while it runs, so a chatty command never blocks on them.
fn run_for(mut c: Command, secs: u64) -> (Option<i32>, String, String) {
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (code, out.join().unwrap(), err.join().unwrap())
}

fn mode_of(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

// ---- 6. No constant salt -------------------------------------------------------------------

#[test]
fn no_constant_salt_keygen_writes_a_private_secret_and_if_missing_adds_one_beside_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = run_for(
        {
            let mut c = seal_in(dir.path());
            c.args(["keygen", "--out", "keys"]);
            c
        },
        30,
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("keys/seal.secret"), "{out}");
    let secret = dir.path().join("keys/seal.secret");
    assert_eq!(mode_of(&secret), 0o600);
    let text = std::fs::read_to_string(&secret).unwrap();
    let hex = text.strip_suffix('\n').unwrap();
    assert!(
        hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        "{text:?}"
    );
    // A key made before secrets existed: --if-missing adds the secret, keeps the key.
    let key = std::fs::read(dir.path().join("keys/seal.key.pem")).unwrap();
    std::fs::remove_file(&secret).unwrap();
    let mut c = seal_in(dir.path());
    c.args(["keygen", "--out", "keys", "--if-missing"]);
    let (code, out, err) = run_for(c, 30);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("key pair already in"), "{out}");
    assert_eq!(
        std::fs::read(dir.path().join("keys/seal.key.pem")).unwrap(),
        key
    );
    let again = std::fs::read_to_string(&secret).unwrap();
    assert_ne!(again, text, "a new random secret");
    assert_eq!(mode_of(&secret), 0o600);
    // Both present: --if-missing writes nothing; without it, nothing is overwritten.
    let mut c = seal_in(dir.path());
    c.args(["keygen", "--out", "keys", "--if-missing"]);
    assert_eq!(run_for(c, 30).0, Some(0));
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), again);
    let mut c = seal_in(dir.path());
    c.args(["keygen", "--out", "keys"]);
    let (code, _, err) = run_for(c, 30);
    assert_eq!(code, Some(2));
    assert!(err.contains("refusing to overwrite"), "{err}");
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), again);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_constant_salt_judge_serve_and_replay_refuse_without_a_secret_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = seal_in(dir.path());
    c.args(["keygen", "--out", "keys"]);
    assert_eq!(run_for(c, 30).0, Some(0));
    std::fs::remove_file(dir.path().join("keys/seal.secret")).unwrap();
    let pass = example("run-narrative-0010-pass");
    let fixtures = file_url(&fixture_store_dir());
    let trust = fixture_trust_pem();
    let key = "keys/seal.key.pem";
    let commands: Vec<Vec<String>> = vec![
        vec!["judge".into(), pass.display().to_string()],
        vec!["serve".into(), "--listen".into(), "127.0.0.1:0".into()],
        vec![
            "replay".into(),
            "--all".into(),
            "--judges".into(),
            "stored".into(),
        ],
    ];
    for args in &commands {
        let with_store = |c: &mut Command| {
            c.args(args)
                .args(["--store", "file://./store", "--key", key]);
            if args[0] == "replay" {
                c.args(["--from", &fixtures, "--trust"]).arg(&trust);
            }
        };
        // No variable and no file (the embedded config's var/keys/seal.secret is absent).
        let mut c = seal_in(dir.path());
        with_store(&mut c);
        let (code, _, err) = run_for(c, 30);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains("no deployment secret")
                && err.contains("SEAL_SEED_SALT")
                && err.contains("keys/seal.secret does not exist")
                && err.contains("seal keygen --out keys --if-missing"),
            "{args:?}: {err}"
        );
        // A short variable: refused naming it.
        let mut c = seal_in(dir.path());
        c.env("SEAL_SEED_SALT", "test-salt");
        with_store(&mut c);
        let (code, _, err) = run_for(c, 30);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains("SEAL_SEED_SALT") && err.contains("at least 32"),
            "{args:?}: {err}"
        );
        assert!(
            !dir.path().join("store").exists(),
            "{args:?} created the store"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_constant_salt_the_secret_file_from_keygen_is_enough_and_read_only_commands_need_none() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    // The README's first step: the default key folder, the secret beside the key.
    let mut c = seal_in(dir.path());
    c.args(["keygen", "--out", "var/keys", "--if-missing"]);
    assert_eq!(run_for(c, 30).0, Some(0));
    let mut c = seal_cmd_with(dir.path(), &lb, "sk-a", "sk-b", SALT);
    c.env_remove("SEAL_SEED_SALT")
        .arg("judge")
        .arg(example("run-narrative-0010-pass"));
    let out = run(c).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Without any secret, every read-only command still runs on the sealed store.
    std::fs::remove_file(dir.path().join("var/keys/seal.secret")).unwrap();
    let pem = "var/keys/seal.pub.pem";
    let run_id = "run-narrative-0010-pass";
    for args in [
        vec!["verify", run_id, "--trust", pem],
        vec!["explain", run_id, "--trust", pem],
        vec!["stats", "--trust", pem],
        vec!["log", "verify", "--trust", pem],
        vec!["log", "prove", run_id, "--trust", pem],
        vec!["log", "checkpoint", "--trust", pem],
        vec!["export", "verdict", run_id, "--trust", pem],
    ] {
        let mut c = seal_in(dir.path());
        c.args(&args);
        let (code, out, err) = run_for(c, 60);
        // export answers 1 for a run without Verdict ids; it must not fail on a secret.
        assert!(
            matches!(code, Some(0) | Some(1)) && !err.contains("secret"),
            "{args:?}: {code:?}\n{out}\n{err}"
        );
    }
}

// ---- 7. keygen --out: a private folder, never a link -----------------------------------------

#[test]
fn keygen_out_folder_is_0700_whatever_the_umask_and_never_a_link_or_writable_by_others() {
    let dir = tempfile::tempdir().unwrap();
    // umask 000 would give 0777.
    let out = Command::new("sh")
        .arg("-c")
        .arg("umask 000; exec \"$0\" keygen --out \"$1\"")
        .arg(env!("CARGO_BIN_EXE_seal"))
        .arg(dir.path().join("a/k"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(mode_of(&dir.path().join("a/k")), 0o700);
    assert_eq!(mode_of(&dir.path().join("a/k/seal.key.pem")), 0o600);
    assert_eq!(mode_of(&dir.path().join("a/k/seal.secret")), 0o600);
    // A link to a folder: refused, nothing written where it points.
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    // A folder others may write to: refused too (they could swap the key or the secret).
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    for (target, needle, emptied) in [
        (&link, "symbolic link", &real),
        (&shared, "writable by group or others", &shared),
    ] {
        let mut c = seal_in(dir.path());
        c.args(["keygen", "--out"]).arg(target);
        let (code, _, err) = run_for(c, 30);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(needle), "{err}");
        assert_eq!(std::fs::read_dir(emptied).unwrap().count(), 0);
    }
    // An existing folder of the owner's (0755) is fine.
    let own = dir.path().join("own");
    std::fs::create_dir(&own).unwrap();
    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut c = seal_in(dir.path());
    c.args(["keygen", "--out"]).arg(&own);
    assert_eq!(run_for(c, 30).0, Some(0));
}

// ---- 6. The daemon: no open API on the network, tokens -------------------------------------

#[test]
fn serve_refuses_a_non_loopback_address_without_a_token_unless_insecure_no_auth() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = seal_in(dir.path());
    c.args(["keygen", "--out", "keys"]);
    assert_eq!(run_for(c, 30).0, Some(0));
    let serve = |extra: &[&str], token: Option<&str>| {
        let mut c = seal_in(dir.path());
        c.args([
            "serve",
            "--listen",
            "0.0.0.0:0",
            "--store",
            "file://./store",
        ])
        .args(["--key", "keys/seal.key.pem", "--create-store"])
        .args(extra)
        // The judges' keys are there: this test is about the API token.
        .env("SEAL_JUDGE_A_KEY", "sk-secure-defaults-a-0123")
        .env("SEAL_JUDGE_B_KEY", "sk-secure-defaults-b-0123");
        if let Some(t) = token {
            c.env("SEAL_API_TOKEN", t);
        }
        c
    };
    let (code, out, err) = run_for(serve(&[], None), 30);
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(
        err.contains("refusing to listen on 0.0.0.0:0 without an API token")
            && err.contains("--insecure-no-auth"),
        "{err}"
    );
    assert!(!out.contains("listening"), "{out}");
    assert!(!dir.path().join("store").exists());
    // With the flag it starts, warning loudly; with a token it starts quietly.
    for (extra, token, warned) in [
        (&["--insecure-no-auth"][..], None, true),
        (&[][..], Some("a-token-of-the-operator-0123456789"), false),
    ] {
        let (code, out, err) = run_for(serve(extra, token), 8);
        assert_eq!(code, None, "it keeps serving: {out}\n{err}");
        assert!(
            out.contains("seal serve listening on http://0.0.0.0:"),
            "{out}\n{err}"
        );
        assert_eq!(err.contains("INSECURE"), warned, "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bearer_scheme_is_case_insensitive_and_the_metrics_token_opens_metrics_only() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let (api, metrics) = ("api-token-0123456789", "metrics-token-0123456789");
    let engine = engine_with(
        &lb,
        "memory://",
        &[("SEAL_API_TOKEN", api), ("SEAL_METRICS_TOKEN", metrics)],
    )
    .await;
    let (base, _stop) = start(engine).await;
    let c = SealClient::new(base);
    // Raw requests: each carries an Authorization header of its own (any scheme, any case).
    let status = |req: RequestBuilder, auth: Option<String>| {
        let c = c.clone();
        async move {
            let req = match auth {
                Some(a) => req.header("authorization", a),
                None => req,
            };
            c.send(req).await.status.as_u16()
        }
    };
    // /metrics: the metrics token, the API token (any case of the scheme), nothing else.
    for auth in [
        format!("Bearer {metrics}"),
        format!("bearer {api}"),
        format!("BEARER {metrics}"),
    ] {
        assert_eq!(
            status(c.raw(Method::GET, "/metrics"), Some(auth.clone())).await,
            200,
            "{auth}"
        );
    }
    for auth in [
        None,
        Some("Bearer wrong".to_string()),
        Some(format!("Basic {metrics}")),
    ] {
        assert_eq!(
            status(c.raw(Method::GET, "/metrics"), auth.clone()).await,
            401,
            "{auth:?}"
        );
    }
    // The metrics token opens no other route, reading or writing.
    let m = Some(format!("Bearer {metrics}"));
    assert_eq!(
        status(c.raw(Method::GET, "/v1/runs/run-x"), m.clone()).await,
        401
    );
    assert_eq!(
        status(c.raw(Method::GET, "/v1/stats"), m.clone()).await,
        401
    );
    assert_eq!(
        status(c.raw(Method::GET, "/openapi.json"), m.clone()).await,
        401
    );
    let header = std::fs::read(example("run-narrative-0010-pass").join("header.json")).unwrap();
    let put = c
        .raw(Method::PUT, "/v1/runs/run-narrative-0010-pass")
        .body(header.clone());
    assert_eq!(status(put, m.clone()).await, 401);
    let fin = c.raw(Method::POST, "/v1/runs/run-narrative-0010-pass/finalize");
    assert_eq!(status(fin, m).await, 401);
    // The API token, whatever the scheme's case, opens the API.
    for scheme in ["bearer", "BEARER", "Bearer"] {
        let auth = Some(format!("{scheme} {api}"));
        assert_eq!(
            status(c.raw(Method::GET, "/v1/runs/run-x"), auth).await,
            404,
            "{scheme}"
        );
    }
    let put = c
        .raw(Method::PUT, "/v1/runs/run-narrative-0010-pass")
        .body(header);
    assert_eq!(status(put, Some(format!("bearer {api}"))).await, 201);
    assert_eq!(status(c.raw(Method::GET, "/healthz"), None).await, 200);
}

// ---- 7. Leases: planted leases neither hold a call back nor fail it -------------------------

/// A lease of another holder, well-formed, living `lifetime_ms` from now.
fn foreign_lease(epoch: u32, lifetime_ms: u64) -> bytes::Bytes {
    let now = seal_engine::leasing::now_ms();
    let doc = seal_engine::leasing::LeaseDoc {
        schema_version: seal_engine::leasing::LEASE_SCHEMA.into(),
        holder: "another-replica".into(),
        epoch,
        taken_at_ms: now,
        expires_at_ms: now + lifetime_ms,
    };
    bytes::Bytes::from(seal_core::canonical::canonical_bytes(&doc).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_hour_long_lease_of_another_holder_does_not_hold_back_a_1s_judge_call() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let engine = engine_with(&lb, "memory://", &[("SEAL_JUDGE_TIMEOUT_MS", "1000")]).await;
    let run = RunId::parse("run-narrative-0010-pass").unwrap();
    let key = Key::lease(&run, RollId::R1, Slot::A, 1, 0);
    engine
        .store()
        .put(&key, foreign_lease(0, 3_600_000))
        .await
        .unwrap();
    // No honest replica with a 1 s timeout takes a lease over 1 + 5 + 10 s: it is taken over.
    let judged = tokio::time::timeout(
        Duration::from_secs(60),
        judge_roll1(&engine, &example("run-narrative-0010-pass")),
    )
    .await;
    assert!(
        judged.is_ok(),
        "the judge call waited for the planted lease"
    );
    assert_eq!(lb.calls().len(), 2, "each judge called once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_lease_epochs_never_fail_an_attempt_after_the_other_judge_was_paid() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let engine = engine_with(&lb, "memory://", &[]).await;
    let run = RunId::parse("run-narrative-0010-pass").unwrap();
    for epoch in 0..200 {
        let key = Key::lease(&run, RollId::R1, Slot::B, 1, epoch);
        let garbage = bytes::Bytes::from(format!("garbage {epoch}"));
        engine.store().put(&key, garbage).await.unwrap();
    }
    let started = Instant::now();
    let (_, report) = judge_roll1(&engine, &example("run-narrative-0010-pass")).await;
    assert_eq!(lb.calls().len(), 2, "each judge called once: {report:?}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

// ---- 7. log verify --checkpoint reads through fsio; read-only commands create nothing ------

#[test]
fn log_verify_checkpoint_is_read_through_fsio_no_fifo_no_device_no_link() {
    let (dir, root) = copy_fixture_store();
    let fifo = dir.path().join("note.fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let real = dir.path().join("note.txt");
    std::fs::write(&real, b"not a note").unwrap();
    let link = dir.path().join("note.link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let store = file_url(&root);
    for (note, needle) in [
        (fifo.as_path(), "not a regular file"),
        (Path::new("/dev/zero"), "not a regular file"),
        (link.as_path(), "symbolic link"),
    ] {
        let mut c = seal_in(dir.path());
        c.args(["log", "verify", "--store", &store, "--checkpoint"])
            .arg(note)
            .arg("--trust")
            .arg(fixture_trust_pem());
        let (code, out, err) = run_for(c, 30);
        assert_eq!(code, Some(2), "{}: {out}\n{err}", note.display());
        assert!(err.contains(needle), "{}: {err}", note.display());
    }
}

#[test]
fn read_only_commands_never_create_a_mistyped_store_folder() {
    let dir = tempfile::tempdir().unwrap();
    let pem = fixture_trust_pem().display().to_string();
    let store = "file://./no-such-store";
    for args in [
        vec!["log", "checkpoint", "--store", store, "--trust", &pem],
        vec!["log", "verify", "--store", store, "--trust", &pem],
        vec!["log", "prove", "run-x", "--store", store, "--trust", &pem],
        vec!["explain", "run-x", "--store", store, "--trust", &pem],
        vec!["verify", "--all", "--store", store, "--trust", &pem],
        vec!["stats", "--store", store, "--trust", &pem],
        vec![
            "export", "verdict", "run-x", "--store", store, "--trust", &pem,
        ],
    ] {
        let mut c = seal_in(dir.path());
        c.args(&args);
        let (code, _, err) = run_for(c, 30);
        // A missing store is "could not answer" in every command (it was 1 in some).
        assert_eq!(code, Some(2), "{args:?}: {code:?} {err}");
        assert!(err.contains("no-such-store"), "{args:?}: {err}");
        assert!(
            !dir.path().join("no-such-store").exists(),
            "{args:?} created the store folder"
        );
    }
}

// ---- 7. Bidi controls on the pages ---------------------------------------------------------

const BIDI: [char; 12] = [
    '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}',
    '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}',
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bidi_controls_in_game_text_rationales_and_models_are_shown_visibly_on_both_pages() {
    // "fail" that a browser would display as "pass" reversed, and every other control.
    let all: String = BIDI.iter().collect();
    let evil = format!("verdict: \u{202E}liaf\u{202C} {all} end");
    let model = format!("{MODEL_A}\u{202E}gnp.exe");
    let (dir, url, pem, run) = sealed_run_with_text(&evil, &model).await;
    let store = Store::open_existing(&url).await.unwrap();
    let key = seal_fs::keys::load_public_key(&pem).unwrap();
    let policy = seal_log::cosign::check::Policy::default();
    let verifier = seal_engine::verify::Verifier::load(
        &store,
        vec![key],
        seal_log::DEFAULT_ORIGIN,
        &policy,
        seal_engine::verify::Scope::All,
    )
    .await
    .unwrap();
    let explained =
        seal_engine::explain_load::explain(&store, &RunId::parse(&run).unwrap(), &verifier)
            .await
            .unwrap();
    let explain_page = explained.html("seal verify x");
    let stats_page = seal_engine::stats_load::stats(
        &store,
        &verifier,
        seal_engine::stats_load::Query::default(),
    )
    .await
    .unwrap()
    .html();
    for (name, page, min) in [("explain", &explain_page, 5), ("stats", &stats_page, 1)] {
        let hidden = page.chars().filter(|c| BIDI.contains(c)).count();
        assert_eq!(hidden, 0, "{name}: bidi controls left on the page");
        assert!(
            page.matches("[U+202E]").count() >= min,
            "{name}: the override is not shown"
        );
    }
    assert!(explain_page.contains("verdict: [U+202E]liaf[U+202C] [U+202A][U+202B]"));
    assert!(explain_page.contains("[U+200E][U+200F][U+061C] end"));
    assert!(stats_page.contains(&format!("{MODEL_A}[U+202E]gnp.exe")));
    drop(dir);
}

// ---- 7. A leftover staging file: verify and replay --from agree ----------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leftover_staging_file_is_skipped_alike_by_verify_and_replay_from() {
    let (dir, root) = copy_fixture_store();
    let run_id = "run-narrative-0010-pass";
    let run_dir = root.join("runs").join(run_id);
    // What a writer killed between its staging file and the rename leaves behind.
    std::fs::write(run_dir.join("evidence.json#8412390012"), b"{\"half\":").unwrap();
    std::fs::write(
        run_dir.join("roll-1/judge-a/attempt-1/raw.json#77"),
        b"torn",
    )
    .unwrap();
    let pem = fixture_trust_pem();
    let archive = file_url(&root);
    let mut c = seal_in(dir.path());
    c.args(["verify", run_id, "--store", &archive, "--trust"])
        .arg(&pem);
    let (code, out, err) = run_for(c, 60);
    assert_eq!(code, Some(0), "verify: {out}\n{err}");
    let mut c = seal_in(dir.path());
    c.args(["keygen", "--out", "keys"]);
    assert_eq!(run_for(c, 30).0, Some(0));
    let mut c = seal_in(dir.path());
    c.env("SEAL_SEED_SALT", SALT)
        .args(["replay", run_id, "--judges", "stored", "--from", &archive])
        .args([
            "--store",
            "file://./dest",
            "--key",
            "keys/seal.key.pem",
            "--trust",
        ])
        .arg(&pem);
    let (code, out, err) = run_for(c, 120);
    assert_eq!(code, Some(0), "replay --from: {out}\n{err}");
    // Imported without the staging files, and the destination verifies.
    let imported = dir.path().join("dest/runs").join(run_id);
    assert!(imported.join("evidence.json").is_file());
    assert!(!imported.join("evidence.json#8412390012").exists());
    assert!(!imported
        .join("roll-1/judge-a/attempt-1/raw.json#77")
        .exists());
    let mut c = seal_in(dir.path());
    c.args(["verify", "--all", "--store", "file://./dest", "--trust"])
        .arg(&pem)
        .args(["--trust", "keys/seal.pub.pem"]);
    let (code, out, err) = run_for(c, 60);
    assert_eq!(code, Some(0), "{out}\n{err}");
}
