//! Rolls and merge, strategy `first-decisive/1` (DESIGN §5). Pure.
//!
//! At most two rolls. Roll 1 `pass`/`fail` is final; an indecisive roll 1 asks for roll 2.
//! The source roll is the first decisive roll, else the last roll.

use crate::doc::{Merge, Outcome, Roll, RollOutcome};
use crate::invariants::source_roll_index;

pub const STRATEGY: &str = "first-decisive/1";

/// The merge record of a run's rolls.
pub fn merge(rolls: &[Roll]) -> Merge {
    let outcomes: Vec<Outcome> = rolls.iter().map(|r| r.roll_outcome).collect();
    let idx = source_roll_index(&outcomes);
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

pub fn next_after(roll_number: u64, outcome: Outcome) -> Next {
    if roll_number == 1 && !outcome.is_decisive() {
        Next::Roll2
    } else {
        Next::Finalize
    }
}
