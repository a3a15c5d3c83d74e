//! `seal validate` end to end: the real binary, its output format and its exit codes.
//!
//! The negative suite is data: `tests/data/invalid/*.json`, one document per case, each derived
//! from a valid example by one mutation, with the expected exit code and the expected
//! `(pointer, rule)` findings in `tests/data/invalid/cases.toml`. A case fails unless the binary
//! exits as expected AND prints every expected finding, so a rule that stops firing (or starts
//! firing at another pointer) is caught here.

use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn data(rel: &str) -> PathBuf {
    root().join("tests/data").join(rel)
}

/// Runs `seal validate ARGS…` from the crate root (so a `config/seal.toml` there is the one used).
fn seal_validate<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_seal"))
        .current_dir(root())
        .arg("validate")
        .args(args)
        .output()
        .expect("run the seal binary")
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("seal was killed by a signal")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn show(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    )
}

/// Every example document the pipeline hands seal: headers, proof packages, play-specs.
fn example_documents() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let inputs = root().join("sealed-fixtures/inputs");
    for run in sorted_dir(&inputs) {
        if !run.is_dir() {
            continue;
        }
        for entry in sorted_dir(&run) {
            let name = entry.file_name().unwrap().to_string_lossy().into_owned();
            if name == "header.json" || name == "play-spec.json" {
                files.push(entry);
            } else if name.starts_with("roll-") && entry.is_dir() {
                let pp = entry.join("proof-package.json");
                if pp.is_file() {
                    files.push(pp);
                }
            }
        }
    }
    files
}

fn sorted_dir(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// The `(pointer, rule)` pairs printed under an `INVALID` line.
fn findings(stdout: &str) -> Vec<(String, String, String)> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("    "))
        .filter_map(|l| {
            let (pointer, rest) = l.split_once(": [")?;
            let (rule, message) = rest.split_once("] ")?;
            Some((pointer.to_string(), rule.to_string(), message.to_string()))
        })
        .collect()
}

// ------------------------------------------------------------------------------------------------
// Valid documents

#[test]
fn every_example_document_validates() {
    let files = example_documents();
    // 3 headers, 3 play-specs, 4 proof packages at the time of writing: never silently zero.
    assert!(
        files.len() >= 10,
        "found only {} example documents",
        files.len()
    );
    let out = seal_validate(&files);
    assert_eq!(code(&out), 0, "{}", show(&out));
    let stdout = text(&out.stdout);
    for f in &files {
        let line = stdout
            .lines()
            .find(|l| l.contains(&*f.to_string_lossy()))
            .unwrap_or_else(|| panic!("no line for {}\n{}", f.display(), show(&out)));
        assert!(line.starts_with("valid    "), "{line}");
    }
    assert!(out.stderr.is_empty(), "{}", show(&out));
}

#[test]
fn example_kinds_are_detected() {
    for (f, kind) in [
        (
            "sealed-fixtures/inputs/run-narrative-0010-pass/header.json",
            "playtest/3",
        ),
        (
            "sealed-fixtures/inputs/run-narrative-0010-pass/play-spec.json",
            "PlaySpec",
        ),
        (
            "sealed-fixtures/inputs/run-narrative-0010-pass/roll-1/proof-package.json",
            "ProofPackage/1",
        ),
    ] {
        let out = seal_validate([f]);
        assert_eq!(code(&out), 0, "{}", show(&out));
        assert_eq!(text(&out.stdout), format!("valid    {f} ({kind})\n"));
    }
}

#[test]
fn hand_built_documents_in_data_valid_validate() {
    let files: Vec<PathBuf> = sorted_dir(&data("valid"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert!(files.iter().any(|p| p.ends_with("decided-pass.json")));
    for f in &files {
        let out = seal_validate([f]);
        assert_eq!(code(&out), 0, "{}: {}", f.display(), show(&out));
        assert!(text(&out.stdout).starts_with("valid    "), "{}", show(&out));
    }
}

/// The DECIDED document the invariant cases are derived from: it must itself be valid, or every
/// `decided-*` case would pass for the wrong reason.
#[test]
fn decided_pass_is_a_complete_decided_document() {
    let f = data("valid/decided-pass.json");
    let out = seal_validate([&f]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
    assert_eq!(v["phase"], "DECIDED");
    for field in [
        "outcome",
        "finalPostguard",
        "decision",
        "compatibility",
        "judge",
        "merge",
    ] {
        assert!(!v[field].is_null(), "{field} must be set");
    }
    assert_eq!(v["rolls"].as_array().unwrap().len(), 1);
}

#[test]
fn underscore_extension_fields_survive() {
    let dir = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value = serde_json::from_slice(
        &std::fs::read(root().join("sealed-fixtures/inputs/run-narrative-0010-pass/header.json"))
            .unwrap(),
    )
    .unwrap();
    v["_foo"] = serde_json::json!("bar");
    v["_pipeline"] =
        serde_json::json!({"worker": "playtest-worker-3", "attempt": 2, "tags": ["a"]});
    v["_"] = serde_json::Value::Null;
    let f = dir.path().join("header-ext.json");
    std::fs::write(&f, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let out = seal_validate([&f]);
    assert_eq!(code(&out), 0, "{}", show(&out));

    // Also on a DECIDED document (the invariants deserialize the typed form: it must keep them).
    let mut d: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data("valid/decided-pass.json")).unwrap()).unwrap();
    d["_foo"] = serde_json::json!(1);
    let f = dir.path().join("decided-ext.json");
    std::fs::write(&f, serde_json::to_vec_pretty(&d).unwrap()).unwrap();
    let out = seal_validate([&f]);
    assert_eq!(code(&out), 0, "{}", show(&out));

    // The same field without the underscore is refused.
    v.as_object_mut().unwrap().remove("_foo");
    v["foo"] = serde_json::json!("bar");
    let f = dir.path().join("header-foo.json");
    std::fs::write(&f, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let out = seal_validate([&f]);
    assert_eq!(code(&out), 1, "{}", show(&out));
    assert!(findings(&text(&out.stdout))
        .iter()
        .any(|(p, r, _)| p == "/" && r == "schema.additionalProperties"));
}

// ------------------------------------------------------------------------------------------------
// The negative suite

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Cases {
    case: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    file: String,
    /// The valid document the case was derived from (documentation; checked to exist).
    from: Option<String>,
    /// The one mutation, in words.
    what: String,
    /// A bug in src/ that makes this (correct) expectation fail today: strict xfail.
    known_bug: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    exit: i32,
    /// The kind the INVALID line must name (exit 1).
    kind: Option<String>,
    /// A substring stderr must contain (exit 2).
    stderr: Option<String>,
    #[serde(default)]
    expect: Vec<Expect>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    pointer: String,
    rule: String,
    /// Optional substring of the message.
    message: Option<String>,
}

fn load_cases() -> Vec<Case> {
    let path = data("invalid/cases.toml");
    let s = std::fs::read_to_string(&path).unwrap();
    let cases: Cases = toml::from_str(&s).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    cases.case
}

/// Checks one case; returns what is wrong with the output, if anything.
fn check_case(c: &Case) -> Result<(), String> {
    let file = data("invalid").join(&c.file);
    let mut args: Vec<std::ffi::OsString> = c.args.iter().map(Into::into).collect();
    args.push(file.clone().into());
    let out = seal_validate(&args);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    let mut problems = Vec::new();
    if code(&out) != c.exit {
        problems.push(format!("exit {} (expected {})", code(&out), c.exit));
    }
    let shown = file.display().to_string();
    match c.exit {
        1 => {
            let kind = c.kind.as_deref().unwrap_or("?");
            let head = format!("INVALID  {shown} ({kind}): ");
            match stdout.lines().next() {
                Some(l) if l.starts_with(&head) => {
                    let n = findings(&stdout).len();
                    let want = format!("{n} problem{}", if n == 1 { "" } else { "s" });
                    if l[head.len()..] != want {
                        problems.push(format!(
                            "header line says {:?}, {n} finding lines follow",
                            l
                        ));
                    }
                }
                other => problems.push(format!("first line {other:?}, expected to start {head:?}")),
            }
            let got = findings(&stdout);
            for e in &c.expect {
                let hit = got.iter().any(|(p, r, m)| {
                    *p == e.pointer
                        && *r == e.rule
                        && e.message.as_deref().is_none_or(|want| m.contains(want))
                });
                if !hit {
                    problems.push(format!(
                        "missing finding {} [{}]{}",
                        e.pointer,
                        e.rule,
                        e.message
                            .as_deref()
                            .map(|m| format!(" ~ {m:?}"))
                            .unwrap_or_default()
                    ));
                }
            }
            if !stderr.is_empty() {
                problems.push("stderr is not empty".into());
            }
        }
        2 => {
            let want_prefix = format!("ERROR    {shown}: ");
            if !stderr.starts_with(&want_prefix) {
                problems.push(format!("stderr does not start with {want_prefix:?}"));
            }
            if let Some(want) = &c.stderr {
                if !stderr.contains(want.as_str()) {
                    problems.push(format!("stderr lacks {want:?}"));
                }
            }
            if !stdout.is_empty() {
                problems.push("stdout is not empty for an unusable file".into());
            }
        }
        other => problems.push(format!(
            "case declares exit {other}; invalid cases exit 1 or 2"
        )),
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}\n  {}\n{}",
            c.file,
            c.what,
            problems.join("\n  "),
            show(&out)
        ))
    }
}

#[test]
fn invalid_documents_are_refused_with_pointer_and_rule() {
    let cases = load_cases();
    let enforced = cases.iter().filter(|c| c.known_bug.is_none()).count();
    assert!(enforced >= 40, "only {enforced} enforced cases");

    // Every case declares what it expects, and names a base that exists.
    for c in &cases {
        match c.exit {
            1 => assert!(
                (!c.expect.is_empty() || c.known_bug.is_some()) && c.kind.is_some(),
                "{}: an exit-1 case needs kind and expect",
                c.file
            ),
            2 => assert!(
                c.stderr.is_some(),
                "{}: an exit-2 case needs stderr",
                c.file
            ),
            _ => {}
        }
        if let Some(from) = &c.from {
            assert!(
                root().join(from).is_file(),
                "{}: from {from} does not exist",
                c.file
            );
        }
    }

    // Every data file has exactly one case, and every case has its file.
    let listed: BTreeSet<&str> = cases.iter().map(|c| c.file.as_str()).collect();
    assert_eq!(
        listed.len(),
        cases.len(),
        "a file is listed twice in cases.toml"
    );
    let on_disk: BTreeSet<String> = sorted_dir(&data("invalid"))
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let on_disk_ref: BTreeSet<&str> = on_disk.iter().map(String::as_str).collect();
    assert_eq!(
        listed, on_disk_ref,
        "cases.toml and tests/data/invalid/*.json disagree"
    );

    let mut failures = Vec::new();
    for c in &cases {
        match (check_case(c), &c.known_bug) {
            (Ok(()), None) => {}
            (Err(e), None) => failures.push(e),
            // Strict xfail: the bug must still reproduce; once fixed, the marker must go.
            (Err(_), Some(bug)) => eprintln!("known bug still present: {}: {bug}", c.file),
            (Ok(()), Some(bug)) => failures.push(format!(
                "{}: passes now, so the known bug is fixed ({bug}): remove known_bug from its \
                 case in tests/data/invalid/cases.toml (and pin the rule it now reports)",
                c.file
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} invalid cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

/// The rule families the brief asks to cover are all present in the table (so the suite cannot
/// shrink silently).
#[test]
fn negative_suite_covers_the_rule_families() {
    let cases = load_cases();
    let rules: BTreeSet<&str> = cases
        .iter()
        .filter(|c| c.known_bug.is_none())
        .flat_map(|c| c.expect.iter().map(|e| e.rule.as_str()))
        .collect();
    for want in [
        "schema.type",
        "schema.required",
        "schema.additionalProperties",
        "schema.enum",
        "schema.pattern",
        "schema.not",
        "schema.const",
        "schema.minimum",
        "invariant.obligation_ids_unique",
        "invariant.play_spec_obligation_check",
        "invariant.replay_parent",
        "invariant.action_seq",
        "invariant.action_id",
        "invariant.event_seq",
        "invariant.frame_listed",
        "invariant.frame_ref_is_cas",
        "invariant.compatibility",
        "invariant.decision_follows_outcome",
        "invariant.outcome_follows_rolls",
        "invariant.first_decisive",
        "invariant.source_roll_agrees",
        "invariant.roll2_after_indecisive",
        "invariant.cost_covers_rolls",
    ] {
        assert!(rules.contains(want), "no case expects {want}");
    }
    let unusable = cases.iter().filter(|c| c.exit == 2).count();
    assert!(unusable >= 10, "only {unusable} unusable-input cases");
}

// ------------------------------------------------------------------------------------------------
// Unusable input and the size limit

#[test]
fn missing_file_and_directory_are_errors() {
    let missing = data("invalid/does-not-exist.json");
    let out = seal_validate([&missing]);
    assert_eq!(code(&out), 2, "{}", show(&out));
    assert!(out.stdout.is_empty());
    assert!(
        text(&out.stderr).starts_with(&format!("ERROR    {}: ", missing.display())),
        "{}",
        show(&out)
    );

    let dir = data("invalid");
    let out = seal_validate([&dir]);
    assert_eq!(code(&out), 2, "{}", show(&out));
    assert!(text(&out.stderr).starts_with(&format!("ERROR    {}: ", dir.display())));
}

#[test]
fn size_limit_is_inclusive() {
    let f = root().join("sealed-fixtures/inputs/run-narrative-0010-pass/header.json");
    let len = std::fs::metadata(&f).unwrap().len();
    let out = seal_validate([format!("--max-bytes={len}").as_str(), f.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "exactly at the limit: {}", show(&out));
    let out = seal_validate([
        format!("--max-bytes={}", len - 1).as_str(),
        f.to_str().unwrap(),
    ]);
    assert_eq!(code(&out), 2, "one byte over: {}", show(&out));
    assert!(
        text(&out.stderr).contains("over the size limit"),
        "{}",
        show(&out)
    );
}

#[test]
fn no_files_is_a_usage_error() {
    let out = seal_validate(Vec::<String>::new());
    assert_eq!(code(&out), 2, "{}", show(&out));
}

// ------------------------------------------------------------------------------------------------
// Several files: one line each, in order, exit code is the worst

#[test]
fn several_files_exit_with_the_worst_code() {
    let valid = root().join("sealed-fixtures/inputs/run-narrative-0010-pass/header.json");
    let valid2 = data("valid/decided-pass.json");
    let invalid = data("invalid/header-genre-enum.json");
    let unusable = data("invalid/empty-file.json");

    let out = seal_validate([&valid, &valid2]);
    assert_eq!(code(&out), 0, "{}", show(&out));

    for order in [
        vec![&valid, &invalid],
        vec![&invalid, &valid],
        vec![&invalid, &invalid, &valid2],
    ] {
        let out = seal_validate(&order);
        assert_eq!(code(&out), 1, "{}", show(&out));
    }

    for order in [
        vec![&valid, &invalid, &unusable],
        vec![&unusable, &invalid, &valid],
        vec![&invalid, &unusable, &valid],
        vec![&unusable, &valid],
    ] {
        let out = seal_validate(&order);
        assert_eq!(code(&out), 2, "{}", show(&out));
    }

    // Every file is reported, in argument order, even after an unusable one.
    let out = seal_validate([&unusable, &invalid, &valid]);
    let stdout = text(&out.stdout);
    let heads: Vec<&str> = stdout.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(heads.len(), 2, "{}", show(&out));
    assert!(heads[0].starts_with(&format!("INVALID  {} (playtest/3): ", invalid.display())));
    assert_eq!(
        heads[1],
        format!("valid    {} (playtest/3)", valid.display())
    );
    assert!(text(&out.stderr).starts_with(&format!("ERROR    {}: ", unusable.display())));
}
