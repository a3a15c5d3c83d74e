//! A judge slot's health: a circuit breaker over the outcomes of its calls (docs/DESIGN.md §8,
//! "Judge health").
//!
//! Only failures that say the endpoint cannot be reached or does not take our credentials count
//! ([`Outcome::Down`]: no connection, a timeout, a reset, 401/403/404/405, 5xx); an answer that
//! came back (even one that does not parse, a refusal or a 429) shows the judge is there.
//! `failures` such calls in a row open the breaker; while it is open the daemon probes the
//! endpoint after a cooldown that doubles with every failed probe (up to a cap), and the first
//! call or probe that reaches the judge closes it again.
//!
//! Pure: the time is the caller's (milliseconds on a monotonic clock), so every transition is
//! a unit test.

use crate::vocab::ErrorClass;

/// What one call or probe of a judge showed of its health.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The judge answered (whatever it answered).
    Reached,
    /// The endpoint could not be reached or refused us; the cause, for people.
    Down(String),
}

impl Outcome {
    /// The health outcome of a finished attempt: its error class (none when the answer parsed)
    /// and HTTP status (none when no answer came). `None` for a failure that was never a call
    /// (a request that could not be built, a slot not dispatched): it says nothing of the judge.
    pub fn of_attempt(class: Option<ErrorClass>, status: Option<u16>) -> Option<Outcome> {
        use ErrorClass as C;
        Some(match (class, status) {
            (None, _) => Outcome::Reached,
            (Some(c @ (C::Timeout | C::Connect | C::Transport | C::ConnectionReset)), _) => {
                Outcome::Down(format!("{c} (no answer)"))
            }
            (_, Some(s)) if is_down_status(s) => Outcome::Down(format!("HTTP {s}")),
            (Some(_), Some(_)) => Outcome::Reached,
            (Some(_), None) => return None,
        })
    }

    /// The health outcome of a probe answered with this HTTP status.
    pub fn of_probe_status(status: u16) -> Outcome {
        if is_down_status(status) {
            Outcome::Down(format!("probe answered HTTP {status}"))
        } else {
            Outcome::Reached
        }
    }
}

/// Statuses that say the endpoint is not usable as configured: credentials refused (401, 403),
/// no such endpoint (404, 405: a wrong base URL), or the server failing (5xx).
fn is_down_status(status: u16) -> bool {
    matches!(status, 401 | 403 | 404 | 405) || (500..600).contains(&status)
}

/// The breaker's settings (`[server] judge_breaker_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Calls that must fail in a row to open the breaker; 0 never opens it.
    pub failures: u32,
    /// First wait before a probe, in ms; doubled after each failed probe.
    pub cooldown_ms: u64,
    /// Longest wait between probes, in ms.
    pub max_cooldown_ms: u64,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            failures: 3,
            cooldown_ms: 5_000,
            max_cooldown_ms: 60_000,
        }
    }
}

/// Where a breaker stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Not yet probed or called: taken as up.
    Unknown,
    /// Up; `failures` calls in a row failed so far.
    Closed { failures: u32 },
    /// Down since `since_ms`; the next probe is due at `probe_at_ms`.
    Open {
        since_ms: u64,
        probe_at_ms: u64,
        cooldown_ms: u64,
        cause: String,
    },
    /// Down, and a probe is on its way.
    Probing {
        since_ms: u64,
        cooldown_ms: u64,
        cause: String,
    },
}

/// One slot's breaker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breaker {
    policy: Policy,
    state: State,
}

/// A change of state worth a log line and a metric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transition {
    /// The slot went down (the cause).
    Opened(String),
    /// The slot is reachable again after being down for this many ms.
    Closed { down_ms: u64 },
}

impl Breaker {
    pub fn new(policy: Policy) -> Breaker {
        Breaker {
            policy,
            state: State::Unknown,
        }
    }

    pub fn state(&self) -> &State {
        &self.state
    }

    /// Whether the slot counts as down (open, or probing after being open).
    pub fn is_down(&self) -> bool {
        matches!(self.state, State::Open { .. } | State::Probing { .. })
    }

    /// Why the slot is down, if it is.
    pub fn cause(&self) -> Option<&str> {
        match &self.state {
            State::Open { cause, .. } | State::Probing { cause, .. } => Some(cause),
            _ => None,
        }
    }

    /// How long, from `now_ms`, until the next probe may find the slot up (0 when it is up or
    /// a probe is due or on its way).
    pub fn retry_after_ms(&self, now_ms: u64) -> u64 {
        match &self.state {
            State::Open { probe_at_ms, .. } => probe_at_ms.saturating_sub(now_ms),
            _ => 0,
        }
    }

    /// Whether a probe should be sent now: never probed, or open with its cooldown over. A
    /// `true` moves an open breaker to probing, so that one probe is in flight at a time.
    pub fn take_probe(&mut self, now_ms: u64) -> bool {
        if self.policy.failures == 0 {
            return false;
        }
        match &self.state {
            State::Unknown => true,
            State::Open {
                since_ms,
                probe_at_ms,
                cooldown_ms,
                cause,
            } if now_ms >= *probe_at_ms => {
                self.state = State::Probing {
                    since_ms: *since_ms,
                    cooldown_ms: *cooldown_ms,
                    cause: cause.clone(),
                };
                true
            }
            _ => false,
        }
    }

    /// Records a probe's outcome: reached closes the breaker, down opens it (a probe is a
    /// deliberate check: one failure is enough) with a doubled cooldown if it was open already.
    pub fn probe_result(&mut self, now_ms: u64, outcome: Outcome) -> Option<Transition> {
        match outcome {
            Outcome::Reached => self.reached(now_ms),
            Outcome::Down(cause) => {
                if self.policy.failures == 0 {
                    return None;
                }
                let (since, cooldown, was_down) = match &self.state {
                    State::Open {
                        since_ms,
                        cooldown_ms,
                        ..
                    }
                    | State::Probing {
                        since_ms,
                        cooldown_ms,
                        ..
                    } => (
                        *since_ms,
                        cooldown_ms
                            .saturating_mul(2)
                            .min(self.policy.max_cooldown_ms),
                        true,
                    ),
                    _ => (now_ms, self.policy.cooldown_ms, false),
                };
                self.open(now_ms, since, cooldown, cause.clone());
                (!was_down).then_some(Transition::Opened(cause))
            }
        }
    }

    /// Records a judge call's outcome: reached closes the breaker; the `failures`-th down in a
    /// row opens it. A call that fails while the breaker is already down only updates the cause.
    pub fn call_result(&mut self, now_ms: u64, outcome: Outcome) -> Option<Transition> {
        match outcome {
            Outcome::Reached => self.reached(now_ms),
            Outcome::Down(cause) => match &mut self.state {
                _ if self.policy.failures == 0 => None,
                State::Open { cause: c, .. } | State::Probing { cause: c, .. } => {
                    *c = cause;
                    None
                }
                State::Unknown | State::Closed { .. } => {
                    let failures = match self.state {
                        State::Closed { failures } => failures + 1,
                        _ => 1,
                    };
                    if failures >= self.policy.failures {
                        self.open(now_ms, now_ms, self.policy.cooldown_ms, cause.clone());
                        Some(Transition::Opened(cause))
                    } else {
                        self.state = State::Closed { failures };
                        None
                    }
                }
            },
        }
    }

    fn reached(&mut self, now_ms: u64) -> Option<Transition> {
        let was = std::mem::replace(&mut self.state, State::Closed { failures: 0 });
        match was {
            State::Open { since_ms, .. } | State::Probing { since_ms, .. } => {
                Some(Transition::Closed {
                    down_ms: now_ms.saturating_sub(since_ms),
                })
            }
            _ => None,
        }
    }

    fn open(&mut self, now_ms: u64, since_ms: u64, cooldown_ms: u64, cause: String) {
        self.state = State::Open {
            since_ms,
            probe_at_ms: now_ms.saturating_add(cooldown_ms),
            cooldown_ms,
            cause,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn down() -> Outcome {
        Outcome::Down("connect (no answer)".into())
    }

    #[test]
    fn only_unreachable_or_refusing_endpoints_count_as_down() {
        let of = |c, s| Outcome::of_attempt(c, s).unwrap();
        assert_eq!(of(None, Some(200)), Outcome::Reached);
        assert_eq!(
            Outcome::of_attempt(Some(ErrorClass::RequestBuild), None),
            None
        );
        for class in [
            ErrorClass::Timeout,
            ErrorClass::Connect,
            ErrorClass::Transport,
            ErrorClass::ConnectionReset,
        ] {
            assert!(matches!(of(Some(class), None), Outcome::Down(_)), "{class}");
        }
        for s in [401, 403, 404, 405, 500, 502, 503] {
            let class = if s >= 500 {
                ErrorClass::Http5xx
            } else {
                ErrorClass::Http4xx
            };
            assert!(matches!(of(Some(class), Some(s)), Outcome::Down(_)), "{s}");
        }
        // An answer that came back shows the judge is there, whatever it says.
        for (class, s) in [
            (ErrorClass::Http429, 429),
            (ErrorClass::Http4xx, 400),
            (ErrorClass::NotJson, 200),
            (ErrorClass::Refusal, 200),
            (ErrorClass::SchemaMismatch, 200),
        ] {
            assert_eq!(of(Some(class), Some(s)), Outcome::Reached, "{class}");
        }
        assert_eq!(Outcome::of_probe_status(400), Outcome::Reached);
        assert!(matches!(Outcome::of_probe_status(401), Outcome::Down(_)));
    }

    #[test]
    fn the_failures_th_call_in_a_row_opens_and_a_reached_call_resets_the_count() {
        let mut b = Breaker::new(Policy::default());
        assert_eq!(b.call_result(0, down()), None);
        assert_eq!(b.call_result(1, down()), None);
        assert_eq!(b.call_result(2, Outcome::Reached), None);
        assert_eq!(b.call_result(3, down()), None);
        assert_eq!(b.call_result(4, down()), None);
        assert!(!b.is_down());
        assert_eq!(
            b.call_result(5, down()),
            Some(Transition::Opened("connect (no answer)".into()))
        );
        assert!(b.is_down());
        assert_eq!(b.retry_after_ms(5), 5_000);
        assert_eq!(b.retry_after_ms(4_000), 1_005);
    }

    #[test]
    fn probes_wait_for_the_cooldown_one_at_a_time_and_back_off_to_the_cap() {
        let mut b = Breaker::new(Policy {
            failures: 1,
            cooldown_ms: 1_000,
            max_cooldown_ms: 3_000,
        });
        assert!(b.take_probe(0), "an unknown slot is probed at once");
        assert_eq!(
            b.probe_result(0, down()),
            Some(Transition::Opened("connect (no answer)".into()))
        );
        assert!(!b.take_probe(999));
        assert!(b.take_probe(1_000));
        assert!(!b.take_probe(1_001), "one probe in flight");
        assert!(b.is_down());
        assert_eq!(
            b.probe_result(1_010, down()),
            None,
            "still down: no new transition"
        );
        assert_eq!(b.retry_after_ms(1_010), 2_000, "cooldown doubled");
        assert!(b.take_probe(3_010));
        assert_eq!(b.probe_result(3_010, down()), None);
        assert_eq!(b.retry_after_ms(3_010), 3_000, "capped");
        assert!(b.take_probe(6_010));
        assert_eq!(
            b.probe_result(6_500, Outcome::Reached),
            Some(Transition::Closed { down_ms: 6_500 })
        );
        assert!(!b.is_down());
        assert!(!b.take_probe(100_000), "a closed breaker is not probed");
    }

    #[test]
    fn a_call_that_reaches_the_judge_while_open_closes_it() {
        let mut b = Breaker::new(Policy {
            failures: 1,
            ..Policy::default()
        });
        b.call_result(10, down());
        assert!(b.is_down());
        b.call_result(20, Outcome::Down("HTTP 503".into()));
        assert_eq!(b.cause(), Some("HTTP 503"));
        assert_eq!(
            b.call_result(30, Outcome::Reached),
            Some(Transition::Closed { down_ms: 20 })
        );
        assert_eq!(b.state(), &State::Closed { failures: 0 });
    }

    #[test]
    fn zero_failures_never_opens() {
        let mut b = Breaker::new(Policy {
            failures: 0,
            ..Policy::default()
        });
        for t in 0..10 {
            assert_eq!(b.call_result(t, down()), None);
            assert_eq!(b.probe_result(t, down()), None);
            assert!(!b.take_probe(t), "a breaker that is off sends no probe");
        }
        assert!(!b.is_down());
    }
}
