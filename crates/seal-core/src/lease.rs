//! Attempt leases: across replicas sharing one store, one replica calls a judge for one
//! attempt of one slot; the others wait for its stored answer.
//!
//! Judge calls are the only money seal spends, and a retrying worker or a load balancer that
//! fails over can hand the same roll to several replicas at once. The answers are create-only
//! already (the first stored answer wins), so correctness never depended on this module; the
//! bill does.
//!
//! A lease is a small create-only object `leases/<run>/<roll>/judge-<slot>/attempt-<k>/<epoch>`
//! (`seal.lease/1`: holder, epoch, taken and expiry times in Unix milliseconds). Taking epoch 0
//! is a create-only put, which exactly one replica wins on every backend (S3 `If-None-Match:
//! *`, a local link, memory). A live lease held by another replica means: wait for the answer.
//! An expired one (its holder crashed, or is so slow that its answer would come after the
//! slot's timeout anyway) is taken over by creating epoch + 1, which again exactly one replica
//! wins; no conditional update of an existing object is needed anywhere.
//!
//! Time: a lease expires at the holder's clock + the slot's timeout + `leases.margin_ms`, and
//! another replica takes it over only once its own clock is past that + `max_clock_skew_ms`.
//! So replicas whose clocks agree within the skew bound never take over a live lease; beyond
//! it, two replicas may call the same attempt, and the create-only answer still decides which
//! answer counts (only money is lost). Leases are not evidence: they sit outside `runs/`, are
//! never bound by a document, and may be expired by a bucket lifecycle rule after a few days.
//!
//! This module holds the lease document and what a stored lease means ([`standing`], pure);
//! taking and reading leases in a store is the engine's.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::ids::{RollId, RunId, Slot};
use crate::key::Key;

pub const LEASE_SCHEMA: &str = "seal.lease/1";
/// Leases are a few hundred bytes; anything larger is not one.
const MAX_LEASE_BYTES: u64 = 4096;

/// The lease document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeaseDoc {
    pub schema_version: String,
    pub holder: String,
    pub epoch: u32,
    pub taken_at_ms: u64,
    pub expires_at_ms: u64,
}

/// How leases are taken and judged, from `[leases]` and the process.
#[derive(Debug, Clone)]
pub struct LeasePolicy {
    /// This replica (`SEAL_REPLICA_ID`, else host, pid and random bits).
    pub holder: String,
    /// Added to the slot's timeout: storing the answer and meta after the call.
    pub margin: Duration,
    /// The clock disagreement between replicas that leases tolerate.
    pub max_clock_skew: Duration,
}

impl LeasePolicy {
    /// The lifetime of a lease for a call bounded by `timeout`.
    pub fn ttl(&self, timeout: Duration) -> Duration {
        timeout + self.margin
    }

    /// The longest lifetime of a lease this replica honours: its own lease lifetime plus the
    /// skew bound. Replicas share the configuration, so an honest lease is never longer; a
    /// longer one is planted (it would hold judging back for as long as it says) or from a
    /// replica configured otherwise, and is taken over (at most one more call).
    pub fn max_lifetime(&self, timeout: Duration) -> Duration {
        self.ttl(timeout) + self.max_clock_skew
    }
}

/// The identity of one attempt of one slot.
#[derive(Debug, Clone, Copy)]
pub struct AttemptRef<'a> {
    pub run: &'a RunId,
    pub roll: RollId,
    pub slot: Slot,
    pub attempt: u32,
}

impl AttemptRef<'_> {
    pub fn lease_key(&self, epoch: u32) -> Key {
        Key::lease(self.run, self.roll, self.slot, self.attempt, epoch)
    }
}

/// What a stored lease means to this replica now (pure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Ours (a restart of this replica id): go on.
    Mine,
    /// Another replica's, live until `until_ms` (its expiry + the skew bound, our clock).
    Live { holder: String, until_ms: u64 },
    /// Expired, or not a lease we can honour: the next epoch may be taken.
    Expired { why: &'static str },
}

/// A replica id seal makes by default (`host:pid:process:instance`): the host name, the process
/// id, a token drawn once per process, and one drawn per set of judge clients. Any other id (an
/// operator's `SEAL_REPLICA_ID`) does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultReplicaId<'a> {
    pub host: &'a str,
    pub pid: u32,
    pub process: &'a str,
    pub instance: &'a str,
}

impl<'a> DefaultReplicaId<'a> {
    /// Length of the process and instance tokens, in hex digits.
    pub const TOKEN_HEX: usize = 12;

    pub fn parse(id: &'a str) -> Option<DefaultReplicaId<'a>> {
        let mut parts = id.split(':');
        let (host, pid, process, instance) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let token = |t: &str| {
            t.len() == Self::TOKEN_HEX
                && t.bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        };
        let pid_ok = !pid.is_empty() && pid.len() <= 10 && pid.bytes().all(|b| b.is_ascii_digit());
        if parts.next().is_some()
            || host.is_empty()
            || !pid_ok
            || !token(process)
            || !token(instance)
        {
            return None;
        }
        Some(DefaultReplicaId {
            host,
            pid: pid.parse().ok()?,
            process,
            instance,
        })
    }
}

/// Whether the lease `holder` is a process of this replica's host (`me`) that no longer runs,
/// so its lease holds nobody back: an earlier process that had this very pid (a restarted
/// container, where the new process often gets the old one's pid: another process token), or
/// another pid that `running` says does not run here. Judged only between two default replica
/// ids of one host; a sibling in this very process (same pid and token) is running. A
/// planted holder that passes this only makes this replica call the judge once more.
pub fn holder_gone(holder: &str, me: &str, running: impl Fn(u32) -> bool) -> bool {
    let (Some(h), Some(m)) = (DefaultReplicaId::parse(holder), DefaultReplicaId::parse(me)) else {
        return false;
    };
    if h.host != m.host {
        return false;
    }
    if h.pid == m.pid {
        return h.process != m.process;
    }
    !running(h.pid)
}

/// Judges a stored lease's bytes at `now_ms`. A malformed lease, one for another epoch, or one
/// whose lifetime exceeds `max_ttl` ([`LeasePolicy::max_lifetime`]: longer than any lease an
/// honest replica of this cluster takes, so planted to hold judging back) holds nobody back.
pub fn standing(
    bytes: &[u8],
    epoch: u32,
    now_ms: u64,
    me: &str,
    max_ttl: Duration,
    skew: Duration,
) -> Standing {
    let doc: LeaseDoc = match crate::json::parse_as(bytes, MAX_LEASE_BYTES) {
        Ok(d) => d,
        Err(_) => {
            return Standing::Expired {
                why: "not a lease document",
            }
        }
    };
    if doc.schema_version != LEASE_SCHEMA || doc.epoch != epoch {
        return Standing::Expired {
            why: "lease of another version or epoch",
        };
    }
    let max_ttl_ms = u64::try_from(max_ttl.as_millis()).unwrap_or(u64::MAX);
    let skew_ms = u64::try_from(skew.as_millis()).unwrap_or(u64::MAX);
    if doc.expires_at_ms < doc.taken_at_ms || doc.expires_at_ms - doc.taken_at_ms > max_ttl_ms {
        return Standing::Expired {
            why: "lease lifetime out of bounds",
        };
    }
    if doc.holder == me {
        return Standing::Mine;
    }
    // A lease taken "in the future" beyond the skew bound comes from a clock we do not trust.
    if doc.taken_at_ms > now_ms.saturating_add(skew_ms) {
        return Standing::Expired {
            why: "lease taken in the future",
        };
    }
    let until_ms = doc.expires_at_ms.saturating_add(skew_ms);
    if now_ms > until_ms {
        return Standing::Expired {
            why: "lease expired",
        };
    }
    Standing::Live {
        holder: doc.holder,
        until_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_of_a_process_of_this_host_that_no_longer_runs_holds_nobody_back() {
        let me = "node-1:1:aaaaaaaaaaaa:111111111111";
        let running = |pid: u32| pid == 42;
        // A restarted container: the same pid, another process.
        assert!(holder_gone(
            "node-1:1:bbbbbbbbbbbb:222222222222",
            me,
            running
        ));
        // A sibling in this very process (another set of judge clients): running.
        assert!(!holder_gone(
            "node-1:1:aaaaaaaaaaaa:333333333333",
            me,
            running
        ));
        // Another pid of this host: gone unless it runs.
        assert!(holder_gone(
            "node-1:7:cccccccccccc:444444444444",
            me,
            running
        ));
        assert!(!holder_gone(
            "node-1:42:cccccccccccc:444444444444",
            me,
            running
        ));
        // Another host, an operator's id, a malformed one: never judged.
        assert!(!holder_gone(
            "node-2:7:cccccccccccc:444444444444",
            me,
            running
        ));
        assert!(!holder_gone("seal-ops-test:0", me, running));
        assert!(!holder_gone("node-1:7:cccccccccccc", me, running));
        assert!(!holder_gone(
            "node-1:7:CCCCCCCCCCCC:444444444444",
            me,
            running
        ));
        assert!(!holder_gone(
            "node-1:x7:cccccccccccc:444444444444",
            me,
            running
        ));
        assert!(!holder_gone(
            "node-1:7:cccccccccccc:444444444444",
            "seal-7f9c:0",
            running
        ));
    }

    fn doc(holder: &str, epoch: u32, taken: u64, expires: u64) -> Vec<u8> {
        crate::canonical::canonical_bytes(&LeaseDoc {
            schema_version: LEASE_SCHEMA.into(),
            holder: holder.into(),
            epoch,
            taken_at_ms: taken,
            expires_at_ms: expires,
        })
        .unwrap()
    }
    const HOUR: Duration = Duration::from_secs(3600);
    const SKEW: Duration = Duration::from_secs(10);

    #[test]
    fn live_until_expiry_plus_skew_then_expired() {
        let d = doc("r2", 0, 1_000, 61_000);
        let live = Standing::Live {
            holder: "r2".into(),
            until_ms: 71_000,
        };
        assert_eq!(standing(&d, 0, 30_000, "r1", HOUR, SKEW), live);
        assert_eq!(standing(&d, 0, 71_000, "r1", HOUR, SKEW), live);
        assert!(matches!(
            standing(&d, 0, 71_001, "r1", HOUR, SKEW),
            Standing::Expired { .. }
        ));
    }

    #[test]
    fn own_lease_is_mine_and_hostile_leases_hold_nobody_back() {
        assert_eq!(
            standing(&doc("r1", 0, 1_000, 61_000), 0, 2_000, "r1", HOUR, SKEW),
            Standing::Mine
        );
        // Forever, negative, wrong epoch, garbage, taken far in the future.
        for (bytes, epoch) in [
            (doc("r2", 0, 1_000, (1 << 53) - 1), 0),
            (doc("r2", 0, 61_000, 1_000), 0),
            (doc("r2", 3, 1_000, 61_000), 0),
            (b"{\"holder\":".to_vec(), 0),
            (doc("r2", 0, 999_000, 1_000_000), 0),
        ] {
            assert!(
                matches!(
                    standing(&bytes, epoch, 2_000, "r1", HOUR, SKEW),
                    Standing::Expired { .. }
                ),
                "{}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }
}
