//! The HTTP server's metrics, beside the engine's ([`seal_engine::metrics`]): requests by
//! route, method and status, their duration by route, the rolls in progress, the file store's
//! fsyncs, the log admission, the build and the process (CPU, memory, descriptors, start time,
//! read from Linux `/proc` when scraped). One registry per [`crate::AppState`].
//!
//! The `route` label is the route *template* axum matched (`/v1/runs/{run_id}`), `unmatched`
//! when none did; the method is one of a fixed list, else `other` (docs/DECISIONS.md, "Metric
//! labels are bounded and exist from the start").

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

/// Request durations: 5 ms … 15 min (a roll waits on the judges, so its seconds are resolved
/// as finely as the judges').
const DURATION_BUCKETS: [f64; 21] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0,
    45.0, 60.0, 120.0, 300.0, 900.0,
];

/// Every route the router serves, with its method: the duration series exist at zero.
pub(crate) const ROUTES: [(&str, &str); 19] = [
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
    ("GET", "/v1/log/tile/{*path}"),
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
    queued: Gauge,
    fsyncs: Family<Labels, Counter>,
    created: Counter,
    admission: Family<Labels, Gauge>,
    store_errors: Family<Labels, Counter>,
    process: process::ProcessMetrics,
}

impl ServerMetrics {
    pub(crate) fn new() -> ServerMetrics {
        let m = ServerMetrics {
            registry: Mutex::new(Registry::default()),
            requests: Family::default(),
            duration: Family::new_with_constructor(duration_histogram),
            in_progress: Gauge::default(),
            queued: Gauge::default(),
            fsyncs: Family::default(),
            created: Counter::default(),
            admission: Family::default(),
            store_errors: Family::default(),
            process: process::ProcessMetrics::default(),
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
            // The metric keeps its published name (dashboards and alerts use it); in the code
            // this is the queue of roll requests (`AppState::queued`).
            r.register(
                "seal_rolls_admitted",
                "rolls in progress or waiting for a permit",
                m.queued.clone(),
            );
            r.register(
                "seal_store_fsyncs",
                "flushes of the file store's durable writes: syncfs (flush=batch, each shared by every write staged before it started), file and folder (flush=per-object)",
                m.fsyncs.clone(),
            );
            r.register(
                "seal_store_objects_created",
                "objects the file store's durable write path created (flushes per object = 1 / batch size)",
                m.created.clone(),
            );
            r.register(
                "seal_store_errors",
                "requests answered 503 for a store failure (I/O, network, permissions), by the store operation that failed",
                m.store_errors.clone(),
            );
            r.register(
                "seal_log_admission",
                "the log admission after start, by state (1: the state it is in)",
                m.admission.clone(),
            );
            m.process.register(&mut r);
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

    /// A request met a store failure in operation `op` (one of the store's fixed names).
    pub(crate) fn store_error(&self, op: &'static str) {
        self.store_errors
            .get_or_create(&vec![("op", op.to_string())])
            .inc();
    }

    /// The exposition, after reading the values that are sampled rather than counted.
    pub(crate) fn render(&self, in_progress: usize, queued: usize, admission: Admission) -> String {
        self.in_progress
            .set(i64::try_from(in_progress).unwrap_or(i64::MAX));
        self.queued.set(i64::try_from(queued).unwrap_or(i64::MAX));
        let now = seal_store::flush_counts();
        for (kind, n) in [
            ("syncfs", now.syncfs),
            ("file", now.file),
            ("folder", now.folder),
        ] {
            let c = self.fsyncs.get_or_create(&vec![("kind", kind.to_string())]);
            c.inc_by(n.saturating_sub(c.get()));
        }
        self.created
            .inc_by(now.created.saturating_sub(self.created.get()));
        for s in [Admission::Pending, Admission::Admitted, Admission::Refused] {
            let g = self
                .admission
                .get_or_create(&vec![("state", s.as_str().to_string())]);
            g.set(i64::from(s == admission));
        }
        self.process.sample();
        let r = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::prometheus_text::encode(&mut out, &r) {
            tracing::error!(error = %e, "metrics could not be encoded");
        }
        seal_engine::metrics::stable_order(&out)
    }
}

/// The process families Prometheus' client libraries export under the same names, so the
/// usual dashboards and alerts work: `process_cpu_seconds_total`,
/// `process_resident_memory_bytes`, `process_virtual_memory_bytes`, `process_open_fds`,
/// `process_max_fds`, `process_start_time_seconds`. Sampled from `/proc/self` at each scrape
/// (Linux); elsewhere, or when `/proc` cannot be read, they stay at their last value.
mod process {
    use std::sync::atomic::AtomicU64;

    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::gauge::Gauge;
    use prometheus_client::registry::Registry;

    #[derive(Default)]
    pub(super) struct ProcessMetrics {
        cpu: Counter<f64, AtomicU64>,
        resident: Gauge,
        virtual_bytes: Gauge,
        open_fds: Gauge,
        max_fds: Gauge,
        start_time: Gauge<f64, AtomicU64>,
    }

    impl ProcessMetrics {
        pub(super) fn register(&self, r: &mut Registry) {
            r.register(
                "process_cpu_seconds",
                "user and system CPU time the process used, in seconds",
                self.cpu.clone(),
            );
            r.register(
                "process_resident_memory_bytes",
                "resident memory of the process, in bytes",
                self.resident.clone(),
            );
            r.register(
                "process_virtual_memory_bytes",
                "virtual memory of the process, in bytes",
                self.virtual_bytes.clone(),
            );
            r.register(
                "process_open_fds",
                "file descriptors the process has open",
                self.open_fds.clone(),
            );
            r.register(
                "process_max_fds",
                "most file descriptors the process may open (RLIMIT_NOFILE)",
                self.max_fds.clone(),
            );
            r.register(
                "process_start_time_seconds",
                "when the process started, in seconds since the Unix epoch",
                self.start_time.clone(),
            );
        }

        /// Reads `/proc/self` now; a value that cannot be read is left as it was.
        pub(super) fn sample(&self) {
            let Some(stat) = read("/proc/self/stat").as_deref().and_then(Stat::parse) else {
                return;
            };
            let ticks = rustix::param::clock_ticks_per_second() as f64;
            let page = rustix::param::page_size() as i64;
            if ticks > 0.0 {
                let cpu = (stat.utime + stat.stime) as f64 / ticks;
                let delta = cpu - self.cpu.get();
                if delta > 0.0 {
                    self.cpu.inc_by(delta);
                }
                if let Some(boot) = boot_time() {
                    self.start_time.set(boot + stat.starttime as f64 / ticks);
                }
            }
            self.resident
                .set(stat.rss_pages.saturating_mul(page).max(0));
            self.virtual_bytes
                .set(i64::try_from(stat.vsize).unwrap_or(i64::MAX));
            if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
                // The listing's own descriptor is counted too, as client_golang does.
                self.open_fds.set(dir.count() as i64);
            }
            if let Some(max) = max_open_files() {
                self.max_fds.set(max);
            }
        }
    }

    fn read(path: &str) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }

    /// The fields of `/proc/self/stat` used here (proc(5)).
    #[derive(Debug, PartialEq)]
    pub(super) struct Stat {
        pub utime: u64,
        pub stime: u64,
        pub starttime: u64,
        pub vsize: u64,
        pub rss_pages: i64,
    }

    impl Stat {
        /// Parses the line; the command name (field 2) may hold spaces and parentheses, so
        /// the fields are counted from the last `)`.
        pub(super) fn parse(line: &str) -> Option<Stat> {
            let rest = &line[line.rfind(')')? + 1..];
            // rest[0] is field 3 (state): field n is rest[n - 3].
            let f: Vec<&str> = rest.split_whitespace().collect();
            let n = |i: usize| f.get(i - 3).and_then(|v| v.parse::<u64>().ok());
            Some(Stat {
                utime: n(14)?,
                stime: n(15)?,
                starttime: n(22)?,
                vsize: n(23)?,
                rss_pages: f.get(24 - 3)?.parse().ok()?,
            })
        }
    }

    /// The boot time (`btime` of `/proc/stat`), in seconds since the epoch.
    fn boot_time() -> Option<f64> {
        read("/proc/stat")?
            .lines()
            .find_map(|l| l.strip_prefix("btime "))
            .and_then(|v| v.trim().parse().ok())
    }

    /// The soft limit on open files (`Max open files` of `/proc/self/limits`).
    fn max_open_files() -> Option<i64> {
        read("/proc/self/limits")?
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .and_then(|l| l.split_whitespace().nth(3))
            .and_then(|v| v.parse().ok())
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn stat_is_read_past_a_command_name_with_spaces_and_parentheses() {
            let line = "42 (a b) c)) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 \
                        12345 1048576 300 18446744073709551615";
            assert_eq!(
                Stat::parse(line),
                Some(Stat {
                    utime: 250,
                    stime: 50,
                    starttime: 12345,
                    vsize: 1048576,
                    rss_pages: 300,
                })
            );
            assert_eq!(Stat::parse("garbage"), None);
        }
    }
}
