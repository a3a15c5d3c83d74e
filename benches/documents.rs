//! Where `seal verify` spends its CPU on a run's JSON documents (issue 25, part 3): for every
//! JSON document of one sealed run, the time of each step verify takes on it, beside two
//! baselines measured in the same run on the same bytes: sha256 (what hashing alone costs)
//! and `serde_json::from_slice::<Value>` (serde's own tree, without seal's strictness).
//!
//! Steps, as verify runs them (`seal_core::json`, `contracts`, `invariants`, `canonical`):
//! - **strict tree**: `json::parse` (duplicate keys, unsafe numbers and depth refused);
//! - **schema**: `contracts::validate` of the document's kind on that tree;
//! - **invariants**: the typed deserialization and cross-field rules (`validate_as` minus
//!   the schema, measured as their difference);
//! - **canonical**: the JCS bytes again from the tree (verify does this for the evidence:
//!   it must be stored canonical).
//!
//! Run: `cargo bench --bench documents` (release); `SEAL_BENCH_RUN=<run folder>` picks
//! another sealed run (default: `sealed-fixtures/store/runs/run-narrative-0010-pass`, the run
//! the verify bench copies). Each figure is the median of 5 rounds of ≥ 20 ms each. Without
//! `--bench` (`cargo test --all-targets`) every step runs once per document as a smoke pass.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use seal_core::canonical::{canonical_value_bytes, Hash};
use seal_core::contracts::{self, Kind};
use seal_core::validate::{validate_as, Report};

/// Rounds per figure (the median is shown) and the least time a round runs.
const ROUNDS: usize = 5;
const ROUND_AT_LEAST: Duration = Duration::from_millis(20);
/// Far above any fixture document; only the bench's own input is read.
const LIMIT: u64 = 64 << 20;

/// Microseconds per call of `f`, median of [`ROUNDS`] rounds (one call when `quick`).
fn micros(quick: bool, mut f: impl FnMut()) -> f64 {
    if quick {
        f();
        return 0.0;
    }
    let mut per_call = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let mut calls = 0u64;
        while start.elapsed() < ROUND_AT_LEAST {
            for _ in 0..16 {
                f();
            }
            calls += 16;
        }
        per_call.push(start.elapsed().as_secs_f64() * 1e6 / calls as f64);
    }
    per_call.sort_by(f64::total_cmp);
    per_call[ROUNDS / 2]
}

/// Every `.json` file under `dir`, sorted (the run's documents, as verify reads them).
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) => panic!("cannot list {}: {e}", d.display()),
        };
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[derive(Default)]
struct Row {
    bytes: usize,
    sha256: f64,
    serde: f64,
    strict: f64,
    schema: f64,
    invariants: f64,
    canonical: f64,
}

impl Row {
    fn add(&mut self, o: &Row) {
        self.bytes += o.bytes;
        self.sha256 += o.sha256;
        self.serde += o.serde;
        self.strict += o.strict;
        self.schema += o.schema;
        self.invariants += o.invariants;
        self.canonical += o.canonical;
    }
    fn checks(&self) -> f64 {
        self.strict + self.schema + self.invariants + self.canonical
    }
}

fn measure(quick: bool, path: &Path) -> (Option<Kind>, Row) {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => panic!("cannot read {}: {e}", path.display()),
    };
    let tree = match seal_core::json::parse(&bytes, LIMIT) {
        Ok(v) => v,
        Err(e) => panic!("{} is not strict JSON: {e}", path.display()),
    };
    let kind = Kind::detect(&tree).ok();
    let mut row = Row {
        bytes: bytes.len(),
        sha256: micros(quick, || {
            black_box(Hash::of(black_box(&bytes)));
        }),
        serde: micros(quick, || {
            black_box(serde_json::from_slice::<serde_json::Value>(black_box(&bytes)).ok());
        }),
        strict: micros(quick, || {
            black_box(seal_core::json::parse(black_box(&bytes), LIMIT).ok());
        }),
        canonical: micros(quick, || {
            black_box(canonical_value_bytes(black_box(&tree)).ok());
        }),
        ..Row::default()
    };
    if let Some(kind) = kind {
        // The bench measures valid documents only: an invalid one would time the error path.
        if let Report::Invalid(_, findings) = validate_as(kind, &tree) {
            panic!(
                "{} is not a valid {}: {findings:?}",
                path.display(),
                kind.name()
            );
        }
        row.schema = micros(quick, || {
            black_box(contracts::validate(kind, black_box(&tree)));
        });
        let both = micros(quick, || {
            black_box(validate_as(kind, black_box(&tree)));
        });
        row.invariants = (both - row.schema).max(0.0);
    }
    (kind, row)
}

fn main() {
    let quick = !std::env::args().any(|a| a == "--bench");
    let run = std::env::var_os("SEAL_BENCH_RUN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("sealed-fixtures/store/runs/run-narrative-0010-pass")
        });
    let files = json_files(&run);
    assert!(
        !files.is_empty(),
        "no JSON documents under {}",
        run.display()
    );
    println!(
        "seal's checks on one run's JSON documents ({}), µs per document, median of {ROUNDS} rounds",
        run.display()
    );
    println!(
        "{:<44} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "document (kind)",
        "bytes",
        "sha256",
        "serde",
        "strict",
        "schema",
        "invar.",
        "canon.",
        "strict/serde"
    );
    let mut total = Row::default();
    for path in &files {
        let (kind, row) = measure(quick, path);
        let name = path
            .strip_prefix(&run)
            .unwrap_or(path)
            .display()
            .to_string();
        let label = format!("{name} ({})", kind.map(|k| k.name()).unwrap_or("-"));
        println!(
            "{label:<44} {:>6} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2}x",
            row.bytes,
            row.sha256,
            row.serde,
            row.strict,
            row.schema,
            row.invariants,
            row.canonical,
            row.strict / row.serde.max(f64::MIN_POSITIVE)
        );
        total.add(&row);
    }
    println!(
        "{:<44} {:>6} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2}x",
        "all documents",
        total.bytes,
        total.sha256,
        total.serde,
        total.strict,
        total.schema,
        total.invariants,
        total.canonical,
        total.strict / total.serde.max(f64::MIN_POSITIVE)
    );
    println!(
        "every step on every document: {:.0} µs = {:.1}x sha256 of the same bytes, {:.1}x serde's tree alone",
        total.checks(),
        total.checks() / total.sha256.max(f64::MIN_POSITIVE),
        total.checks() / total.serde.max(f64::MIN_POSITIVE)
    );
    println!(
        "(verify parses each document once and runs the canonical step on the evidence only; the sum is an upper bound of its JSON work a run)"
    );
}
