//! Legacy adapter: agent-loop `Verdict` records (upstream `verdict.schema.json`) to seal run
//! folders, and DECIDED playtest/3 evidence back to a `Verdict` (docs/DESIGN.md §7, "Legacy").
//!
//! # Verdict → run folder ([`verdict_to_run_folder`])
//!
//! The Verdict is parsed strictly ([`crate::json::parse`]) and validated against the vendored
//! Verdict schema; anything else is refused before a byte is written. The folder holds
//! `header.json` and `roll-1/proof-package.json` (RFC 8785 canonical JSON) and `brief.md`;
//! there is no play-spec and there are no blobs (a Verdict carries no frames). Every document
//! is validated before it is written, the finished folder is read back with
//! [`RunFolder::read`], and only then is it moved into place: the folder is built under a
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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::canonical::{canonical_bytes, Hash};
use crate::contracts::Kind;
use crate::doc::*;
use crate::ids::{RollId, RunId};
use crate::runfolder::RunFolder;
use crate::validate::{validate_as, Report};

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

/// An agent-loop Verdict (upstream `verdict.schema.json`), after schema validation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentLoopVerdict {
    pub design_id: String,
    /// Integer or string, as written.
    pub task_id: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_id: Option<Value>,
    pub decision: String,
    pub structure_ok: bool,
    pub runnable_ok: bool,
    pub play_report: Option<PlayReport>,
    pub findings: Vec<VerdictFinding>,
    pub reasons: Vec<String>,
    pub round: u8,
    pub evidence: VerdictEvidence,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PlayReport {
    pub loaded: bool,
    pub clicks: u64,
    pub game_end: Option<GameEnd>,
    pub console_errors: Vec<String>,
    pub asset_load_errors: u64,
    pub package_checksum_verified: bool,
    pub emits_captured: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GameEnd {
    pub completed: bool,
    pub duration_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerdictFinding {
    pub severity: String,
    pub issue: String,
    pub suggestion: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct VerdictEvidence {
    pub trace_id: String,
    pub prompt_versions: BTreeMap<String, String>,
}

/// The documents of an adapted run folder, built in memory and validated.
#[derive(Debug, Clone)]
pub struct Adapted {
    pub run: RunId,
    pub header: Evidence,
    pub brief: String,
    pub proof: ProofPackage,
}

/// File names inside a run folder.
const HEADER_FILE: &str = "header.json";
const BRIEF_FILE: &str = "brief.md";
const PROOF_FILE: &str = "roll-1/proof-package.json";

/// Parses and validates a Verdict strictly, naming `object` in any error.
pub fn parse_verdict(object: &str, bytes: &[u8]) -> Result<(Value, AgentLoopVerdict), AdaptError> {
    let invalid = |reason: String| AdaptError::InvalidVerdict {
        object: object.to_string(),
        reason,
    };
    let value = crate::json::parse(bytes, VERDICT_LIMIT).map_err(|e| invalid(e.to_string()))?;
    match validate_as(Kind::Verdict, &value) {
        Report::Valid(_) => {}
        Report::Invalid(_, findings) => {
            return Err(invalid(
                findings
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; "),
            ))
        }
        Report::Unusable(reason) => return Err(invalid(reason)),
    }
    let verdict: AgentLoopVerdict =
        serde_json::from_value(value.clone()).map_err(|e| invalid(e.to_string()))?;
    Ok((value, verdict))
}

/// Adapts a Verdict into a run folder at `out` (which must not exist, or be an empty folder).
/// Errors name the Verdict as `Verdict`; see [`verdict_file_to_run_folder`] to name a file.
pub fn verdict_to_run_folder(
    verdict_bytes: &[u8],
    genre: Genre,
    out: &Path,
) -> Result<RunId, AdaptError> {
    let adapted = adapt_verdict("Verdict", verdict_bytes, genre)?;
    write_run_folder(&adapted, out)?;
    Ok(adapted.run)
}

/// [`verdict_to_run_folder`] for a Verdict file, whose path errors name.
pub fn verdict_file_to_run_folder(
    path: &Path,
    genre: Genre,
    out: &Path,
) -> Result<RunId, AdaptError> {
    let object = path.display().to_string();
    let bytes = crate::fsio::read(path, VERDICT_LIMIT).map_err(|e| match e {
        crate::fsio::FsError::TooLarge { .. } => AdaptError::InvalidVerdict {
            object: object.clone(),
            reason: format!("over the limit of {VERDICT_LIMIT} bytes"),
        },
        other => AdaptError::Io {
            path: object.clone(),
            reason: format!("cannot read: {other}"),
        },
    })?;
    let adapted = adapt_verdict(&object, &bytes, genre)?;
    write_run_folder(&adapted, out)?;
    Ok(adapted.run)
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
    let events = events_of(&v).map_err(unmappable)?;
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

/// Writes an adapted run folder at `out`: built under a hidden sibling, read back with
/// [`RunFolder::read`], then renamed onto `out` (which must be absent or an empty folder).
pub fn write_run_folder(adapted: &Adapted, out: &Path) -> Result<(), AdaptError> {
    let shown = out.display().to_string();
    let refuse = |reason: String| AdaptError::OutFolder {
        path: shown.clone(),
        reason,
    };
    check_out(out).map_err(refuse)?;
    let name = out
        .file_name()
        .ok_or_else(|| refuse("the path does not end in a folder name".into()))?
        .to_string_lossy()
        .to_string();
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(|e| AdaptError::Io {
        path: parent.display().to_string(),
        reason: format!("cannot create: {e}"),
    })?;
    let staging = make_staging(&parent, &name)?;
    let result = fill_and_move(adapted, &staging, out);
    if result.is_err() && staging.exists() {
        // Our own staging folder, made above: nothing else lives there.
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}

fn fill_and_move(adapted: &Adapted, staging: &Path, out: &Path) -> Result<(), AdaptError> {
    let header = canonical_bytes(&adapted.header).map_err(|e| AdaptError::Output {
        path: HEADER_FILE.into(),
        reason: e.to_string(),
    })?;
    let proof = canonical_bytes(&adapted.proof).map_err(|e| AdaptError::Output {
        path: PROOF_FILE.into(),
        reason: e.to_string(),
    })?;
    write_synced(&staging.join(HEADER_FILE), &header)?;
    write_synced(&staging.join(BRIEF_FILE), adapted.brief.as_bytes())?;
    let roll_dir = staging.join(RollId::R1.as_str());
    std::fs::create_dir(&roll_dir).map_err(|e| AdaptError::Io {
        path: roll_dir.display().to_string(),
        reason: format!("cannot create: {e}"),
    })?;
    write_synced(&staging.join(PROOF_FILE), &proof)?;
    RunFolder::read(staging, VERDICT_LIMIT).map_err(|e| AdaptError::Output {
        path: out.display().to_string(),
        reason: format!("the folder does not read back as a run folder: {e}"),
    })?;
    // rename(2) replaces an empty folder and refuses a non-empty one (ENOTEMPTY/EEXIST), so a
    // folder filled meanwhile by someone else is never overwritten.
    std::fs::rename(staging, out).map_err(|e| AdaptError::OutFolder {
        path: out.display().to_string(),
        reason: format!("cannot move the finished folder into place: {e}"),
    })?;
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        if let Ok(dir) = std::fs::File::open(parent) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}

/// Absent, or an empty folder: anything else is refused.
fn check_out(out: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(out) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot inspect: {e}")),
        Ok(meta) if !meta.is_dir() => Err("it exists and is not a folder".into()),
        Ok(_) => {
            let mut entries = std::fs::read_dir(out).map_err(|e| format!("cannot list: {e}"))?;
            if entries.next().is_some() {
                Err("the folder exists and is not empty (nothing is overwritten)".into())
            } else {
                Ok(())
            }
        }
    }
}

fn make_staging(parent: &Path, name: &str) -> Result<PathBuf, AdaptError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    for attempt in 0..100u32 {
        let p = parent.join(format!(
            ".{name}.adapt-{}-{nanos:08x}-{attempt}",
            std::process::id()
        ));
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(AdaptError::Io {
                    path: p.display().to_string(),
                    reason: format!("cannot create the staging folder: {e}"),
                })
            }
        }
    }
    Err(AdaptError::Io {
        path: parent.display().to_string(),
        reason: "cannot find a free staging folder name".into(),
    })
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), AdaptError> {
    use std::io::Write as _;
    let io = |e: std::io::Error| AdaptError::Io {
        path: path.display().to_string(),
        reason: format!("cannot write: {e}"),
    };
    let mut f = std::fs::File::create_new(path).map_err(io)?;
    f.write_all(bytes).map_err(io)?;
    f.sync_all().map_err(io)
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

/// The taskId as a string: a number in decimal, a string as written.
fn task_id_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => u.to_string(),
            (_, Some(i), _) => i.to_string(),
            // An integral double (`12.0`) is the integer the schema accepted.
            (_, _, Some(f)) if f.fract() == 0.0 => format!("{f:.0}"),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

fn environment() -> Value {
    json!({
        "host": LEGACY_HOST,
        "chromeVersion": LEGACY_CHROME_VERSION,
        "viewport": {"width": 390, "height": 844, "dpr": 1},
        "buildRef": Hash::of(LEGACY_HOST.as_bytes()),
        "virtualTime": {"mode": "cdp", "actionQuantumMs": 600, "waitMinMs": 100, "waitMaxMs": 600}
    })
}

fn floor_of(v: &AgentLoopVerdict) -> Floor {
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

fn first_play_of(v: &AgentLoopVerdict) -> FirstPlay {
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

fn game_end_data(end: GameEnd) -> Map<String, Value> {
    let mut data = Map::new();
    data.insert("completed".into(), Value::Bool(end.completed));
    data.insert("duration_ms".into(), json!(end.duration_ms));
    data
}

/// The events of the proof package (see the module doc).
fn events_of(v: &AgentLoopVerdict) -> Result<Vec<GameEvent>, String> {
    let Some(report) = &v.play_report else {
        return Ok(Vec::new());
    };
    let mut events = Vec::with_capacity(report.emits_captured.len() + 1);
    let mut end = report.game_end;
    for (i, name) in report.emits_captured.iter().enumerate() {
        let chars = name.chars().count();
        if chars == 0 || chars > 128 {
            return Err(format!(
                "playReport.emitsCaptured[{i}] has {chars} characters; a playtest/3 event name has 1 to 128"
            ));
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

fn obligations_of(v: &AgentLoopVerdict) -> Vec<ProofObligation> {
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

fn genre_name(genre: Genre) -> String {
    serde_json::to_value(genre)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The brief: shown to the judges, so no identity and no expected outcome.
fn brief_of(v: &AgentLoopVerdict, genre: Genre) -> String {
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

fn one_line(s: &str) -> String {
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

// ---------------------------------------------------------------------------------------------
// Evidence → Verdict

fn ext<'a>(e: &'a Evidence, field: &'static str) -> Result<&'a Value, AdaptError> {
    e.extensions
        .0
        .get(field)
        .ok_or_else(|| AdaptError::Extension {
            run: e.run_id.clone(),
            field,
            reason:
                "missing: only a run adapted from (or bound to) an agent-loop design has a Verdict"
                    .into(),
        })
}

fn ext_string(e: &Evidence, field: &'static str) -> Result<String, AdaptError> {
    match ext(e, field)? {
        Value::String(s) => Ok(s.clone()),
        other => Err(AdaptError::Extension {
            run: e.run_id.clone(),
            field,
            reason: format!(
                "must be a string, found {}",
                crate::contracts::type_name(other)
            ),
        }),
    }
}

fn ext_id(e: &Evidence, field: &'static str) -> Result<Value, AdaptError> {
    match ext(e, field)? {
        v @ (Value::String(_) | Value::Number(_)) => Ok(v.clone()),
        other => Err(AdaptError::Extension {
            run: e.run_id.clone(),
            field,
            reason: format!(
                "must be an integer or a string, found {}",
                crate::contracts::type_name(other)
            ),
        }),
    }
}

/// A floor check as a boolean: status pass; absent or skipped: the floor's verdict.
fn floor_ok(floor: &Floor, id: &str) -> bool {
    match floor.checks.iter().find(|c| c.id == id).map(|c| c.status) {
        Some(FloorStatus::Pass) => true,
        Some(FloorStatus::Fail) => false,
        Some(FloorStatus::Skip) | None => floor.passed,
    }
}

fn non_negative_int(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| {
                *f >= 0.0 && f.fract() == 0.0 && *f <= crate::canonical::MAX_SAFE_INTEGER as f64
            })
            .map(|f| f as u64)
    })
}

fn play_report_of(e: &Evidence, accept: bool) -> Value {
    if e.events.is_empty() && e.actions.is_empty() && !accept {
        return Value::Null;
    }
    let game_end = e
        .events
        .iter()
        .filter(|ev| ev.name == "game_end")
        .find_map(|ev| {
            let completed = ev.data.get("completed")?.as_bool()?;
            let duration = non_negative_int(ev.data.get("duration_ms")?)?;
            Some(json!({"completed": completed, "durationMs": duration}))
        })
        .unwrap_or(Value::Null);
    json!({
        "loaded": e.events.iter().any(|ev| ev.name == "game_loaded"),
        "clicks": e.actions.iter().filter(|a| a.normalized.t == "tap").count(),
        "gameEnd": game_end,
        "consoleErrors": [],
        "assetLoadErrors": 0,
        "packageChecksumVerified": false,
        "emitsCaptured": e.events.iter().map(|ev| ev.name.as_str()).collect::<Vec<_>>(),
    })
}

fn findings_of(e: &Evidence) -> Vec<Value> {
    let status_of = |id: &str| {
        e.judge
            .as_ref()
            .and_then(|j| j.obligation_results.iter().find(|o| o.id == id))
            .map(|o| o.status)
            .unwrap_or(ObligationStatus::Missing)
    };
    e.proof_obligations
        .iter()
        .filter(|o| o.required)
        .filter_map(|o| {
            let status = status_of(&o.id);
            if status == ObligationStatus::Satisfied {
                return None;
            }
            let issue = o
                .description
                .strip_prefix(FINDING_PREFIX)
                .filter(|s| !s.is_empty())
                .unwrap_or(&o.description);
            Some(json!({
                "severity": "P1",
                "issue": issue,
                "suggestion": format!(
                    "seal judges' consensus on {} is {}: make it hold, visibly, in play",
                    o.id,
                    status.as_str()
                ),
            }))
        })
        .collect()
}

/// The agent-loop Verdict of a DECIDED run carrying `_designId`, `_taskId`, `_traceId`
/// (see the module doc for the mapping). The result is validated against the Verdict schema.
pub fn evidence_to_verdict(evidence: &Evidence) -> Result<Value, AdaptError> {
    let run = evidence.run_id.clone();
    let (decision, verdict_decision, reason) = verdict_decision(evidence)?;
    let design_id = ext_string(evidence, "_designId")?;
    let task_id = ext_id(evidence, "_taskId")?;
    let trace_id = ext_string(evidence, "_traceId")?;
    let version_id = match evidence.extensions.0.get("_versionId") {
        None => None,
        Some(_) => Some(ext_id(evidence, "_versionId")?),
    };
    let accept = decision.action == DecisionAction::Accept;
    if accept && version_id.is_none() {
        return Err(AdaptError::NoVersionId { run });
    }
    let prompt_versions = prompt_versions_of(evidence);

    let mut verdict = Map::new();
    verdict.insert("designId".into(), json!(design_id));
    verdict.insert("taskId".into(), task_id);
    if let Some(v) = version_id {
        verdict.insert("versionId".into(), v);
    }
    verdict.insert("decision".into(), json!(verdict_decision));
    verdict.insert(
        "structureOk".into(),
        json!(floor_ok(&evidence.floor, STRUCTURE_CHECK)),
    );
    verdict.insert(
        "runnableOk".into(),
        json!(floor_ok(&evidence.floor, RUNNABLE_CHECK)),
    );
    verdict.insert("playReport".into(), play_report_of(evidence, accept));
    verdict.insert("findings".into(), Value::Array(findings_of(evidence)));
    verdict.insert("reasons".into(), json!([reason]));
    verdict.insert("round".into(), json!(evidence.repair.round));
    verdict.insert(
        "evidence".into(),
        json!({"traceId": trace_id, "promptVersions": prompt_versions}),
    );
    checked(run, Value::Object(verdict))
}

/// The decision of a decided run, and the Verdict's `decision` and reason for it; a run not
/// decided, or decided `retry`, has no Verdict.
fn verdict_decision(
    evidence: &Evidence,
) -> Result<(&Decision, &'static str, &'static str), AdaptError> {
    let run = evidence.run_id.clone();
    let decision = match (&evidence.phase, &evidence.decision) {
        (Phase::Decided, Some(d)) => d,
        (phase, _) => {
            return Err(AdaptError::NotDecided {
                run,
                phase: serde_json::to_value(phase)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_else(|| format!("{phase:?}")),
            })
        }
    };
    let (verdict_decision, reason) = match decision.action {
        DecisionAction::Accept => ("accept", "accept"),
        DecisionAction::Repair => ("fix", "p1_fix_round"),
        DecisionAction::Reject => ("kill", "p1_residual_after_fix"),
        DecisionAction::Retry => {
            return Err(AdaptError::Retry {
                run,
                reasons: decision.reasons.join(", "),
            })
        }
    };
    Ok((decision, verdict_decision, reason))
}

/// The run's `_promptVersions` extension, else the versions this build's prompts carry.
fn prompt_versions_of(evidence: &Evidence) -> Value {
    match evidence.extensions.0.get("_promptVersions") {
        Some(v) => v.clone(),
        None => Value::Object(
            DEFAULT_PROMPT_VERSIONS
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect(),
        ),
    }
}

/// The Verdict if it validates against the Verdict schema, else why not.
fn checked(run: String, verdict: Value) -> Result<Value, AdaptError> {
    match validate_as(Kind::Verdict, &verdict) {
        Report::Valid(_) => Ok(verdict),
        Report::Invalid(_, findings) => Err(AdaptError::InvalidResult {
            run,
            reason: findings
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        }),
        Report::Unusable(reason) => Err(AdaptError::InvalidResult { run, reason }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
