//! A `file://` store whose folder is swapped for a link while `seal judge` writes into it
//! (issue 44, hole 8; docs/DESIGN.md §11): the store writer can replace a folder seal made by a
//! symbolic link to a folder outside the store between two of seal's writes. Every later write
//! and read through it is refused and named; nothing lands outside the store.

use crate::common;

use common::*;
use seal_testkit::loopback::Loopback;
use std::path::Path;
use std::time::{Duration, Instant};

const RUN: &str = "run-narrative-0010-pass";

/// Every file under `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// `seal judge` writes the run's first documents, then waits on slow judges; meanwhile the
/// store writer moves `runs/<RUN>/roll-1` (a folder this process made and wrote into) outside
/// the store and leaves a link to it in its place. The judges' answers are then written into
/// that folder: refused, the error names the key and the link, and the folder outside holds
/// exactly what it held when it was moved. Fails without the resolution beneath the store's
/// root (`KnownDirs` skipped the folders it had made, and `O_NOFOLLOW` covered only the last
/// component: raw.json, meta.json and the rest were written outside).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seal_judge_refuses_to_write_through_a_folder_swapped_for_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let lb = Loopback::start(Duration::from_secs(3)).await.unwrap();
    personas(&lb);
    keygen(dir.path());
    let store = dir.path().join("store");
    let mut c = seal_cmd_with(
        dir.path(),
        &lb,
        "sk-a-0123456789",
        "sk-b-0123456789",
        "production-salt-0123456789abcdef-32",
    );
    c.arg("judge")
        .arg(example(RUN))
        .arg("--store")
        .arg(file_url(&store))
        .arg("--key")
        .arg(dir.path().join("keys/seal.key.pem"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();

    // Both judges are being asked (3 s each): their requests are stored, no answer yet. A
    // moment more lets a write already under way end (one that opened its folder before the
    // swap finishes in that folder, wherever it was moved: that is no write through a link).
    let roll = store.join(format!("runs/{RUN}/roll-1"));
    let started = Instant::now();
    for slot in ["judge-a", "judge-b"] {
        let asked = roll.join(slot).join("attempt-1/request.json");
        while !asked.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{slot} was never asked"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let moved = outside.path().join("roll-1");
    std::fs::rename(&roll, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &roll).unwrap();
    let at_swap = files(&moved);
    assert!(!at_swap.is_empty());

    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_ne!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let link = format!("runs/{RUN}/roll-1 is a symbolic link, not a folder");
    assert!(
        stderr.contains(&link) || stdout.contains(&link),
        "the error names the link:\n{stdout}\n{stderr}"
    );
    assert_eq!(
        files(&moved),
        at_swap,
        "written outside the store:\n{stdout}\n{stderr}"
    );
    assert!(!store.join(format!("runs/{RUN}/seal.dsse.json")).exists());
}

/// A sealed run whose `roll-1` folder is moved outside the store and replaced by a link to it
/// (the very same bytes): `seal verify` and `seal verify --all` do not read through the link;
/// they name it and exit 1. Fails without the resolution beneath the root (the reads followed
/// the link, and the run verified from bytes outside the store).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seal_verify_does_not_read_through_a_folder_swapped_for_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    keygen(dir.path());
    let store = dir.path().join("store");
    let mut c = seal_cmd_with(
        dir.path(),
        &lb,
        "sk-a-0123456789",
        "sk-b-0123456789",
        "production-salt-0123456789abcdef-32",
    );
    c.arg("judge")
        .arg(example(RUN))
        .arg("--store")
        .arg(file_url(&store))
        .arg("--key")
        .arg(dir.path().join("keys/seal.key.pem"));
    let out = run(c).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let verify = |args: &[&str]| {
        let mut v = std::process::Command::new(env!("CARGO_BIN_EXE_seal"));
        v.current_dir(dir.path())
            .arg("verify")
            .args(args)
            .arg("--store")
            .arg(file_url(&store))
            .arg("--trust")
            .arg(dir.path().join("keys/seal.pub.pem"));
        run(v)
    };
    let out = verify(&[RUN]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));

    let roll = store.join(format!("runs/{RUN}/roll-1"));
    let moved = outside.path().join("roll-1");
    std::fs::rename(&roll, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &roll).unwrap();
    for args in [&[RUN][..], &["--all"][..]] {
        let out = verify(args).await;
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{args:?}: {all}");
        assert!(
            all.contains(&format!("runs/{RUN}/roll-1 is a symbolic link")),
            "{args:?}: {all}"
        );
    }
}
