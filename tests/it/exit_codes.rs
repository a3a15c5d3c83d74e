//! Exit codes, one rule for every command (README "Commands", docs/DESIGN.md §8): **0** the
//! answer is yes; **1** the command judged its input and the answer is no; **2** it could not
//! answer (usage, config, keys, the store, a named run absent, an unreadable input or an
//! existing output, infrastructure, corruption).
//!
//! One row per command × error, each named, run as a real `seal` process from an empty folder
//! (no config file: the embedded default). Every row also checks stderr names the cause, and
//! that nothing was created where a store or output was missing. All rows run, then every
//! mismatch is reported at once.

use crate::common;

use common::{copy_tree, example, file_url, fixture_store_dir, fixture_trust_pem};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A run of the fixture store that verifies and carries a Verdict's extension fields.
const LEGACY: &str = "legacy-3f9a1c0e7b2d48a6-r0";
/// A run of the fixture store that verifies but has no Verdict (no `_designId`).
const PLAIN: &str = "run-narrative-0010-pass";
/// A run tampered in the fixture's copy: it no longer verifies.
const TAMPERED: &str = "run-trpg-0021-pass";
/// A run folder copied under a new name into the store: present, never logged.
const UNLOGGED: &str = "run-copied-never-logged";

/// Everything the rows need, in one temporary folder.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let f = Fixture {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(f.path("cwd")).unwrap();
        let keygen = seal(&f, &["keygen", "--out", &f.at("keys")]);
        assert_eq!(keygen.0, Some(0), "keygen: {}", keygen.2);
        let store = f.path("store");
        copy_tree(&fixture_store_dir(), &store);
        let consensus = store.join(format!("runs/{TAMPERED}/roll-1/consensus.json"));
        let mut bytes = std::fs::read(&consensus).unwrap();
        bytes.push(b'\n');
        std::fs::write(&consensus, bytes).unwrap();
        copy_tree(
            &store.join(format!("runs/{PLAIN}")),
            &store.join(format!("runs/{UNLOGGED}")),
        );
        std::fs::create_dir(f.path("empty-store")).unwrap();
        std::fs::write(f.path("exists.txt"), "keep").unwrap();
        std::fs::write(f.path("not-a-verdict.json"), "{}").unwrap();
        std::fs::create_dir(f.path("not-empty")).unwrap();
        std::fs::write(f.path("not-empty/file"), "keep").unwrap();
        copy_tree(&example(PLAIN), &f.path("bad-run"));
        std::fs::write(f.path("bad-run/brief.md"), "# tampered brief\n").unwrap();
        f
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn at(&self, rel: &str) -> String {
        self.path(rel).display().to_string()
    }

    fn url(&self, rel: &str) -> String {
        file_url(&self.path(rel))
    }
}

/// Runs `seal ARGS` from the fixture's empty folder for at most 60 s: (exit code, or None when
/// it had to be killed; stdout; stderr).
fn seal(f: &Fixture, args: &[&str]) -> (Option<i32>, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_seal"));
    c.current_dir(f.path("cwd"))
        .args(args)
        // Judges nobody answers: no row gets as far as calling one.
        .env("SEAL_JUDGE_A_URL", "http://127.0.0.1:9")
        .env("SEAL_JUDGE_B_URL", "http://127.0.0.1:9")
        .env("SEAL_JUDGE_A_MODEL", "a")
        .env("SEAL_JUDGE_B_MODEL", "b")
        .env("SEAL_JUDGE_A_KEY", "ka")
        .env("SEAL_JUDGE_B_KEY", "kb")
        .env("SEAL_SEED_SALT", "exit-codes-salt-of-at-least-32-bytes")
        .env_remove("SEAL_API_TOKEN")
        .env_remove("SEAL_LOG");
    run_for(c, 60)
}

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

/// One command × error: its name, the arguments, the exit code and what stderr must say.
struct Row {
    name: &'static str,
    args: Vec<String>,
    code: i32,
    says: &'static str,
}

fn row(name: &'static str, code: i32, says: &'static str, args: &[&str]) -> Row {
    Row {
        name,
        args: args.iter().map(|s| s.to_string()).collect(),
        code,
        says,
    }
}

/// validate, keygen, adapt: the commands without a store.
#[rustfmt::skip]
fn file_rows(f: &Fixture) -> Vec<Row> {
    let invalid = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/invalid/header-genre-enum.json");
    let verdict = Path::new(env!("CARGO_MANIFEST_DIR")).join("sealed-fixtures/verdicts/accept.json");
    let (invalid, verdict) = (invalid.display().to_string(), verdict.display().to_string());
    let out = f.at("adapted");
    vec![
        row("validate: an invalid document", 1, "INVALID", &["validate", &invalid]),
        row("validate: a missing file", 2, "no such file", &["validate", &f.at("missing/x.json")]),
        row("validate: a bad --max-bytes", 2, "invalid value", &["validate", "--max-bytes", "lots", &invalid]),
        row("keygen: an existing secret", 2, "refusing to overwrite", &["keygen", "--out", &f.at("keys")]),
        row("adapt: an unknown genre", 2, "unknown genre", &["adapt", "verdict", &verdict, "--out", &out, "--genre", "chess"]),
        row("adapt: a missing Verdict file", 2, "does not exist", &["adapt", "verdict", &f.at("missing/v.json"), "--out", &out]),
        row("adapt: an invalid Verdict", 1, "not a valid agent-loop Verdict", &["adapt", "verdict", &f.at("not-a-verdict.json"), "--out", &out]),
        row("adapt: an output folder that is not empty", 2, "refusing to write the run folder", &["adapt", "verdict", &verdict, "--out", &f.at("not-empty")]),
    ]
}

/// verify, explain, stats, export, shadow-report: the commands that read a store.
#[rustfmt::skip]
fn reader_rows(f: &Fixture) -> Vec<Row> {
    let pem = fixture_trust_pem().display().to_string();
    let (store, missing) = (f.url("store"), f.url("missing"));
    vec![
        row("verify: a bad run id", 2, "invalid value", &["verify", "../x", "--store", &store, "--trust", &pem]),
        row("verify: a bad store URL", 2, "invalid value", &["verify", PLAIN, "--store", "ftp://x", "--trust", &pem]),
        row("verify: a missing store", 2, "no store there", &["verify", PLAIN, "--store", &missing, "--trust", &pem]),
        row("verify: a run not in the store", 2, "no run run-nope", &["verify", "run-nope", "--store", &store, "--trust", &pem]),
        row("verify: no trusted key", 2, "no trusted public key", &["verify", PLAIN, "--store", &store]),
        row("verify: a run that does not verify", 1, "NOT VERIFIED", &["verify", TAMPERED, "--store", &store, "--trust", &pem]),
        row("explain: a bad store URL", 2, "invalid value", &["explain", PLAIN, "--store", "ftp://x", "--trust", &pem]),
        row("explain: a missing store", 2, "no store there", &["explain", PLAIN, "--store", &missing, "--trust", &pem]),
        row("explain: a run not in the store", 2, "no run run-nope", &["explain", "run-nope", "--store", &store, "--trust", &pem]),
        row("explain: an existing --out", 2, "already exists", &["explain", PLAIN, "--store", &store, "--trust", &pem, "--out", &f.at("exists.txt")]),
        row("explain: a run that does not verify", 1, "does not verify", &["explain", TAMPERED, "--store", &store, "--trust", &pem]),
        row("stats: a --since that is not RFC 3339", 2, "invalid value", &["stats", "--store", &store, "--trust", &pem, "--since", "last tuesday"]),
        row("stats: an unknown --genre", 2, "unknown genre", &["stats", "--store", &store, "--trust", &pem, "--genre", "chess"]),
        row("stats: a bad store URL", 2, "invalid value", &["stats", "--store", "ftp://x", "--trust", &pem]),
        row("stats: a missing store", 2, "no store there", &["stats", "--store", &missing, "--trust", &pem]),
        row("stats: an existing --html", 2, "already exists", &["stats", "--store", &store, "--trust", &pem, "--html", &f.at("exists.txt")]),
        row("gc: without --dry-run (it deletes nothing)", 2, "deletes nothing", &["gc", "--store", &store]),
        row("gc: a missing store", 2, "no store there", &["gc", "--dry-run", "--store", &missing]),
        row("export: a run not in the store", 2, "no run run-nope", &["export", "verdict", "run-nope", "--store", &store, "--trust", &pem]),
        row("export: a missing store", 2, "no store there", &["export", "verdict", LEGACY, "--store", &missing, "--trust", &pem]),
        row("export: an existing --out", 2, "already exists", &["export", "verdict", LEGACY, "--store", &store, "--trust", &pem, "--out", &f.at("exists.txt")]),
        row("export: a run that does not verify", 1, "does NOT VERIFY", &["export", "verdict", TAMPERED, "--store", &store, "--trust", &pem]),
        row("export: a run decided without a Verdict", 1, "_designId", &["export", "verdict", PLAIN, "--store", &store, "--trust", &pem]),
        row("shadow-report: no ledger", 2, "does not exist", &["shadow-report", "--verdicts", &f.at("no-ledger.jsonl"), "--store", &store, "--trust", &pem]),
        row("shadow-report: a folder as the ledger", 2, "not a regular file", &["shadow-report", "--verdicts", &f.at("not-empty"), "--store", &store, "--trust", &pem]),
        row("shadow-report: a missing store", 2, "no store there", &["shadow-report", "--verdicts", &f.at("exists.txt"), "--store", &missing, "--trust", &pem]),
        row("shadow-report: no trusted key", 2, "no trusted public key", &["shadow-report", "--verdicts", &f.at("exists.txt"), "--store", &store]),
        row("shadow-report: an existing --html", 2, "already exists", &["shadow-report", "--verdicts", &f.at("exists.txt"), "--store", &store, "--trust", &pem, "--html", &f.at("exists.txt")]),
        row("shadow-report: a ledger of no Verdict is still a report", 0, "no valid verdict row", &["shadow-report", "--verdicts", &f.at("not-a-verdict.json"), "--store", &store, "--trust", &pem]),
    ]
}

/// log, replay, judge, serve, witness.
#[rustfmt::skip]
fn log_and_writer_rows(f: &Fixture) -> Vec<Row> {
    let pem = fixture_trust_pem().display().to_string();
    let (store, missing) = (f.url("store"), f.url("missing"));
    let fixtures = file_url(&fixture_store_dir());
    let key = f.at("keys/seal.key.pem");
    let replay = |run: &'static str| ["replay", run, "--judges", "stored", "--key", &key, "--trust", &pem].map(String::from);
    let with = |mut a: Vec<String>, more: &[&str]| {
        a.extend(more.iter().map(|s| s.to_string()));
        a
    };
    let mut rows = vec![
        row("log checkpoint: a missing store", 2, "no store there", &["log", "checkpoint", "--store", &missing, "--trust", &pem]),
        row("log checkpoint: no checkpoint yet", 1, "no signed log checkpoint", &["log", "checkpoint", "--store", &f.url("empty-store"), "--trust", &pem]),
        row("log prove: a run not in the store", 2, "no run run-nope", &["log", "prove", "run-nope", "--store", &store, "--trust", &pem]),
        row("log prove: a run not in the log", 1, "not in the transparency log", &["log", "prove", UNLOGGED, "--store", &store, "--trust", &pem]),
        row("log prove: a missing store", 2, "no store there", &["log", "prove", PLAIN, "--store", &missing, "--trust", &pem]),
        row("log verify: a missing store", 2, "no store there", &["log", "verify", "--store", &missing, "--trust", &pem]),
        row("log verify: a bad store URL", 2, "invalid value", &["log", "verify", "--store", "ftp://x", "--trust", &pem]),
        row("log verify: a missing --checkpoint file", 2, "does not exist", &["log", "verify", "--store", &fixtures, "--trust", &pem, "--checkpoint", &f.at("missing/note")]),
        row("log rebuild: a missing store", 2, "no store there", &["log", "rebuild", "--store", &missing, "--key", &key]),
        row("judge: a missing run folder", 2, "does not exist", &["judge", &f.at("missing/run"), "--store", &missing, "--key", &key]),
        row("judge: a run folder refused", 1, "briefHash", &["judge", &f.at("bad-run"), "--store", &missing, "--key", &key]),
        row("judge: memory:// without the flag", 2, "refusing to judge into memory://", &["judge", &f.at("bad-run"), "--store", "memory://", "--key", &key]),
        row("judge: a bad store URL", 2, "invalid value", &["judge", &f.at("bad-run"), "--store", "ftp://x", "--key", &key]),
        row("serve: open to the network without a token", 2, "refusing", &["serve", "--listen", "0.0.0.0:0", "--store", &missing, "--key", &key]),
        row("serve: a bad store URL", 2, "invalid value", &["serve", "--store", "ftp://x", "--key", &key]),
        row("witness serve: a missing key", 2, "does not exist", &["witness", "serve", "--key", &f.at("missing/w.pem"), "--state", &f.at("missing/w.state"), "--log-key", &pem, "--listen", "127.0.0.1:0"]),
    ];
    let replays = [
        ("replay: an unknown --strategy", 2, "unknown consensus strategy", with(replay(PLAIN).to_vec(), &["--store", &store, "--strategy", "dual-strict/2"])),
        ("replay: a run not in the store", 2, "no run run-nope", with(replay("run-nope").to_vec(), &["--store", &store])),
        ("replay: a missing store, in place", 2, "no store there", with(replay(PLAIN).to_vec(), &["--store", &missing])),
        ("replay: a run not in the --from archive", 2, "no run run-nope", with(replay("run-nope").to_vec(), &["--store", &missing, "--from", &fixtures])),
        ("replay: a missing --from archive", 2, "missing", with(replay(PLAIN).to_vec(), &["--store", &missing, "--from", &missing])),
    ];
    for (name, code, says, args) in replays {
        rows.push(Row { name, args, code, says });
    }
    rows
}

#[test]
fn the_same_error_gives_the_same_exit_code_in_every_command() {
    let f = Fixture::new();
    let rows: Vec<Row> = [file_rows(&f), reader_rows(&f), log_and_writer_rows(&f)]
        .into_iter()
        .flatten()
        .collect();
    let mut wrong = Vec::new();
    for r in &rows {
        let args: Vec<&str> = r.args.iter().map(String::as_str).collect();
        let (code, out, err) = seal(&f, &args);
        let mut problems = Vec::new();
        if code != Some(r.code) {
            problems.push(format!("exit {code:?}, want {}", r.code));
        }
        if !err.contains(r.says) && !out.contains(r.says) {
            problems.push(format!("does not say {:?}", r.says));
        }
        // Read-only commands never create a store; nothing is written where a row fails.
        if f.path("missing").exists() {
            problems.push("created the missing folder".into());
            let _ = std::fs::remove_dir_all(f.path("missing"));
        }
        if std::fs::read_to_string(f.path("exists.txt"))
            .ok()
            .as_deref()
            != Some("keep")
        {
            problems.push("overwrote exists.txt".into());
            std::fs::write(f.path("exists.txt"), "keep").unwrap();
        }
        if !problems.is_empty() {
            wrong.push(format!(
                "{}: {}\n    stdout: {}\n    stderr: {}",
                r.name,
                problems.join("; "),
                out.trim(),
                err.trim()
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} rows wrong:\n{}",
        wrong.len(),
        rows.len(),
        wrong.join("\n")
    );
}

/// Every command that opens a store honours `SEAL_LOG` and `--log-format` (export used to set
/// up no logging at all).
#[test]
fn every_command_that_opens_a_store_logs_as_asked() {
    let f = Fixture::new();
    let pem = fixture_trust_pem().display().to_string();
    let store = file_url(&fixture_store_dir());
    let commands: [&[&str]; 5] = [
        &["verify", PLAIN, "--store", &store, "--trust", &pem],
        &["explain", PLAIN, "--store", &store, "--trust", &pem],
        &["stats", "--store", &store, "--trust", &pem],
        &[
            "export", "verdict", LEGACY, "--store", &store, "--trust", &pem,
        ],
        &["log", "checkpoint", "--store", &store, "--trust", &pem],
    ];
    for args in commands {
        let mut c = Command::new(env!("CARGO_BIN_EXE_seal"));
        c.current_dir(f.path("cwd"))
            .env("SEAL_LOG", "seal=debug")
            .arg("--log-format")
            .arg("json")
            .args(args);
        let (code, _, err) = run_for(c, 60);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        let logged = err.lines().any(|l| {
            serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| {
                v["level"] == "DEBUG"
                    && v["fields"]["message"]
                        .as_str()
                        .is_some_and(|m| m.starts_with("store opened"))
            })
        });
        assert!(
            logged,
            "{args:?}: no JSON debug line from the store opening:\n{err}"
        );
    }
}
