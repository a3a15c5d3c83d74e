//! Taking attempt leases in the store (the lease document and what a stored lease means are
//! [`seal_core::lease`], re-exported here): one create-only put per epoch, exactly one winner
//! on every backend; see that module's doc for the protocol and its clock bounds.

use std::time::Duration;

use bytes::Bytes;

use seal_store::{Store, StoreError};

pub use seal_core::lease::*;

/// Rounds of "create an epoch, else read the last one" per acquisition (see [`take`]).
pub const MAX_ROUNDS: u32 = 8;

/// The outcome of trying to take an attempt's lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// This replica may call the judge: it holds lease `epoch`, or (`takeover`, after
    /// [`MAX_ROUNDS`] rounds that did not settle: leases planted or deleted under it) none.
    Held { epoch: u32, takeover: bool },
    /// Another replica holds a live lease: wait for its answer until `until_ms`.
    Busy { holder: String, until_ms: u64 },
}

/// Unix time in milliseconds (the lease clock).
pub fn now_ms() -> u64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// Creates lease `epoch` for this replica; false when the key is taken.
async fn create(
    store: &Store,
    policy: &LeasePolicy,
    at: AttemptRef<'_>,
    epoch: u32,
    ttl: Duration,
) -> Result<bool, StoreError> {
    let key = at.lease_key(epoch);
    let now = now_ms();
    let doc = LeaseDoc {
        schema_version: LEASE_SCHEMA.into(),
        holder: policy.holder.clone(),
        epoch,
        taken_at_ms: now,
        expires_at_ms: now.saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)),
    };
    let bytes = seal_core::canonical::canonical_bytes(&doc)
        .map(Bytes::from)
        .map_err(|source| StoreError::Canonical {
            key: key.clone(),
            source,
        })?;
    match store.put(&key, bytes).await {
        Ok(_) => Ok(true),
        Err(StoreError::Conflict { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The last epoch of an attempt from `from` on (`from` exists): an `e` that exists while
/// `e + 1` does not. Galloping then bisection, so at most ~64 existence checks whatever was
/// planted (an honest attempt's few epochs take one or two). Honest epochs are contiguous,
/// which makes `e` the newest lease; with planted gaps it is some epoch past a gap, which is
/// enough: whatever `e` is, the next create is exactly-one-winner again.
async fn last_epoch(store: &Store, at: AttemptRef<'_>, from: u32) -> Result<u32, StoreError> {
    let (mut lo, mut step) = (from, 1u32);
    let mut hi = loop {
        let probe = lo.saturating_add(step);
        if probe == lo {
            return Ok(lo); // u32::MAX exists: there is no epoch after it.
        }
        if !store.exists(&at.lease_key(probe)).await? {
            break probe;
        }
        lo = probe;
        step = step.saturating_mul(2);
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if store.exists(&at.lease_key(mid)).await? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// Takes the attempt's lease, or reports who holds it. `timeout` bounds the call the lease
/// covers.
///
/// A round creates epoch `e`; when it is taken, the last epoch after it (see [`last_epoch`])
/// is read: live → [`Taken::Busy`], ours → held, anything else → the next round creates the
/// epoch after it. An honest cluster settles within two rounds (a round is lost only to a
/// replica that just created the epoch, whose live lease the next round finds). Planted
/// leases cannot fail the attempt: after [`MAX_ROUNDS`] the judge is called without a lease,
/// since leases save money and the create-only answer keeps correctness.
pub async fn take(
    store: &Store,
    policy: &LeasePolicy,
    at: AttemptRef<'_>,
    timeout: Duration,
) -> Result<Taken, StoreError> {
    let ttl = policy.ttl(timeout);
    let max_ttl = policy.max_lifetime(timeout);
    let mut epoch = 0;
    for _ in 0..MAX_ROUNDS {
        if create(store, policy, at, epoch, ttl).await? {
            return Ok(Taken::Held {
                epoch,
                takeover: epoch > 0,
            });
        }
        let last = last_epoch(store, at, epoch).await?;
        let Some(theirs) = store.get_opt(&at.lease_key(last)).await? else {
            epoch = last; // deleted meanwhile: create it again
            continue;
        };
        match standing_here(&theirs, last, policy, max_ttl) {
            Standing::Mine => {
                return Ok(Taken::Held {
                    epoch: last,
                    takeover: last > 0,
                })
            }
            Standing::Live { holder, until_ms } => return Ok(Taken::Busy { holder, until_ms }),
            Standing::Expired { why } => {
                tracing::info!(
                    attempt = at.attempt,
                    epoch = last,
                    why,
                    "lease not live: taking the next epoch"
                );
                match last.checked_add(1) {
                    Some(next) => epoch = next,
                    None => break,
                }
            }
        }
    }
    tracing::warn!(
        attempt = at.attempt,
        slot = %at.slot,
        "no attempt lease could be taken (leases planted or deleted under it): calling the \
         judge without one"
    );
    Ok(Taken::Held {
        epoch,
        takeover: true,
    })
}

/// Until when (lease clock) another replica's lease on the attempt is live, if one is: the
/// time to wait for the rest of an answer it is writing.
pub async fn live_until(
    store: &Store,
    policy: &LeasePolicy,
    at: AttemptRef<'_>,
    timeout: Duration,
) -> Result<Option<u64>, StoreError> {
    if !store.exists(&at.lease_key(0)).await? {
        return Ok(None);
    }
    let epoch = last_epoch(store, at, 0).await?;
    let Some(bytes) = store.get_opt(&at.lease_key(epoch)).await? else {
        return Ok(None);
    };
    Ok(
        match standing_here(&bytes, epoch, policy, policy.max_lifetime(timeout)) {
            Standing::Live { until_ms, .. } => Some(until_ms),
            Standing::Mine | Standing::Expired { .. } => None,
        },
    )
}

/// [`standing`] now, on this host: a live lease of a process of this host that no longer
/// runs ([`holder_gone`]: a restart after `kill -9` or a crash) is expired, so the restarted
/// replica takes the attempt over at once instead of waiting out its own predecessor's lease.
fn standing_here(bytes: &[u8], epoch: u32, policy: &LeasePolicy, max_ttl: Duration) -> Standing {
    match standing(
        bytes,
        epoch,
        now_ms(),
        &policy.holder,
        max_ttl,
        policy.max_clock_skew,
    ) {
        Standing::Live { holder, .. } if holder_gone(&holder, &policy.holder, pid_running) => {
            Standing::Expired {
                why: "held by a process of this host that no longer runs",
            }
        }
        other => other,
    }
}

/// Whether process `pid` runs on this host (in this pid namespace). Where that cannot be
/// asked (no `/proc`), every process counts as running: leases are then waited out.
fn pid_running(pid: u32) -> bool {
    let proc = std::path::Path::new("/proc");
    !proc.join("self").exists() || proc.join(pid.to_string()).exists()
}

/// The poll interval while waiting for another replica's answer: 25 ms doubling to 500 ms.
pub fn poll_delay(polls: u32) -> Duration {
    Duration::from_millis(25u64.saturating_mul(1 << polls.min(5)).min(500))
}

#[cfg(test)]
mod tests {
    use super::*;
    use seal_core::ids::{RollId, RunId, Slot};

    fn doc(holder: &str, epoch: u32, taken: u64, expires: u64) -> Vec<u8> {
        seal_core::canonical::canonical_bytes(&LeaseDoc {
            schema_version: LEASE_SCHEMA.into(),
            holder: holder.into(),
            epoch,
            taken_at_ms: taken,
            expires_at_ms: expires,
        })
        .unwrap()
    }
    const SKEW: Duration = Duration::from_secs(10);

    fn policy(holder: &str) -> LeasePolicy {
        LeasePolicy {
            holder: holder.into(),
            margin: Duration::from_secs(5),
            max_clock_skew: SKEW,
        }
    }

    async fn plant(store: &Store, at: AttemptRef<'_>, epoch: u32, bytes: Vec<u8>) {
        store
            .put(&at.lease_key(epoch), Bytes::from(bytes))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_lease_longer_than_timeout_margin_and_skew_is_taken_over() {
        let store = Store::open("memory://").await.unwrap();
        let run = RunId::parse("run-lease-0001").unwrap();
        let at = AttemptRef {
            run: &run,
            roll: RollId::R1,
            slot: Slot::A,
            attempt: 1,
        };
        // Another holder's well-formed lease of one hour, taken now: with a 1 s judge timeout
        // no honest replica of this cluster takes a lease over 1 + 5 + 10 s.
        let now = now_ms();
        plant(&store, at, 0, doc("r2", 0, now, now + 3_600_000)).await;
        let taken = take(&store, &policy("r1"), at, Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(
            taken,
            Taken::Held {
                epoch: 1,
                takeover: true
            }
        );
        // One within that bound is honoured: the caller waits for its answer.
        let at2 = AttemptRef { attempt: 2, ..at };
        plant(&store, at2, 0, doc("r2", 0, now, now + 16_000)).await;
        let taken = take(&store, &policy("r1"), at2, Duration::from_secs(1))
            .await
            .unwrap();
        assert!(matches!(taken, Taken::Busy { .. }), "{taken:?}");
        assert!(
            live_until(&store, &policy("r1"), at, Duration::from_secs(1))
                .await
                .unwrap()
                .is_none(),
            "the planted hour-long lease holds no one back"
        );
    }

    #[tokio::test]
    async fn planted_lease_epochs_never_fail_an_attempt() {
        let store = Store::open("memory://").await.unwrap();
        let run = RunId::parse("run-lease-0002").unwrap();
        let at = |attempt| AttemptRef {
            run: &run,
            roll: RollId::R1,
            slot: Slot::B,
            attempt,
        };
        let timeout = Duration::from_secs(1);
        // 64, then 300 garbage epochs: the next free epoch is taken, not an error.
        for (attempt, n) in [(1, 64u32), (2, 300)] {
            for e in 0..n {
                plant(&store, at(attempt), e, b"garbage".to_vec()).await;
            }
            let taken = take(&store, &policy("r1"), at(attempt), timeout).await;
            assert_eq!(
                taken.unwrap(),
                Taken::Held {
                    epoch: n,
                    takeover: true
                }
            );
        }
        // The last possible epoch planted too (no epoch after it), behind a gap: still held.
        plant(&store, at(3), 0, b"x".to_vec()).await;
        plant(&store, at(3), u32::MAX, b"x".to_vec()).await;
        let taken = take(&store, &policy("r1"), at(3), timeout).await.unwrap();
        assert!(matches!(taken, Taken::Held { .. }), "{taken:?}");
        // Planted runs of epochs with a gap between them: some epoch past a gap is taken.
        for e in (0..40).chain(64..100) {
            plant(&store, at(4), e, b"x".to_vec()).await;
        }
        let taken = take(&store, &policy("r1"), at(4), timeout).await.unwrap();
        assert!(
            matches!(taken, Taken::Held { epoch, .. } if epoch == 40 || epoch == 100),
            "{taken:?}"
        );
        // An honest live lease after planted garbage still holds the others back.
        let now = now_ms();
        for e in 0..10 {
            plant(&store, at(5), e, b"garbage".to_vec()).await;
        }
        plant(&store, at(5), 10, doc("r2", 10, now, now + 6_000)).await;
        let taken = take(&store, &policy("r1"), at(5), timeout).await.unwrap();
        assert!(
            matches!(&taken, Taken::Busy { holder, .. } if holder == "r2"),
            "{taken:?}"
        );
    }

    #[test]
    fn poll_delay_is_bounded() {
        assert_eq!(poll_delay(0), Duration::from_millis(25));
        assert_eq!(poll_delay(1), Duration::from_millis(50));
        assert_eq!(poll_delay(30), Duration::from_millis(500));
    }
}
