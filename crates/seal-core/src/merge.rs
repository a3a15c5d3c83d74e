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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::RollId;
    use Outcome::{Fail, Inconclusive, InfraError, Pass};

    #[test]
    fn the_source_is_the_first_decisive_roll_else_the_last() {
        assert_eq!(source_index(&[]), None);
        assert_eq!(source_index(&[Pass]), Some(0));
        assert_eq!(source_index(&[Inconclusive]), Some(0));
        assert_eq!(source_index(&[Inconclusive, Fail]), Some(1));
        assert_eq!(source_index(&[InfraError, Inconclusive]), Some(1));
        assert_eq!(source_index(&[Fail, Pass]), Some(0));
        assert_eq!(source_index(&[Inconclusive, Pass, InfraError]), Some(1));
        assert_eq!(
            source_index(&[Inconclusive, InfraError, Inconclusive]),
            Some(2)
        );
    }

    #[test]
    fn roll_2_follows_only_an_indecisive_roll_1_and_there_is_no_third_roll() {
        assert!(may_follow(&[], RollId::R1));
        assert!(!may_follow(&[Inconclusive], RollId::R1));
        assert!(!may_follow(&[], RollId::R2));
        assert!(may_follow(&[Inconclusive], RollId::R2));
        assert!(may_follow(&[InfraError], RollId::R2));
        assert!(!may_follow(&[Pass], RollId::R2));
        assert!(!may_follow(&[Fail], RollId::R2));
        assert!(!may_follow(&[Inconclusive, Inconclusive], RollId::R2));
        assert!(!may_follow(&[Inconclusive, InfraError], RollId::R2));
    }

    #[test]
    fn an_indecisive_roll_1_asks_for_roll_2_and_everything_else_finalizes() {
        assert_eq!(next_after(RollId::R1, Inconclusive), Next::Roll2);
        assert_eq!(next_after(RollId::R1, InfraError), Next::Roll2);
        assert_eq!(next_after(RollId::R1, Pass), Next::Finalize);
        assert_eq!(next_after(RollId::R1, Fail), Next::Finalize);
        for o in [Pass, Fail, Inconclusive, InfraError] {
            assert_eq!(next_after(RollId::R2, o), Next::Finalize, "{o:?}");
        }
    }

    #[test]
    fn a_run_without_a_judged_roll_has_no_source() {
        let m = merge(&[]);
        assert_eq!(m.strategy, STRATEGY);
        assert_eq!(m.source_roll_id, None);
        assert!(m.roll_outcomes.is_empty());
        assert_eq!(m.reason, "no roll was judged");
    }
}
