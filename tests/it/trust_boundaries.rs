//! Trust boundaries (docs/DESIGN.md §11): nothing unverified becomes evidence. Each test is
//! named after a defect it pins: hostile archives imported by `seal replay --from`, planted
//! judge attempts resumed by `seal judge`, exports of runs that do not verify, special files
//! and links given as inputs, and the smaller holes of the same kind.
//!
//! Everything runs on real files, FIFOs, links and `/dev/zero`, with the real `seal` binary
//! and the loopback judge over HTTP; every test works on copies, never on the committed store.

use crate::common;

use common::*;
use seal_core::ids::RunId;
use seal_core::sealing::PublicKey;
use seal_engine::import::{Archive, ImportError, Imported, Limits};
use seal_store::{Key, Store};
use seal_testkit::loopback::Loopback;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const RUN: &str = "run-narrative-0010-pass";
const OTHER: &str = "run-puzzle-0013-fail-end";

/// Every entry under `root` (links not followed): path → what it is and its sha256.
fn tree(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let t = e.file_type().unwrap();
            if t.is_symlink() {
                out.insert(
                    rel,
                    format!("link {}", std::fs::read_link(&p).unwrap().display()),
                );
            } else if t.is_dir() {
                out.insert(rel, "dir".into());
                walk(root, &p, out);
            } else if t.is_file() {
                let h = seal_core::canonical::Hash::of(&std::fs::read(&p).unwrap());
                out.insert(rel, format!("file {h}"));
            } else {
                out.insert(rel, "special".into());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

fn symlink(target: &Path, link: &Path) {
    if link.is_dir() && !link.is_symlink() {
        std::fs::remove_dir_all(link).unwrap();
    } else {
        let _ = std::fs::remove_file(link);
    }
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// Runs a command, killing it (and failing the test) if it takes longer than `secs`.
fn run_within(mut c: Command, secs: u64) -> Output {
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("hung for {secs} s: {}", text(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn run_async(c: Command, secs: u64) -> Output {
    tokio::task::spawn_blocking(move || run_within(c, secs))
        .await
        .unwrap()
}

/// A fresh signing key pair on disk: (folder, private PEM, public PEM).
fn key_pair() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (k, p) =
        seal_fs::keys::write_key_pair(&seal_fs::keys::generate_signing_key(), dir.path()).unwrap();
    (dir, k, p)
}

fn seal_at(cwd: &Path, lb: &Loopback) -> Command {
    seal_cmd_with(
        cwd,
        lb,
        "sk-trust-a-0123456789",
        "sk-trust-b-0123456789",
        "trust-salt-0123456789abcdef0123456789abcdef",
    )
}

fn replay_from(
    cwd: &Path,
    lb: &Loopback,
    src: &Path,
    dest: &Path,
    key: &Path,
    run: &str,
) -> Command {
    let mut c = seal_at(cwd, lb);
    c.args(["replay", run, "--judges", "stored", "--json", "--from"])
        .arg(file_url(src))
        .arg("--store")
        .arg(file_url(dest))
        .arg("--key")
        .arg(key)
        .arg("--trust")
        .arg(fixture_trust_pem());
    c
}

/// A copy of the fixture store mutated by `mutate` (which returns the run id to replay), then
/// `seal replay --from` into `dest`: it must fail and leave `dest` byte for byte unchanged.
async fn assert_import_refused(dest: &Path, mutate: impl FnOnce(&Path) -> String) -> String {
    let (_src_dir, src) = copy_fixture_store();
    let run = mutate(&src);
    let work = tempfile::tempdir().unwrap();
    let (_k, key, _) = key_pair();
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let before = tree(dest);
    let out = run_async(replay_from(work.path(), &lb, &src, dest, &key, &run), 60).await;
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(tree(dest), before, "the destination changed");
    assert!(lb.calls().is_empty());
    text(&out.stdout)
}

fn empty_dest() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let dest = d.path().join("store");
    std::fs::create_dir(&dest).unwrap();
    (d, dest)
}

// ---------------------------------------------------------------------------------------------
// 1, 2: replay --from

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_from_does_not_copy_a_source_run_folder_that_is_a_symlink() {
    let (_d, dest) = empty_dest();
    let secrets = tempfile::tempdir().unwrap();
    std::fs::write(secrets.path().join("seal.key.pem"), "PRIVATE").unwrap();
    let out = assert_import_refused(&dest, |src| {
        symlink(secrets.path(), &src.join("runs/evil-run"));
        "evil-run".into()
    })
    .await;
    assert!(out.contains("symbolic link"), "{out}");
    assert!(!dest.join("runs/evil-run").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_from_refuses_a_symlink_inside_a_signed_run() {
    let (_d, dest) = empty_dest();
    let (_k, key, _) = key_pair();
    let out = assert_import_refused(&dest, |src| {
        symlink(&key, &src.join(format!("runs/{RUN}/stolen.pem")));
        RUN.into()
    })
    .await;
    assert!(out.contains("stolen.pem"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_from_refuses_fifos_in_a_source_run_and_its_frames() {
    let (_d, dest) = empty_dest();
    assert_import_refused(&dest, |src| {
        mkfifo(&src.join(format!("runs/{RUN}/roll-1/pipe.json")));
        RUN.into()
    })
    .await;
    assert_import_refused(&dest, |src| {
        let ev: serde_json::Value = serde_json::from_slice(
            &std::fs::read(src.join(format!("runs/{RUN}/roll-1/proof-package.json"))).unwrap(),
        )
        .unwrap();
        let h = ev["frames"][0]["hash"].as_str().unwrap().to_string();
        mkfifo(&src.join(format!("cas/sha256/{}/{h}", &h[..2])));
        RUN.into()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_from_extra_objects_never_make_an_imported_run_stop_verifying() {
    let (_d, dest) = empty_dest();
    let work = tempfile::tempdir().unwrap();
    let (_k, key, public) = key_pair();
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let out = run_async(
        replay_from(work.path(), &lb, &fixture_store_dir(), &dest, &key, RUN),
        60,
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = assert_import_refused(&dest, |src| {
        let extra = src.join(format!("runs/{RUN}/roll-1/judge-a/attempt-9"));
        std::fs::create_dir_all(&extra).unwrap();
        std::fs::write(extra.join("raw.json"), b"{\"planted\":true}").unwrap();
        RUN.into()
    })
    .await;
    assert!(out.contains("unbound object"), "{out}");
    let mut c = seal_at(work.path(), &lb);
    // The run's seal is the fixture key's; the destination's log is signed by the importer's.
    c.args(["verify", RUN, "--store"])
        .arg(file_url(&dest))
        .arg("--trust")
        .arg(fixture_trust_pem())
        .arg("--trust")
        .arg(&public);
    let v = run_async(c, 60).await;
    assert_eq!(v.status.code(), Some(0), "{}", text(&v.stdout));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_from_a_renamed_run_folder_leaves_nothing_behind() {
    let (_d, dest) = empty_dest();
    assert_import_refused(&dest, |src| {
        std::fs::rename(
            src.join(format!("runs/{RUN}")),
            src.join("runs/renamed-run"),
        )
        .unwrap();
        "renamed-run".into()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_from_an_undecided_run_imports_nothing() {
    let (_d, dest) = empty_dest();
    let out = assert_import_refused(&dest, |src| {
        std::fs::remove_file(src.join(format!("runs/{RUN}/evidence.json"))).unwrap();
        std::fs::remove_file(src.join(format!("runs/{RUN}/seal.dsse.json"))).unwrap();
        RUN.into()
    })
    .await;
    assert!(out.contains("not decided"), "{out}");
}

/// The files of `run` in a store folder, and the frames its proof packages name.
fn run_files(root: &Path, run: &str) -> BTreeMap<String, String> {
    let mut want: BTreeMap<String, String> = tree(root)
        .into_iter()
        .filter(|(p, what)| p.starts_with(&format!("runs/{run}/")) && what.starts_with("file"))
        .collect();
    for roll in ["roll-1", "roll-2"] {
        let Ok(b) = std::fs::read(root.join(format!("runs/{run}/{roll}/proof-package.json")))
        else {
            continue;
        };
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        for f in v["frames"].as_array().unwrap() {
            let h = f["hash"].as_str().unwrap();
            let p = format!("cas/sha256/{}/{h}", &h[..2]);
            let bytes = std::fs::read(root.join(&p)).unwrap();
            want.insert(
                p,
                format!("file {}", seal_core::canonical::Hash::of(&bytes)),
            );
        }
    }
    want
}

fn trusted() -> Vec<PublicKey> {
    vec![seal_fs::keys::load_public_key(&fixture_trust_pem()).unwrap()]
}

const LIMITS: Limits = Limits {
    document: 1 << 26,
    blob: 1 << 28,
};

/// One random hostile change to a source store; returns the run id to import.
fn mutate(src: &Path, rng: &mut impl rand::Rng, outside: &Path) -> (String, &'static str) {
    let run_dir = src.join(format!("runs/{RUN}"));
    let proof: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("roll-1/proof-package.json")).unwrap())
            .unwrap();
    let frame = proof["frames"][0]["hash"].as_str().unwrap().to_string();
    let frame_path = src.join(format!("cas/sha256/{}/{frame}", &frame[..2]));
    let folders = ["", "roll-1", "roll-1/judge-a", "roll-1/judge-b/attempt-1"];
    let folder = run_dir.join(folders[rng.gen_range(0..folders.len())]);
    match rng.gen_range(0..10) {
        0 => (RUN.into(), "none"),
        1 => {
            symlink(outside, &folder.join("link.json"));
            (RUN.into(), "symlink file")
        }
        2 => {
            symlink(&src.join(format!("runs/{OTHER}")), &run_dir);
            (RUN.into(), "symlinked run folder")
        }
        3 => {
            mkfifo(&folder.join("fifo.json"));
            (RUN.into(), "fifo")
        }
        4 => {
            let bytes: Vec<u8> = (0..rng.gen_range(1..64)).map(|_| rng.gen()).collect();
            std::fs::write(
                folder.join(format!("extra-{}.json", rng.gen::<u16>())),
                bytes,
            )
            .unwrap();
            (RUN.into(), "extra object")
        }
        5 => {
            std::fs::rename(&run_dir, src.join("runs/fuzz-renamed")).unwrap();
            ("fuzz-renamed".into(), "renamed folder")
        }
        6 => {
            std::fs::remove_file(run_dir.join("evidence.json")).unwrap();
            (RUN.into(), "undecided")
        }
        7 => {
            symlink(outside, &frame_path);
            (RUN.into(), "symlinked frame")
        }
        8 => {
            mkfifo(&frame_path);
            (RUN.into(), "fifo frame")
        }
        _ => {
            let aa = src.join(format!("cas/sha256/{}", &frame[..2]));
            let moved = src.join("moved-aa");
            std::fs::rename(&aa, &moved).unwrap();
            symlink(&moved, &aa);
            (RUN.into(), "symlinked frame folder")
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzzed_source_stores_change_the_destination_only_by_a_verified_run() {
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5ea1);
    let (_d, dest_root) = empty_dest();
    let dest = Store::open(&file_url(&dest_root)).await.unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("seal.key.pem");
    std::fs::write(&secret, "PRIVATE").unwrap();
    let want = run_files(&fixture_store_dir(), RUN);
    let mut seen = std::collections::BTreeSet::new();
    for round in 0..30 {
        let (_src_dir, src) = copy_fixture_store();
        let (mut changes, mut run) = (Vec::new(), String::new());
        for _ in 0..rng.gen_range(1..=2) {
            if run.starts_with("fuzz") {
                break;
            }
            let (r, what) = mutate(&src, &mut rng, &secret);
            run = r;
            changes.push(what);
        }
        seen.extend(changes.iter().copied());
        let clean = changes.iter().all(|c| *c == "none");
        let before = tree(&dest_root);
        let archive = Archive::open(&file_url(&src)).await.unwrap();
        let id = RunId::parse(&run).unwrap();
        let got =
            seal_engine::import::import_run(&archive, &dest, &id, &trusted(), LIMITS, false).await;
        let after = tree(&dest_root);
        if clean {
            assert!(
                matches!(got, Ok(Imported::Copied { .. })),
                "round {round}: {got:?}"
            );
            let added: BTreeMap<String, String> = after
                .iter()
                .filter(|(p, w)| w.starts_with("file") && !before.contains_key(*p))
                .map(|(p, w)| (p.clone(), w.clone()))
                .collect();
            let files: BTreeMap<String, String> = after
                .into_iter()
                .filter(|(_, w)| w.starts_with("file"))
                .collect();
            assert_eq!(files, want, "round {round}: exactly the bound objects");
            assert!(added.keys().all(|k| want.contains_key(k)));
        } else {
            assert!(got.is_err(), "round {round} {changes:?}: imported");
            assert_eq!(
                after, before,
                "round {round} {changes:?}: destination changed"
            );
        }
    }
    assert!(seen.len() >= 8, "the fuzzer tried too few kinds: {seen:?}");
}

use rand::Rng;

// ---------------------------------------------------------------------------------------------
// 3: authenticated resume

/// Judges roll 1 of RUN with `salt` into a fresh file store, and copies only its judge attempts
/// (edited by `edit`) into `victim`, as a write by something that is not this seal would.
async fn plant_attempts(victim: &Path, salt: &str, edit: &dyn Fn(&Path)) {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let other = tempfile::tempdir().unwrap();
    let engine = engine_with(&lb, &file_url(other.path()), &[("SEAL_SEED_SALT", salt)]).await;
    judge_roll1(&engine, &example(RUN)).await;
    for (p, what) in tree(other.path()) {
        // The attempts, and the judge policy they name (stored by digest).
        if what.starts_with("file") && (p.contains("/attempt-") || p.starts_with("policies/")) {
            let to = victim.join(&p);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(other.path().join(&p), &to).unwrap();
            edit(&to);
        }
    }
}

/// `seal judge RUN` into `store` with the salt `victim-salt` and both judges unreachable.
async fn judge_offline(store: &Path) -> Output {
    let work = tempfile::tempdir().unwrap();
    let (_k, key, _) = key_pair();
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let mut c = seal_cmd_with(
        work.path(),
        &lb,
        "sk-a-0123456789",
        "sk-b-0123456789",
        "victim-salt-0123456789abcdef0123456789abcdef",
    );
    c.env("SEAL_JUDGE_A_URL", "http://127.0.0.1:9")
        .env("SEAL_JUDGE_B_URL", "http://127.0.0.1:9")
        .env("SEAL_JUDGE_TIMEOUT_MS", "500")
        .arg("judge")
        .arg(example(RUN))
        .arg("--store")
        .arg(file_url(store))
        .arg("--key")
        .arg(&key);
    run_async(c, 120).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_judge_answers_are_not_sealed_on_resume() {
    let victim = tempfile::tempdir().unwrap();
    plant_attempts(
        victim.path(),
        "attacker-salt-0123456789abcdef0123456789abcdef",
        &|_| {},
    )
    .await;
    let out = judge_offline(victim.path()).await;
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        text(&out.stderr).contains("planted"),
        "{}",
        text(&out.stderr)
    );
    assert!(!victim
        .path()
        .join(format!("runs/{RUN}/evidence.json"))
        .exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_attempt_without_its_mac_is_planted_and_with_it_resumes() {
    // Same salt, so the requests are byte-identical; only the MAC tells them apart.
    let victim = tempfile::tempdir().unwrap();
    plant_attempts(
        victim.path(),
        "victim-salt-0123456789abcdef0123456789abcdef",
        &|p| {
            if p.ends_with("meta.json") {
                let mut v: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
                v.as_object_mut().unwrap().remove("attemptMac");
                std::fs::write(p, seal_core::canonical::canonical_bytes(&v).unwrap()).unwrap();
            }
        },
    )
    .await;
    let out = judge_offline(victim.path()).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("attemptMac"),
        "{}",
        text(&out.stderr)
    );

    let genuine = tempfile::tempdir().unwrap();
    plant_attempts(
        genuine.path(),
        "victim-salt-0123456789abcdef0123456789abcdef",
        &|_| {},
    )
    .await;
    let out = judge_offline(genuine.path()).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("PASS"), "{}", text(&out.stdout));
}

// ---------------------------------------------------------------------------------------------
// 4: exports verify

const LEGACY: &str = "legacy-3f9a1c0e7b2d48a6-r0";

fn export(cwd: &Path, lb: &Loopback, store: &Path, extra: &[&str]) -> Command {
    let mut c = seal_at(cwd, lb);
    c.args(["export", "verdict", LEGACY, "--store"])
        .arg(file_url(store))
        .arg("--trust")
        .arg(fixture_trust_pem())
        .args(extra);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_verdict_refuses_a_run_that_does_not_verify() {
    let (_d, root) = copy_fixture_store();
    let work = tempfile::tempdir().unwrap();
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let out = run_async(export(work.path(), &lb, &root, &[]), 60).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"accept\""));

    let ev = root.join(format!("runs/{LEGACY}/evidence.json"));
    std::fs::remove_file(root.join(format!("runs/{LEGACY}/seal.dsse.json"))).unwrap();
    let edited = std::fs::read_to_string(&ev)
        .unwrap()
        .replace("1893764520187392", "42");
    std::fs::write(&ev, edited).unwrap();
    let out = run_async(export(work.path(), &lb, &root, &[]), 60).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stdout).is_empty(), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("NOT VERIFY"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_out_refuses_to_overwrite_or_follow_a_symlink() {
    let work = tempfile::tempdir().unwrap();
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let existing = work.path().join("existing.json");
    std::fs::write(&existing, "keep").unwrap();
    let target = work.path().join("target.txt");
    std::fs::write(&target, "keep").unwrap();
    let link = work.path().join("link.json");
    symlink(&target, &link);
    for out_path in [&existing, &link] {
        let args = ["--out", out_path.to_str().unwrap()];
        let out = run_async(export(work.path(), &lb, &fixture_store_dir(), &args), 60).await;
        // Could not answer (2): an existing output is refused as `seal keygen` refuses it.
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    }
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "keep");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    let fresh = work.path().join("fresh.json");
    let args = ["--out", fresh.to_str().unwrap()];
    let out = run_async(export(work.path(), &lb, &fixture_store_dir(), &args), 60).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&fresh).unwrap().contains("accept"));
}

// ---------------------------------------------------------------------------------------------
// 5: special files and links as inputs

/// A change made to a run folder copy.
type Mutation = Box<dyn Fn(&Path)>;

/// A copy of an example run folder.
fn folder_copy() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("run");
    copy_tree(&example(RUN), &dir);
    (d, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn special_files_and_links_in_a_run_folder_are_refused_without_hanging() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let (_k, key, _) = key_pair();
    let blob = |dir: &Path| {
        std::fs::read_dir(dir.join("blobs"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
    };
    let cases: Vec<(&str, Mutation)> = vec![
        (
            "brief FIFO",
            Box::new(|d: &Path| mkfifo(&d.join("brief.md"))),
        ),
        (
            "brief /dev/zero",
            Box::new(|d: &Path| symlink(Path::new("/dev/zero"), &d.join("brief.md"))),
        ),
        (
            "header link",
            Box::new(|d: &Path| {
                let moved = d.parent().unwrap().join("header.json");
                std::fs::rename(d.join("header.json"), &moved).unwrap();
                symlink(&moved, &d.join("header.json"));
            }),
        ),
        ("blob FIFO", Box::new(move |d: &Path| mkfifo(&blob(d)))),
        (
            "blob /dev/zero",
            Box::new(move |d: &Path| symlink(Path::new("/dev/zero"), &blob(d))),
        ),
        (
            "roll folder link",
            Box::new(|d: &Path| {
                let moved = d.parent().unwrap().join("roll-1");
                std::fs::rename(d.join("roll-1"), &moved).unwrap();
                symlink(&moved, &d.join("roll-1"));
            }),
        ),
    ];
    for (name, make) in cases {
        let (_d, dir) = folder_copy();
        make(&dir);
        let store = tempfile::tempdir().unwrap();
        let mut c = seal_at(store.path(), &lb);
        c.arg("judge")
            .arg(&dir)
            .arg("--store")
            .arg(file_url(store.path()))
            .arg("--key")
            .arg(&key);
        let out = run_async(c, 30).await;
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out.stderr));
        assert!(
            !store.path().join("runs").exists(),
            "{name}: stored something"
        );
    }
    assert!(lb.calls().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn special_files_as_key_trust_and_config_are_refused_without_hanging() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let fifo = work.path().join("fifo");
    mkfifo(&fifo);
    let (_k, key, public) = key_pair();
    let link = work.path().join("link.pem");
    symlink(&public, &link);
    let store = work.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let bad: [&Path; 4] = [&fifo, Path::new("/dev/zero"), work.path(), &link];
    for input in bad {
        let mut judge = seal_at(work.path(), &lb);
        judge
            .arg("judge")
            .arg(example(RUN))
            .arg("--store")
            .arg(file_url(&store))
            .arg("--key")
            .arg(input);
        let mut verify = seal_at(work.path(), &lb);
        verify
            .args(["verify", "--all", "--store"])
            .arg(file_url(&fixture_store_dir()))
            .arg("--trust")
            .arg(input);
        let mut config = seal_at(work.path(), &lb);
        config
            .arg("--config")
            .arg(input)
            .args(["verify", "--all", "--store"])
            .arg(file_url(&fixture_store_dir()))
            .arg("--trust")
            .arg(&public);
        for (what, c) in [("--key", judge), ("--trust", verify), ("--config", config)] {
            let out = run_async(c, 20).await;
            assert_eq!(
                out.status.code(),
                Some(2),
                "{what} {}: {}",
                input.display(),
                text(&out.stderr)
            );
        }
    }
    let _ = key;
}

#[test]
fn keygen_never_overwrites_or_follows_a_symlink_for_either_file() {
    for file in ["seal.pub.pem", "seal.key.pem"] {
        for as_link in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let target = dir.path().join("precious.txt");
            std::fs::write(&target, "keep").unwrap();
            let path = dir.path().join(file);
            if as_link {
                symlink(&target, &path);
            } else {
                std::fs::write(&path, "keep").unwrap();
            }
            let out = Command::new(env!("CARGO_BIN_EXE_seal"))
                .current_dir(dir.path())
                .args(["keygen", "--out"])
                .arg(dir.path())
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2), "{file} link={as_link}");
            assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
            if !as_link {
                assert_eq!(std::fs::read_to_string(&path).unwrap(), "keep");
            }
            let other = if file == "seal.pub.pem" {
                "seal.key.pem"
            } else {
                "seal.pub.pem"
            };
            assert!(
                !dir.path().join(other).exists(),
                "{file}: half a pair written"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 6: the other holes

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_and_proof_package_too_large_together_are_refused_before_judging() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    // header 2 KB + proof package 8.5 KB: each under 12000 bytes, together (with the snapshot's
    // records) more than judging.json may hold.
    let engine = engine_edited(&lb, &[], &|t| {
        t.replace(
            "max_document_bytes = 67108864",
            "max_document_bytes = 12000",
        )
    })
    .await;
    let folder = submit_inputs(&engine, &example(RUN)).await;
    let bytes = folder.rolls()[0].canonical();
    let err = submit_roll(&engine, folder.run(), seal_core::ids::RollId::R1, bytes)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("judging.json"), "{err}");
    assert!(!engine
        .store()
        .exists(&Key::roll_file(
            folder.run(),
            seal_core::ids::RollId::R1,
            "proof-package.json"
        ))
        .await
        .unwrap());
    assert!(lb.calls().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_all_reports_a_malformed_evidence_and_replays_the_others() {
    let (_d, root) = copy_fixture_store();
    std::fs::write(root.join(format!("runs/{OTHER}/evidence.json")), "{").unwrap();
    let work = tempfile::tempdir().unwrap();
    let (_k, key, _) = key_pair();
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let mut c = seal_at(work.path(), &lb);
    c.args(["replay", "--all", "--judges", "stored", "--json", "--store"])
        .arg(file_url(&root))
        .arg("--key")
        .arg(&key)
        .arg("--trust")
        .arg(fixture_trust_pem());
    let out = run_async(c, 300).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let errors = v["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{v:#}");
    assert!(errors[0].as_str().unwrap().contains(OTHER), "{v:#}");
    assert!(v["runs"].as_u64().unwrap() >= 5, "{v:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judge_stores_only_the_blobs_the_proof_packages_reference() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let (_d, dir) = folder_copy();
    let junk = b"not a frame anyone references";
    let junk_hash = seal_core::canonical::Hash::of(junk);
    std::fs::write(dir.join(format!("blobs/{junk_hash}.png")), junk).unwrap();
    let engine = engine_with(&lb, "memory://", &[]).await;
    let folder = seal_fs::runfolder::RunFolder::read(&dir, 1 << 26).unwrap();
    assert!(folder.blobs().iter().all(|(h, _)| h != &junk_hash));
    seal_engine::judge_run::judge(&engine, &folder)
        .await
        .unwrap();
    assert!(!engine.store().exists(&Key::cas(&junk_hash)).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_commands_never_create_anything() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let (_k, key, _) = key_pair();
    let missing = work.path().join("mistyped");
    let dest = work.path().join("dest");
    let mut exp = export(work.path(), &lb, &missing, &[]);
    exp.current_dir(work.path());
    let mut ver = seal_at(work.path(), &lb);
    ver.args(["verify", RUN, "--store"])
        .arg(file_url(&missing))
        .arg("--trust")
        .arg(fixture_trust_pem());
    let rep = replay_from(work.path(), &lb, &missing, &dest, &key, RUN);
    for (what, c) in [("export", exp), ("verify", ver), ("replay --from", rep)] {
        let out = run_async(c, 60).await;
        assert_eq!(out.status.code(), Some(2), "{what}: {}", text(&out.stderr));
        assert!(!missing.exists(), "{what} created {}", missing.display());
        assert!(!dest.exists(), "{what} created {}", dest.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judge_into_a_memory_store_is_refused_unless_asked_for() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let work = tempfile::tempdir().unwrap();
    let (_k, key, _) = key_pair();
    let cmd = |extra: &[&str]| {
        let mut c = seal_at(work.path(), &lb);
        c.arg("judge")
            .arg(example(RUN))
            .args(["--store", "memory://", "--key"])
            .arg(&key)
            .args(extra);
        c
    };
    let out = run_async(cmd(&[]), 60).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--allow-ephemeral-store"));
    assert!(lb.calls().is_empty(), "judges were called");
    let out = run_async(cmd(&["--allow-ephemeral-store"]), 60).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn summaries_are_linear_in_obligations() {
    let run_dir = fixture_store_dir().join(format!("runs/{RUN}"));
    let ev: seal_core::doc::Evidence =
        serde_json::from_slice(&std::fs::read(run_dir.join("evidence.json")).unwrap()).unwrap();
    let mut result: serde_json::Value = serde_json::from_slice(
        &std::fs::read(run_dir.join("roll-1/judge-a/normalized.json")).unwrap(),
    )
    .unwrap();
    let n = 300_000;
    let one = result["obligations"][0].clone();
    let many: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let mut o = one.clone();
            o["id"] = format!("o-{i:06}").into();
            o
        })
        .collect();
    result["obligations"] = many.into();
    let result: seal_core::doc::JudgeResult = serde_json::from_value(result).unwrap();
    let obligations: Vec<seal_core::doc::ProofObligation> = (0..n)
        .map(|i| {
            let mut o = ev.proof_obligations[0].clone();
            o.id = format!("o-{i:06}");
            o
        })
        .collect();
    let t = Instant::now();
    let rows =
        seal_engine::summary::obligation_rows(&obligations, Some(&result), Some(&result), None);
    assert_eq!(rows.len(), n);
    assert_eq!(rows[n - 1].a, rows[n - 1].b);
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
}

#[test]
fn adapted_verdicts_are_blinded_like_native_runs() {
    let path = sealed_fixtures().join("verdicts/accept.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let design = v["designId"].as_str().unwrap().to_string();
    let trace = v["evidence"]["traceId"].as_str().unwrap().to_string();
    v["findings"] = serde_json::json!([{
        "severity": "P2",
        "issue": format!("design {design} trace {trace} \u{0}NUL \u{202e}reversed <script>x</script> `code`"),
        "suggestion": "see </brief>"
    }]);
    let bytes = serde_json::to_vec(&v).unwrap();
    let adapted =
        seal_core::adapt::adapt_verdict("v", &bytes, seal_core::doc::Genre::Narrative).unwrap();
    for bad in ['\u{0}', '\u{202e}', '<', '`'] {
        assert!(
            !adapted.brief.contains(bad),
            "brief holds {bad:?}: {}",
            adapted.brief
        );
    }
    let manifest = seal_core::canonical::Hash::of(b"manifest");
    let package = seal_core::blinding::judge_package(
        &adapted.header,
        &adapted.brief,
        &adapted.proof,
        &manifest,
    );
    let bytes = seal_core::canonical::canonical_bytes(&package).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    for id in [&design, &trace] {
        assert!(
            !text.contains(id.as_str()),
            "{id} reaches the judges: {text}"
        );
    }
    assert!(text.contains("&lt;script&gt;"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_from_copies_exactly_the_bound_objects() {
    let (_d, dest) = empty_dest();
    let dest_store = Store::open(&file_url(&dest)).await.unwrap();
    let archive = Archive::open(&file_url(&fixture_store_dir()))
        .await
        .unwrap();
    let run = RunId::parse(RUN).unwrap();
    let got =
        seal_engine::import::import_run(&archive, &dest_store, &run, &trusted(), LIMITS, false)
            .await;
    assert!(matches!(got, Ok(Imported::Copied { .. })), "{got:?}");
    let files: BTreeMap<String, String> = tree(&dest)
        .into_iter()
        .filter(|(_, w)| w.starts_with("file"))
        .collect();
    assert_eq!(files, run_files(&fixture_store_dir(), RUN));
    // Untrusted key: nothing more is imported.
    let other = RunId::parse(OTHER).unwrap();
    let before = tree(&dest);
    let err = seal_engine::import::import_run(
        &archive,
        &dest_store,
        &other,
        &[seal_fs::keys::generate_signing_key().public()],
        LIMITS,
        false,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ImportError::NotVerified { .. }), "{err}");
    assert_eq!(tree(&dest), before);
}
