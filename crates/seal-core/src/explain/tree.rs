//! The decision tree of a sealed run, built from its verified, stored documents. Pure: the same
//! documents give the same tree, byte for byte.
//!
//! The selected path runs from the run header through each judged roll (floor, every guard
//! check, blinding, judge A, judge B, independence, every obligation's consensus, conflicts,
//! the roll's outcome), the merge, every postguard check and the decision, to the outcome node
//! of the sealed outcome. Branches the run did not take are present with `selected: false`:
//! a blocked guard, a void roll, "roll 1 decisive → finalize" when roll 2 was played, roll 2
//! when it was not, and the other outcomes. Every fact comes from the documents or from the
//! shared rules ([`crate::consensus`], [`crate::derive`], [`crate::merge`],
//! [`crate::assertions`]); nothing is decided here.

use crate::assertions;
use crate::canonical::Hash;
use crate::consensus::{decision_rule, DecisionFacts};
use crate::derive;
use crate::doc::*;
use crate::ids::{RollId, Slot};
use crate::merge::{self, Next};
use crate::review::{ReviewPredicate, Status as ReviewStatus, TrustedReview};
use crate::vocab::join;

/// One judge slot of a roll: its normalized result and the SlotMeta/1 of every attempt.
#[derive(Debug, Clone)]
pub struct SlotDocs {
    pub result: JudgeResult,
    pub metas: Vec<SlotMeta>,
}

impl SlotDocs {
    /// The final attempt's meta: the accepted one, else the last one.
    pub fn final_meta(&self) -> Option<&SlotMeta> {
        self.metas.iter().find(|m| m.accepted).or(self.metas.last())
    }
}

/// One judged roll: the roll record of the evidence and every document it binds.
#[derive(Debug, Clone)]
pub struct RollDocs {
    pub roll: Roll,
    pub proof: ProofPackage,
    pub package: JudgePackage,
    pub manifest: ImageManifest,
    pub slots: [SlotDocs; 2],
    pub consensus: JudgeConsensus,
    pub reservation: CostReservation,
}

impl RollDocs {
    pub fn slot(&self, s: Slot) -> &SlotDocs {
        match s {
            Slot::A => &self.slots[0],
            Slot::B => &self.slots[1],
        }
    }

    /// Whether the package marks obligation `id` required.
    pub fn required(&self, id: &str) -> bool {
        self.package
            .obligations
            .iter()
            .any(|o| o.id == id && o.required)
    }
}

/// A verified run: its evidence, the hashes of the evidence and the seal, the sealing key,
/// and every roll's documents in order.
#[derive(Debug, Clone)]
pub struct RunDocs {
    pub evidence: Evidence,
    pub evidence_hash: Hash,
    pub seal_hash: Hash,
    pub key_id: String,
    pub rolls: Vec<RollDocs>,
}

/// The node id prefix of a roll (`r1`, `r2`).
pub fn roll_prefix(r: RollId) -> &'static str {
    match r {
        RollId::R1 => "r1",
        RollId::R2 => "r2",
    }
}

/// Lowercase letters, digits and single dashes, at most 40 characters.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
        if out.len() >= 40 {
            break;
        }
    }
    out.trim_end_matches('-').to_string()
}

/// The node id (and page anchor) of the `index`th obligation of a roll.
pub fn obligation_node_id(r: RollId, index: usize, id: &str) -> String {
    let s = slug(id);
    if s.is_empty() {
        format!("{}-ob-{}", roll_prefix(r), index + 1)
    } else {
        format!("{}-ob-{}-{s}", roll_prefix(r), index + 1)
    }
}

/// The first 12 hex digits of a hash, for titles.
pub fn short(h: &Hash) -> &str {
    h.as_str().get(..12).unwrap_or(h.as_str())
}

struct Builder {
    nodes: Vec<TreeNode>,
    edges: Vec<TreeEdge>,
}

struct NodeSpec<'a> {
    id: &'a str,
    kind: NodeKind,
    owner: NodeOwner,
    status: NodeStatus,
    title: String,
    detail: String,
    anchor: &'a str,
}

impl Builder {
    fn node(&mut self, n: NodeSpec<'_>) {
        let nonempty = |s: String| if s.is_empty() { "-".to_string() } else { s };
        self.nodes.push(TreeNode {
            id: n.id.to_string(),
            kind: n.kind,
            owner: n.owner,
            title: nonempty(n.title),
            detail: nonempty(n.detail),
            status: n.status,
            evidence_ref: Anchor::of(n.anchor),
        });
    }

    fn edge(&mut self, from: &str, to: &str, label: &str, tone: EdgeTone, selected: bool) {
        self.edges.push(TreeEdge {
            from: from.to_string(),
            to: to.to_string(),
            label: label.to_string(),
            tone,
            selected,
        });
    }
}

/// The status of a node on the path (`on`), or `neutral` off it.
fn st(on: bool, s: NodeStatus) -> NodeStatus {
    if on {
        s
    } else {
        NodeStatus::Neutral
    }
}

fn outcome_status(o: Outcome) -> NodeStatus {
    match o {
        Outcome::Pass => NodeStatus::Pass,
        Outcome::Fail => NodeStatus::Blocked,
        Outcome::Inconclusive | Outcome::InfraError => NodeStatus::Guard,
    }
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// Builds the decision tree of a verified run.
pub fn build(run: &RunDocs) -> DecisionTree {
    let ev = &run.evidence;
    let mut b = Builder {
        nodes: Vec::new(),
        edges: Vec::new(),
    };
    header_node(&mut b, ev);
    let mut from = "header".to_string();
    let mut label = "roll-1: the actor plays the game".to_string();
    for r in &run.rolls {
        let exit = roll_nodes(&mut b, r, &from, &label);
        from = exit;
        label = roll_exit(&mut b, run, r);
    }
    if run.rolls.len() == 1 {
        roll2_placeholder(&mut b, run);
    }
    b.edge(&from, "merge", &label, EdgeTone::Continue, true);
    let last = merge_and_postguard(&mut b, ev);
    decision_nodes(&mut b, ev, &last);
    DecisionTree {
        schema_version: DECISION_TREE.into(),
        root_node_id: "header".into(),
        nodes: b.nodes,
        edges: b.edges,
        observed: observed(ev),
        evidence_bindings: bindings(run),
    }
}

fn observed(ev: &Evidence) -> Observed {
    let outcome = ev.outcome.unwrap_or(Outcome::InfraError);
    Observed {
        outcome,
        decision_action: ev
            .decision
            .as_ref()
            .map(|d| d.action)
            .unwrap_or(DecisionAction::Retry),
        reasons: ev
            .decision
            .as_ref()
            .map(|d| d.reasons.clone())
            .unwrap_or_default(),
        source_roll_id: ev.source_roll_id,
        roll_outcomes: ev
            .rolls
            .iter()
            .map(|r| RollOutcome {
                roll_id: r.roll_id,
                outcome: r.roll_outcome,
            })
            .collect(),
        accepted: ev.compatibility.as_ref().is_some_and(|c| c.accepted),
        postguard_passed: ev.final_postguard.as_ref().is_some_and(|p| p.passed),
        acceptance_mode: ev.acceptance_mode,
        evidence_mode: ev.evidence_mode,
    }
}

fn bindings(run: &RunDocs) -> EvidenceBindings {
    let ev = &run.evidence;
    EvidenceBindings {
        run_id: ev.run_id.clone(),
        evidence_sha256: run.evidence_hash.clone(),
        seal_sha256: run.seal_hash.clone(),
        seal_key_id: run.key_id.clone(),
        judging_snapshot_sha256: ev
            .final_postguard
            .as_ref()
            .map(|p| p.judging_snapshot_hash.clone())
            .unwrap_or_else(|| Hash::of(b"")),
        rolls: run
            .rolls
            .iter()
            .map(|r| RollBinding {
                roll_id: r.roll.roll_id,
                proof_package_sha256: r.roll.proof_package_hash.clone(),
                judge_package_sha256: r.roll.judge_package_hash.clone(),
                judge_a_result_sha256: r.roll.judge_a_ref.result_hash.clone(),
                judge_b_result_sha256: r.roll.judge_b_ref.result_hash.clone(),
                consensus_sha256: r.roll.judge_consensus_hash.clone(),
            })
            .collect(),
    }
}

fn header_node(b: &mut Builder, ev: &Evidence) {
    let required = ev.proof_obligations.iter().filter(|o| o.required).count();
    b.node(NodeSpec {
        id: "header",
        kind: NodeKind::Context,
        owner: NodeOwner::Platform,
        status: NodeStatus::Pass,
        title: format!("Run {}", ev.run_id),
        detail: format!(
            "{} game {}; brief sha256 {}; {} obligations ({required} required); acceptance mode {}, evidence mode {}; repair round {}",
            serde_json::to_value(ev.genre).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default(),
            ev.game_id,
            ev.brief_hash,
            ev.proof_obligations.len(),
            ev.acceptance_mode.as_str(),
            match ev.evidence_mode { EvidenceMode::Native => "native", EvidenceMode::LegacyAdapted => "legacy-adapted" },
            ev.repair.round,
        ),
        anchor: "run",
    });
}

/// The nodes of one judged roll, entered from `from` by a selected edge labelled `label`.
/// Returns the id of the roll's outcome node.
fn roll_nodes(b: &mut Builder, r: &RollDocs, from: &str, label: &str) -> String {
    let p = roll_prefix(r.roll.roll_id);
    let start = format!("{p}-start");
    let proof = &r.proof;
    b.node(NodeSpec {
        id: &start,
        kind: NodeKind::Context,
        owner: NodeOwner::Platform,
        status: NodeStatus::Pass,
        title: format!("{}: played", r.roll.roll_id),
        detail: format!(
            "game seed {} (requested {}); {} actions, {} events, {} frames; actor cost {} RMB; proof package sha256 {}",
            proof.actual_game_seed,
            proof.requested_game_seed,
            proof.actions.len(),
            proof.events.len(),
            proof.frames.len(),
            proof.actor_cost_rmb,
            r.roll.proof_package_hash
        ),
        anchor: p,
    });
    b.edge(from, &start, label, EdgeTone::Continue, true);
    let floor = floor_node(b, r);
    b.edge(
        &start,
        &floor,
        "deterministic floor checks",
        EdgeTone::Continue,
        true,
    );
    let last_guard = guard_nodes(b, r, &floor);
    let outcome = format!("{p}-outcome");
    let blocked = r.roll.roll_guard.status == GuardStatus::Blocked;
    b.edge(
        &last_guard,
        &outcome,
        "guard blocked: no judge is called (infra_error)",
        EdgeTone::Guard,
        blocked,
    );
    let independence = judge_nodes(b, r, &last_guard, !blocked);
    let holds = r.consensus.independence_checks.all_required_hold();
    b.edge(
        &independence,
        &outcome,
        "a required independence check is false: the roll is void",
        EdgeTone::Guard,
        !blocked && !holds,
    );
    let conflicts = obligation_nodes(b, r, &independence, !blocked && holds);
    b.edge(
        &conflicts,
        &outcome,
        "roll decision (dual-strict/1)",
        EdgeTone::Continue,
        !blocked && holds,
    );
    roll_outcome_node(b, r, &outcome);
    outcome
}

fn floor_node(b: &mut Builder, r: &RollDocs) -> String {
    let id = format!("{}-floor", roll_prefix(r.roll.roll_id));
    let floor = &r.proof.floor;
    let checks: Vec<String> = floor
        .checks
        .iter()
        .map(|c| {
            let s = match c.status {
                FloorStatus::Pass => "pass",
                FloorStatus::Fail => "FAIL",
                FloorStatus::Skip => "skip",
            };
            if c.detail.is_empty() {
                format!("{} {s}", c.id)
            } else {
                format!(
                    "{} {s} ({})",
                    c.id,
                    crate::contracts::shorten(&c.detail, 400)
                )
            }
        })
        .collect();
    b.node(NodeSpec {
        id: &id,
        kind: NodeKind::Check,
        owner: NodeOwner::Platform,
        status: if floor.passed {
            NodeStatus::Pass
        } else {
            NodeStatus::Blocked
        },
        title: format!("Floor: {}", if floor.passed { "passed" } else { "FAILED" }),
        detail: if checks.is_empty() {
            format!(
                "floor passed: {}; no floor checks recorded",
                yes(floor.passed)
            )
        } else {
            format!("floor passed: {}; {}", yes(floor.passed), checks.join(", "))
        },
        anchor: &id,
    });
    id
}

/// One node per roll guard check, chained from `from`; returns the last one.
fn guard_nodes(b: &mut Builder, r: &RollDocs, from: &str) -> String {
    let p = roll_prefix(r.roll.roll_id);
    let anchor = format!("{p}-guard");
    let mut prev = from.to_string();
    let mut label = "roll guard, before any judge is called";
    for (i, c) in r.roll.roll_guard.checks.iter().enumerate() {
        let s = slug(c.id.as_str());
        let id = if s.is_empty() {
            format!("{p}-guard-{}", i + 1)
        } else {
            format!("{p}-guard-{s}")
        };
        b.node(NodeSpec {
            id: &id,
            kind: NodeKind::Check,
            owner: NodeOwner::Platform,
            status: if c.ok {
                NodeStatus::Pass
            } else {
                NodeStatus::Blocked
            },
            title: format!("Guard {}: {}", c.id, if c.ok { "ok" } else { "BLOCKED" }),
            detail: c.detail.clone(),
            anchor: &anchor,
        });
        b.edge(&prev, &id, label, EdgeTone::Continue, true);
        label = "next guard check";
        prev = id;
    }
    prev
}

/// Blinding, judge A, judge B and independence, chained from `from` (selected when `on`);
/// returns the independence node.
fn judge_nodes(b: &mut Builder, r: &RollDocs, from: &str, on: bool) -> String {
    let p = roll_prefix(r.roll.roll_id);
    let blinding = format!("{p}-blinding");
    let pkg = &r.package;
    b.node(NodeSpec {
        id: &blinding,
        kind: NodeKind::Check,
        owner: NodeOwner::Platform,
        status: st(on, NodeStatus::Pass),
        title: "Blinding: one package for both judges".into(),
        detail: format!(
            "JudgePackage/1 sha256 {}: {} obligations, {} actions, {} events, {} frames; no run, game or session id, seed, cost, model or previous outcome",
            r.roll.judge_package_hash,
            pkg.obligations.len(),
            pkg.actions.len(),
            pkg.events.len(),
            pkg.frames.len()
        ),
        anchor: &blinding,
    });
    b.edge(
        from,
        &blinding,
        "guard passed: blind the package",
        EdgeTone::Continue,
        on,
    );
    let mut prev = blinding;
    for slot in Slot::BOTH {
        let id = format!("{p}-judge-{}", slot.as_str());
        judge_node(b, r, slot, &id, on);
        let label = format!("package sent to judge {}", slot.upper());
        b.edge(&prev, &id, &label, EdgeTone::Continue, on);
        prev = id;
    }
    let id = format!("{p}-independence");
    let ic = &r.consensus.independence_checks;
    let failed = ic.failed();
    let list: Vec<String> = ic
        .required()
        .iter()
        .map(|(n, ok)| format!("{n} {}", if *ok { "ok" } else { "FALSE" }))
        .collect();
    b.node(NodeSpec {
        id: &id,
        kind: NodeKind::Check,
        owner: NodeOwner::Validator,
        status: st(
            on,
            if failed.is_empty() {
                NodeStatus::Pass
            } else {
                NodeStatus::Blocked
            },
        ),
        title: if failed.is_empty() {
            "Independence: 8 required checks hold".into()
        } else {
            format!("Independence: {} false", join(&failed, ", "))
        },
        detail: format!(
            "{}; sameModel {} (recorded only)",
            list.join(", "),
            ic.same_model
        ),
        anchor: &id,
    });
    b.edge(&prev, &id, "answers recorded", EdgeTone::Continue, on);
    id
}

fn judge_node(b: &mut Builder, r: &RollDocs, slot: Slot, id: &str, on: bool) {
    let s = r.slot(slot);
    let meta = s.final_meta();
    let model = meta
        .map(|m| {
            m.model_answered
                .clone()
                .unwrap_or(m.model_requested.clone())
        })
        .or(s.result.model.clone())
        .unwrap_or_else(|| "no model".into());
    let classes: Vec<&str> = s
        .metas
        .iter()
        .filter_map(|m| m.error_class.map(|c| c.as_str()))
        .collect();
    let count = |st: JudgeStatus| {
        s.result
            .obligations
            .iter()
            .filter(|o| o.status == st)
            .count()
    };
    let (status, summary) = match &s.result.slot_failed {
        Some(f) => (
            NodeStatus::Guard,
            format!("FAILED: {} after {} attempt(s)", f.error_class, f.attempts),
        ),
        None => (
            NodeStatus::Pass,
            format!(
                "{} satisfied, {} failed, {} missing",
                count(JudgeStatus::Satisfied),
                count(JudgeStatus::Failed),
                count(JudgeStatus::Missing)
            ),
        ),
    };
    let prompt = meta
        .map(|m| format!("{}@{}", m.prompt_artifact.id, m.prompt_artifact.version))
        .unwrap_or_else(|| "-".into());
    b.node(NodeSpec {
        id,
        kind: NodeKind::Action,
        owner: NodeOwner::Agent,
        status: st(on, status),
        title: format!("Judge {}: {summary}", slot.upper()),
        detail: format!(
            "model {model}, prompt {prompt}; {} attempt(s){}; result sha256 {}",
            s.result.attempts.len(),
            if classes.is_empty() {
                String::new()
            } else {
                format!(" (failures: {})", classes.join(", "))
            },
            r.roll.slot_ref(slot).result_hash
        ),
        anchor: id,
    });
}

/// One node per obligation's consensus, then the conflicts node; returns the conflicts node.
fn obligation_nodes(b: &mut Builder, r: &RollDocs, from: &str, on: bool) -> String {
    let p = roll_prefix(r.roll.roll_id);
    let mut prev = from.to_string();
    let mut label = "all required independence checks hold: consensus per obligation";
    for (i, o) in r.consensus.obligation_results.iter().enumerate() {
        let id = obligation_node_id(r.roll.roll_id, i, &o.id);
        let required = r.required(&o.id);
        let status = match o.status {
            ObligationStatus::Satisfied => NodeStatus::Pass,
            ObligationStatus::Failed if required => NodeStatus::Blocked,
            _ => NodeStatus::Guard,
        };
        b.node(NodeSpec {
            id: &id,
            kind: NodeKind::Check,
            owner: NodeOwner::Validator,
            status: st(on, status),
            title: format!("{}: {}", o.id, o.status.as_str()),
            detail: obligation_detail(r, &o.id, required),
            anchor: &id,
        });
        b.edge(&prev, &id, label, EdgeTone::Continue, on);
        label = "next obligation";
        prev = id;
    }
    let id = format!("{p}-conflicts");
    let c = &r.consensus.conflicts;
    b.node(NodeSpec {
        id: &id,
        kind: NodeKind::Check,
        owner: NodeOwner::Validator,
        status: st(
            on,
            if c.is_empty() {
                NodeStatus::Pass
            } else {
                NodeStatus::Guard
            },
        ),
        title: format!("Conflicts: {}", c.len()),
        detail: if c.is_empty() {
            "the judges and the checks agree on every obligation".into()
        } else {
            c.join("; ")
        },
        anchor: &id,
    });
    b.edge(
        &prev,
        &id,
        "every obligation resolved",
        EdgeTone::Continue,
        on,
    );
    id
}

/// `A=… B=…[ check=…]; required|optional; the check's detail`.
fn obligation_detail(r: &RollDocs, id: &str, required: bool) -> String {
    let judge = |s: Slot| {
        r.slot(s)
            .result
            .obligations
            .iter()
            .find(|o| o.id == id)
            .map(|o| o.status.as_str())
            .unwrap_or("missing")
    };
    let mut d = format!(
        "A={} B={}; {}",
        judge(Slot::A),
        judge(Slot::B),
        if required { "required" } else { "optional" }
    );
    if let Some(check) = r
        .package
        .obligations
        .iter()
        .find(|o| o.id == id)
        .and_then(|o| o.check.as_ref())
    {
        let e = assertions::evaluate(check, &r.package.events);
        d.push_str(&format!(
            "; PlaySpec check {} {}: {} ({})",
            check.path,
            check.op,
            if e.holds { "holds" } else { "does not hold" },
            e.detail
        ));
    }
    d
}

fn roll_outcome_node(b: &mut Builder, r: &RollDocs, id: &str) {
    let c = &r.consensus;
    let why = if r.roll.roll_guard.status == GuardStatus::Blocked {
        "the roll guard blocked it: infra_error".to_string()
    } else {
        let required: Vec<ObligationStatus> = c
            .obligation_results
            .iter()
            .filter(|o| r.required(&o.id))
            .map(|o| o.status)
            .collect();
        let rule = decision_rule(&DecisionFacts {
            independence_holds: c.independence_checks.all_required_hold(),
            floor_passed: c.floor_passed,
            both_failed: derive::both_judges_failed(&r.roll.errors),
            degraded: c.degraded,
            required: &required,
        });
        if rule.outcome() == c.decision {
            format!("{} (dual-strict/1)", rule.describe())
        } else {
            format!("decided {} (dual-strict/1)", c.decision)
        }
    };
    let errors: Vec<String> = r.roll.errors.iter().map(|e| e.to_string()).collect();
    b.node(NodeSpec {
        id,
        kind: NodeKind::Question,
        owner: NodeOwner::Validator,
        status: outcome_status(r.roll.roll_outcome),
        title: format!("{}: {}", r.roll.roll_id, r.roll.roll_outcome),
        detail: format!(
            "{why}; degraded {}; failure signature {}; errors [{}]; roll cost {} RMB; consensus sha256 {}",
            yes(c.degraded),
            c.failure_signature.as_deref().unwrap_or("none"),
            errors.join(", "),
            r.roll.cost_rmb,
            r.roll.judge_consensus_hash
        ),
        anchor: id,
    });
}

/// The edges out of a roll's outcome node other than the one selected toward the merge or
/// the next roll; returns the label of the edge from this roll toward what follows it.
fn roll_exit(b: &mut Builder, run: &RunDocs, r: &RollDocs) -> String {
    let p = roll_prefix(r.roll.roll_id);
    let outcome = format!("{p}-outcome");
    let id = r.roll.roll_id;
    match (
        id,
        merge::next_after(id, r.roll.roll_outcome),
        run.rolls.len(),
    ) {
        (RollId::R1, Next::Roll2, 2) => {
            b.edge(
                &outcome,
                "merge",
                "roll-1 decisive (pass or fail): finalize",
                EdgeTone::Success,
                false,
            );
            format!(
                "roll-1 {}: play roll-2 with a new seed",
                r.roll.roll_outcome
            )
        }
        (RollId::R1, Next::Roll2, _) => format!(
            "roll-1 {}, no roll-2 submitted: finalize from roll-1",
            r.roll.roll_outcome
        ),
        (RollId::R1, Next::Finalize, _) => {
            format!("roll-1 {} is decisive: finalize", r.roll.roll_outcome)
        }
        (RollId::R2, _, _) => "roll-2 is the last roll: merge".into(),
    }
}

/// Roll 2 when it was not played: a node off the path, reached by the branch not taken.
fn roll2_placeholder(b: &mut Builder, run: &RunDocs) {
    let Some(r1) = run.rolls.first() else { return };
    let wanted = merge::next_after(RollId::R1, r1.roll.roll_outcome) == Next::Roll2;
    b.node(NodeSpec {
        id: "r2-start",
        kind: NodeKind::Context,
        owner: NodeOwner::Platform,
        status: NodeStatus::Neutral,
        title: if wanted {
            "roll-2: not submitted".into()
        } else {
            "roll-2: not needed".into()
        },
        detail: if wanted {
            "roll-1 was indecisive, but the run was finalized before a roll-2 was submitted".into()
        } else {
            format!(
                "roll-1 was decisive ({}): first-decisive/1 finalizes",
                r1.roll.roll_outcome
            )
        },
        anchor: "r2",
    });
    b.edge(
        "r1-outcome",
        "r2-start",
        "roll-1 indecisive (inconclusive or infra_error): play roll-2",
        EdgeTone::Guard,
        false,
    );
}

/// The merge node and one node per postguard check; returns the last postguard node.
fn merge_and_postguard(b: &mut Builder, ev: &Evidence) -> String {
    let m = ev.merge.as_ref();
    b.node(NodeSpec {
        id: "merge",
        kind: NodeKind::Question,
        owner: NodeOwner::Platform,
        status: NodeStatus::Pass,
        title: format!(
            "Merge: source {}",
            ev.source_roll_id.map(|r| r.as_str()).unwrap_or("none")
        ),
        detail: m
            .map(|m| format!("{}: {}", m.strategy, m.reason))
            .unwrap_or_else(|| "no merge recorded".into()),
        anchor: "merge",
    });
    let mut prev = "merge".to_string();
    let mut label = "finalPostguard re-checks everything";
    let checks = ev
        .final_postguard
        .as_ref()
        .map(|p| p.checks.as_slice())
        .unwrap_or_default();
    for (i, c) in checks.iter().enumerate() {
        let s = slug(c.id.as_str());
        let id = if s.is_empty() {
            format!("pg-{}", i + 1)
        } else {
            format!("pg-{s}")
        };
        b.node(NodeSpec {
            id: &id,
            kind: NodeKind::Check,
            owner: NodeOwner::Validator,
            status: if c.ok {
                NodeStatus::Pass
            } else {
                NodeStatus::Blocked
            },
            title: format!("Postguard {}: {}", c.id, if c.ok { "ok" } else { "FAILED" }),
            detail: c.detail.clone(),
            anchor: "postguard",
        });
        b.edge(&prev, &id, label, EdgeTone::Continue, true);
        label = "next postguard check";
        prev = id;
    }
    prev
}

fn decision_nodes(b: &mut Builder, ev: &Evidence, from: &str) {
    let outcome = ev.outcome.unwrap_or(Outcome::InfraError);
    let passed = ev.final_postguard.as_ref().is_some_and(|p| p.passed);
    let d = ev.decision.as_ref();
    let action = d.map(|d| d.action.as_str()).unwrap_or("retry");
    let reasons = d.map(|d| join(&d.reasons, ", ")).unwrap_or_default();
    b.node(NodeSpec {
        id: "decision",
        kind: NodeKind::Question,
        owner: NodeOwner::Platform,
        status: outcome_status(outcome),
        title: format!("Decision: {action}"),
        detail: format!(
            "outcome {outcome} from {}; action {action}; reasons {reasons}; accepted {}; decided at {}",
            ev.source_roll_id.map(|r| r.as_str()).unwrap_or("no roll"),
            yes(ev.compatibility.as_ref().is_some_and(|c| c.accepted)),
            ev.final_postguard.as_ref().map(|p| p.decided_at.as_str()).unwrap_or("-"),
        ),
        anchor: "decision",
    });
    let label = if passed {
        "every postguard check holds: decide from the source roll"
    } else {
        "a postguard check failed: infra_error"
    };
    b.edge(from, "decision", label, EdgeTone::Continue, true);
    for o in [
        Outcome::Pass,
        Outcome::Fail,
        Outcome::Inconclusive,
        Outcome::InfraError,
    ] {
        let id = outcome_node_id(o);
        let chosen = o == outcome;
        let (when, tone) = match o {
            Outcome::Pass => (
                "two judges satisfy every required obligation",
                EdgeTone::Success,
            ),
            Outcome::Fail => ("a required obligation or the floor failed", EdgeTone::Guard),
            Outcome::Inconclusive => (
                "disputed, contradicted or missing; or one judge failed",
                EdgeTone::Guard,
            ),
            Outcome::InfraError => (
                "guard blocked, void roll, both judges or a postguard check failed",
                EdgeTone::Guard,
            ),
        };
        b.node(NodeSpec {
            id: &id,
            kind: NodeKind::Outcome,
            owner: NodeOwner::Platform,
            status: if chosen {
                outcome_status(o)
            } else {
                NodeStatus::Neutral
            },
            title: if chosen {
                format!("Outcome: {o} ({action})")
            } else {
                format!("Outcome: {o}")
            },
            detail: if chosen {
                format!("sealed: outcome {o}, action {action}, reasons {reasons}")
            } else {
                format!("not this run: {when}")
            },
            anchor: "outcome",
        });
        b.edge("decision", &id, when, tone, chosen);
    }
}

/// The node id (and page anchor) of review `index` of a run (`review-0`, as its store key
/// `reviews/0.dsse.json`).
pub fn review_node_id(index: u64) -> String {
    format!("review-{index}")
}

/// The status a review shows: `blocked` when it fails an obligation, `guard` when it calls one
/// missing, else `pass`.
pub fn review_status(p: &ReviewPredicate) -> NodeStatus {
    if p.decisions.iter().any(|d| d.status == ReviewStatus::Failed) {
        NodeStatus::Blocked
    } else if p
        .decisions
        .iter()
        .any(|d| d.status == ReviewStatus::Missing)
    {
        NodeStatus::Guard
    } else {
        NodeStatus::Pass
    }
}

/// Adds each trusted review (verified under the trusted reviewer keys and logged; the caller
/// passes no other) as an `owner: "human"` node after the sealed outcome, in review order.
///
/// The edges into them are not `selected`: the selected path stays the sealed decision's
/// (docs/DECISIONS.md, "A review is drawn beside the sealed path"). Every piece of the
/// reviewer's text (name, note) is data: the renderers escape it.
pub fn add_reviews(tree: &mut DecisionTree, reviews: &[TrustedReview]) {
    let mut b = Builder {
        nodes: std::mem::take(&mut tree.nodes),
        edges: std::mem::take(&mut tree.edges),
    };
    let mut prev = outcome_node_id(tree.observed.outcome);
    let mut label =
        "a person reviewed the sealed run (signed by their own key, logged; the seal is unchanged)";
    for r in reviews {
        let p = &r.predicate;
        let id = review_node_id(r.index);
        let count = |s: ReviewStatus| p.decisions.iter().filter(|d| d.status == s).count();
        let decisions: Vec<String> = p
            .decisions
            .iter()
            .map(|d| format!("{} {}", d.obligation_id, d.status.as_str()))
            .collect();
        let note = match p.note.as_deref() {
            Some(n) if !n.trim().is_empty() => {
                format!("; note: {}", crate::contracts::shorten(n, 400))
            }
            _ => String::new(),
        };
        b.node(NodeSpec {
            id: &id,
            kind: NodeKind::Check,
            owner: NodeOwner::Human,
            status: review_status(p),
            title: format!(
                "Review {} by {}: {} satisfied, {} failed, {} missing",
                r.index,
                crate::contracts::shorten(&p.reviewer, 60),
                count(ReviewStatus::Satisfied),
                count(ReviewStatus::Failed),
                count(ReviewStatus::Missing)
            ),
            detail: format!(
                "reviewer {} (key {}) at {}: {}{note}; review sha256 {}; shown tree sha256 {}",
                crate::contracts::shorten(&p.reviewer, 200),
                r.key_id.get(..16).unwrap_or(&r.key_id),
                p.reviewed_at,
                decisions.join(", "),
                r.sha256,
                p.shown_sha256
            ),
            anchor: &id,
        });
        b.edge(&prev, &id, label, EdgeTone::Continue, false);
        label = "reviewed again";
        prev = id;
    }
    tree.nodes = b.nodes;
    tree.edges = b.edges;
}
