//! Many runs at once, for `seal verify --all` and `seal replay --all` (docs/DESIGN.md §7).
//!
//! `jobs` worker threads of their own each take the next item and drive its async work with
//! the runtime's handle: the work may then read a `file://` store on that thread
//! ([`seal_store::Store::with_direct_io`]) without a hand-off per object, and the items spread
//! over every core. Exactly `jobs` threads exist (not one per item: each thread's buffers and
//! allocator arena stay few); results are handed to the caller in the order of the items, and
//! at most `4 × jobs` finished results wait for an earlier one, so memory stays bounded
//! whatever the number of items.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// A job that could not be run to its end (it panicked, or its thread could not start).
#[derive(Debug, thiserror::Error)]
#[error("a job of the batch failed: {0}")]
pub struct BulkError(String);

impl seal_core::fault::HasFault for BulkError {
    fn fault(&self) -> seal_core::fault::Fault {
        // A thread that could not start, or a job that panicked: nothing the caller gave.
        seal_core::fault::Fault::Infrastructure
    }
}

/// The default number of jobs: the cores this process may use.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
}

/// The default number of jobs for work that waits on durable writes (`seal replay --all`):
/// four per core. A replay spends most of its wall time in fsyncs (measured: 2 jobs used 30%
/// of 2 cores on `file://`), so more writes in flight than cores let the disk batch them; past
/// ~4 per core the CPU is the limit and each job only adds memory (docs/BENCHMARKS.md).
pub fn default_write_jobs() -> usize {
    default_jobs().saturating_mul(4)
}

type Queue<T, R> = Arc<Mutex<mpsc::Receiver<(T, oneshot::Sender<R>)>>>;

/// Starts `jobs` threads that run `work` on what the queue hands them.
fn workers<T, R, F, Fut>(jobs: usize, queue: Queue<T, R>, work: F) -> Result<(), BulkError>
where
    T: Send + 'static,
    R: Send + 'static,
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R>,
{
    let handle = tokio::runtime::Handle::current();
    let work = Arc::new(work);
    for n in 0..jobs {
        let (queue, work, handle) = (queue.clone(), work.clone(), handle.clone());
        std::thread::Builder::new()
            .name(format!("seal-job-{n}"))
            .spawn(move || loop {
                let next = match queue.lock() {
                    Ok(mut q) => q.blocking_recv(),
                    Err(_) => None,
                };
                let Some((item, done)) = next else {
                    return;
                };
                // The caller may have stopped waiting: its result is then dropped.
                let _ = done.send(handle.block_on(work(item)));
            })
            .map_err(|e| BulkError(format!("cannot start a job thread: {e}")))?;
    }
    Ok(())
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
    let (tx, rx) = mpsc::channel(jobs);
    workers(jobs, Arc::new(Mutex::new(rx)), work)?;
    let mut pending: VecDeque<oneshot::Receiver<R>> = VecDeque::new();
    for item in items {
        // What has finished goes to `sink` now, in order, not only when the window is full:
        // an interrupted batch then reports (and its resume command skips) every item done.
        while let Some(front) = pending.front_mut() {
            match front.try_recv() {
                Ok(r) => {
                    pending.pop_front();
                    if let Err(e) = sink(r) {
                        return Ok(Err(e));
                    }
                }
                Err(oneshot::error::TryRecvError::Empty) => break,
                Err(oneshot::error::TryRecvError::Closed) => {
                    return Err(BulkError("a job panicked before it finished".into()))
                }
            }
        }
        if pending.len() >= 4 * jobs {
            if let Some(h) = pending.pop_front() {
                if let Err(e) = sink(join(h).await?) {
                    return Ok(Err(e));
                }
            }
        }
        let (done, result) = oneshot::channel();
        tx.send((item, done))
            .await
            .map_err(|_| BulkError("every job thread has stopped".into()))?;
        pending.push_back(result);
    }
    // No more items: the threads end when the queue is empty.
    drop(tx);
    while let Some(h) = pending.pop_front() {
        if let Err(e) = sink(join(h).await?) {
            return Ok(Err(e));
        }
    }
    Ok(Ok(()))
}

async fn join<R>(h: oneshot::Receiver<R>) -> Result<R, BulkError> {
    h.await
        .map_err(|_| BulkError("a job panicked before it finished".into()))
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
