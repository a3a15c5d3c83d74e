//! Planted JSON and memory (issue 44, hole 9; docs/DESIGN.md §11): whoever writes the store
//! can put a document of any size, up to the 64 MiB document limit, where seal keeps a small
//! one. `seal verify --all` (the nightly CronJob, 256 MiB) over a store with a 16 MiB and a
//! 60 MiB `seal.dsse.json` and a 16 MiB dense `evidence.json` names each and exits 1 with a
//! peak RSS far under the limit: the envelopes are refused from their size before they are
//! read, the evidence before its tree is built.

use crate::common;

use common::*;
use seal_testkit::loopback::Loopback;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// The CronJob's memory limit (docs/DEPLOYING.md).
const CRONJOB_MIB: u64 = 256;

/// Runs `seal verify --all` on `store` from `cwd`: exit code, output, peak RSS in MiB of the
/// process (its own `ru_maxrss`, from `wait4`).
// The child is reaped by `wait4` (for its rusage), which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn verify_all(cwd: &Path, store: &Path) -> (i32, String, u64) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_seal"))
        .current_dir(cwd)
        .args(["verify", "--all", "--store", &file_url(store)])
        .args(["--trust", "keys/seal.pub.pem"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
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
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be written over by wait4.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, writing into two locals that outlive the call.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    let text = format!("{}{}", out.join().unwrap(), err.join().unwrap());
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (code, text, usage.ru_maxrss as u64 / 1024)
}

/// `n` bytes of valid, strict JSON built to cost the most as a tree: a list of one-member
/// objects (`{"a":0}`, a 632-byte B-tree node each), padded to exactly `n` bytes.
fn dense_json(n: usize) -> Vec<u8> {
    let item = br#"{"a":0},"#;
    let mut out = Vec::with_capacity(n);
    out.extend_from_slice(br#"{"payloadType":"x","x":["#);
    while out.len() + item.len() + 3 < n {
        out.extend_from_slice(item);
    }
    out.extend_from_slice(br#"0]"#);
    while out.len() < n - 1 {
        out.push(b' ');
    }
    out.push(b'}');
    out
}

fn plant(store: &Path, key: &str, bytes: &[u8]) {
    let path = store.join(key);
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, bytes).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_all_over_planted_documents_stays_under_the_cronjob_limit_and_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    keygen(dir.path());
    let store = dir.path().join("store");
    for run_id in EXAMPLES {
        let mut c = seal_cmd_with(
            dir.path(),
            &lb,
            "sk-a-0123456789",
            "sk-b-0123456789",
            "production-salt-0123456789abcdef-32",
        );
        c.arg("judge")
            .arg(example(run_id))
            .arg("--store")
            .arg(file_url(&store))
            .arg("--key")
            .arg(dir.path().join("keys/seal.key.pem"));
        let out = run(c).await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let (code, out, honest) = verify_all(dir.path(), &store);
    assert_eq!(code, 0, "{out}");

    let mib = 1024 * 1024;
    let planted = [
        (format!("runs/{}/seal.dsse.json", EXAMPLES[0]), 16 * mib),
        (format!("runs/{}/seal.dsse.json", EXAMPLES[1]), 60 * mib),
        (format!("runs/{}/evidence.json", EXAMPLES[2]), 16 * mib),
    ];
    for (key, size) in &planted {
        plant(&store, key, &dense_json(*size));
    }
    let (code, out, peak) = verify_all(dir.path(), &store);
    eprintln!("verify --all peak RSS: {honest} MiB honest, {peak} MiB with the planted documents");
    assert_eq!(code, 1, "{out}");
    for (key, size) in &planted {
        let named = out
            .lines()
            .any(|l| l.contains(key.as_str()) && l.contains(&size.to_string()));
        assert!(named, "{key} ({size} bytes) is not named:\n{out}");
    }
    assert!(
        out.contains("over the bound of") && out.contains("seal envelope"),
        "{out}"
    );
    assert!(out.contains("refused before it is built"), "{out}");
    assert!(
        peak < CRONJOB_MIB,
        "peak RSS {peak} MiB, over the CronJob's {CRONJOB_MIB} MiB:\n{out}"
    );
}
