//! Rolls and merge, strategy `first-decisive/1` (docs/DESIGN.md §5). Pure.
//!
//! At most two rolls. Roll 1 `pass`/`fail` is final; an indecisive roll 1 asks for roll 2.
//! The source roll is the first decisive roll, else the last roll.

use crate::doc::{Merge, Outcome, Roll, RollOutcome};

pub const STRATEGY: &str = "first-decisive/1";

/// `first-decisive/1` over roll outcomes: the first decisive roll, else the last roll.
pub fn source_index(outcomes: &[Outcome]) -> Option<usize> {
    outcomes
        .iter()
        .position(|o| o.is_decisive())
        .or_else(|| outcomes.len().checked_sub(1))
}

/// The source roll of a run's rolls (index into `rolls`).
pub fn source_roll_index(rolls: &[Roll]) -> Option<usize> {
    let outcomes: Vec<Outcome> = rolls.iter().map(|r| r.roll_outcome).collect();
    source_index(&outcomes)
}

/// Whether roll `next` may follow the judged rolls `before` (in order): roll 1 first, roll 2
/// only after an indecisive roll 1, never a third. The one home of the roll-order rule.
pub fn may_follow(before: &[Outcome], next: crate::ids::RollId) -> bool {
    match next {
        crate::ids::RollId::R1 => before.is_empty(),
        crate::ids::RollId::R2 => before.len() == 1 && !before[0].is_decisive(),
    }
}

/// The merge record of a run's rolls.
pub fn merge(rolls: &[Roll]) -> Merge {
    let outcomes: Vec<Outcome> = rolls.iter().map(|r| r.roll_outcome).collect();
    let idx = source_index(&outcomes);
    let source = idx.map(|i| rolls[i].roll_id);
    let reason = match idx {
        None => "no roll was judged".to_string(),
        Some(i) if outcomes[i].is_decisive() => {
            format!(
                "{} is the first decisive roll ({})",
                rolls[i].roll_id, outcomes[i]
            )
        }
        Some(i) => format!(
            "no decisive roll: the last roll {} ({}) stands",
            rolls[i].roll_id, outcomes[i]
        ),
    };
    Merge {
        strategy: STRATEGY.into(),
        roll_outcomes: rolls
            .iter()
            .map(|r| RollOutcome {
                roll_id: r.roll_id,
                outcome: r.roll_outcome,
            })
            .collect(),
        source_roll_id: source,
        reason,
    }
}

/// What the pipeline should do after a roll.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Next {
    /// Play the game again with a new seed and submit roll 2.
    #[serde(rename = "roll-2")]
    Roll2,
    /// Finalize the run.
    Finalize,
}

pub fn next_after(roll: crate::ids::RollId, outcome: Outcome) -> Next {
    if roll == crate::ids::RollId::R1 && may_follow(&[outcome], crate::ids::RollId::R2) {
        Next::Roll2
    } else {
        Next::Finalize
    }
}
