//! Crash points for tests (docs/DESIGN.md §2, "Crash safety"): a debug build can be told to
//! die by `SIGKILL` right after its N-th state-changing store write, so that a test can kill a
//! process at every write of a run and check that the next process finishes it.
//!
//! - `SEAL_TEST_CRASH_AFTER_WRITE=N`: die after the N-th counted write of this process;
//!   `key:GLOB#n` after the n-th counted write whose key matches `GLOB` (`*` matches within one
//!   segment, `**` any rest), `#n` optional (default 1).
//! - `SEAL_TEST_WRITE_LOG=PATH`: every counted write is appended as `n\tkey\n` (one `write(2)`
//!   on an `O_APPEND` file, so it is on disk before any kill), the crash as `CRASH\tn\tkey\n`.
//!
//! Counted: a create-only put that created its object (an identical object found is no new
//! state), a large blob linked into place, a removal of a log object. Never counted: the
//! private in-memory stores (an import's staging area, `memory://`).
//!
//! Decision: compiled only with debug assertions, not behind a cargo feature. The tests run the
//! dev-profile `target/debug/seal` that `cargo test` builds anyway; a feature would build the
//! store and everything above it twice. The shipped binary is built `--release`, where
//! [`after_write`] is empty and the variables mean nothing. `SIGKILL` and not `abort()`: exactly
//! what `kill -9` does (no destructors, no flush, no core dump).

use crate::Key;

/// The spec variable (see the module doc).
pub const CRASH_ENV: &str = "SEAL_TEST_CRASH_AFTER_WRITE";
/// The write log variable (see the module doc).
pub const WRITE_LOG_ENV: &str = "SEAL_TEST_WRITE_LOG";

/// Called after every counted write: logs it and dies when it is the armed crash point.
#[inline]
pub(crate) fn after_write(key: &Key) {
    #[cfg(debug_assertions)]
    armed::after_write(key.as_str());
    #[cfg(not(debug_assertions))]
    let _ = key;
}

/// Whether `glob` matches `key`: segments compared one by one, `*` matches any one segment
/// (or any text where it is part of a segment's pattern, as a prefix/suffix wildcard), `**`
/// matches every remaining segment.
pub fn glob_matches(glob: &str, key: &str) -> bool {
    let mut keys = key.split('/');
    for pat in glob.split('/') {
        if pat == "**" {
            return true;
        }
        let Some(seg) = keys.next() else {
            return false;
        };
        if !segment_matches(pat, seg) {
            return false;
        }
    }
    keys.next().is_none()
}

fn segment_matches(pat: &str, seg: &str) -> bool {
    match pat.split_once('*') {
        None => pat == seg,
        Some((head, tail)) => {
            seg.len() >= head.len() + tail.len() && seg.starts_with(head) && seg.ends_with(tail)
        }
    }
}

#[cfg(debug_assertions)]
mod armed {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Mutex, OnceLock};

    /// Where to die.
    enum Point {
        Nth(u64),
        Key { glob: String, nth: u64 },
    }

    struct Armed {
        point: Option<Point>,
        log: Option<std::path::PathBuf>,
    }

    static ARMED: OnceLock<Armed> = OnceLock::new();
    static WRITES: AtomicU64 = AtomicU64::new(0);
    /// Counted matches of a `key:` point; under a lock so that the n-th match is exactly one.
    static MATCHES: Mutex<u64> = Mutex::new(0);

    fn parse(spec: &str) -> Option<Point> {
        if let Some(rest) = spec.strip_prefix("key:") {
            let (glob, nth) = match rest.rsplit_once('#') {
                Some((g, n)) => (g, n.parse().ok()?),
                None => (rest, 1),
            };
            return Some(Point::Key {
                glob: glob.to_string(),
                nth,
            });
        }
        spec.parse().ok().map(Point::Nth)
    }

    fn armed() -> &'static Armed {
        ARMED.get_or_init(|| Armed {
            point: std::env::var(super::CRASH_ENV).ok().and_then(|s| parse(&s)),
            log: std::env::var_os(super::WRITE_LOG_ENV).map(Into::into),
        })
    }

    fn log_line(path: &std::path::Path, line: &str) {
        // Best effort: a test that asked for the log reads it; a failed write shows there.
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = f.write_all(line.as_bytes());
        }
    }

    pub(super) fn after_write(key: &str) {
        let armed = armed();
        if armed.point.is_none() && armed.log.is_none() {
            return;
        }
        let n = WRITES.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(path) = &armed.log {
            log_line(path, &format!("{n}\t{key}\n"));
        }
        let die = match &armed.point {
            None => false,
            Some(Point::Nth(at)) => n == *at,
            Some(Point::Key { glob, nth }) => {
                super::glob_matches(glob, key) && {
                    let mut seen = MATCHES.lock().unwrap_or_else(|p| p.into_inner());
                    *seen += 1;
                    *seen == *nth
                }
            }
        };
        if die {
            if let Some(path) = &armed.log {
                log_line(path, &format!("CRASH\t{n}\t{key}\n"));
            }
            let _ = rustix::process::kill_process(
                rustix::process::getpid(),
                rustix::process::Signal::KILL,
            );
            // SIGKILL cannot be caught; should the kill itself fail, still never go on.
            std::process::abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::glob_matches;

    #[test]
    fn globs_match_whole_segments() {
        assert!(glob_matches(
            "runs/*/seal.dsse.json",
            "runs/r-1/seal.dsse.json"
        ));
        assert!(!glob_matches(
            "runs/*/seal.dsse.json",
            "runs/r-1/roll-1/seal.dsse.json"
        ));
        assert!(glob_matches("runs/**", "runs/r-1/roll-1/x.json"));
        assert!(glob_matches(
            "runs/*/roll-*/judge-a/attempt-1/meta.json",
            "runs/r/roll-2/judge-a/attempt-1/meta.json"
        ));
        assert!(!glob_matches("log/entries/*", "log/checkpoints/1"));
    }
}
