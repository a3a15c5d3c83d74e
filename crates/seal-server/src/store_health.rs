//! Whether the store takes writes, as the answered requests show it: a write request (PUT,
//! POST) answered 503 for a store failure marks the store failing, with the cause; one answered
//! 2xx clears it. `/readyz` is 503 while the last failure is recent ([`QUIET`]), so a replica
//! whose store refuses writes (a read-only volume, a bucket policy, a full disk) leaves the load
//! balancer instead of answering every write 503; after a quiet spell it is ready again and the
//! next write shows whether the cause is gone. No probe object is written: the store is
//! create-only, and probe objects would stay in it.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long after the last failed write `/readyz` keeps saying the store fails.
pub(crate) const QUIET: Duration = Duration::from_secs(30);

#[derive(Debug)]
struct Failing {
    since: Instant,
    last: Instant,
    cause: String,
}

/// The store's write health, shared by the request middleware and `/readyz`.
#[derive(Debug, Default)]
pub(crate) struct StoreWrites {
    failing: Mutex<Option<Failing>>,
}

impl StoreWrites {
    fn with<T>(&self, f: impl FnOnce(&mut Option<Failing>) -> T) -> T {
        f(&mut self.failing.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// A write request failed for the store (`cause`: the operation and the error).
    pub(crate) fn failed(&self, cause: String) {
        let now = Instant::now();
        self.with(|f| match f {
            Some(f) => {
                f.last = now;
                f.cause = cause;
            }
            None => {
                *f = Some(Failing {
                    since: now,
                    last: now,
                    cause,
                })
            }
        });
    }

    /// A write request succeeded: the store takes writes.
    pub(crate) fn succeeded(&self) {
        self.with(|f| *f = None);
    }

    /// `Some(why)` while the last failed write is recent (within [`QUIET`]).
    pub(crate) fn failing(&self) -> Option<String> {
        self.with(|f| {
            let f = f.as_ref().filter(|f| f.last.elapsed() < QUIET)?;
            Some(format!(
                "writes failing for {} s: {}",
                f.since.elapsed().as_secs(),
                f.cause
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_marks_the_store_until_a_write_succeeds() {
        let w = StoreWrites::default();
        assert_eq!(w.failing(), None);
        w.failed("create folder: Permission denied".into());
        w.failed("create folder: Read-only file system".into());
        let why = w.failing().unwrap();
        assert!(
            why.starts_with("writes failing for 0 s: create folder: Read-only"),
            "{why}"
        );
        w.succeeded();
        assert_eq!(w.failing(), None);
    }
}
