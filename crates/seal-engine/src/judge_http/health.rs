//! A slot's health at the HTTP edge: its breaker ([`seal_core::judge::health`]) under a lock,
//! the monotonic clock it reads, and what operators see (a warn line when a slot goes down, an
//! info line when it is back, the `seal_judge_up` gauge). The probe that tells a down judge from
//! one that came back is the slot client's ([`super::client::JudgeClient::probe_if_due`]).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use seal_core::ids::Slot;
use seal_core::judge::health::{Breaker, Outcome, Policy, State, Transition};
use seal_core::vocab::ErrorClass;

/// One slot's breaker and the clock it runs on.
pub struct SlotHealth {
    slot: Slot,
    breaker: Mutex<Breaker>,
    origin: Instant,
    metrics: Arc<crate::metrics::Metrics>,
}

impl SlotHealth {
    pub(super) fn new(slot: Slot, policy: Policy, metrics: Arc<crate::metrics::Metrics>) -> Self {
        SlotHealth {
            slot,
            breaker: Mutex::new(Breaker::new(policy)),
            origin: Instant::now(),
            metrics,
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    pub(super) fn with<T>(&self, f: impl FnOnce(&mut Breaker, u64) -> T) -> T {
        let now = self.now_ms();
        let mut b = self.breaker.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut b, now)
    }

    /// Records a finished live attempt (its error class, none when the answer parsed, and its
    /// HTTP status, none when no answer came).
    pub(super) fn attempt(&self, class: Option<ErrorClass>, status: Option<u16>) {
        if let Some(outcome) = Outcome::of_attempt(class, status) {
            let t = self.with(|b, now| b.call_result(now, outcome));
            self.report(t);
        }
    }

    /// Whether the slot is down (its breaker open or probing).
    pub fn is_down(&self) -> bool {
        self.with(|b, _| b.is_down())
    }

    /// How long until the next probe may find the slot up.
    pub fn retry_after(&self) -> Duration {
        Duration::from_millis(self.with(|b, now| b.retry_after_ms(now)))
    }

    /// The slot's health in a word or a line: `up`, `unknown` (not yet called or probed) or
    /// `down for N s: cause` (the cause is the judge's answer or the transport error, bounded
    /// and redacted; shown as JSON text, never as markup).
    pub fn describe(&self) -> String {
        self.with(|b, now| match b.state() {
            State::Unknown => "unknown".to_string(),
            State::Closed { .. } => "up".to_string(),
            State::Open {
                since_ms, cause, ..
            }
            | State::Probing {
                since_ms, cause, ..
            } => format!(
                "down for {} s: {cause}",
                now.saturating_sub(*since_ms) / 1000
            ),
        })
    }

    pub(super) fn report(&self, t: Option<Transition>) {
        let slot = self.slot.as_str();
        match t {
            Some(Transition::Opened(cause)) => {
                self.metrics.judge_up(slot, false);
                tracing::warn!(slot, cause = %cause, "judge slot down: its calls fail at the transport or auth level; probing it until it answers");
            }
            Some(Transition::Closed { down_ms }) => {
                self.metrics.judge_up(slot, true);
                tracing::info!(slot, down_ms, "judge slot reachable again");
            }
            None => {}
        }
    }
}
