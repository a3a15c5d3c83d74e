//! The HTTP server's metrics, beside the engine's ([`seal_engine::metrics`]): requests by
//! route, method and status, their duration by route, the rolls in progress, the file store's
//! fsyncs, the log admission and the build. One registry per [`crate::AppState`].
//!
//! Decision: the `route` label is the route *template* axum matched (`/v1/runs/{run_id}`),
//! never the path asked for, and an unmatched request is `unmatched`: a caller must not be able
//! to mint series (and memory) with made-up paths. The method is one of a fixed list, else
//! `other`.

use std::sync::Mutex;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

use crate::admission::Admission;
use crate::BuildInfo;

type Labels = Vec<(&'static str, String)>;

/// Request durations: 5 ms … 15 min (a roll waits on the judges).
const DURATION_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0, 300.0, 900.0,
];

/// Every route the router serves, with its method: the duration series exist at zero.
pub(crate) const ROUTES: [(&str, &str); 18] = [
    ("PUT", "/v1/runs/{run_id}"),
    ("GET", "/v1/runs/{run_id}"),
    ("PUT", "/v1/runs/{run_id}/brief"),
    ("PUT", "/v1/runs/{run_id}/play-spec"),
    ("POST", "/v1/runs/{run_id}/rolls/{n}"),
    ("POST", "/v1/runs/{run_id}/finalize"),
    ("GET", "/v1/runs/{run_id}/verify"),
    ("GET", "/v1/runs/{run_id}/explain"),
    ("GET", "/v1/runs/{run_id}/log-proof"),
    ("GET", "/v1/log/checkpoint"),
    ("GET", "/v1/stats"),
    ("PUT", "/v1/blobs/sha256/{hex}"),
    ("GET", "/openapi.json"),
    ("GET", "/metrics"),
    ("GET", "/healthz"),
    ("GET", "/livez"),
    ("GET", "/readyz"),
    ("GET", "unmatched"),
];

const METHODS: [&str; 7] = ["GET", "PUT", "POST", "HEAD", "DELETE", "PATCH", "OPTIONS"];

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The server's families, registered once.
pub(crate) struct ServerMetrics {
    registry: Mutex<Registry>,
    requests: Family<Labels, Counter>,
    duration: Family<Labels, Histogram, fn() -> Histogram>,
    in_progress: Gauge,
    admitted: Gauge,
    fsyncs: Family<Labels, Counter>,
    admission: Family<Labels, Gauge>,
}

impl ServerMetrics {
    pub(crate) fn new() -> ServerMetrics {
        let m = ServerMetrics {
            registry: Mutex::new(Registry::default()),
            requests: Family::default(),
            duration: Family::new_with_constructor(duration_histogram),
            in_progress: Gauge::default(),
            admitted: Gauge::default(),
            fsyncs: Family::default(),
            admission: Family::default(),
        };
        {
            let mut r = m.registry.lock().unwrap_or_else(|e| e.into_inner());
            r.register(
                "seal_http_requests",
                "HTTP requests answered, by route template, method and status",
                m.requests.clone(),
            );
            r.register(
                "seal_http_request_duration_seconds",
                "HTTP request duration, by route template and method",
                m.duration.clone(),
            );
            r.register(
                "seal_rolls_in_progress",
                "rolls being judged now",
                m.in_progress.clone(),
            );
            r.register(
                "seal_rolls_admitted",
                "rolls in progress or waiting for a permit",
                m.admitted.clone(),
            );
            r.register(
                "seal_store_fsyncs",
                "fsyncs of the file store's durable writes, by kind (file, folder)",
                m.fsyncs.clone(),
            );
            r.register(
                "seal_log_admission",
                "the log admission after start, by state (1: the state it is in)",
                m.admission.clone(),
            );
        }
        for (method, route) in ROUTES {
            let _ = m.duration.get_or_create(&vec![
                ("route", route.to_string()),
                ("method", method.to_string()),
            ]);
        }
        m
    }

    /// `seal_build_info{version, commit, rustc} 1`.
    pub(crate) fn set_build(&self, b: &BuildInfo) {
        let info = Info::new(vec![
            ("version", b.version.to_string()),
            ("commit", b.commit.to_string()),
            ("rustc", b.rustc.to_string()),
        ]);
        let mut r = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        r.register(
            "seal_build",
            "the binary serving: version, git commit, compiler",
            info,
        );
    }

    /// Counts one answered request (`route`: the matched template, or `unmatched`).
    pub(crate) fn observe(&self, route: &str, method: &str, status: u16, seconds: f64) {
        let method = METHODS
            .iter()
            .find(|m| **m == method)
            .copied()
            .unwrap_or("other");
        let route = ROUTES
            .iter()
            .map(|(_, r)| *r)
            .find(|r| *r == route)
            .unwrap_or("unmatched");
        self.requests
            .get_or_create(&vec![
                ("route", route.to_string()),
                ("method", method.to_string()),
                ("status", status.to_string()),
            ])
            .inc();
        self.duration
            .get_or_create(&vec![
                ("route", route.to_string()),
                ("method", method.to_string()),
            ])
            .observe(seconds);
    }

    /// The exposition, after reading the values that are sampled rather than counted.
    pub(crate) fn render(
        &self,
        in_progress: usize,
        admitted: usize,
        admission: Admission,
    ) -> String {
        self.in_progress
            .set(i64::try_from(in_progress).unwrap_or(i64::MAX));
        self.admitted
            .set(i64::try_from(admitted).unwrap_or(i64::MAX));
        let (folder, file) = seal_store::fsync_counts();
        for (kind, now) in [("file", file), ("folder", folder)] {
            let c = self.fsyncs.get_or_create(&vec![("kind", kind.to_string())]);
            c.inc_by(now.saturating_sub(c.get()));
        }
        for s in [Admission::Pending, Admission::Admitted, Admission::Refused] {
            let g = self
                .admission
                .get_or_create(&vec![("state", s.as_str().to_string())]);
            g.set(i64::from(s == admission));
        }
        let r = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::prometheus_text::encode(&mut out, &r) {
            tracing::error!(error = %e, "metrics could not be encoded");
        }
        out
    }
}
