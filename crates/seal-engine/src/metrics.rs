//! Prometheus metrics, kept by hand: a few counters and one latency histogram per judge slot.
//! Rendering is the text exposition format (version 0.0.4).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

/// Latency buckets in seconds: judges answer in 0.2 s … 2 min.
const BUCKETS: [f64; 12] = [
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Default)]
struct Inner {
    counters: BTreeMap<(String, String), f64>,
    latency: BTreeMap<String, Histogram>,
}

/// The daemon's metrics. Cheap to update from any task.
#[derive(Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

impl Metrics {
    /// Adds `v` to counter `name` with the label set `labels` (e.g. `slot="a",class="timeout"`).
    pub fn add(&self, name: &str, labels: &str, v: f64) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        *g.counters
            .entry((name.to_string(), labels.to_string()))
            .or_insert(0.0) += v;
    }

    pub fn observe_latency(&self, slot: &str, seconds: f64) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let h = g.latency.entry(slot.to_string()).or_default();
        for (i, b) in BUCKETS.iter().enumerate() {
            if seconds <= *b {
                h.counts[i] += 1;
            }
        }
        h.count += 1;
        h.sum += seconds;
    }

    /// Records one judge attempt.
    pub fn judge_attempt(
        &self,
        slot: &str,
        attempt: u32,
        latency_s: f64,
        error_class: Option<&str>,
        cost_rmb: f64,
    ) {
        self.observe_latency(slot, latency_s);
        let result = if error_class.is_some() { "error" } else { "ok" };
        self.add(
            "seal_judge_attempts_total",
            &format!("slot=\"{slot}\",result=\"{result}\""),
            1.0,
        );
        if attempt > 1 {
            self.add("seal_judge_retries_total", &format!("slot=\"{slot}\""), 1.0);
        }
        if let Some(c) = error_class {
            self.add(
                "seal_judge_failures_total",
                &format!("slot=\"{slot}\",class=\"{c}\""),
                1.0,
            );
        }
        self.add(
            "seal_judge_cost_rmb_total",
            &format!("slot=\"{slot}\""),
            cost_rmb,
        );
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
        self.add("seal_rolls_total", &format!("outcome=\"{outcome}\""), 1.0);
        self.add(
            "seal_rolls_by_id_total",
            &format!("roll=\"{roll_id}\""),
            1.0,
        );
        if degraded {
            self.add("seal_rolls_degraded_total", "", 1.0);
        }
        for status in statuses {
            self.add(
                "seal_consensus_obligations_total",
                &format!("status=\"{status}\""),
                1.0,
            );
        }
    }

    /// The text exposition.
    pub fn render(&self, gauges: &[(&str, &str, f64)]) -> String {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        let mut last = "";
        for ((name, labels), v) in &g.counters {
            if name != last {
                let _ = writeln!(out, "# TYPE {name} counter");
                last = name;
            }
            if labels.is_empty() {
                let _ = writeln!(out, "{name} {v}");
            } else {
                let _ = writeln!(out, "{name}{{{labels}}} {v}");
            }
        }
        let _ = writeln!(out, "# TYPE seal_judge_latency_seconds histogram");
        for (slot, h) in &g.latency {
            for (i, b) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "seal_judge_latency_seconds_bucket{{slot=\"{slot}\",le=\"{b}\"}} {}",
                    h.counts[i]
                );
            }
            let _ = writeln!(
                out,
                "seal_judge_latency_seconds_bucket{{slot=\"{slot}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "seal_judge_latency_seconds_sum{{slot=\"{slot}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "seal_judge_latency_seconds_count{{slot=\"{slot}\"}} {}",
                h.count
            );
        }
        for (name, help, v) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        out
    }
}
