//! Many runs at once, for `seal verify --all` and `seal replay --all` (docs/DESIGN.md §7).
//!
//! Each item is worked on a blocking thread of its own, which drives the item's async work
//! with the runtime's handle: the work may then read a `file://` store on that thread
//! ([`crate::store::Store::direct_io`]) without a hand-off per object, and the items spread
//! over every core. At most `jobs` items run at once; results are handed to the caller in the
//! order of the items, and at most `4 × jobs` finished results wait for an earlier one, so
//! memory stays bounded whatever the number of items.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;

/// A job that could not be run to its end (it panicked, or the runtime is shutting down).
#[derive(Debug, thiserror::Error)]
#[error("a job of the batch failed: {0}")]
pub struct BulkError(String);

/// The default number of jobs: the cores this process may use.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
}

/// Runs `work` on every item, at most `jobs` at once, and hands each result to `sink` in the
/// order of `items`. Stops at the first error `sink` returns (jobs already started finish).
pub async fn in_order<T, R, E, F, Fut, S>(
    items: impl IntoIterator<Item = T>,
    jobs: usize,
    work: F,
    mut sink: S,
) -> Result<Result<(), E>, BulkError>
where
    T: Send + 'static,
    R: Send + 'static,
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R>,
    S: FnMut(R) -> Result<(), E>,
{
    let jobs = jobs.max(1);
    let handle = tokio::runtime::Handle::current();
    let slots = Arc::new(tokio::sync::Semaphore::new(jobs));
    let work = Arc::new(work);
    let mut pending = VecDeque::new();
    for item in items {
        if pending.len() >= 4 * jobs {
            if let Some(h) = pending.pop_front() {
                if let Err(e) = sink(join(h).await?) {
                    return Ok(Err(e));
                }
            }
        }
        let permit = slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| BulkError(e.to_string()))?;
        let (work, handle) = (work.clone(), handle.clone());
        pending.push_back(tokio::task::spawn_blocking(move || {
            let _slot = permit;
            handle.block_on(work(item))
        }));
    }
    while let Some(h) = pending.pop_front() {
        if let Err(e) = sink(join(h).await?) {
            return Ok(Err(e));
        }
    }
    Ok(Ok(()))
}

async fn join<R>(h: tokio::task::JoinHandle<R>) -> Result<R, BulkError> {
    h.await.map_err(|e| BulkError(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn results_come_in_order_and_at_most_jobs_run_at_once() {
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let (r, p) = (running.clone(), peak.clone());
        let mut seen = Vec::new();
        let done = in_order(
            0..40u64,
            3,
            move |i| {
                let (r, p) = (r.clone(), p.clone());
                async move {
                    let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                    p.fetch_max(now, Ordering::SeqCst);
                    // Later items finish first: the order must still be the items'.
                    std::thread::sleep(std::time::Duration::from_millis(40 - i));
                    r.fetch_sub(1, Ordering::SeqCst);
                    i
                }
            },
            |i| {
                seen.push(i);
                Ok::<(), ()>(())
            },
        )
        .await;
        assert!(matches!(done, Ok(Ok(()))));
        assert_eq!(seen, (0..40).collect::<Vec<_>>());
        assert_eq!(peak.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_sink_stops_the_batch() {
        let mut seen = 0;
        let done = in_order(
            0..100u32,
            2,
            |i| async move { i },
            |i| {
                seen += 1;
                if i == 5 {
                    Err(i)
                } else {
                    Ok(())
                }
            },
        )
        .await;
        assert!(matches!(done, Ok(Err(5))));
        assert_eq!(seen, 6);
    }
}
