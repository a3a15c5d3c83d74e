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
use crate::vocab::Reason;

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
    pub evidence_ref: Anchor,
}

/// An in-page anchor (`#roll-1-consensus`): where a node's evidence is shown on the explain
/// page. Not a store key. Invariant: `#` then one or more of `a-z`, `0-9`, `-` (the schema's
/// `^#[a-z0-9-]+$`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Anchor(String);

/// Why a string is not an [`Anchor`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an in-page anchor (#, then a-z, 0-9 or -)")]
pub struct BadAnchor(String);

impl Anchor {
    pub fn parse(s: &str) -> Result<Anchor, BadAnchor> {
        let ok = s.strip_prefix('#').is_some_and(|id| {
            !id.is_empty()
                && id
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        });
        if ok {
            Ok(Anchor(s.to_owned()))
        } else {
            Err(BadAnchor(s.chars().take(80).collect()))
        }
    }
    /// The anchor of the element `id`, made of `a-z`, `0-9` and `-` by replacing any other
    /// byte by `-` (the explain tree's ids are slugs already, so they are kept as they are).
    pub fn of(id: &str) -> Anchor {
        let mut s = String::with_capacity(id.len() + 1);
        s.push('#');
        s.extend(id.chars().map(|c| match c {
            'a'..='z' | '0'..='9' | '-' => c,
            _ => '-',
        }));
        if s.len() == 1 {
            s.push('-');
        }
        Anchor(s)
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// The element id the anchor points at (without `#`).
    pub fn id(&self) -> &str {
        &self.0[1..]
    }
}

impl std::fmt::Display for Anchor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Anchor {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Anchor {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Anchor, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Anchor::parse(&s).map_err(serde::de::Error::custom)
    }
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
    pub reasons: Vec<Reason>,
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
    pub fn selected_path(&self) -> Result<Vec<&TreeNode>, TreeError> {
        let mut ids = std::collections::BTreeSet::new();
        for n in &self.nodes {
            if !ids.insert(n.id.as_str()) {
                return Err(TreeError::DuplicateNode { id: n.id.clone() });
            }
        }
        for e in &self.edges {
            for end in [&e.from, &e.to] {
                if !ids.contains(end.as_str()) {
                    return Err(TreeError::UnknownEnd {
                        from: e.from.clone(),
                        to: e.to.clone(),
                        end: end.clone(),
                    });
                }
            }
        }
        let mut here = self
            .node(&self.root_node_id)
            .ok_or_else(|| TreeError::NoRoot {
                id: self.root_node_id.clone(),
            })?;
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
                    // Every edge's ends were found above.
                    here = self.node(&e.to).ok_or_else(|| TreeError::UnknownEnd {
                        from: e.from.clone(),
                        to: e.to.clone(),
                        end: e.to.clone(),
                    })?;
                    if path.iter().any(|n| n.id == here.id) {
                        return Err(TreeError::Returns {
                            id: here.id.clone(),
                        });
                    }
                    path.push(here);
                }
                _ => {
                    return Err(TreeError::Branches {
                        id: here.id.clone(),
                    })
                }
            }
        }
        let on_path = self.edges.iter().filter(|e| e.selected).count();
        if on_path != path.len() - 1 {
            return Err(TreeError::OffPath);
        }
        let outcomes = path.iter().filter(|n| n.kind == NodeKind::Outcome).count();
        if outcomes != 1 || path.last().map(|n| n.kind) != Some(NodeKind::Outcome) {
            return Err(TreeError::NoOutcomeEnd { outcomes });
        }
        Ok(path)
    }
}

/// Why a decision tree has no one selected path (the texts are `seal validate`'s findings).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    #[error("node id {id:?} appears twice")]
    DuplicateNode { id: String },
    #[error("edge {from} -> {to}: no node {end:?}")]
    UnknownEnd {
        from: String,
        to: String,
        end: String,
    },
    #[error("no root node {id:?}")]
    NoRoot { id: String },
    #[error("the selected path returns to {id:?}")]
    Returns { id: String },
    #[error("{id:?} has several selected edges out")]
    Branches { id: String },
    #[error("a selected edge lies off the path from the root")]
    OffPath,
    #[error("the selected path must end at its one outcome node ({outcomes} on it)")]
    NoOutcomeEnd { outcomes: usize },
}
