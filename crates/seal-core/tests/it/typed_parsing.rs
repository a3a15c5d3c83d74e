//! Typed parsing (issue 25, part 3): `validate::checked::<T>` builds a stored document's typed
//! value from one pass over its parsed tree (schema, words, one deserialization, the rules on
//! the typed value), where the audit and `seal verify` used to validate the tree, deserialize
//! a copy of it to check the invariants, then deserialize it again for themselves.
//!
//! The rule pinned here: `checked` accepts exactly what `validate_as` calls valid, with the same
//! findings, and its value is the one `serde_json::from_value` builds. Every sealed fixture
//! document is an accepted case; the rejected cases break the schema, the words, the shape and
//! a cross-field rule of each kind (`invariant_rules.rs` compares the invariants part on each
//! of its 58 broken documents too).

use std::path::{Path, PathBuf};

use seal_core::contracts::{Finding, Kind};
use seal_core::doc::{
    CostReservation, Evidence, ImageManifest, JudgeConsensus, JudgePackage, JudgeResult,
    ProofPackage, SlotMeta,
};
use seal_core::invariants::Checked;
use seal_core::validate::{checked, validate_as, Report};
use serde_json::{json, Value};

fn runs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sealed-fixtures/store/runs")
}

fn read(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    seal_core::json::parse(&bytes, 1 << 24).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Asserts that `checked::<T>` and `validate_as(T::KIND)` agree on `doc`; returns the findings.
#[track_caller]
fn agree<T: Checked + std::fmt::Debug + PartialEq>(doc: &Value, what: &str) -> Vec<Finding> {
    let typed = checked::<T>(doc);
    match (validate_as(T::KIND, doc), typed) {
        (Report::Valid(_), Ok(value)) => {
            let plain: T = serde_json::from_value(doc.clone())
                .unwrap_or_else(|e| panic!("{what}: valid but not a {}: {e}", T::KIND.name()));
            assert_eq!(
                value, plain,
                "{what}: checked builds what from_value builds"
            );
            Vec::new()
        }
        (Report::Invalid(_, want), Err(got)) => {
            assert_eq!(got, want, "{what}: the same findings in the same order");
            got
        }
        (report, typed) => panic!("{what}: validate_as says {report:?}, checked {typed:?}"),
    }
}

/// Every stored document of a kind `checked` reads, under every sealed fixture run.
fn every_fixture_document() -> Vec<(PathBuf, Kind)> {
    let mut out = Vec::new();
    let mut stack = vec![runs()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let kind = match name {
                "evidence.json" | "judging.json" => Kind::PlaytestV3,
                "proof-package.json" => Kind::ProofPackage,
                "judge-package.json" => Kind::JudgePackage,
                "normalized.json" => Kind::JudgeResult,
                "consensus.json" => Kind::JudgeConsensus,
                "cost-reservation.json" => Kind::CostReservation,
                "image-manifest.json" => Kind::ImageManifest,
                "meta.json" => Kind::SlotMeta,
                _ => continue,
            };
            out.push((path, kind));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn agree_as(kind: Kind, doc: &Value, what: &str) -> Vec<Finding> {
    match kind {
        Kind::PlaytestV3 => agree::<Evidence>(doc, what),
        Kind::ProofPackage => agree::<ProofPackage>(doc, what),
        Kind::JudgePackage => agree::<JudgePackage>(doc, what),
        Kind::JudgeResult => agree::<JudgeResult>(doc, what),
        Kind::JudgeConsensus => agree::<JudgeConsensus>(doc, what),
        Kind::CostReservation => agree::<CostReservation>(doc, what),
        Kind::ImageManifest => agree::<ImageManifest>(doc, what),
        Kind::SlotMeta => agree::<SlotMeta>(doc, what),
        other => panic!("{what}: no typed reader for {}", other.name()),
    }
}

#[test]
fn every_sealed_document_reads_typed_as_from_value_builds_it() {
    let docs = every_fixture_document();
    // 11 runs: evidence (+ the undecided ones' snapshots), 12 rolls of 7 documents, every
    // attempt's meta: a walk that found far fewer would check nothing.
    assert!(docs.len() > 120, "{} documents", docs.len());
    for (path, kind) in &docs {
        let findings = agree_as(*kind, &read(path), &path.display().to_string());
        assert_eq!(findings, [], "{}", path.display());
    }
}

#[test]
fn a_document_that_breaks_its_schema_is_refused_with_the_schema_findings() {
    for (path, kind) in every_fixture_document() {
        let what = path.display().to_string();
        let mut doc = read(&path);
        let Some(map) = doc.as_object_mut() else {
            panic!("{what}: a document is an object");
        };
        // An unknown member, then a required one gone: both schema findings, no typed value.
        map.insert("planted".into(), json!(true));
        let found = agree_as(kind, &doc, &what);
        assert!(!found.is_empty(), "{what}: an unknown member is refused");
        assert!(
            found.iter().all(|f| f.rule.starts_with("schema.")),
            "{what}: {found:#?}"
        );
    }
}

#[test]
fn a_wrong_shape_and_a_broken_rule_are_refused_alike() {
    let pass = runs().join("run-narrative-0010-pass");
    let evidence = read(&pass.join("evidence.json"));
    // Not the type at all: the schema answers first.
    assert!(!agree::<Evidence>(&json!([]), "an array").is_empty());
    assert!(!agree::<JudgeConsensus>(&json!({"phase": 1}), "a stray object").is_empty());
    // A cross-field rule the schema cannot state: two proof obligations with one id.
    let mut d = evidence.clone();
    let Some(obligations) = d["proofObligations"].as_array_mut() else {
        panic!("the fixture's evidence has proof obligations");
    };
    obligations.push(obligations[0].clone());
    let found = agree::<Evidence>(&d, "a repeated obligation id");
    assert!(
        found.iter().any(|f| f.rule.starts_with("invariant.")),
        "{found:#?}"
    );
    // A consensus whose outcome contradicts its own decision rules.
    let consensus = read(&pass.join("roll-1/consensus.json"));
    let mut c = consensus.clone();
    c["agreement"] = json!(!c["agreement"].as_bool().unwrap_or(true));
    assert!(!agree::<JudgeConsensus>(&c, "a flipped agreement").is_empty());
}

#[test]
fn a_wrong_word_is_refused_by_its_type_as_by_the_rules() {
    let pass = runs().join("run-narrative-0010-pass");
    // A slot meta whose raw answer is named by an absolute path: the schema takes any string,
    // the typed key refuses it, and `validate_as` now says so too (it used to call the meta
    // valid while every reader of it failed).
    let meta = read(&pass.join("roll-1/judge-a/attempt-1/meta.json"));
    for (pointer, bad) in [
        ("/rawRef", json!("/abs")),
        ("/rawRef", json!("a/../b")),
        ("/errorClass", json!("bogus")),
    ] {
        let mut m = meta.clone();
        *m.pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{pointer}")) = bad.clone();
        let found = agree::<SlotMeta>(&m, &format!("meta {pointer} = {bad}"));
        assert!(!found.is_empty(), "{pointer} = {bad}");
    }
}

/// Every member of a fixture document replaced by a value of each JSON type, or removed.
fn mutations(doc: &Value) -> Vec<Value> {
    fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
        let children: Vec<(String, &Value)> = match v {
            Value::Object(m) => m
                .iter()
                .map(|(k, c)| (k.replace('~', "~0").replace('/', "~1"), c))
                .collect(),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, c)| (i.to_string(), c))
                .collect(),
            _ => Vec::new(),
        };
        for (name, child) in children {
            let p = format!("{at}/{name}");
            out.push(p.clone());
            pointers(child, p, out);
        }
    }
    let mut all = Vec::new();
    pointers(doc, String::new(), &mut all);
    let mut out = Vec::new();
    for p in all {
        for with in [
            json!(null),
            json!("x"),
            json!(1),
            json!(-1),
            json!(1.5),
            json!([]),
            json!({}),
            json!(true),
        ] {
            let mut d = doc.clone();
            if let Some(slot) = d.pointer_mut(&p) {
                *slot = with;
                out.push(d);
            }
        }
        if let Some((parent, last)) = p.rsplit_once('/') {
            let mut d = doc.clone();
            let name = last.replace("~1", "/").replace("~0", "~");
            if let Some(Value::Object(m)) = d.pointer_mut(parent) {
                m.remove(&name);
                out.push(d);
            }
        }
    }
    out
}

/// One document type's [`differential`].
type Differential = fn(&Value) -> bool;

/// The new path against the old one on `doc`: deserializing by reference gives what
/// `from_value` of a copy gives (value or message), and `checked` agrees with `validate_as`.
fn differential<T: Checked + std::fmt::Debug + PartialEq>(doc: &Value) -> bool {
    let by_ref = T::deserialize(doc).map_err(|e| e.to_string());
    let owned = serde_json::from_value::<T>(doc.clone()).map_err(|e| e.to_string());
    assert_eq!(by_ref, owned, "by reference and by value differ on {doc}");
    agree::<T>(doc, "a mutated fixture").is_empty()
}

#[test]
fn every_member_mutated_reads_the_same_by_reference_as_by_value() {
    let pass = runs().join("run-narrative-0010-pass");
    let cases: [(&str, Differential); 7] = [
        ("evidence.json", differential::<Evidence>),
        ("roll-1/proof-package.json", differential::<ProofPackage>),
        ("roll-1/judge-package.json", differential::<JudgePackage>),
        ("roll-1/consensus.json", differential::<JudgeConsensus>),
        (
            "roll-1/cost-reservation.json",
            differential::<CostReservation>,
        ),
        ("roll-1/image-manifest.json", differential::<ImageManifest>),
        (
            "roll-1/judge-a/attempt-1/meta.json",
            differential::<SlotMeta>,
        ),
    ];
    let (mut valid, mut invalid) = (0, 0);
    for (file, check) in cases {
        for doc in mutations(&read(&pass.join(file))) {
            if check(&doc) {
                valid += 1;
            } else {
                invalid += 1;
            }
        }
    }
    // Both outcomes are drawn many times (a walk that only ever refused would compare errors
    // only).
    assert!(
        valid > 100 && invalid > 1000,
        "{valid} valid, {invalid} invalid"
    );
}
