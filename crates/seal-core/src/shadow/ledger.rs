//! The agent-loop ledger as `seal shadow-report` reads it: a JSONL file whose verdict rows are
//! a Verdict's fields plus `"type": "verdict"`, among rows of other types. Pure: the caller
//! streams lines in ([`Ledger::push_line`]) and takes the latest verdict of each design out
//! ([`Ledger::finish`]).
//!
//! A bad line is counted and named (`rejected`), never fatal (docs/DECISIONS.md, "A bad ledger
//! line is counted and named, never fatal").

use std::collections::BTreeMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::adapt::{task_id_string, AgentLoopVerdict};
use crate::canonical::{canonical_bytes, Hash};
use crate::contracts::{shorten, Kind};
use crate::validate::{validate_as, Report};

/// Rejected lines kept with their reason; the rest are only counted.
pub const MAX_REJECTED_LISTED: usize = 50;
/// Distinct row types counted by name; the others are counted under [`OTHER_TYPE`].
pub const MAX_TYPES: usize = 32;
/// Type names are cut to this many characters.
pub const MAX_TYPE_CHARS: usize = 64;
/// The bucket of row types past [`MAX_TYPES`].
pub const OTHER_TYPE: &str = "(other)";
/// A finding's issue is cut to this many characters in the report.
pub const MAX_ISSUE_CHARS: usize = 300;
/// A rejection reason is cut to this many characters.
const MAX_REASON_CHARS: usize = 300;

/// One valid verdict row of the ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerVerdict {
    /// 1-based line number in the ledger.
    pub line: u64,
    pub design_id: String,
    /// `taskId` as a string (`123` and `"123"` are the same task).
    pub task_id: String,
    /// `accept`, `fix` or `kill`.
    pub decision: String,
    pub reasons: Vec<String>,
    pub round: u8,
    /// `(severity, issue)`, the issue cut to [`MAX_ISSUE_CHARS`].
    pub findings: Vec<(String, String)>,
    /// sha256 of the JCS bytes of the Verdict without `type`: the `artifactHash` a
    /// `seal adapt verdict` of this very row gives.
    pub verdict_sha256: String,
}

/// A line left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub line: u64,
    pub reason: String,
}

/// The ledger folded: the latest verdict per design and what was left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerSummary {
    /// Lines read (blank ones included).
    pub lines: u64,
    /// Valid verdict rows.
    pub verdict_rows: u64,
    /// Verdict rows replaced by a later row of the same design.
    pub superseded: u64,
    pub skipped_by_type: BTreeMap<String, u64>,
    /// The first [`MAX_REJECTED_LISTED`] rejected lines.
    pub rejected: Vec<Rejected>,
    pub rejected_count: u64,
    /// The latest verdict of each design, by designId.
    pub verdicts: BTreeMap<String, LedgerVerdict>,
}

/// The fold of a ledger, fed one line at a time.
#[derive(Debug, Clone)]
pub struct Ledger {
    limit: u64,
    summary: LedgerSummary,
}

impl Ledger {
    /// A ledger whose lines may be at most `limit` bytes each.
    pub fn new(limit: u64) -> Ledger {
        Ledger {
            limit,
            summary: LedgerSummary::default(),
        }
    }

    /// The per-line limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Reads line `line` (1-based, without its newline).
    pub fn push_line(&mut self, line: u64, bytes: &[u8]) {
        self.summary.lines = self.summary.lines.max(line);
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        if let Err(reason) = self.row(line, bytes) {
            self.reject(line, &reason.to_string());
        }
    }

    /// Records a line the caller could not hand over whole (one longer than the limit).
    pub fn reject(&mut self, line: u64, reason: &str) {
        self.summary.lines = self.summary.lines.max(line);
        self.summary.rejected_count += 1;
        if self.summary.rejected.len() < MAX_REJECTED_LISTED {
            self.summary.rejected.push(Rejected {
                line,
                reason: shorten(reason, MAX_REASON_CHARS),
            });
        }
    }

    /// The fold.
    pub fn finish(self) -> LedgerSummary {
        self.summary
    }

    fn row(&mut self, line: u64, bytes: &[u8]) -> Result<(), RowError> {
        let value = crate::json::parse(bytes, self.limit)?;
        let Value::Object(mut obj) = value else {
            return Err(RowError::NotObject(crate::contracts::type_name(&value)));
        };
        match obj.remove("type") {
            Some(Value::String(t)) if t == "verdict" => {}
            other => {
                self.skip(other.as_ref());
                return Ok(());
            }
        }
        let verdict = Value::Object(obj);
        let v = checked_verdict(&verdict)?;
        let sha = canonical_bytes(&verdict).map(|b| Hash::of(&b).to_string())?;
        self.summary.verdict_rows += 1;
        let row = LedgerVerdict {
            line,
            design_id: v.design_id.clone(),
            task_id: task_id_string(&v.task_id),
            decision: v.decision,
            reasons: v.reasons,
            round: v.round,
            findings: v
                .findings
                .into_iter()
                .map(|f| (f.severity, shorten(&f.issue, MAX_ISSUE_CHARS)))
                .collect(),
            verdict_sha256: sha,
        };
        // File order is time order in an append-only ledger: the later row wins.
        if self.summary.verdicts.insert(v.design_id, row).is_some() {
            self.summary.superseded += 1;
        }
        Ok(())
    }

    fn skip(&mut self, ty: Option<&Value>) {
        let name = match ty {
            None => "(none)".to_string(),
            Some(Value::String(s)) => shorten(s, MAX_TYPE_CHARS),
            Some(other) => format!("({})", crate::contracts::type_name(other)),
        };
        let known = self.summary.skipped_by_type.contains_key(&name);
        let name = if known || self.summary.skipped_by_type.len() < MAX_TYPES {
            name
        } else {
            OTHER_TYPE.to_string()
        };
        *self.summary.skipped_by_type.entry(name).or_insert(0) += 1;
    }
}

/// Streams a whole ledger through a [`Ledger`] whose lines may be at most `limit` bytes, and
/// hashes every byte read. A longer line is rejected without being held in memory: at most
/// `limit + 1` bytes of a line are buffered, the rest is read through and hashed. There is no
/// cap on the file as a whole: a ledger is append-only and grows for good.
pub fn read_ledger<R: std::io::BufRead>(
    mut reader: R,
    limit: u64,
) -> std::io::Result<(LedgerSummary, String)> {
    use std::io::{BufRead, Read};
    let mut ledger = Ledger::new(limit);
    let mut hash = Sha256::new();
    let mut buf = Vec::new();
    let mut line = 0u64;
    loop {
        buf.clear();
        let n = (&mut reader)
            .take(limit.saturating_add(1))
            .read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        line += 1;
        hash.update(&buf);
        if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
        } else if buf.len() as u64 > limit {
            // The rest of an oversized line: read through to its newline, hashed, not kept.
            loop {
                let chunk = reader.fill_buf()?;
                if chunk.is_empty() {
                    break;
                }
                let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
                    Some(i) => (i + 1, true),
                    None => (chunk.len(), false),
                };
                hash.update(&chunk[..take]);
                reader.consume(take);
                if done {
                    break;
                }
            }
            ledger.reject(
                line,
                &format!("the line is over the limit of {limit} bytes"),
            );
            continue;
        }
        ledger.push_line(line, &buf);
    }
    Ok((ledger.finish(), hex::encode(hash.finalize())))
}

/// Why a ledger line is not a row the fold takes (the text its rejection records).
#[derive(Debug, thiserror::Error)]
enum RowError {
    #[error(transparent)]
    Json(#[from] crate::json::JsonError),
    #[error("a row must be a JSON object, found {0}")]
    NotObject(&'static str),
    #[error("not a valid Verdict: {0}")]
    Verdict(String),
    #[error("{0}")]
    Unusable(String),
    #[error(transparent)]
    Canonical(#[from] crate::canonical::CanonicalError),
}

/// The Verdict if it satisfies the upstream schema, else its first finding.
fn checked_verdict(verdict: &Value) -> Result<AgentLoopVerdict, RowError> {
    match validate_as(Kind::Verdict, verdict) {
        Report::Valid(_) => {}
        Report::Invalid(_, findings) => {
            let first = findings.first().map(ToString::to_string);
            return Err(RowError::Verdict(first.unwrap_or_else(|| "invalid".into())));
        }
        Report::Unusable(reason) => return Err(RowError::Unusable(reason)),
    }
    serde_json::from_value(verdict.clone()).map_err(|e| RowError::Verdict(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn verdict(design: &str, task: Value, decision: &str) -> Value {
        let mut v = json!({
            "type": "verdict",
            "designId": design,
            "taskId": task,
            "decision": decision,
            "structureOk": true,
            "runnableOk": decision != "kill",
            "playReport": null,
            "findings": [{"severity": "P1", "issue": "x", "suggestion": ""}],
            "reasons": [if decision == "accept" { "accept" } else { "p1_fix_round" }],
            "round": 0,
            "evidence": {"traceId": "t", "promptVersions": {}}
        });
        if decision == "accept" {
            v["versionId"] = json!(7);
            v["playReport"] = json!({"loaded": true, "clicks": 1, "gameEnd": null,
                "consoleErrors": [], "assetLoadErrors": 0, "packageChecksumVerified": true,
                "emitsCaptured": []});
        }
        v
    }

    fn line(v: &Value) -> Vec<u8> {
        serde_json::to_vec(v).unwrap()
    }

    #[test]
    fn the_latest_row_of_a_design_wins_and_other_types_are_counted() {
        let d = "a".repeat(64);
        let mut l = Ledger::new(1 << 20);
        l.push_line(1, &line(&verdict(&d, json!(5), "kill")));
        l.push_line(2, br#"{"type":"stage","designId":"x"}"#);
        l.push_line(3, b"   ");
        l.push_line(4, &line(&verdict(&d, json!("5"), "accept")));
        l.push_line(5, b"{not json");
        l.push_line(6, br#"{"noType":1}"#);
        let s = l.finish();
        assert_eq!(s.lines, 6);
        assert_eq!(s.verdict_rows, 2);
        assert_eq!(s.superseded, 1);
        assert_eq!(s.verdicts[&d].decision, "accept");
        assert_eq!(s.verdicts[&d].task_id, "5");
        assert_eq!(s.verdicts[&d].line, 4);
        assert_eq!(s.skipped_by_type["stage"], 1);
        assert_eq!(s.skipped_by_type["(none)"], 1);
        assert_eq!(s.rejected_count, 1);
        assert_eq!(s.rejected[0].line, 5);
    }

    #[test]
    fn an_invalid_verdict_row_is_rejected_with_its_first_finding() {
        let mut v = verdict(&"b".repeat(64), json!(1), "fix");
        v.as_object_mut().unwrap().remove("round");
        let mut l = Ledger::new(1 << 20);
        l.push_line(1, &line(&v));
        l.push_line(2, b"[1,2]");
        l.push_line(3, br#"{"type":"verdict","a":1,"a":2}"#);
        let s = l.finish();
        assert_eq!(s.verdict_rows, 0);
        assert_eq!(s.rejected_count, 3);
        assert!(s.rejected[0].reason.contains("round"), "{:?}", s.rejected);
        assert!(
            s.rejected[1].reason.contains("an array"),
            "{:?}",
            s.rejected
        );
        assert!(
            s.rejected[2].reason.contains("duplicate"),
            "{:?}",
            s.rejected
        );
    }

    #[test]
    fn the_verdict_sha256_is_the_artifact_hash_of_its_adaptation() {
        let v = verdict(&"c".repeat(64), json!(9), "accept");
        let mut l = Ledger::new(1 << 20);
        l.push_line(1, &line(&v));
        let s = l.finish();
        let mut bare = v.clone();
        bare.as_object_mut().unwrap().remove("type");
        let bytes = canonical_bytes(&bare).unwrap();
        let adapted = crate::adapt::adapt_verdict("v", &bytes, crate::doc::Genre::Puzzle).unwrap();
        assert_eq!(
            s.verdicts[&"c".repeat(64)].verdict_sha256,
            adapted.header.artifact_hash.to_string()
        );
    }

    #[test]
    fn an_oversized_line_is_rejected_and_the_next_line_is_read() {
        let d = "d".repeat(64);
        let mut file = Vec::new();
        file.extend_from_slice(&[b'x'; 5000]);
        file.push(b'\n');
        file.extend_from_slice(&line(&verdict(&d, json!(1), "kill")));
        file.extend_from_slice(b"\r\n");
        file.extend_from_slice(&[b' '; 3000]); // an oversized last line, no newline
        let (s, sha) = read_ledger(std::io::Cursor::new(&file), 1024).unwrap();
        assert_eq!(s.lines, 3);
        assert_eq!(s.rejected_count, 2);
        assert_eq!((s.rejected[0].line, s.rejected[1].line), (1, 3));
        assert!(s.rejected[0].reason.contains("over the limit of 1024"));
        assert_eq!(s.verdicts[&d].line, 2);
        assert_eq!(sha, hex::encode(Sha256::digest(&file)));
    }

    #[test]
    fn row_types_past_the_cap_are_counted_together() {
        let mut l = Ledger::new(1 << 20);
        for i in 0..(MAX_TYPES as u64 + 5) {
            l.push_line(i + 1, format!(r#"{{"type":"t{i}"}}"#).as_bytes());
        }
        let s = l.finish();
        assert_eq!(s.skipped_by_type.len(), MAX_TYPES + 1);
        assert_eq!(s.skipped_by_type[OTHER_TYPE], 5);
    }
}
