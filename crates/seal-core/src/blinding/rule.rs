//! The blinding rule (docs/DESIGN.md §3.3): what must never reach a judge, how each kind is
//! recognised, and the one predicate over package bytes ([`leaks`], [`guard_check`]) that the
//! package builder applies before any reservation or call, and that the postguard and
//! `seal verify` apply to the stored package. The scrub of [`super::judge_package`] uses the
//! same matchers, so what it removes is what the predicate looks for.
//!
//! - **Identity values** (run, game, parent and repaired-from run ids, template route, actor
//!   session ids, model and prompt id, an adapted Verdict's `_designId`/`_taskId`/`_traceId`/
//!   `_versionId`) count only when *distinctive* ([`is_distinctive`]): at least 8 characters,
//!   at least one ASCII letter, at least 5 distinct characters. A purely numeric, short or
//!   low-entropy value (`4800`, `7001`, `v1`, `aaaaaaaa`) is indistinguishable from a game's
//!   score, coordinate, timestamp or word, so it is neither searched for nor scrubbed in the
//!   observations; the package carries no identity field for it to sit in (allow-list).
//!   A distinctive value matches only as a whole token: no ASCII letter or digit right before
//!   or after it (`run-7` is not inside `run-77`; `game-x` is inside `game-x-v2`).
//! - **Seeds** ≥ 65536 match as whole numbers (no digit or `.` beside them), in text and as
//!   JSON numbers; smaller seeds are left alone (scores).
//! - **The actor's cost**, when fractional and at least 4 characters, as a whole number.
//! - **The actor's own words** (`request.raw`, ≥ 8 characters) anywhere in the package. They
//!   are not scrubbed (the game's own text is an observation): a game that echoes them makes
//!   the guard block the roll.

use std::collections::BTreeSet;

use crate::doc::*;
use crate::vocab::GuardCheck;

pub const REDACTED: &str = "[redacted]";

/// Extension fields of an adapted legacy Verdict that identify the design: identity values.
pub const LEGACY_ID_FIELDS: [&str; 4] = ["_designId", "_taskId", "_traceId", "_versionId"];
/// Seeds below this are too likely to collide with ordinary game numbers to be forbidden.
const MIN_SCRUBBED_SEED: u64 = 65_536;
/// An identity value shorter than this (in characters) is never searched for.
pub const MIN_IDENTITY_CHARS: usize = 8;
/// An identity value with fewer distinct characters than this is low-entropy.
pub const MIN_IDENTITY_DISTINCT: usize = 5;
/// Actor text shorter than this (in JSON-escaped bytes) is not searched for.
const MIN_ACTOR_TEXT: usize = 8;
/// How often the scrub re-applies a value's replacement to text it already changed (a
/// replacement can make a neighbouring occurrence stand alone); the predicate has the last word.
const SCRUB_PASSES: usize = 4;

/// Whether an identity value is recognisable as identity in a game's observations (see the
/// module doc): only these are searched for and scrubbed.
pub fn is_distinctive(value: &str) -> bool {
    let distinct: BTreeSet<char> = value.chars().collect();
    value.chars().count() >= MIN_IDENTITY_CHARS
        && value.chars().any(|c| c.is_ascii_alphabetic())
        && distinct.len() >= MIN_IDENTITY_DISTINCT
}

/// What must never reach a judge, gathered from the header and the proof package.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    /// Distinctive identity values, sorted and unique.
    pub strings: Vec<String>,
    pub seeds: Vec<u64>,
    /// Costs as numbers (the actor's cost of the roll).
    pub costs: Vec<f64>,
}

impl Secrets {
    pub fn of(header: &Evidence, proof: &ProofPackage) -> Secrets {
        let mut strings = vec![
            header.run_id.clone(),
            header.game_id.clone(),
            header.template_route.clone(),
            proof.actor_session_id.clone(),
        ];
        strings.extend(header.parent_run_id.clone());
        strings.extend(header.repair.from_run_id.clone());
        // An adapted legacy Verdict's identities ride along as extension fields.
        for field in LEGACY_ID_FIELDS {
            match header.extensions.0.get(field) {
                Some(serde_json::Value::String(s)) => strings.push(s.clone()),
                Some(serde_json::Value::Number(n)) => strings.push(n.to_string()),
                _ => {}
            }
        }
        if let Some(actor) = &header.actor {
            strings.extend([
                actor.session_id.clone(),
                actor.model.clone(),
                actor.prompt_id.clone(),
            ]);
        }
        strings.retain(|s| is_distinctive(s));
        strings.sort();
        strings.dedup();
        let mut seeds = vec![
            proof.requested_game_seed,
            proof.actual_game_seed,
            proof.policy_seed,
        ];
        seeds.retain(|s| *s >= MIN_SCRUBBED_SEED);
        // A cost is only recognisable when it is not a small round number.
        let costs = [proof.actor_cost_rmb]
            .into_iter()
            .filter(|c| {
                c.fract() != 0.0
                    && serde_json::Number::from_f64(*c).is_some_and(|n| n.to_string().len() >= 4)
            })
            .collect();
        Secrets {
            strings,
            seeds,
            costs,
        }
    }

    /// Seeds and costs as they are written in JSON and in text.
    pub(super) fn numerals(&self) -> Vec<String> {
        let mut out: Vec<String> = self.seeds.iter().map(|s| s.to_string()).collect();
        out.extend(
            self.costs
                .iter()
                .filter_map(|c| serde_json::Number::from_f64(*c).map(|n| n.to_string())),
        );
        out
    }

    pub(super) fn is_secret_number(&self, n: &serde_json::Number) -> bool {
        let Some(f) = n.as_f64() else { return false };
        self.seeds.iter().any(|s| f.abs() == *s as f64) || self.costs.contains(&f.abs())
    }

    /// `s` with every forbidden value the scrub handles replaced by [`REDACTED`].
    pub(super) fn scrub_str(&self, s: &str) -> String {
        let mut out = s.to_string();
        for secret in &self.strings {
            for _ in 0..SCRUB_PASSES {
                if find_token(&out, secret, 0).is_none() {
                    break;
                }
                out = replace_tokens(&out, secret);
            }
        }
        for numeral in self.numerals() {
            if out.contains(&numeral) {
                out = replace_numeral(&out, &numeral);
            }
        }
        out
    }
}

/// Where `needle` first stands in `text` at or after byte `from` as a whole token: no ASCII
/// letter or digit right before or after it. Overlapping occurrences are all considered.
pub(super) fn find_token(text: &str, needle: &str, from: usize) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    let b = text.as_bytes();
    let word = |i: Option<usize>| {
        i.and_then(|i| b.get(i))
            .is_some_and(u8::is_ascii_alphanumeric)
    };
    let mut start = from;
    while let Some(off) = text.get(start..)?.find(needle) {
        let i = start + off;
        if !word(i.checked_sub(1)) && !word(Some(i + needle.len())) {
            return Some(i);
        }
        start = i + text[i..].chars().next().map_or(1, char::len_utf8);
    }
    None
}

/// `text` with every whole-token occurrence of `needle` replaced by [`REDACTED`].
fn replace_tokens(text: &str, needle: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    while let Some(i) = find_token(text, needle, last) {
        out.push_str(&text[last..i]);
        out.push_str(REDACTED);
        last = i + needle.len();
    }
    out.push_str(&text[last..]);
    out
}

/// Replaces `needle` in `text` where it stands as a whole number (not inside a longer one).
pub(super) fn replace_numeral(text: &str, needle: &str) -> String {
    let bytes = text.as_bytes();
    let digitish = |i: Option<usize>| {
        i.and_then(|i| bytes.get(i))
            .is_some_and(|c| c.is_ascii_digit() || *c == b'.')
    };
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (i, m) in text.match_indices(needle) {
        if digitish(i.checked_sub(1)) || digitish(Some(i + m.len())) {
            continue;
        }
        out.push_str(&text[last..i]);
        out.push_str(REDACTED);
        last = i + m.len();
    }
    out.push_str(&text[last..]);
    out
}

/// `s` as it appears inside a JSON string (without the quotes).
fn json_inner(s: &str) -> String {
    let escaped = serde_json::to_string(s).unwrap_or_default();
    escaped
        .strip_prefix('"')
        .and_then(|e| e.strip_suffix('"'))
        .unwrap_or_default()
        .to_string()
}

/// The blinding predicate: every forbidden value found in package bytes (empty when blinded),
/// each named by its kind. The package builder blocks a roll whose package fails it
/// ([`guard_check`]); the postguard and `seal verify` run it on the stored bytes. Field names
/// need no search: the package schema allows no field beyond the allow-list.
pub fn leaks(package_bytes: &[u8], header: &Evidence, proof: &ProofPackage) -> Vec<String> {
    let text = String::from_utf8_lossy(package_bytes);
    let mut found = Vec::new();
    let secrets = Secrets::of(header, proof);
    for s in &secrets.strings {
        // The JSON-escaped form: that is how a string appears in JSON bytes.
        if find_token(&text, &json_inner(s), 0).is_some() {
            found.push(format!("identity string {s:?}"));
        }
    }
    for seed in &secrets.seeds {
        let numeral = seed.to_string();
        if replace_numeral(&text, &numeral) != text {
            found.push(format!("seed {numeral}"));
        }
    }
    for cost in &secrets.costs {
        if let Some(n) = serde_json::Number::from_f64(*cost) {
            let numeral = n.to_string();
            if replace_numeral(&text, &numeral) != text {
                found.push(format!("cost {numeral}"));
            }
        }
    }
    for a in &proof.actions {
        let inner = json_inner(&a.request.raw);
        if inner.len() >= MIN_ACTOR_TEXT && text.contains(&inner) {
            found.push(format!("actor text of {}", a.action_id));
        }
    }
    found
}

/// The roll guard's `blinding` check of a built package: `None` when it passes the predicate
/// (nothing is recorded: the audit re-derives it from the package the roll binds), else the
/// failed check that blocks the roll before any reservation or call, naming what was found.
pub fn guard_check(
    package_bytes: &[u8],
    header: &Evidence,
    proof: &ProofPackage,
) -> Option<Check<GuardCheck>> {
    let found = leaks(package_bytes, header, proof);
    (!found.is_empty()).then(|| {
        Check::new(
            GuardCheck::Blinding,
            false,
            format!(
                "forbidden values in the judge package, not sent: {}",
                found.join(", ")
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    //! One test per kind of real leak (design id, run id, trace id, seed, actor self-talk) and
    //! per kind of number that is not one (a score, a coordinate, a timestamp equal to a
    //! numeric task id), through the builder and the predicate both.
    use super::*;
    use crate::canonical::{canonical_bytes, Hash};
    use serde_json::json;

    fn inputs(run: &str) -> (Evidence, ProofPackage) {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../sealed-fixtures/inputs")
            .join(run);
        let read = |p: &str| std::fs::read(dir.join(p)).unwrap();
        (
            serde_json::from_slice(&read("header.json")).unwrap(),
            serde_json::from_slice(&read("roll-2/proof-package.json")).unwrap(),
        )
    }

    /// The heritage example's roll 2, adapted from a legacy Verdict: design, task, trace ids.
    fn shadow(task_id: serde_json::Value) -> (Evidence, ProofPackage) {
        let (mut header, proof) = inputs("run-heritage-0017-disputed-font");
        let x = &mut header.extensions.0;
        x.insert(
            "_designId".into(),
            json!("3f9a1c0e7b2d48a6915e0c7d2b4f6a8e"),
        );
        x.insert("_taskId".into(), task_id);
        x.insert("_traceId".into(), json!("8c1f4e2a-6b3d-4f7e-9a15"));
        (header, proof)
    }

    /// The package built and its verdict under the predicate.
    fn build(header: &Evidence, proof: &ProofPackage) -> (String, Option<Check<GuardCheck>>) {
        let pkg = super::super::judge_package(header, "A brief.", proof, &Hash::of(b"m"));
        let bytes = canonical_bytes(&pkg).unwrap();
        let check = guard_check(&bytes, header, proof);
        (String::from_utf8(bytes).unwrap(), check)
    }

    fn say(proof: &mut ProofPackage, text: &str) {
        proof.events[4]
            .data
            .insert("message".into(), json!(format!("{text}!")));
    }

    #[test]
    fn a_numeric_task_id_is_not_a_score_a_coordinate_or_a_timestamp() {
        for task in [json!("4800"), json!(4800), json!("4200"), json!("1200")] {
            let (header, mut proof) = shadow(task.clone());
            proof.events[5].data.insert("score".into(), json!(4800));
            proof.events[6]
                .data
                .insert("text".into(), json!("Score 4800 at 1200,4200"));
            let (text, check) = build(&header, &proof);
            assert_eq!(check, None, "{task}: {text}");
            assert!(text.contains("\"score\":4800") && text.contains("\"tMs\":4200"));
            assert!(text.contains("Score 4800 at 1200,4200"), "{text}");
        }
    }

    #[test]
    fn a_design_id_a_run_id_and_a_trace_id_are_scrubbed_as_tokens() {
        let (header, _) = shadow(json!("4800"));
        for id in [
            "3f9a1c0e7b2d48a6915e0c7d2b4f6a8e",
            "run-heritage-0017-disputed-font",
            "8c1f4e2a-6b3d-4f7e-9a15",
            "game-72936914ac9c",
        ] {
            let (_, mut proof) = shadow(json!("4800"));
            say(&mut proof, &format!("built by {id}"));
            proof.events[6].data.insert(id.into(), json!(1));
            let (text, check) = build(&header, &proof);
            assert_eq!(check, None, "{id}");
            assert!(!text.contains(id), "{id} reached the package: {text}");
            assert!(text.contains("built by [redacted]!"), "{text}");
            // Planted into the bytes, the predicate names it.
            let planted = text.replacen("A brief.", &format!("A brief by {id}."), 1);
            let found = leaks(planted.as_bytes(), &header, &proof);
            assert_eq!(found, [format!("identity string {id:?}")], "{id}");
            // Inside a longer token it is another value, left alone.
            let (_, mut proof) = shadow(json!("4800"));
            say(&mut proof, &format!("{id}0"));
            let (text, check) = build(&header, &proof);
            assert_eq!(check, None);
            assert!(text.contains(&format!("{id}0!")), "{text}");
        }
    }

    #[test]
    fn a_seed_is_scrubbed_as_a_number_and_in_text() {
        let (header, mut proof) = shadow(json!("4800"));
        let seed = proof.actual_game_seed;
        assert!(seed >= MIN_SCRUBBED_SEED);
        say(&mut proof, &format!("level {seed}"));
        proof.events[6].data.insert("n".into(), json!(seed));
        let (text, check) = build(&header, &proof);
        assert_eq!(check, None);
        assert!(!text.contains(&seed.to_string()), "{text}");
        // A seed the scrub cannot reach (an event's own time) blocks the roll.
        proof.events[6].t_ms = seed;
        let (_, check) = build(&header, &proof);
        let check = check.expect("the seed in tMs is found");
        assert_eq!(check.id, GuardCheck::Blinding);
        assert!(!check.ok);
        assert!(check.detail.ends_with(&format!("seed {seed}")), "{check:?}");
    }

    #[test]
    fn actor_self_talk_echoed_by_the_game_blocks_the_roll() {
        let (header, mut proof) = shadow(json!("4800"));
        let raw = proof.actions[1].request.raw.clone();
        let id = proof.actions[1].action_id.clone();
        say(&mut proof, &raw);
        let (text, check) = build(&header, &proof);
        assert!(text.contains(&raw), "the game's text is kept");
        let check = check.expect("self-talk is found");
        assert_eq!(
            check.detail,
            format!("forbidden values in the judge package, not sent: actor text of {id}")
        );
    }

    #[test]
    fn identity_values_are_distinctive_only_when_long_lettered_and_varied() {
        for v in [
            "run-0001",
            "game-e69452602104",
            "qwen-vl-max",
            "task-4800",
            "3f9a1c0e7b2d48a6",
        ] {
            assert!(is_distinctive(v), "{v}");
        }
        for v in [
            "4800",
            "1893764520187392",
            "12:30:00.125",
            "run-01",
            "aaaaaaaa",
            "abab-abab",
            "",
        ] {
            assert!(!is_distinctive(v), "{v}");
        }
    }

    #[test]
    fn a_token_has_no_letter_or_digit_beside_it() {
        let f = |text: &str| find_token(text, "ab-12cd", 0);
        assert_eq!(f("ab-12cd"), Some(0));
        assert_eq!(f("x ab-12cd."), Some(2));
        assert_eq!(f("由ab-12cd生成"), Some(3));
        assert_eq!(f("\"ab-12cd\""), Some(1));
        assert_eq!(f("ab-12cd-v2"), Some(0));
        for no in ["xab-12cd", "ab-12cde", "ab-12cd9", "_ab-12cdZ", "ab-12c"] {
            assert_eq!(f(no), None, "{no}");
        }
        // An occurrence that overlaps one with a letter beside it is still found.
        assert_eq!(find_token("x1a-1a-1a", "1a-1a", 0), Some(4));
        assert_eq!(
            replace_tokens("a-b-c1 a-b-c a-b-c", "a-b-c"),
            "a-b-c1 [redacted] [redacted]"
        );
    }
}
