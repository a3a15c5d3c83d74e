//! Errors say whose fault and where from (issue 49, item 4): a deployment set up wrong (an unset
//! key variable, a short salt, a missing secret file, an address in use, a bad override) is
//! a configuration error: exit 2, the source named (file, variable or flag), and the hint
//! "(configuration: …)", never "(infrastructure: trying again later may help)". Real
//! processes.

use crate::common;

use common::*;
use seal_testkit::loopback::Loopback;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const CONFIG_HINT: &str = "seal: (configuration: fix the file, variable, flag or key named above";

/// `seal serve` in `dir` with the test judges and secrets, then `env` on top (a value of ""
/// removes the variable), on `memory://`.
fn serve(dir: &Path, lb: &Loopback, env: &[(&str, &str)], extra: &[&str]) -> Command {
    let [key_a, key_b, salt] = DAEMON_SECRETS;
    let mut c = seal_cmd_with(dir, lb, key_a, key_b, salt);
    c.args([
        "serve",
        "--store",
        "memory://",
        "--key",
        "keys/seal.key.pem",
    ])
    .args(extra);
    for (k, v) in env {
        if v.is_empty() {
            c.env_remove(k);
        } else {
            c.env(k, v);
        }
    }
    c
}

/// Runs a command that must refuse to start: its exit code and stderr.
fn refused(mut c: Command) -> (Option<i32>, String) {
    let out = c.output().unwrap();
    let stderr = text(&out.stderr);
    assert!(
        !text(&out.stdout).contains("listening"),
        "it started: {stderr}"
    );
    (out.status.code(), stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_up_faults_name_their_source_and_say_configuration() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path());
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_addr = busy.local_addr().unwrap().to_string();
    let in_use = format!("cannot listen on {busy_addr} (--listen): ");

    let cases: Vec<(&str, Command, Vec<&str>)> = vec![
        (
            "judge key unset",
            serve(dir.path(), &lb, &[("SEAL_JUDGE_A_KEY", "")], &[]),
            vec!["SEAL_JUDGE_A_KEY", "is not set"],
        ),
        (
            "short salt",
            serve(dir.path(), &lb, &[("SEAL_SEED_SALT", "short")], &[]),
            vec!["SEAL_SEED_SALT", "at least 32"],
        ),
        (
            "bad judge URL override",
            serve(dir.path(), &lb, &[("SEAL_JUDGE_A_URL", "notaurl")], &[]),
            vec![
                "seal: environment variable SEAL_JUDGE_A_URL (overrides judges.a.base_url of",
                "\"notaurl\"",
            ],
        ),
        (
            "address in use",
            serve(dir.path(), &lb, &[], &["--listen", &busy_addr]),
            vec![&in_use[..]],
        ),
    ];
    for (what, cmd, needles) in cases {
        let (code, stderr) = refused(cmd);
        assert_eq!(code, Some(2), "{what}: {stderr}");
        for n in needles {
            assert!(stderr.contains(n), "{what}: no {n:?} in {stderr}");
        }
        assert!(stderr.contains(CONFIG_HINT), "{what}: {stderr}");
        assert!(!stderr.contains("(infrastructure"), "{what}: {stderr}");
    }

    // A missing secret file: no SEAL_SEED_SALT, and keygen's `keys/seal.secret` removed.
    std::fs::remove_file(dir.path().join("keys/seal.secret")).unwrap();
    let (code, stderr) = refused(serve(dir.path(), &lb, &[("SEAL_SEED_SALT", "")], &[]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("seal.secret"), "{stderr}");
    assert!(stderr.contains(CONFIG_HINT), "{stderr}");
    assert!(!stderr.contains("(infrastructure"), "{stderr}");
}
