//! Build script of the `seal` binary: the git commit it was built from, for `seal --version`
//! and the `seal_build_info` metric.
//!
//! `SEAL_GIT_COMMIT` from the environment wins (a Docker build has no `.git`: the Dockerfile
//! demands it as a build-arg), else `git rev-parse HEAD`, else `unknown`; no `-dirty` mark
//! (docs/DECISIONS.md, "The build's commit"). Only this package has a build script, so a new
//! commit relinks the binary and rebuilds no crate.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=SEAL_GIT_COMMIT");
    let commit = match std::env::var("SEAL_GIT_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_string(),
        _ => {
            // Rerun when HEAD moves: HEAD itself, the branch it names, the packed refs.
            if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
                println!("cargo:rerun-if-changed={dir}/HEAD");
            }
            if let (Some(common), Some(reference)) = (
                git(&["rev-parse", "--git-common-dir"]),
                git(&["symbolic-ref", "-q", "HEAD"]),
            ) {
                println!("cargo:rerun-if-changed={common}/{reference}");
                println!("cargo:rerun-if-changed={common}/packed-refs");
            }
            git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into())
        }
    };
    // Only hex digits reach the binary (the variable is outside input).
    let commit: String = commit
        .chars()
        .filter(char::is_ascii_hexdigit)
        .take(40)
        .collect();
    let commit = if commit.is_empty() {
        "unknown".into()
    } else {
        commit
    };
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| v.split_whitespace().nth(1).map(str::to_owned))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=SEAL_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=SEAL_RUSTC_VERSION={rustc_version}");
}
