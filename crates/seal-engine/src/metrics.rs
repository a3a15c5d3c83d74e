//! Prometheus metrics on the `prometheus-client` crate: typed families, each registered once
//! with its HELP, in one [`Registry`] per engine (tests run several daemons in one process, so
//! no global recorder). Rendered as the Prometheus text format 0.0.4.
//!
//! Every label set known in advance is created at zero when the engine starts (both slots ×
//! every result and error class, every outcome, every consensus status; docs/DECISIONS.md,
//! "Metric labels are bounded and exist from the start"). Counters are registered without
//! `_total`; the encoder appends it, so the exposed names are the ones docs/DEPLOYING.md §6
//! lists.

use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use seal_core::doc::{ObligationStatus, Outcome};
use seal_core::vocab::ErrorClass;

/// Latency buckets in seconds: judges answer in 0.2 s … 2 min, and a p95 must be told apart
/// anywhere in 0.5 … 300 s (a step at most 1.5× the one below from 2 s up).
const BUCKETS: [f64; 19] = [
    0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0,
    180.0, 300.0,
];

/// A label set: (name, value) pairs in a fixed order.
pub type Labels = Vec<(&'static str, String)>;

type Counters = Family<Labels, Counter>;
type Gauges = Family<Labels, Gauge>;
type RmbCounters = Family<Labels, Counter<f64, AtomicU64>>;
type Histograms = Family<Labels, Histogram, fn() -> Histogram>;

const SLOTS: [&str; 2] = ["a", "b"];
/// What an attempt lease came to (`judge::walk`).
const LEASE_RESULTS: [&str; 3] = ["held", "takeover", "waited"];

fn latency_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

fn labels(pairs: &[(&'static str, &str)]) -> Labels {
    pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
}

/// The engine's metrics. Cheap to update from any task; rendered by `/metrics`.
pub struct Metrics {
    registry: Mutex<Registry>,
    attempts: Counters,
    retries: Counters,
    failures: Counters,
    cost: RmbCounters,
    tokens: Counters,
    leases: Counters,
    answers_discarded: Counters,
    latency: Histograms,
    /// How long an attempt waited on another replica's live lease.
    lease_wait: Histograms,
    rolls: Counters,
    rolls_by_id: Counters,
    rolls_degraded: Counter,
    consensus: Counters,
    runs_decided: Counters,
    witness_submissions: Counters,
    judge_up: Gauges,
    breaker_opens: Counters,
    served_model: Gauges,
    served_model_changes: Counters,
    judge_in_flight: Gauges,
    log_entries: Gauge,
    log_checkpoint_time: Gauge,
    /// Each slot's current served (model, fingerprint) labels: one series per slot at a time.
    served_now: Mutex<std::collections::BTreeMap<String, Labels>>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        let m = Metrics {
            registry: Mutex::new(Registry::default()),
            attempts: Counters::default(),
            retries: Counters::default(),
            failures: Counters::default(),
            cost: RmbCounters::default(),
            tokens: Counters::default(),
            leases: Counters::default(),
            answers_discarded: Counters::default(),
            latency: Histograms::new_with_constructor(latency_histogram),
            lease_wait: Histograms::new_with_constructor(latency_histogram),
            rolls: Counters::default(),
            rolls_by_id: Counters::default(),
            rolls_degraded: Counter::default(),
            consensus: Counters::default(),
            runs_decided: Counters::default(),
            witness_submissions: Counters::default(),
            judge_up: Gauges::default(),
            breaker_opens: Counters::default(),
            served_model: Gauges::default(),
            served_model_changes: Counters::default(),
            judge_in_flight: Gauges::default(),
            log_entries: Gauge::default(),
            log_checkpoint_time: Gauge::default(),
            served_now: Mutex::new(Default::default()),
        };
        m.register_all();
        m.create_known_series();
        m
    }
}

impl Metrics {
    /// Registers a metric of another layer (the HTTP server's) in the same registry.
    pub fn register(
        &self,
        name: &str,
        help: &str,
        metric: impl prometheus_client::registry::Metric,
    ) {
        let mut r = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        r.register(name, help, metric);
    }

    fn register_all(&self) {
        let c = |n: &str, h: &str, f: &Counters| self.register(n, h, f.clone());
        c(
            "seal_judge_attempts",
            "judge calls made, by slot and result (ok: an answer that parsed)",
            &self.attempts,
        );
        c(
            "seal_judge_retries",
            "judge attempts after the first, by slot",
            &self.retries,
        );
        c(
            "seal_judge_failures",
            "judge attempts without a valid answer, by slot and error class",
            &self.failures,
        );
        self.register(
            "seal_judge_cost_rmb",
            "what the judge calls cost, in RMB, by slot",
            self.cost.clone(),
        );
        c(
            "seal_judge_tokens",
            "tokens the judges reported in usage, by slot and kind (input, output)",
            &self.tokens,
        );
        c(
            "seal_judge_leases",
            "attempt leases across replicas, by slot and result (held, takeover, waited)",
            &self.leases,
        );
        c(
            "seal_judge_answers_discarded",
            "judge answers paid for but not used because another replica committed the attempt first, by slot",
            &self.answers_discarded,
        );
        self.register(
            "seal_judge_latency_seconds",
            "judge call latency, by slot",
            self.latency.clone(),
        );
        self.register(
            "seal_judge_lease_wait_seconds",
            "time an attempt waited on another replica's live lease, by slot",
            self.lease_wait.clone(),
        );
        c("seal_rolls", "rolls judged, by roll outcome", &self.rolls);
        c(
            "seal_rolls_by_id",
            "rolls judged, by roll id (roll-2 rate)",
            &self.rolls_by_id,
        );
        self.register(
            "seal_rolls_degraded",
            "rolls judged with a degraded consensus (one judge)",
            self.rolls_degraded.clone(),
        );
        c(
            "seal_consensus_obligations",
            "obligations of rolls both judges answered, by consensus status",
            &self.consensus,
        );
        c(
            "seal_runs_decided",
            "runs sealed by this process, by outcome",
            &self.runs_decided,
        );
        self.register(
            "seal_judge_up",
            "1 while a judge slot is taken as reachable, 0 while its circuit breaker is open (docs/DESIGN.md §8)",
            self.judge_up.clone(),
        );
        c(
            "seal_judge_breaker_opens",
            "times a judge slot's circuit breaker opened (calls failing at the transport or auth level)",
            &self.breaker_opens,
        );
        self.register(
            "seal_judge_served_model",
            "1 for the model and system fingerprint a judge slot's latest accepted answer said it served (one series per slot)",
            self.served_model.clone(),
        );
        c(
            "seal_judge_served_model_changes",
            "times a judge slot's accepted answer named another served model or fingerprint than the one before (seal stats: served_model_changed)",
            &self.served_model_changes,
        );
        self.register(
            "seal_judge_calls_in_flight",
            "judge HTTP calls this process has out now, by slot",
            self.judge_in_flight.clone(),
        );
        self.register(
            "seal_log_entries",
            "entries of the transparency log as this process knows it (0 before its admission)",
            self.log_entries.clone(),
        );
        self.register(
            "seal_log_last_checkpoint_timestamp_seconds",
            "Unix time of the last checkpoint this process published (0: none yet); its age is time() minus this",
            self.log_checkpoint_time.clone(),
        );
        c(
            "seal_witness_submissions",
            "checkpoints sent to witnesses, by witness and result",
            &self.witness_submissions,
        );
    }

    /// Every series whose labels are known before the first event, at zero.
    fn create_known_series(&self) {
        for slot in SLOTS {
            for result in ["ok", "error"] {
                let _ = self
                    .attempts
                    .get_or_create(&labels(&[("slot", slot), ("result", result)]));
            }
            for class in ErrorClass::ALL {
                let _ = self
                    .failures
                    .get_or_create(&labels(&[("slot", slot), ("class", class.as_str())]));
            }
            for kind in ["input", "output"] {
                let _ = self
                    .tokens
                    .get_or_create(&labels(&[("slot", slot), ("kind", kind)]));
            }
            for result in LEASE_RESULTS {
                let _ = self
                    .leases
                    .get_or_create(&labels(&[("slot", slot), ("result", result)]));
            }
            let _ = self.retries.get_or_create(&labels(&[("slot", slot)]));
            self.judge_up
                .get_or_create(&labels(&[("slot", slot)]))
                .set(1);
            let _ = self.breaker_opens.get_or_create(&labels(&[("slot", slot)]));
            let _ = self
                .served_model_changes
                .get_or_create(&labels(&[("slot", slot)]));
            let _ = self
                .judge_in_flight
                .get_or_create(&labels(&[("slot", slot)]));
            let _ = self
                .answers_discarded
                .get_or_create(&labels(&[("slot", slot)]));
            let _ = self.cost.get_or_create(&labels(&[("slot", slot)]));
            let _ = self.latency.get_or_create(&labels(&[("slot", slot)]));
            let _ = self.lease_wait.get_or_create(&labels(&[("slot", slot)]));
        }
        let outcomes = [
            Outcome::Pass,
            Outcome::Fail,
            Outcome::Inconclusive,
            Outcome::InfraError,
        ];
        for o in outcomes {
            let _ = self
                .rolls
                .get_or_create(&labels(&[("outcome", o.as_str())]));
            let _ = self
                .runs_decided
                .get_or_create(&labels(&[("outcome", o.as_str())]));
        }
        for roll in ["roll-1", "roll-2"] {
            let _ = self.rolls_by_id.get_or_create(&labels(&[("roll", roll)]));
        }
        let statuses = [
            ObligationStatus::Satisfied,
            ObligationStatus::Failed,
            ObligationStatus::Missing,
            ObligationStatus::Contradicted,
            ObligationStatus::Disputed,
        ];
        for s in statuses {
            let _ = self
                .consensus
                .get_or_create(&labels(&[("status", s.as_str())]));
        }
    }

    /// Creates the series of a configured witness at zero.
    pub fn known_witness(&self, witness: &str) {
        for result in ["cosigned", "refused", "unreachable"] {
            let _ = self
                .witness_submissions
                .get_or_create(&labels(&[("witness", witness), ("result", result)]));
        }
    }

    /// Records one judge attempt (tokens as the judge reported them, when it did).
    pub fn judge_attempt(
        &self,
        slot: &str,
        attempt: u32,
        latency_s: f64,
        error_class: Option<&str>,
        cost_rmb: f64,
    ) {
        let by_slot = labels(&[("slot", slot)]);
        self.latency.get_or_create(&by_slot).observe(latency_s);
        let result = if error_class.is_some() { "error" } else { "ok" };
        self.attempts
            .get_or_create(&labels(&[("slot", slot), ("result", result)]))
            .inc();
        if attempt > 1 {
            self.retries.get_or_create(&by_slot).inc();
        }
        if let Some(c) = error_class {
            self.failures
                .get_or_create(&labels(&[("slot", slot), ("class", c)]))
                .inc();
        }
        self.cost.get_or_create(&by_slot).inc_by(cost_rmb.max(0.0));
    }

    /// What a slot's accepted answer said it served. The gauge keeps one series per slot (the
    /// previous one is removed), so a provider that changes its fingerprint every day does not
    /// grow the scrape; a change counts in `seal_judge_served_model_changes_total`. The label
    /// values are the endpoint's text: kept to 100 characters of `[A-Za-z0-9._:/@+-]`, any
    /// other character written `_`.
    pub fn served_model(&self, slot: &str, model: &str, fingerprint: Option<&str>) {
        let clean = |s: &str| -> String {
            s.chars()
                .take(100)
                .map(|c| {
                    if c.is_ascii_alphanumeric() || "._:/@+-".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        };
        let now: Labels = vec![
            ("slot", slot.to_string()),
            ("model", clean(model)),
            ("fingerprint", clean(fingerprint.unwrap_or(""))),
        ];
        let mut current = self.served_now.lock().unwrap_or_else(|e| e.into_inner());
        match current.insert(slot.to_string(), now.clone()) {
            Some(before) if before == now => return,
            Some(before) => {
                self.served_model.remove(&before);
                self.served_model_changes
                    .get_or_create(&labels(&[("slot", slot)]))
                    .inc();
            }
            None => {}
        }
        self.served_model.get_or_create(&now).set(1);
    }

    /// A judge call going out on `slot`: counted in `seal_judge_calls_in_flight` until the
    /// returned guard is dropped.
    pub fn judge_call(&self, slot: &str) -> InFlight {
        let gauge = self
            .judge_in_flight
            .get_or_create(&labels(&[("slot", slot)]))
            .clone();
        gauge.inc();
        InFlight(gauge)
    }

    /// The log's size and last checkpoint time, set when `/metrics` is scraped.
    pub fn log_state(&self, entries: Option<u64>, last_checkpoint_unix: u64) {
        if let Some(n) = entries {
            self.log_entries.set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        self.log_checkpoint_time
            .set(i64::try_from(last_checkpoint_unix).unwrap_or(i64::MAX));
    }

    /// Records the tokens a judge reported for one call.
    /// A judge slot's breaker closed (`up`) or opened.
    pub fn judge_up(&self, slot: &str, up: bool) {
        let l = labels(&[("slot", slot)]);
        self.judge_up.get_or_create(&l).set(i64::from(up));
        if !up {
            self.breaker_opens.get_or_create(&l).inc();
        }
    }

    pub fn judge_tokens(&self, slot: &str, input: u64, output: u64) {
        for (kind, n) in [("input", input), ("output", output)] {
            self.tokens
                .get_or_create(&labels(&[("slot", slot), ("kind", kind)]))
                .inc_by(n);
        }
    }

    /// Records one attempt lease (`held`, `takeover`, `waited`).
    /// Records how long an attempt waited on another replica's lease.
    pub fn lease_waited(&self, slot: &str, seconds: f64) {
        self.lease_wait
            .get_or_create(&labels(&[("slot", slot)]))
            .observe(seconds);
    }

    pub fn lease(&self, slot: &str, result: &str) {
        self.leases
            .get_or_create(&labels(&[("slot", slot), ("result", result)]))
            .inc();
    }

    /// Records a judge answer paid for but discarded: another replica committed the attempt.
    pub fn answer_discarded(&self, slot: &str) {
        self.answers_discarded
            .get_or_create(&labels(&[("slot", slot)]))
            .inc();
    }

    /// Records one sealed run.
    pub fn run_decided(&self, outcome: &str) {
        self.runs_decided
            .get_or_create(&labels(&[("outcome", outcome)]))
            .inc();
    }

    /// Records one checkpoint submission to a witness.
    pub fn witness_submission(&self, witness: &str, result: &str) {
        self.witness_submissions
            .get_or_create(&labels(&[("witness", witness), ("result", result)]))
            .inc();
    }

    /// Records one judged roll: the running counters behind `seal stats` (rolls by id and
    /// outcome, degraded rolls, consensus status per obligation), so a dashboard sees disputes
    /// and roll-2 rates between two `seal stats` reports.
    pub fn roll_judged<'a>(
        &self,
        roll_id: &str,
        outcome: &str,
        degraded: bool,
        statuses: impl IntoIterator<Item = &'a str>,
    ) {
        self.rolls
            .get_or_create(&labels(&[("outcome", outcome)]))
            .inc();
        self.rolls_by_id
            .get_or_create(&labels(&[("roll", roll_id)]))
            .inc();
        if degraded {
            // One judge missing is not a disagreement: its obligations count here only, so an
            // outage does not read as judges disputing (the disagreement alert).
            self.rolls_degraded.inc();
            return;
        }
        for status in statuses {
            self.consensus
                .get_or_create(&labels(&[("status", status)]))
                .inc();
        }
    }

    /// The Prometheus text exposition (0.0.4) of every registered metric.
    pub fn render(&self) -> String {
        let r = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        // Writing to a String cannot fail; an encoder error would be a bug of the crate.
        if let Err(e) = prometheus_client::encoding::prometheus_text::encode(&mut out, &r) {
            tracing::error!(error = %e, "metrics could not be encoded");
        }
        stable_order(&out)
    }
}

/// The exposition with each family's series in one order, scrape after scrape: sorted by their
/// label set, each series' own lines (buckets, sum, count) in the encoder's order. The encoder
/// walks a hash map, so two scrapes otherwise list the same series in different orders.
pub fn stable_order(text: &str) -> String {
    fn labels(line: &str) -> String {
        let Some(open) = line.find('{') else {
            return String::new();
        };
        let close = line.rfind('}').unwrap_or(line.len());
        line[open + 1..close.max(open + 1)]
            .split(',')
            .filter(|pair| !pair.starts_with("le="))
            .collect::<Vec<_>>()
            .join(",")
    }
    let mut out = String::with_capacity(text.len());
    let mut series: Vec<&str> = Vec::new();
    let flush = |series: &mut Vec<&str>, out: &mut String| {
        series.sort_by_cached_key(|l| labels(l));
        for l in series.drain(..) {
            out.push_str(l);
            out.push('\n');
        }
    };
    for line in text.lines() {
        if line.starts_with('#') {
            flush(&mut series, &mut out);
            out.push_str(line);
            out.push('\n');
        } else {
            series.push(line);
        }
    }
    flush(&mut series, &mut out);
    out
}

/// One judge call counted in flight; dropping it ends the count.
pub struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The witness client counts each witness's answers here (`seal_witness_submissions_total`).
impl seal_log::publish::SubmissionCounts for Metrics {
    fn known_witness(&self, witness: &str) {
        Metrics::known_witness(self, witness);
    }

    fn witness_submission(&self, witness: &str, result: &str) {
        Metrics::witness_submission(self, witness, result);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_series_exist_at_zero_with_help_before_any_event() {
        let m = Metrics::default();
        let text = m.render();
        for line in [
            "# HELP seal_judge_attempts_total judge calls made, by slot and result (ok: an answer that parsed).",
            "seal_judge_attempts_total{slot=\"a\",result=\"error\"} 0",
            "seal_judge_failures_total{slot=\"b\",class=\"http_4xx\"} 0",
            "seal_runs_decided_total{outcome=\"infra_error\"} 0",
            "seal_judge_latency_seconds_count{slot=\"a\"} 0",
            "seal_rolls_degraded_total 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
        }
        assert_eq!(text, m.render(), "the same series in the same order");
        m.judge_attempt("a", 2, 0.3, Some("timeout"), 0.25);
        m.judge_tokens("a", 120, 30);
        let text = m.render();
        for line in [
            "seal_judge_failures_total{slot=\"a\",class=\"timeout\"} 1",
            "seal_judge_retries_total{slot=\"a\"} 1",
            "seal_judge_cost_rmb_total{slot=\"a\"} 0.25",
            "seal_judge_tokens_total{slot=\"a\",kind=\"input\"} 120",
            "seal_judge_latency_seconds_bucket{slot=\"a\",le=\"0.5\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
        }
    }

    #[test]
    fn a_judge_call_counts_in_flight_until_its_guard_drops() {
        let m = Metrics::default();
        let line = |m: &Metrics| {
            m.render()
                .lines()
                .find(|l| l.starts_with("seal_judge_calls_in_flight{slot=\"b\"}"))
                .map(str::to_string)
        };
        assert_eq!(
            line(&m).as_deref(),
            Some("seal_judge_calls_in_flight{slot=\"b\"} 0")
        );
        let one = m.judge_call("b");
        let two = m.judge_call("b");
        assert_eq!(
            line(&m).as_deref(),
            Some("seal_judge_calls_in_flight{slot=\"b\"} 2")
        );
        drop(one);
        drop(two);
        assert_eq!(
            line(&m).as_deref(),
            Some("seal_judge_calls_in_flight{slot=\"b\"} 0")
        );
        m.log_state(Some(7), 1_700_000_000);
        let text = m.render();
        assert!(text.contains("seal_log_entries 7"), "{text}");
        assert!(text.contains("seal_log_last_checkpoint_timestamp_seconds 1700000000"));
    }

    #[test]
    fn one_served_model_series_per_slot_and_a_change_counts() {
        let m = Metrics::default();
        let served = |text: &str| -> Vec<String> {
            text.lines()
                .filter(|l| l.starts_with("seal_judge_served_model{"))
                .map(str::to_string)
                .collect()
        };
        assert!(served(&m.render()).is_empty());
        m.served_model("a", "gpt-4.1", Some("fp_1"));
        m.served_model("a", "gpt-4.1", Some("fp_1"));
        m.served_model("b", "qwen\n\"vl\"", None);
        let text = m.render();
        assert_eq!(
            served(&text),
            [
                "seal_judge_served_model{slot=\"a\",model=\"gpt-4.1\",fingerprint=\"fp_1\"} 1",
                "seal_judge_served_model{slot=\"b\",model=\"qwen__vl_\",fingerprint=\"\"} 1",
            ]
        );
        assert!(text.contains("seal_judge_served_model_changes_total{slot=\"a\"} 0"));
        m.served_model("a", "gpt-4.1", Some("fp_2"));
        let text = m.render();
        assert_eq!(
            served(&text)[0],
            "seal_judge_served_model{slot=\"a\",model=\"gpt-4.1\",fingerprint=\"fp_2\"} 1"
        );
        assert_eq!(served(&text).len(), 2, "the old series is gone");
        assert!(text.contains("seal_judge_served_model_changes_total{slot=\"a\"} 1"));
        assert!(text.contains("seal_judge_served_model_changes_total{slot=\"b\"} 0"));
    }

    #[test]
    fn series_are_listed_in_one_order_whatever_the_encoder_s() {
        let scrape = |series: &[&str]| {
            let mut t = String::from("# HELP x_seconds x\n# TYPE x_seconds histogram\n");
            for s in series {
                t.push_str(s);
                t.push('\n');
            }
            t.push_str("# HELP y y\n# TYPE y counter\ny_total 1\n");
            t
        };
        let b = [
            "x_seconds_sum{slot=\"b\"} 2",
            "x_seconds_count{slot=\"b\"} 1",
            "x_seconds_bucket{slot=\"b\",le=\"10.0\"} 1",
            "x_seconds_bucket{slot=\"b\",le=\"+Inf\"} 1",
        ];
        let a = [
            "x_seconds_sum{slot=\"a\"} 0",
            "x_seconds_count{slot=\"a\"} 0",
            "x_seconds_bucket{slot=\"a\",le=\"10.0\"} 0",
            "x_seconds_bucket{slot=\"a\",le=\"+Inf\"} 0",
        ];
        let one = stable_order(&scrape(&[&b[..], &a[..]].concat()));
        let other = stable_order(&scrape(&[&a[..], &b[..]].concat()));
        assert_eq!(one, other);
        let lines: Vec<&str> = one.lines().collect();
        // Slot a first; each series' own lines as the encoder wrote them (le order kept).
        assert_eq!(&lines[2..6], &a[..]);
        assert_eq!(&lines[6..10], &b[..]);
        assert_eq!(lines[10], "# HELP y y");
    }
}
