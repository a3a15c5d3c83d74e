//! The typed words of a document (object keys, decision reasons, roll errors, check ids, frame
//! hashes, anchors), checked on its JSON value before the typed parse of [`super::check`].
//!
//! The document types refuse an unknown word when they are deserialized, so without this pass a
//! document with one bad word would yield a single `invariant.shape` finding at the root. Here
//! each bad word is named at its own pointer, with the rule `seal validate` has always given it
//! (`invariant.ref_in_run` and its message for a `*Ref` that is not a key inside its roll's
//! folder) or `invariant.vocabulary` for a word outside seal's vocabulary; the typed rules run
//! only on a document whose every word reads back.

use serde_json::Value;

use super::f;
use crate::canonical::Hash;
use crate::contracts::{Finding, Kind};
use crate::doc::Anchor;
use crate::key::Key;
use crate::vocab::{AuditCheck, GuardCheck, Reason, RollError};

/// The `*Ref` fields of a roll record, as `rolls[i]`-relative pointers.
const ROLL_REFS: [&str; 10] = [
    "proofPackageRef",
    "judgePackageRef",
    "judgeConsensusRef",
    "costReservationRef",
    "judgeARef/rawRef",
    "judgeARef/parsedRef",
    "judgeARef/normalizedRef",
    "judgeBRef/rawRef",
    "judgeBRef/parsedRef",
    "judgeBRef/normalizedRef",
];

/// Every word of `doc` (of `kind`, schema-valid) that does not read back as its type.
pub(super) fn check(kind: Kind, doc: &Value) -> Vec<Finding> {
    let mut out = Vec::new();
    match kind {
        Kind::PlaytestV3 => evidence(doc, &mut out),
        Kind::JudgeConsensus => frame_hashes(doc, "/obligationResults", &mut out),
        Kind::DecisionTree => {
            words::<Reason>(doc, "/observed/reasons", "", &mut out);
            for (i, _) in items(doc, "/nodes") {
                let pointer = format!("/nodes/{i}/evidenceRef");
                if let Some(Value::String(s)) = doc.pointer(&pointer) {
                    if let Err(e) = Anchor::parse(s) {
                        out.push(f(pointer, "vocabulary", e.to_string()));
                    }
                }
            }
        }
        _ => {}
    }
    out
}

fn evidence(doc: &Value, out: &mut Vec<Finding>) {
    let run = doc.get("runId").and_then(Value::as_str).unwrap_or("");
    for (i, roll) in items(doc, "/rolls") {
        let roll_id = roll.get("rollId").and_then(Value::as_str).unwrap_or("");
        for field in ROLL_REFS {
            let pointer = format!("/rolls/{i}/{field}");
            if let Some(Value::String(reference)) = doc.pointer(&pointer) {
                if Key::parse(reference).is_err() {
                    out.push(f(
                        pointer,
                        "ref_in_run",
                        format!("{reference:?} is not a key inside runs/{run}/{roll_id}/"),
                    ));
                }
            }
        }
        let at = format!("/rolls/{i}");
        words::<RollError>(doc, &format!("{at}/errors"), "", out);
        words::<GuardCheck>(doc, &format!("{at}/rollGuard/checks"), "/id", out);
    }
    if let Some(Value::String(reference)) = doc.pointer("/judge/consensusRef") {
        if Key::parse(reference).is_err() {
            out.push(f(
                "/judge/consensusRef",
                "judge_is_source_projection",
                format!("judge.consensusRef {reference:?} is not an object key"),
            ));
        }
    }
    frame_hashes(doc, "/judge/obligationResults", out);
    words::<Reason>(doc, "/decision/reasons", "", out);
    for (i, c) in items(doc, "/finalPostguard/checks") {
        let Some(id) = c.get("id").and_then(Value::as_str) else {
            continue;
        };
        let pointer = format!("/finalPostguard/checks/{i}/id");
        match id.parse::<AuditCheck>() {
            Ok(c) if c.is_postguard() => {}
            Ok(_) => out.push(f(
                pointer,
                "vocabulary",
                format!("{id:?} is not a check of the postguard"),
            )),
            Err(e) => out.push(f(pointer, "vocabulary", e.to_string())),
        }
    }
}

/// `evidenceRefs` name the frames cited by their sha256 (sorted, lowercase hex).
fn frame_hashes(doc: &Value, results: &str, out: &mut Vec<Finding>) {
    for (i, _) in items(doc, results) {
        let refs = format!("{results}/{i}/evidenceRefs");
        for (j, h) in items(doc, &refs) {
            let text = h.as_str().unwrap_or("");
            if Hash::parse(text).is_err() {
                out.push(f(
                    format!("{refs}/{j}"),
                    "frame_hash",
                    format!("{text:?} is not the sha256 of a frame (64 lowercase hex digits)"),
                ));
            }
        }
    }
}

/// Each string at `<array>/<i><field>` reads back as a `W`.
fn words<W>(doc: &Value, array: &str, field: &str, out: &mut Vec<Finding>)
where
    W: std::str::FromStr,
    W::Err: std::fmt::Display,
{
    for (i, _) in items(doc, array) {
        let pointer = format!("{array}/{i}{field}");
        if let Some(Value::String(s)) = doc.pointer(&pointer) {
            if let Err(e) = s.parse::<W>() {
                out.push(f(pointer, "vocabulary", e.to_string()));
            }
        }
    }
}

/// The items of the array at `pointer` (none when it is absent or not an array).
fn items<'a>(doc: &'a Value, pointer: &str) -> impl Iterator<Item = (usize, &'a Value)> {
    doc.pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_unknown_reason_is_named_at_its_pointer() {
        let doc = json!({"decision": {"action": "retry", "reasons": ["accept", "infra_timeout"]}});
        let found = check(Kind::PlaytestV3, &doc);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].pointer, "/decision/reasons/1");
        assert_eq!(found[0].rule, "invariant.vocabulary");
    }

    #[test]
    fn a_climbing_ref_keeps_the_ref_in_run_rule() {
        let doc = json!({"runId": "r1", "rolls": [{"rollId": "roll-1",
            "judgeARef": {"rawRef": "runs/r1/roll-1/../../x"}}]});
        let found = check(Kind::PlaytestV3, &doc);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].pointer, "/rolls/0/judgeARef/rawRef");
        assert_eq!(found[0].rule, "invariant.ref_in_run");
        assert_eq!(
            found[0].message,
            "\"runs/r1/roll-1/../../x\" is not a key inside runs/r1/roll-1/"
        );
    }

    #[test]
    fn a_verify_check_is_not_a_postguard_check() {
        let doc =
            json!({"finalPostguard": {"checks": [{"id": "signature"}, {"id": "refs_resolve"}]}});
        let found = check(Kind::PlaytestV3, &doc);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].pointer, "/finalPostguard/checks/0/id");
    }

    #[test]
    fn a_decision_trees_reasons_and_node_anchors_are_named_at_their_pointers() {
        let doc = json!({"observed": {"reasons": ["accept", "infra_timeout"]},
            "nodes": [{"evidenceRef": "not an anchor"}]});
        let found = check(Kind::DecisionTree, &doc);
        let pointers: Vec<&str> = found.iter().map(|f| f.pointer.as_str()).collect();
        assert_eq!(
            pointers,
            ["/observed/reasons/1", "/nodes/0/evidenceRef"],
            "{found:?}"
        );
        assert!(found.iter().all(|f| f.rule == "invariant.vocabulary"));
    }

    #[test]
    fn evidence_refs_are_frame_hashes() {
        let h = Hash::of(b"frame").to_string();
        let doc = json!({"obligationResults": [{"evidenceRefs": [h, "frame-1"]}]});
        let found = check(Kind::JudgeConsensus, &doc);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].pointer, "/obligationResults/0/evidenceRefs/1");
        assert_eq!(found[0].rule, "invariant.frame_hash");
    }
}
