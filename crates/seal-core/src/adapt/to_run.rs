//! Verdict → the documents of a run folder (pure, no I/O): the header, the brief and the one
//! proof package, as the table of the [module doc](super) says, each validated (schema and
//! invariants) before anything is written.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::verdict::{parse_verdict, task_id_string, AgentLoopVerdict, GameEnd};
use super::*;
use super::{HEADER_FILE, PROOF_FILE};
use crate::canonical::{canonical_bytes, Hash};
use crate::contracts::Kind;
use crate::doc::*;
use crate::ids::{RollId, RunId};
use crate::validate::{validate_as, Report};

/// The documents of an adapted run folder, built in memory and validated.
#[derive(Debug, Clone)]
pub struct Adapted {
    pub run: RunId,
    pub header: Evidence,
    pub brief: String,
    pub proof: ProofPackage,
}

/// Builds (pure, no I/O) and validates the documents of the run folder for a Verdict.
pub fn adapt_verdict(object: &str, bytes: &[u8], genre: Genre) -> Result<Adapted, AdaptError> {
    let (value, v) = parse_verdict(object, bytes)?;
    let unmappable = |reason: String| AdaptError::Unmappable {
        object: object.to_string(),
        reason,
    };

    let run_id = format!("legacy-{}-r{}", &v.design_id[..16], v.round);
    let run = RunId::parse(&run_id).map_err(|e| unmappable(e.to_string()))?;
    let task = task_id_string(&v.task_id);
    let canonical_verdict = canonical_bytes(&value).map_err(|e| unmappable(e.to_string()))?;

    let floor = floor_of(&v);
    let first_play = first_play_of(&v);
    let events = events_of(&v).map_err(|e| unmappable(e.to_string()))?;
    let brief = brief_of(&v, genre);

    let extensions = extensions_of(&v, &value);
    let header = Evidence {
        schema_version: SCHEMA_VERSION.into(),
        run_id,
        parent_run_id: None,
        game_id: format!("task-{task}"),
        genre,
        template_route: TEMPLATE_ROUTE.into(),
        proof_profile_id: PROOF_PROFILE_ID.into(),
        proof_registry_version: PROOF_REGISTRY_VERSION.into(),
        task_binding_hash: Hash::of(task.as_bytes()),
        acceptance_request_hash: Hash::of(v.design_id.as_bytes()),
        artifact_hash: Hash::of(&canonical_verdict),
        brief_hash: Hash::of(brief.as_bytes()),
        acceptance_mode: AcceptanceMode::V3Shadow,
        evidence_mode: EvidenceMode::LegacyAdapted,
        phase: Phase::Judging,
        outcome: None,
        environment: environment(),
        floor: floor.clone(),
        actor: None,
        actions: Vec::new(),
        events: Vec::new(),
        brief_rule_matches: Vec::new(),
        proof_obligations: obligations_of(&v),
        first_play: first_play.clone(),
        rolls: Vec::new(),
        merge: None,
        source_roll_id: None,
        judge: None,
        repair: Repair {
            round: v.round,
            from_run_id: None,
        },
        cost_rmb: 0.0,
        final_postguard: None,
        decision: None,
        compatibility: None,
        extensions: Extensions(extensions),
    };
    let proof = proof_of(&v, floor, first_play, events);
    check_output(HEADER_FILE, Kind::PlaytestV3, &header)?;
    check_output(PROOF_FILE, Kind::ProofPackage, &proof)?;
    Ok(Adapted {
        run,
        header,
        brief,
        proof,
    })
}

/// The `^_` extension fields that carry the Verdict's identity through the evidence (never to
/// the judges: blinding scrubs them).
fn extensions_of(
    v: &AgentLoopVerdict,
    value: &serde_json::Value,
) -> BTreeMap<String, serde_json::Value> {
    let mut extensions = BTreeMap::new();
    extensions.insert("_designId".to_string(), json!(v.design_id));
    extensions.insert("_taskId".to_string(), v.task_id.clone());
    extensions.insert("_traceId".to_string(), json!(v.evidence.trace_id));
    extensions.insert(
        "_promptVersions".to_string(),
        json!(v.evidence.prompt_versions),
    );
    if let Some(version) = &v.version_id {
        extensions.insert("_versionId".to_string(), version.clone());
    }
    extensions.insert("_legacyVerdict".to_string(), value.clone());

    extensions
}

/// The single roll of an adapted run: the Verdict's floor, first play and events, no seeds.
fn proof_of(
    v: &AgentLoopVerdict,
    floor: Floor,
    first_play: FirstPlay,
    events: Vec<GameEvent>,
) -> ProofPackage {
    ProofPackage {
        schema_version: PROOF_PACKAGE.into(),
        roll_id: RollId::R1,
        requested_game_seed: 0,
        actual_game_seed: 0,
        policy_seed: 0,
        actor_session_id: format!("legacy-{}", v.evidence.trace_id),
        floor,
        first_play,
        brief_rule_matches: Vec::new(),
        actions: Vec::new(),
        events,
        frames: Vec::new(),
        actor_cost_rmb: 0.0,
    }
}

/// Validates a built document (schema and invariants), naming its file in the run folder.
fn check_output<T: Serialize>(file: &str, kind: Kind, doc: &T) -> Result<(), AdaptError> {
    let output = |reason: String| AdaptError::Output {
        path: file.into(),
        reason,
    };
    let v = serde_json::to_value(doc).map_err(|e| output(e.to_string()))?;
    match validate_as(kind, &v) {
        Report::Valid(_) => Ok(()),
        Report::Invalid(_, findings) => Err(output(
            findings
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        )),
        Report::Unusable(reason) => Err(output(reason)),
    }
}

pub(crate) fn environment() -> Value {
    json!({
        "host": LEGACY_HOST,
        "chromeVersion": LEGACY_CHROME_VERSION,
        "viewport": {"width": 390, "height": 844, "dpr": 1},
        "buildRef": Hash::of(LEGACY_HOST.as_bytes()),
        "virtualTime": {"mode": "cdp", "actionQuantumMs": 600, "waitMinMs": 100, "waitMaxMs": 600}
    })
}

pub(crate) fn floor_of(v: &AgentLoopVerdict) -> Floor {
    let check = |id: &str, ok: bool, what: &str| FloorCheck {
        id: id.into(),
        status: if ok {
            FloorStatus::Pass
        } else {
            FloorStatus::Fail
        },
        detail: format!("agent-loop Verdict {what}"),
    };
    Floor {
        passed: v.structure_ok && v.runnable_ok,
        checks: vec![
            check(
                STRUCTURE_CHECK,
                v.structure_ok,
                &format!(
                    "structureOk = {}: the design config {} its template schema (gate E1)",
                    v.structure_ok,
                    if v.structure_ok { "passed" } else { "failed" }
                ),
            ),
            check(
                RUNNABLE_CHECK,
                v.runnable_ok,
                &if v.runnable_ok {
                    "runnableOk = true: game_loaded, a completed game_end with durationMs > 0, \
                     no fatal error and the package checksum all held (agent-loop §9.4)"
                        .to_string()
                } else {
                    "runnableOk = false: not all of game_loaded, a completed game_end with \
                     durationMs > 0, no fatal error and the package checksum held, or the game \
                     was not played (agent-loop §9.4)"
                        .to_string()
                },
            ),
        ],
    }
}

pub(crate) fn first_play_of(v: &AgentLoopVerdict) -> FirstPlay {
    match v.play_report.as_ref().and_then(|p| p.game_end) {
        Some(end) if end.completed => FirstPlay {
            core_loop_reached: true,
            core_loop_ms: Some(end.duration_ms),
            threshold_ms: None,
        },
        _ => FirstPlay {
            core_loop_reached: false,
            core_loop_ms: None,
            threshold_ms: None,
        },
    }
}

pub(crate) fn game_end_data(end: GameEnd) -> Map<String, Value> {
    let mut data = Map::new();
    data.insert("completed".into(), Value::Bool(end.completed));
    data.insert("duration_ms".into(), json!(end.duration_ms));
    data
}

/// A captured emit that cannot be a playtest/3 event name.
#[derive(Debug, thiserror::Error)]
#[error("playReport.emitsCaptured[{index}] has {chars} characters; a playtest/3 event name has 1 to 128")]
pub(crate) struct BadEventName {
    index: usize,
    chars: usize,
}

/// The events of the proof package (see the module doc).
pub(crate) fn events_of(v: &AgentLoopVerdict) -> Result<Vec<GameEvent>, BadEventName> {
    let Some(report) = &v.play_report else {
        return Ok(Vec::new());
    };
    let mut events = Vec::with_capacity(report.emits_captured.len() + 1);
    let mut end = report.game_end;
    for (i, name) in report.emits_captured.iter().enumerate() {
        let chars = name.chars().count();
        if chars == 0 || chars > 128 {
            return Err(BadEventName { index: i, chars });
        }
        let data = match end {
            Some(e) if name == "game_end" => {
                end = None;
                game_end_data(e)
            }
            _ => Map::new(),
        };
        events.push(GameEvent {
            seq: i as u64,
            name: name.clone(),
            t_ms: 0,
            data,
        });
    }
    if let Some(e) = end {
        events.push(GameEvent {
            seq: events.len() as u64,
            name: "game_end".into(),
            t_ms: 0,
            data: game_end_data(e),
        });
    }
    Ok(events)
}

pub(crate) fn obligations_of(v: &AgentLoopVerdict) -> Vec<ProofObligation> {
    let mut out = Vec::new();
    if v.play_report.is_some() {
        out.push(ProofObligation {
            id: CORE_LOOP_ID.into(),
            description: CORE_LOOP_DESCRIPTION.into(),
            required: true,
            source: ObligationSource::Profile,
            check: None,
        });
    }
    let mut counts = [0usize; 3];
    for f in &v.findings {
        let (i, sev) = match f.severity.as_str() {
            "P0" => (0, "p0"),
            "P1" => (1, "p1"),
            _ => (2, "p2"),
        };
        counts[i] += 1;
        out.push(ProofObligation {
            id: format!("finding.{sev}-{}", counts[i]),
            description: format!("{FINDING_PREFIX}{}", prompt_text(&f.issue)),
            required: i < 2,
            source: ObligationSource::Brief,
            check: None,
        });
    }
    out
}

pub(crate) fn genre_name(genre: Genre) -> String {
    serde_json::to_value(genre)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The brief: shown to the judges, so no identity and no expected outcome.
pub(crate) fn brief_of(v: &AgentLoopVerdict, genre: Genre) -> String {
    let mut s = String::new();
    s.push_str("# Legacy agent-loop design\n\n");
    s.push_str(&format!(
        "A {} mini game for a 390x844 portrait phone screen, built by the earlier agent-loop \
         pipeline. This run was adapted from that pipeline's final record: the original design \
         text did not survive, only what its review and its playtest found.\n",
        genre_name(genre)
    ));
    s.push_str("\n## Review findings to check in play\n\n");
    if v.findings.is_empty() {
        s.push_str("The review found no problem.\n");
    } else {
        for f in &v.findings {
            s.push_str(&format!("- {}", prompt_text(&f.issue)));
            if !f.suggestion.trim().is_empty() {
                s.push_str(&format!(" (suggested: {})", prompt_text(&f.suggestion)));
            }
            s.push('\n');
        }
    }
    s.push_str("\n## Play record\n\n");
    match &v.play_report {
        None => s.push_str("The game was not played: there is no play record.\n"),
        Some(p) if p.emits_captured.is_empty() => {
            s.push_str("The game was played; it emitted no SDK event.\n")
        }
        Some(p) => s.push_str(&format!(
            "The game was played; its SDK events, in order: {}.\n",
            p.emits_captured.join(", ")
        )),
    }
    s
}

pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Finding text as it may appear in a prompt: one line; no control characters (NUL), no
/// bidirectional or invisible format characters (U+202E would reorder what a reviewer reads);
/// markup characters escaped, so that the text cannot open a tag, a code span or a heading.
pub fn prompt_text(s: &str) -> String {
    let invisible = |c: char| {
        c.is_control()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
    };
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '`' => out.push('\''),
            c if c.is_whitespace() => out.push(' '),
            c if invisible(c) => {}
            c => out.push(c),
        }
    }
    one_line(&out)
}

/// A floor check as a boolean: status pass; absent or skipped: the floor's verdict.
pub(crate) fn floor_ok(floor: &Floor, id: &str) -> bool {
    match floor.checks.iter().find(|c| c.id == id).map(|c| c.status) {
        Some(FloorStatus::Pass) => true,
        Some(FloorStatus::Fail) => false,
        Some(FloorStatus::Skip) | None => floor.passed,
    }
}
