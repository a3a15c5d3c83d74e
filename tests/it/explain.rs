//! `seal explain`: the decision tree of every sealed fixture validates, has one selected path to
//! the evidence's outcome, binds the sha256 of every stored object it was derived from, is
//! deterministic, and is refused for a tampered run; the page escapes hostile text everywhere.

use crate::common;

use common::*;
use seal_core::canonical::Hash;
use seal_core::contracts::Kind;
use seal_core::doc::{outcome_node_id, DecisionTree, Evidence};
use seal_core::ids::RunId;
use seal_core::validate::{validate_as, Report};
use seal_engine::explain_load::{explain, ExplainError, Explanation};
use seal_store::Store;
use std::collections::BTreeSet;
use std::path::Path;

async fn explain_in(root: &Path, run: &str, pem: &Path) -> Result<Explanation, ExplainError> {
    let store = Store::open(&file_url(root)).await.unwrap();
    let key = seal_fs::keys::load_public_key(pem).unwrap();
    explain(
        &store,
        &RunId::parse(run).unwrap(),
        &verifier(&store, key).await,
    )
    .await
}

fn sha_of(root: &Path, key: &str) -> Hash {
    Hash::of(&std::fs::read(root.join(key)).unwrap_or_else(|e| panic!("{key}: {e}")))
}

/// Every `id="…"` and every in-page `href="#…"` of a page.
fn ids_and_links(html: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let grab = |marker: &str| -> BTreeSet<String> {
        html.match_indices(marker)
            .filter_map(|(i, _)| {
                let rest = &html[i + marker.len()..];
                rest.find('"').map(|end| rest[..end].to_string())
            })
            .collect()
    };
    (grab(" id=\""), grab(" href=\"#"))
}

/// The checks every explained run must pass.
fn check_tree(root: &Path, run: &str, e: &Explanation) {
    let t: &DecisionTree = &e.tree;
    let v = serde_json::to_value(t).unwrap();
    assert!(
        matches!(validate_as(Kind::DecisionTree, &v), Report::Valid(_)),
        "{run}: {:?}",
        validate_as(Kind::DecisionTree, &v)
    );
    // The bytes are the canonical JSON, hashed like every document.
    assert_eq!(
        e.tree_bytes,
        seal_core::canonical::canonical_bytes(&v).unwrap()
    );
    assert_eq!(e.tree_hash, Hash::of(&e.tree_bytes));
    let ev: Evidence = serde_json::from_slice(
        &std::fs::read(root.join(format!("runs/{run}/evidence.json"))).unwrap(),
    )
    .unwrap();
    let path = t.selected_path().unwrap_or_else(|e| panic!("{run}: {e}"));
    let last = path.last().unwrap();
    assert_eq!(last.id, outcome_node_id(ev.outcome.unwrap()), "{run}");
    assert_eq!(t.observed.outcome, ev.outcome.unwrap());
    assert_eq!(
        Some(t.observed.decision_action),
        ev.decision.as_ref().map(|d| d.action)
    );
    let outcome_nodes = t
        .nodes
        .iter()
        .filter(|n| n.kind == seal_core::doc::NodeKind::Outcome)
        .count();
    assert_eq!(outcome_nodes, 4, "{run}: every outcome is a branch");
    // Every binding is the sha256 of the stored object.
    let b = &t.evidence_bindings;
    assert_eq!(b.run_id, run);
    assert_eq!(
        b.evidence_sha256,
        sha_of(root, &format!("runs/{run}/evidence.json"))
    );
    assert_eq!(
        b.seal_sha256,
        sha_of(root, &format!("runs/{run}/seal.dsse.json"))
    );
    assert_eq!(
        b.judging_snapshot_sha256,
        sha_of(root, &format!("runs/{run}/judging.json"))
    );
    assert_eq!(b.rolls.len(), ev.rolls.len());
    for (rb, r) in b.rolls.iter().zip(&ev.rolls) {
        assert_eq!(
            rb.proof_package_sha256,
            sha_of(root, r.proof_package_ref.as_str())
        );
        assert_eq!(
            rb.judge_package_sha256,
            sha_of(root, r.judge_package_ref.as_str())
        );
        assert_eq!(
            rb.judge_a_result_sha256,
            sha_of(root, r.judge_a_ref.normalized_ref.as_str())
        );
        assert_eq!(
            rb.judge_b_result_sha256,
            sha_of(root, r.judge_b_ref.normalized_ref.as_str())
        );
        assert_eq!(
            rb.consensus_sha256,
            sha_of(root, r.judge_consensus_ref.as_str())
        );
    }
    // Every node's evidenceRef and every link of the page is an anchor on the page.
    let html = e.html("seal verify x");
    let (ids, links) = ids_and_links(&html);
    for n in &t.nodes {
        let a = n.evidence_ref.id();
        assert!(
            ids.contains(a),
            "{run}: node {} refers to missing #{a}",
            n.id
        );
    }
    for l in &links {
        assert!(ids.contains(l), "{run}: link to missing #{l}");
    }
}

#[tokio::test]
async fn every_sealed_fixture_is_explained_by_a_valid_bound_tree() {
    let root = fixture_store_dir();
    for run in fixture_run_ids() {
        let e = explain_in(&root, &run, &fixture_trust_pem())
            .await
            .unwrap_or_else(|e| panic!("{run}: {e}"));
        check_tree(&root, &run, &e);
        // Deterministic: the same store gives the same bytes, JSON and page alike.
        let again = explain_in(&root, &run, &fixture_trust_pem()).await.unwrap();
        assert_eq!(again.tree_bytes, e.tree_bytes, "{run}");
        assert_eq!(again.html("c"), e.html("c"), "{run}");
    }
}

fn edge<'a>(t: &'a DecisionTree, from: &str, to: &str) -> &'a seal_core::doc::TreeEdge {
    t.edges
        .iter()
        .find(|e| e.from == from && e.to == to)
        .unwrap_or_else(|| panic!("no edge {from} -> {to}"))
}

#[tokio::test]
async fn branches_not_taken_are_present_and_not_selected() {
    let root = fixture_store_dir();
    let pem = fixture_trust_pem();
    // Roll 2 was played: "roll 1 decisive -> finalize" is there, not selected.
    let t = explain_in(&root, "run-heritage-0017-disputed-font", &pem)
        .await
        .unwrap()
        .tree;
    assert!(!edge(&t, "r1-outcome", "merge").selected);
    assert!(edge(&t, "r1-outcome", "r2-start").selected);
    assert!(edge(&t, "r2-outcome", "merge").selected);
    // Roll 1 decisive: roll 2 is a branch not taken.
    let t = explain_in(&root, "run-puzzle-0013-fail-end", &pem)
        .await
        .unwrap()
        .tree;
    assert!(edge(&t, "r1-outcome", "merge").selected);
    assert!(!edge(&t, "r1-outcome", "r2-start").selected);
    assert_eq!(t.node("outcome-fail").unwrap().status.as_str(), "blocked");
    // A budget-blocked roll goes from the guard straight to the roll outcome.
    let t = explain_in(&root, "run-sim-business-0032-over-budget", &pem)
        .await
        .unwrap()
        .tree;
    assert!(edge(&t, "r1-guard-budget", "r1-outcome").selected);
    assert!(!edge(&t, "r1-guard-budget", "r1-blinding").selected);
    assert_eq!(
        t.node("r1-guard-budget").unwrap().status.as_str(),
        "blocked"
    );
    assert_eq!(t.node("r1-judge-a").unwrap().status.as_str(), "neutral");
    // A degraded roll: judge B failed, and says how.
    let t = explain_in(&root, "run-sim-business-0031-degraded", &pem)
        .await
        .unwrap()
        .tree;
    let b = t.node("r1-judge-b").unwrap();
    assert_eq!(b.status.as_str(), "guard");
    assert!(b.title.contains("http_5xx"), "{}", b.title);
}

#[tokio::test]
async fn tampering_any_bound_object_makes_explain_refuse() {
    let run = "run-heritage-0017-disputed-font";
    let ev: Evidence = serde_json::from_slice(
        &std::fs::read(fixture_store_dir().join(format!("runs/{run}/evidence.json"))).unwrap(),
    )
    .unwrap();
    let mut keys = vec![
        format!("runs/{run}/evidence.json"),
        format!("runs/{run}/seal.dsse.json"),
    ];
    for r in &ev.rolls {
        keys.push(r.proof_package_ref.to_string());
        keys.push(r.judge_package_ref.to_string());
        keys.push(r.judge_a_ref.normalized_ref.to_string());
        keys.push(r.judge_b_ref.normalized_ref.to_string());
        keys.push(r.judge_consensus_ref.to_string());
    }
    for key in keys {
        let (_dir, root) = copy_fixture_store();
        let p = root.join(&key);
        let mut bytes = std::fs::read(&p).unwrap();
        if key.ends_with("seal.dsse.json") {
            // Whitespace does not change a signed envelope: change a base64 character.
            let i = (bytes.len() / 2..bytes.len())
                .find(|i| bytes[*i].is_ascii_alphanumeric())
                .unwrap();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        } else {
            bytes.push(b' ');
        }
        std::fs::write(&p, bytes).unwrap();
        match explain_in(&root, run, &fixture_trust_pem()).await {
            Err(ExplainError::NotVerified(report)) => {
                assert!(!report.problems.is_empty(), "{key}")
            }
            other => panic!(
                "{key}: explained a tampered run: {:?}",
                other.map(|e| e.tree_hash)
            ),
        }
    }
}

#[tokio::test]
async fn cli_explain_answers_json_html_and_exit_codes() {
    let cwd = tempfile::tempdir().unwrap();
    let store = file_url(&fixture_store_dir());
    let pem = fixture_trust_pem();
    let seal = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_seal"))
            .current_dir(cwd.path())
            .args(args)
            .output()
            .unwrap()
    };
    let run = "run-narrative-0011-inconclusive";
    let pem_s = pem.display().to_string();
    let out = seal(&["explain", run, "--store", &store, "--trust", &pem_s]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schemaVersion"], "seal.decision-tree/1");
    assert_eq!(v["observed"]["outcome"], "inconclusive");
    // `seal validate` knows the kind.
    let file = cwd.path().join("tree.json");
    std::fs::write(&file, &out.stdout).unwrap();
    let val = seal(&["validate", &file.display().to_string()]);
    assert_eq!(val.status.code(), Some(0), "{}", text(&val.stdout));
    assert!(text(&val.stdout).contains("seal.decision-tree/1"));
    // The page, with the command that re-proves the run.
    let page = cwd.path().join("page.html");
    let out = seal(&[
        "explain",
        run,
        "--store",
        &store,
        "--trust",
        &pem_s,
        "--html",
        "--out",
        &page.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    // The command names no path of this machine: the store as STORE_URL, keys by file name.
    let pem_name = pem.file_name().unwrap().to_string_lossy().into_owned();
    assert!(html.contains(&format!(
        "seal verify {run} --store STORE_URL --trust {pem_name}"
    )));
    assert!(
        !html.contains(&pem_s) && !html.contains(&store),
        "a local path on the page"
    );
    assert!(html.contains("Content-Security-Policy"));
    // A run that does not verify is not explained: exit 1 with the problems.
    let (_dir, root) = copy_fixture_store();
    let consensus = root.join(format!("runs/{run}/roll-1/consensus.json"));
    let mut b = std::fs::read(&consensus).unwrap();
    b.push(b'\n');
    std::fs::write(&consensus, b).unwrap();
    let out = seal(&[
        "explain",
        run,
        "--store",
        &file_url(&root),
        "--trust",
        &pem_s,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("consensus.json"),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    // Cannot run: no such run, no trusted key.
    let out = seal(&["explain", "run-nope", "--store", &store, "--trust", &pem_s]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = seal(&["explain", run, "--store", &store]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_text_is_escaped_on_every_path() {
    let (dir, url, pem, run) = hostile_sealed_run().await;
    let root = dir.path().join("store");
    let e = explain_in(&root, &run, &pem).await.unwrap();
    check_tree(&root, &run, &e);
    let html = e.html("seal verify x");
    let evil = hostile_text();
    // The hostile text reached the page through every path, and only escaped.
    let escaped = seal_engine::explain_load::html::esc(&evil);
    // Brief, obligation description, floor check (table and SVG title), both rationales.
    let found = html.matches(&*escaped).count();
    assert!(found >= 5, "escaped hostile text found {found} times");
    assert!(!html.contains(&evil));
    for raw in HOSTILE {
        assert!(!html.contains(raw), "raw {raw:?} on the page");
    }
    let lower = html.to_lowercase();
    assert!(!lower.contains("<script"), "a script element");
    assert_eq!(lower.matches("<svg").count(), 1);
    assert_eq!(lower.matches("</svg>").count(), 1);
    assert!(!lower.contains("href=\"javascript:") && !lower.contains("src=\"javascript:"));
    assert!(!lower.contains("<img src=x"), "an element from game text");
    // The SVG node titles carry the hostile floor detail escaped as well.
    assert!(e.tree.nodes.iter().any(|n| n.detail.contains(&evil)));
    let _ = url;
}
