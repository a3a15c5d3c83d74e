//! `seal.decision-tree/1`: the evidence-bound decision tree of a sealed run (`seal explain`).
//!
//! The shape follows the upstream `solver-report-decision-tree.schema.json` (nodes with kind,
//! owner, status and an in-page `evidenceRef` anchor; edges with a tone and exactly one
//! selected path); `observed` and `evidenceBindings` are this product's: the sealed decision,
//! and the sha256 of every stored object the tree was derived from.

use serde::{Deserialize, Serialize};

use super::common::Outcome;
use super::evidence::{AcceptanceMode, DecisionAction, EvidenceMode, RollOutcome};
use crate::canonical::Hash;
use crate::ids::RollId;

pub const DECISION_TREE: &str = "seal.decision-tree/1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    Context,
    Question,
    Action,
    Check,
    Outcome,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeOwner {
    Human,
    Agent,
    Shared,
    Validator,
    Platform,
}

/// What the run showed at a node: it held (`pass`), it raised a concern that kept the run from
/// passing (`guard`), it stopped delivery (`blocked`), or it was not reached (`neutral`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeStatus {
    Pass,
    Guard,
    Blocked,
    Neutral,
}

impl NodeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeStatus::Pass => "pass",
            NodeStatus::Guard => "guard",
            NodeStatus::Blocked => "blocked",
            NodeStatus::Neutral => "neutral",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TreeNode {
    pub id: String,
    pub kind: NodeKind,
    pub owner: NodeOwner,
    pub title: String,
    pub detail: String,
    pub status: NodeStatus,
    pub evidence_ref: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EdgeTone {
    Continue,
    Guard,
    Success,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TreeEdge {
    pub from: String,
    pub to: String,
    pub label: String,
    pub tone: EdgeTone,
    pub selected: bool,
}

/// The sealed decision the tree explains.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Observed {
    pub outcome: Outcome,
    pub decision_action: DecisionAction,
    pub reasons: Vec<String>,
    pub source_roll_id: Option<RollId>,
    pub roll_outcomes: Vec<RollOutcome>,
    pub accepted: bool,
    pub postguard_passed: bool,
    pub acceptance_mode: AcceptanceMode,
    pub evidence_mode: EvidenceMode,
}

/// The sha256 of the stored objects of one roll the tree was derived from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RollBinding {
    pub roll_id: RollId,
    pub proof_package_sha256: Hash,
    pub judge_package_sha256: Hash,
    pub judge_a_result_sha256: Hash,
    pub judge_b_result_sha256: Hash,
    pub consensus_sha256: Hash,
}

/// Immutable bindings: a tree of another run, or of a stale store, does not match them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EvidenceBindings {
    pub run_id: String,
    pub evidence_sha256: Hash,
    pub seal_sha256: Hash,
    pub seal_key_id: String,
    pub judging_snapshot_sha256: Hash,
    pub rolls: Vec<RollBinding>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DecisionTree {
    pub schema_version: String,
    pub root_node_id: String,
    pub nodes: Vec<TreeNode>,
    pub edges: Vec<TreeEdge>,
    pub observed: Observed,
    pub evidence_bindings: EvidenceBindings,
}

/// The node id of the outcome node for `outcome` (`outcome-infra-error`).
pub fn outcome_node_id(outcome: Outcome) -> String {
    format!("outcome-{}", outcome.as_str().replace('_', "-"))
}

impl DecisionTree {
    pub fn node(&self, id: &str) -> Option<&TreeNode> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The selected path: from the root, following the one selected edge out of each node,
    /// to a node without one. Errors unless every selected edge lies on that path, no node
    /// has two selected edges out, every edge joins known nodes, and the path ends at the one
    /// outcome node it contains.
    pub fn selected_path(&self) -> Result<Vec<&TreeNode>, String> {
        let mut ids = std::collections::BTreeSet::new();
        for n in &self.nodes {
            if !ids.insert(n.id.as_str()) {
                return Err(format!("node id {:?} appears twice", n.id));
            }
        }
        for e in &self.edges {
            for end in [&e.from, &e.to] {
                if !ids.contains(end.as_str()) {
                    return Err(format!("edge {} -> {}: no node {end:?}", e.from, e.to));
                }
            }
        }
        let mut here = self
            .node(&self.root_node_id)
            .ok_or_else(|| format!("no root node {:?}", self.root_node_id))?;
        let mut path = vec![here];
        loop {
            let out: Vec<&TreeEdge> = self
                .edges
                .iter()
                .filter(|e| e.selected && e.from == here.id)
                .collect();
            match out.as_slice() {
                [] => break,
                [e] => {
                    here = self.node(&e.to).ok_or("edge to no node")?;
                    if path.iter().any(|n| n.id == here.id) {
                        return Err(format!("the selected path returns to {:?}", here.id));
                    }
                    path.push(here);
                }
                _ => return Err(format!("{:?} has several selected edges out", here.id)),
            }
        }
        let on_path = self.edges.iter().filter(|e| e.selected).count();
        if on_path != path.len() - 1 {
            return Err("a selected edge lies off the path from the root".into());
        }
        let outcomes = path.iter().filter(|n| n.kind == NodeKind::Outcome).count();
        if outcomes != 1 || path.last().map(|n| n.kind) != Some(NodeKind::Outcome) {
            return Err(format!(
                "the selected path must end at its one outcome node ({outcomes} on it)"
            ));
        }
        Ok(path)
    }
}
