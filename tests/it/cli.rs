//! The `seal` binary: keygen, judge (human and --json), exit codes, and no secret in any log.

use crate::common;

use common::*;
use seal_testkit::loopback::Loopback;
use std::process::Command;
use std::time::Duration;

fn seal_cmd(cwd: &std::path::Path, lb: &Loopback) -> Command {
    let mut c = seal_cmd_with(
        cwd,
        lb,
        "sk-cli-secret-a-123",
        "sk-cli-secret-b-456",
        "cli-salt-secret-0123456789abcdef0123456789abcdef",
    );
    c.env("SEAL_LOG", "debug");
    c
}

#[test]
fn keygen_writes_a_private_key_only_its_owner_can_read() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_seal"))
        .args(["keygen", "--out"])
        .arg(dir.path().join("k"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("keyid"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("k/seal.key.pem"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
    }
    let pem = std::fs::read_to_string(dir.path().join("k/seal.pub.pem")).unwrap();
    assert!(pem.starts_with("-----BEGIN PUBLIC KEY-----"));
    // A second keygen into the same folder refuses to overwrite the key.
    let again = Command::new(env!("CARGO_BIN_EXE_seal"))
        .args(["keygen", "--out"])
        .arg(dir.path().join("k"))
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(
        text(&again.stderr).contains("refusing to overwrite"),
        "{}",
        text(&again.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judge_seals_a_run_and_logs_no_secret() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    personas(&lb);
    let dir = tempfile::tempdir().unwrap();
    let k = Command::new(env!("CARGO_BIN_EXE_seal"))
        .current_dir(dir.path())
        .args(["keygen", "--out", "keys"])
        .output()
        .unwrap();
    assert!(k.status.success());
    let mut c = seal_cmd(dir.path(), &lb);
    c.args(["--log-format", "json", "judge"])
        .arg(example("run-heritage-0017-disputed-font"))
        .args(["--store", "file://./store", "--key", "keys/seal.key.pem"]);
    let out = run(c).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("PASS -> accept"), "{stdout}");
    assert!(
        stdout.contains("roll-1 inconclusive, roll-2 pass"),
        "{stdout}"
    );
    assert!(
        stdout.contains("ui.text-readable") && stdout.contains("seal.dsse.json"),
        "{stdout}"
    );
    assert!(stderr.lines().count() > 5, "debug logs expected on stderr");
    for line in stderr.lines() {
        assert!(
            serde_json::from_str::<serde_json::Value>(line).is_ok(),
            "--log-format json: {line}"
        );
        for secret in [
            "sk-cli-secret-a-123",
            "sk-cli-secret-b-456",
            "cli-salt-secret-0123456789abcdef0123456789abcdef",
        ] {
            assert!(
                !line.contains(secret),
                "a log line contains a secret: {line}"
            );
        }
    }
    assert!(
        stderr.contains("\"run\":\"run-heritage-0017-disputed-font\""),
        "span fields in logs"
    );
    // --json, and judging again returns the sealed result.
    let mut c = seal_cmd(dir.path(), &lb);
    c.arg("judge")
        .arg(example("run-heritage-0017-disputed-font"))
        .args([
            "--store",
            "file://./store",
            "--key",
            "keys/seal.key.pem",
            "--json",
        ]);
    let out = run(c).await;
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "pass");
    assert_eq!(v["sourceRollId"], "roll-2");
    assert_eq!(v["wrote"], false);
    assert_eq!(v["obligations"].as_array().unwrap().len(), 5);
}

#[tokio::test]
async fn judge_refuses_a_loose_key_and_a_bad_folder_storing_nothing() {
    let lb = Loopback::start(Duration::from_millis(1)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    assert!(Command::new(env!("CARGO_BIN_EXE_seal"))
        .current_dir(dir.path())
        .args(["keygen", "--out", "keys"])
        .output()
        .unwrap()
        .status
        .success());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::copy(
            dir.path().join("keys/seal.key.pem"),
            dir.path().join("loose.pem"),
        )
        .unwrap();
        std::fs::set_permissions(
            dir.path().join("loose.pem"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        let mut c = seal_cmd(dir.path(), &lb);
        c.arg("judge")
            .arg(example("run-narrative-0010-pass"))
            .args(["--store", "file://./store", "--key", "loose.pem"]);
        let out = run(c).await;
        assert_eq!(out.status.code(), Some(2));
        assert!(
            text(&out.stderr).contains("readable by group or others"),
            "{}",
            text(&out.stderr)
        );
    }
    // A brief that does not hash to briefHash: refused before anything is stored or called.
    let bad = dir.path().join("bad-run");
    copy_tree(&example("run-narrative-0010-pass"), &bad);
    std::fs::write(bad.join("brief.md"), "# tampered brief\n").unwrap();
    let mut c = seal_cmd(dir.path(), &lb);
    c.arg("judge")
        .arg(&bad)
        .args(["--store", "file://./store", "--key", "keys/seal.key.pem"]);
    let out = run(c).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("brief.md") && text(&out.stderr).contains("briefHash"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        !dir.path().join("store/runs").exists(),
        "nothing may be stored"
    );
    assert!(lb.calls().is_empty(), "no judge may be called");
    // Bad arguments are usage errors.
    let out = Command::new(env!("CARGO_BIN_EXE_seal"))
        .args(["judge"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(env!("CARGO_BIN_EXE_seal"))
        .args([
            "judge",
            "/nonexistent",
            "--store",
            "ftp://x",
            "--key",
            "/nonexistent",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::write(&target, std::fs::read(e.path()).unwrap()).unwrap();
        }
    }
}
