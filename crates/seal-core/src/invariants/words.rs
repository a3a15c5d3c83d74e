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
    "/proofPackageRef",
    "/judgePackageRef",
    "/judgeConsensusRef",
    "/costReservationRef",
    "/judgeARef/rawRef",
    "/judgeARef/parsedRef",
    "/judgeARef/normalizedRef",
    "/judgeBRef/rawRef",
    "/judgeBRef/parsedRef",
    "/judgeBRef/normalizedRef",
];

/// Every word of `doc` (of `kind`, schema-valid) that does not read back as its type.
///
/// Pointers are looked up relative to the item they are in and written out only for a
/// finding: on a valid document (every one `seal verify` reads) nothing is formatted.
pub(super) fn check(kind: Kind, doc: &Value) -> Vec<Finding> {
    let mut out = Vec::new();
    match kind {
        Kind::PlaytestV3 => evidence(doc, &mut out),
        Kind::JudgeConsensus => frame_hashes(doc, "/obligationResults", &mut out),
        Kind::DecisionTree => {
            words::<Reason>(doc, "/observed/reasons", "", &mut out);
            for (i, node) in items(doc, "/nodes") {
                if let Some(Value::String(s)) = at(node, "/evidenceRef") {
                    if let Err(e) = Anchor::parse(s) {
                        out.push(f(
                            format!("/nodes/{i}/evidenceRef"),
                            "vocabulary",
                            e.to_string(),
                        ));
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
            if let Some(Value::String(reference)) = at(roll, field) {
                if Key::parse(reference).is_err() {
                    out.push(f(
                        format!("/rolls/{i}{field}"),
                        "ref_in_run",
                        format!("{reference:?} is not a key inside runs/{run}/{roll_id}/"),
                    ));
                }
            }
        }
        let at_roll = |rest: &str| format!("/rolls/{i}{rest}");
        words_in::<RollError>(roll, "/errors", "", &at_roll, out);
        words_in::<GuardCheck>(roll, "/rollGuard/checks", "/id", &at_roll, out);
    }
    if let Some(Value::String(reference)) = at(doc, "/judge/consensusRef") {
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
        let pointer = || format!("/finalPostguard/checks/{i}/id");
        match id.parse::<AuditCheck>() {
            Ok(c) if c.is_postguard() => {}
            Ok(_) => out.push(f(
                pointer(),
                "vocabulary",
                format!("{id:?} is not a check of the postguard"),
            )),
            Err(e) => out.push(f(pointer(), "vocabulary", e.to_string())),
        }
    }
}

/// `evidenceRefs` name the frames cited by their sha256 (sorted, lowercase hex).
fn frame_hashes(doc: &Value, results: &str, out: &mut Vec<Finding>) {
    for (i, result) in items(doc, results) {
        for (j, h) in items(result, "/evidenceRefs") {
            let text = h.as_str().unwrap_or("");
            if Hash::parse(text).is_err() {
                out.push(f(
                    format!("{results}/{i}/evidenceRefs/{j}"),
                    "frame_hash",
                    format!("{text:?} is not the sha256 of a frame (64 lowercase hex digits)"),
                ));
            }
        }
    }
}

/// Each string at `<array>/<i><field>` of `doc` reads back as a `W`.
fn words<W>(doc: &Value, array: &str, field: &str, out: &mut Vec<Finding>)
where
    W: std::str::FromStr,
    W::Err: std::fmt::Display,
{
    words_in::<W>(doc, array, field, &|rest: &str| rest.to_string(), out);
}

/// [`words`] of the value `within`, whose findings are named at `pointer_of(<array>/<i><field>)`.
fn words_in<W>(
    within: &Value,
    array: &str,
    field: &str,
    pointer_of: &dyn Fn(&str) -> String,
    out: &mut Vec<Finding>,
) where
    W: std::str::FromStr,
    W::Err: std::fmt::Display,
{
    for (i, item) in items(within, array) {
        if let Some(Value::String(s)) = at(item, field) {
            if let Err(e) = s.parse::<W>() {
                out.push(f(
                    pointer_of(&format!("{array}/{i}{field}")),
                    "vocabulary",
                    e.to_string(),
                ));
            }
        }
    }
}

/// The items of the array at `pointer` (none when it is absent or not an array).
fn items<'a>(doc: &'a Value, pointer: &str) -> impl Iterator<Item = (usize, &'a Value)> {
    at(doc, pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

/// `doc` at `pointer`, as [`Value::pointer`] finds it, without copying each token to
/// unescape it (a fifth of the evidence's invariants went to those copies): seal's own
/// pointers hold no `~` escape, and one that does is left to `Value::pointer`.
fn at<'a>(doc: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.is_empty() {
        return Some(doc);
    }
    if pointer.contains('~') {
        return doc.pointer(pointer);
    }
    pointer
        .strip_prefix('/')?
        .split('/')
        .try_fold(doc, |v, token| match v {
            Value::Object(map) => map.get(token),
            Value::Array(list) => index(token).and_then(|i| list.get(i)),
            _ => None,
        })
}

/// An array index token as RFC 6901 writes one: digits, no leading zero.
fn index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() > 1) {
        return None;
    }
    token.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn at_finds_what_value_pointer_finds() {
        let doc = json!({"a": [10, {"b": "c"}], "x/y": 1, "m~n": 2, "": {"": 3}, "0": [4]});
        for p in [
            "", "/a", "/a/0", "/a/1/b", "/a/01", "/a/+1", "/a/2", "/a/-1", "/a/1/b/c", "/x~1y",
            "/m~0n", "/", "//", "/0/0", "/nope", "a", "/a/1/",
        ] {
            assert_eq!(at(&doc, p), doc.pointer(p), "{p:?}");
        }
    }

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
