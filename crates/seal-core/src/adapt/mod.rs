//! Legacy adapter: agent-loop `Verdict` records (upstream `verdict.schema.json`) to seal run
//! folders, and DECIDED playtest/3 evidence back to a `Verdict` (docs/DESIGN.md §7, "Legacy").
//!
//! # Verdict → run folder ([`adapt_verdict`]; `seal_fs::adapt` writes the folder)
//!
//! The Verdict is parsed strictly ([`crate::json::parse`]) and validated against the vendored
//! Verdict schema; anything else is refused before a byte is written. The folder holds
//! `header.json` and `roll-1/proof-package.json` (RFC 8785 canonical JSON) and `brief.md`;
//! there is no play-spec and there are no blobs (a Verdict carries no frames). Every document
//! is validated before it is written, the finished folder is read back with
//! `seal_fs::runfolder::RunFolder::read`, and only then is it moved into place: the folder is built under a
//! hidden sibling name and renamed onto `out`, so `out` is either untouched or complete, and an
//! existing non-empty `out` is never overwritten.
//!
//! Header (playtest/3, phase JUDGING, `evidenceMode = legacy-adapted`, `acceptanceMode =
//! v3_shadow`, rolls `[]`, merge/sourceRollId/judge null, actor null, costRmb 0):
//!
//! | field | value |
//! |---|---|
//! | `runId` | `legacy-<first 16 hex of designId>-r<round>` |
//! | `gameId` | `task-<taskId>` (a numeric taskId in decimal) |
//! | `templateRoute`, `proofProfileId`, `proofRegistryVersion` | [`TEMPLATE_ROUTE`], [`PROOF_PROFILE_ID`], [`PROOF_REGISTRY_VERSION`] |
//! | `briefHash` | sha256 of the `brief.md` bytes written |
//! | `artifactHash` | sha256 of the Verdict's canonical (JCS) bytes |
//! | `taskBindingHash` | sha256 of the taskId as a string (`123` and `"123"` bind the same task) |
//! | `acceptanceRequestHash` | sha256 of the designId (its 64 ASCII hex characters) |
//! | `environment` | host [`LEGACY_HOST`], chromeVersion [`LEGACY_CHROME_VERSION`], the viewport and virtual-time constants the v3 schema demands, `buildRef` = sha256 of [`LEGACY_HOST`] (the legacy harness build is unknown; this fixed value says so) |
//! | `floor` | checks `structure` (structureOk) and `runnable` (runnableOk); passed = both |
//! | `repair` | `{round: verdict.round, fromRunId: null}` (the round-0 design has another designId) |
//! | `firstPlay` | gameEnd completed ⇒ `{true, durationMs, null}`, else `{false, null, null}` |
//! | `proofObligations` | `core.loop-reached` (profile, required) when playReport is present, then one per finding in order: `finding.p<0\|1\|2>-<n>` (n counts per severity from 1), source `brief`, required for P0/P1, optional for P2, description [`FINDING_PREFIX`] + issue |
//! | extensions | `_designId`, `_taskId` (as written), `_traceId`, `_promptVersions`, `_versionId` when present, and `_legacyVerdict`: the whole Verdict, so that `artifactHash` can be recomputed from the evidence alone |
//!
//! Proof package (`roll-1`): seeds 0, `actorSessionId = legacy-<traceId>`, floor and firstPlay
//! as in the header, no actions, no frames, `briefRuleMatches []`, `actorCostRmb 0`; events are
//! `playReport.emitsCaptured` in order (`seq` = index, `tMs` 0, `data {}`), except that the
//! first `game_end` carries `{completed, duration_ms}` from `gameEnd` (wire names stay
//! snake_case). A `gameEnd` without any `game_end` in `emitsCaptured` is appended as a last
//! `game_end` event, so the observation is not lost.
//!
//! The brief goes to the judges (scrubbed, but verbatim otherwise), so it names the design only
//! as "a legacy agent-loop design" and lists the review findings to check: the designId,
//! taskId, the legacy decision and reasons, the severities and the round stay in the header
//! (docs/DESIGN.md §1, principle 1: no identity, no expected outcome).
//!
//! # DECIDED evidence → Verdict ([`evidence_to_verdict`])
//!
//! Needs `_designId`, `_taskId`, `_traceId` extension fields (`_versionId` for an accept).
//! accept → accept, repair → fix, reject → kill; a retry has no Verdict (agent-loop records
//! infra failures without one). `structureOk`/`runnableOk` = floor checks `structure`/`runnable`
//! (status pass; absent or skip: `floor.passed`). `playReport` is computed from the top-level
//! events and actions (null when nothing was captured and the decision is not accept).
//! Findings: one P1 per required obligation whose consensus status is failed, disputed,
//! contradicted or missing. The result is validated against the Verdict schema.

mod to_run;
mod to_verdict;
mod verdict;

/// File names inside a run folder (seal-fs reads and writes the layout).
pub const HEADER_FILE: &str = "header.json";
pub const BRIEF_FILE: &str = "brief.md";
pub const PROOF_FILE: &str = "roll-1/proof-package.json";

pub use to_run::{adapt_verdict, prompt_text, Adapted};
pub use to_verdict::evidence_to_verdict;
pub use verdict::{
    parse_verdict, task_id_string, AgentLoopVerdict, GameEnd, PlayReport, VerdictEvidence,
    VerdictFinding,
};

/// Size limit for a Verdict file and for reading the adapted folder back (the default
/// `limits.max_document_bytes`).
pub const VERDICT_LIMIT: u64 = 64 * 1024 * 1024;
/// `templateRoute` of every adapted run.
pub const TEMPLATE_ROUTE: &str = "_template-legacy";
/// `proofProfileId` of every adapted run.
pub const PROOF_PROFILE_ID: &str = "legacy.verdict";
/// `proofRegistryVersion` of every adapted run: the version of this mapping.
pub const PROOF_REGISTRY_VERSION: &str = "legacy-verdict/1";
/// `environment.host` of every adapted run.
pub const LEGACY_HOST: &str = "legacy-agent-loop";
/// `environment.chromeVersion`: a Verdict does not record it.
pub const LEGACY_CHROME_VERSION: &str = "unknown";
/// Description prefix of an obligation made from a review finding.
pub const FINDING_PREFIX: &str = "No problem of this kind remains: ";
/// The profile obligation added when the Verdict carries a play report.
pub const CORE_LOOP_ID: &str = "core.loop-reached";
pub const CORE_LOOP_DESCRIPTION: &str =
    "The player can finish one full core loop (a game_end with completed = true).";
/// Floor check ids carrying structureOk and runnableOk.
pub const STRUCTURE_CHECK: &str = "structure";
pub const RUNNABLE_CHECK: &str = "runnable";
/// Prompt versions written when the evidence has no `_promptVersions`.
pub const DEFAULT_PROMPT_VERSIONS: [(&str, &str); 2] = [("judge-a", "1.0.0"), ("judge-b", "1.0.0")];

/// Why a Verdict could not be adapted, or a Verdict could not be built from evidence.
#[derive(Debug, thiserror::Error)]
pub enum AdaptError {
    /// Not JSON, duplicate keys, or not a valid Verdict per its schema.
    #[error("{object}: not a valid agent-loop Verdict: {reason}")]
    InvalidVerdict { object: String, reason: String },
    /// A valid Verdict holding a value playtest/3 cannot carry.
    #[error("{object}: cannot be adapted: {reason}")]
    Unmappable { object: String, reason: String },
    /// The output folder exists and is not an empty folder (or cannot be replaced).
    #[error("{path}: refusing to write the run folder: {reason}")]
    OutFolder { path: String, reason: String },
    #[error("{path}: {reason}")]
    Io { path: String, reason: String },
    /// A document the adapter built does not validate, or the folder does not read back.
    #[error("{path}: the adapted document is not valid: {reason}")]
    Output { path: String, reason: String },
    #[error("run {run}: no Verdict for a run in phase {phase}: only a DECIDED run has one")]
    NotDecided { run: String, phase: String },
    #[error("run {run}: decision retry ({reasons}) has no Verdict: agent-loop records infra failures without a Verdict (they are replayed, not judged)")]
    Retry { run: String, reasons: String },
    #[error("run {run}: extension field {field}: {reason}")]
    Extension {
        run: String,
        field: &'static str,
        reason: String,
    },
    #[error("run {run}: decision accept needs a versionId, and the evidence has no _versionId extension field")]
    NoVersionId { run: String },
    #[error("run {run}: the Verdict built from it does not validate: {reason}")]
    InvalidResult { run: String, reason: String },
}

#[cfg(test)]
mod tests {
    use super::to_run::floor_ok;
    use super::verdict::task_id_string;
    use super::*;
    use crate::canonical::Hash;
    use crate::doc::*;
    use serde_json::{json, Value};

    fn verdict(play_report: Value, findings: Value) -> Value {
        json!({
            "designId": "a".repeat(64),
            "taskId": 42,
            "decision": "fix",
            "structureOk": true,
            "runnableOk": false,
            "playReport": play_report,
            "findings": findings,
            "reasons": ["p1_fix_round"],
            "round": 0,
            "evidence": {"traceId": "t-1", "promptVersions": {}}
        })
    }

    fn adapt(v: &Value) -> Result<Adapted, AdaptError> {
        adapt_verdict("test", &serde_json::to_vec(v).unwrap(), Genre::Puzzle)
    }

    #[test]
    fn task_ids_print_as_integers() {
        assert_eq!(task_id_string(&json!(12)), "12");
        assert_eq!(task_id_string(&json!(-3)), "-3");
        assert_eq!(task_id_string(&json!(12.0)), "12");
        assert_eq!(task_id_string(&json!("0012")), "0012");
    }

    #[test]
    fn findings_number_per_severity_and_p2_is_optional() {
        let a = adapt(&verdict(
            Value::Null,
            json!([
                {"severity": "P1", "issue": "x", "suggestion": ""},
                {"severity": "P2", "issue": "y", "suggestion": ""},
                {"severity": "P1", "issue": "z", "suggestion": ""},
                {"severity": "P0", "issue": "w", "suggestion": ""}
            ]),
        ))
        .unwrap();
        let got: Vec<(&str, bool)> = a
            .header
            .proof_obligations
            .iter()
            .map(|o| (o.id.as_str(), o.required))
            .collect();
        assert_eq!(
            got,
            [
                ("finding.p1-1", true),
                ("finding.p2-1", false),
                ("finding.p1-2", true),
                ("finding.p0-1", true)
            ]
        );
        assert_eq!(a.run.as_str(), "legacy-aaaaaaaaaaaaaaaa-r0");
        assert_eq!(a.header.game_id, "task-42");
        assert_eq!(a.header.task_binding_hash, Hash::of(b"42"));
        assert!(a.proof.events.is_empty());
    }

    #[test]
    fn game_end_goes_on_the_first_game_end_or_is_appended() {
        let report = |emits: Value| {
            json!({"loaded": true, "clicks": 3, "gameEnd": {"completed": true, "durationMs": 900},
                   "consoleErrors": [], "assetLoadErrors": 0, "packageChecksumVerified": true,
                   "emitsCaptured": emits})
        };
        let a = adapt(&verdict(
            report(json!(["game_loaded", "game_end", "game_end"])),
            json!([]),
        ))
        .unwrap();
        let ev = &a.proof.events;
        assert_eq!(ev.len(), 3);
        assert_eq!(ev[1].data.get("duration_ms"), Some(&json!(900)));
        assert!(ev[2].data.is_empty());
        assert_eq!(a.proof.first_play.core_loop_ms, Some(900));

        let b = adapt(&verdict(report(json!(["game_loaded"])), json!([]))).unwrap();
        assert_eq!(b.proof.events.len(), 2);
        assert_eq!(b.proof.events[1].name, "game_end");
        assert_eq!(b.proof.events[1].seq, 1);
        assert_eq!(b.proof.events[1].data.get("completed"), Some(&json!(true)));
    }

    #[test]
    fn an_unusable_event_name_is_refused_by_index() {
        let r = json!({"loaded": true, "clicks": 0, "gameEnd": null, "consoleErrors": [],
                       "assetLoadErrors": 0, "packageChecksumVerified": false,
                       "emitsCaptured": ["game_loaded", ""]});
        let e = adapt(&verdict(r, json!([]))).unwrap_err();
        assert!(
            matches!(e, AdaptError::Unmappable { .. })
                && e.to_string().contains("emitsCaptured[1]"),
            "{e}"
        );
    }

    #[test]
    fn floor_check_falls_back_to_floor_passed() {
        let floor = Floor {
            passed: true,
            checks: vec![FloorCheck {
                id: "runnable".into(),
                status: FloorStatus::Fail,
                detail: String::new(),
            }],
        };
        assert!(!floor_ok(&floor, RUNNABLE_CHECK));
        assert!(floor_ok(&floor, STRUCTURE_CHECK));
    }

    #[test]
    fn the_brief_names_no_identity_and_no_outcome() {
        let mut v = verdict(
            Value::Null,
            json!([{"severity": "P1", "issue": "题文不符", "suggestion": "改标题"}]),
        );
        v["taskId"] = json!("778899");
        let a = adapt(&v).unwrap();
        for secret in [
            "aaaaaaaaaaaaaaaa",
            "778899",
            "fix",
            "p1_fix_round",
            "P1",
            "t-1",
        ] {
            assert!(!a.brief.contains(secret), "{secret} in {}", a.brief);
        }
        assert!(a.brief.contains("题文不符"));
    }
}
