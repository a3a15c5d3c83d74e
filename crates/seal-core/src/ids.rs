//! Identifiers that come from outside: run ids, roll ids, judge slots.
//!
//! Each is a checked type: once you hold a [`RunId`] it is safe to put in an object key, a log
//! line or a URL. The rule is docs/DESIGN.md §2: `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$` and never `..`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Longest id segment accepted (docs/DESIGN.md §2).
pub const MAX_SEGMENT_LEN: usize = 128;

/// Why a string is not a valid id or key segment.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{what} {shown:?} is invalid: {reason}")]
pub struct IdError {
    pub what: &'static str,
    pub shown: String,
    pub reason: &'static str,
}

/// Checks one path segment or id against docs/DESIGN.md §2. Pure, no allocation on success.
pub fn check_segment(what: &'static str, s: &str) -> Result<(), IdError> {
    let fail = |reason| {
        Err(IdError {
            what,
            shown: s.chars().take(80).collect(),
            reason,
        })
    };
    if s.is_empty() {
        return fail("empty");
    }
    if s.len() > MAX_SEGMENT_LEN {
        return fail("longer than 128 characters");
    }
    if s.contains("..") {
        return fail("contains '..'");
    }
    let mut bytes = s.bytes();
    match bytes.next() {
        Some(b) if b.is_ascii_alphanumeric() => {}
        _ => return fail("must start with a letter or digit"),
    }
    if bytes.any(|b| !(b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')) {
        return fail("only letters, digits, '.', '_' and '-' are allowed");
    }
    Ok(())
}

/// A run id, valid per docs/DESIGN.md §2.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RunId(String);

impl RunId {
    pub fn parse(s: &str) -> Result<RunId, IdError> {
        check_segment("run id", s)?;
        Ok(RunId(s.to_owned()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// Whether this id has the form `<id>.replay-<n>` that `seal replay` reserves.
    pub fn is_replay_id(&self) -> bool {
        self.0.rsplit_once(".replay-").is_some_and(|(base, n)| {
            !base.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
        })
    }
    /// The `n`-th replay id of this run.
    pub fn replay(&self, n: u32) -> Result<RunId, IdError> {
        RunId::parse(&format!("{}.replay-{n}", self.0))
    }
}

impl TryFrom<String> for RunId {
    type Error = IdError;
    fn try_from(s: String) -> Result<Self, IdError> {
        check_segment("run id", &s)?;
        Ok(RunId(s))
    }
}
impl From<RunId> for String {
    fn from(r: RunId) -> String {
        r.0
    }
}
impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl fmt::Debug for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

/// One of the (at most two) rolls of a run.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum RollId {
    R1,
    R2,
}

impl RollId {
    pub const ALL: [RollId; 2] = [RollId::R1, RollId::R2];

    /// From the roll number (1 or 2).
    pub fn from_number(n: u64) -> Result<RollId, IdError> {
        match n {
            1 => Ok(RollId::R1),
            2 => Ok(RollId::R2),
            _ => Err(IdError {
                what: "roll number",
                shown: n.to_string(),
                reason: "a run has at most two rolls: 1 or 2",
            }),
        }
    }
    pub fn parse(s: &str) -> Result<RollId, IdError> {
        match s {
            "roll-1" => Ok(RollId::R1),
            "roll-2" => Ok(RollId::R2),
            _ => Err(IdError {
                what: "roll id",
                shown: s.chars().take(80).collect(),
                reason: "must be roll-1 or roll-2",
            }),
        }
    }
    pub fn number(self) -> u64 {
        match self {
            RollId::R1 => 1,
            RollId::R2 => 2,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            RollId::R1 => "roll-1",
            RollId::R2 => "roll-2",
        }
    }
}

impl TryFrom<String> for RollId {
    type Error = IdError;
    fn try_from(s: String) -> Result<Self, IdError> {
        RollId::parse(&s)
    }
}
impl From<RollId> for String {
    fn from(r: RollId) -> String {
        r.as_str().to_owned()
    }
}
impl fmt::Display for RollId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A judge slot. Two, always: a decision never rests on one judge.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Slot {
    A,
    B,
}

impl Slot {
    pub const BOTH: [Slot; 2] = [Slot::A, Slot::B];
    pub fn as_str(self) -> &'static str {
        match self {
            Slot::A => "a",
            Slot::B => "b",
        }
    }
    pub fn upper(self) -> &'static str {
        match self {
            Slot::A => "A",
            Slot::B => "B",
        }
    }
    pub fn other(self) -> Slot {
        match self {
            Slot::A => Slot::B,
            Slot::B => Slot::A,
        }
    }
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_run_ids_are_refused() {
        for bad in [
            "",
            "..",
            "a/../b",
            "/etc",
            "a/b",
            "a\0b",
            ".hidden",
            "-x",
            "a b",
            "ü",
            "a..b",
            &"x".repeat(129),
        ] {
            assert!(RunId::parse(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["run-1", "R.2_x", &"x".repeat(128)] {
            assert!(RunId::parse(good).is_ok(), "{good:?} refused");
        }
    }

    #[test]
    fn roll_ids() {
        assert_eq!(RollId::parse("roll-2").unwrap().number(), 2);
        assert!(RollId::parse("roll-3").is_err());
        assert!(RollId::from_number(0).is_err());
    }
}
