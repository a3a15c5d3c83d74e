//! Blinding: header + brief + ProofPackage/1 → the one JudgePackage/1 both judges see. Pure.
//!
//! The package is built field by field from an allow-list (docs/DESIGN.md §3.2): genre, brief text,
//! obligations sorted by id (with the play-spec `check` where there is one), normalized
//! actions, events, frames by hash, and the image manifest hash. Nothing else is copied, so
//! the actor's words (`request.raw`, `request.parsed`), seeds, session, model, costs, the
//! game's identity and the history of the run cannot leak by accident.
//!
//! Event `data` is game-controlled, so it could carry identity on purpose or by accident
//! (a game that prints its own id or seed). It is scrubbed: fields whose name contains `seed`
//! are dropped, and any occurrence of the run id, game id, parent run id, template route or
//! actor session id in a string or key, or of a seed (≥ 65536, so scores are left alone) or
//! the actor's cost as a number or inside text, is replaced by `"[redacted]"`. The same scrub
//! covers obligation descriptions and play-spec checks, which games' authors also write.
//! [`leaks`] is the check `seal verify` runs on stored bytes.

use serde_json::{Map, Value};

use crate::canonical::Hash;
use crate::doc::*;

pub const REDACTED: &str = "[redacted]";

/// Extension fields of an adapted legacy Verdict that identify the design: scrubbed like ids.
pub const LEGACY_ID_FIELDS: [&str; 4] = ["_designId", "_taskId", "_traceId", "_versionId"];
/// Seeds below this are too likely to collide with ordinary game numbers to be scrubbed.
const MIN_SCRUBBED_SEED: u64 = 65_536;
/// Identity strings shorter than this are not searched for (they would match by chance).
const MIN_SCRUBBED_LEN: usize = 4;

/// What must never reach a judge, gathered from the header and the proof package.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    pub strings: Vec<String>,
    pub seeds: Vec<u64>,
    /// Costs as numbers (the actor's cost of the roll).
    pub costs: Vec<f64>,
}

impl Secrets {
    /// Seeds and costs as they are written in JSON and in text.
    fn numerals(&self) -> Vec<String> {
        let mut out: Vec<String> = self.seeds.iter().map(|s| s.to_string()).collect();
        out.extend(
            self.costs
                .iter()
                .filter_map(|c| serde_json::Number::from_f64(*c).map(|n| n.to_string())),
        );
        out
    }

    fn is_secret_number(&self, n: &serde_json::Number) -> bool {
        let Some(f) = n.as_f64() else { return false };
        self.seeds.iter().any(|s| f.abs() == *s as f64) || self.costs.contains(&f.abs())
    }
}

/// Replaces `needle` in `text` where it stands as a whole number (not inside a longer one).
fn replace_numeral(text: &str, needle: &str) -> String {
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
        strings.retain(|s| s.len() >= MIN_SCRUBBED_LEN);
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
}

fn scrub_str(s: &str, secrets: &Secrets) -> String {
    let mut out = s.to_string();
    for secret in &secrets.strings {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), REDACTED);
        }
    }
    for numeral in secrets.numerals() {
        if out.contains(&numeral) {
            out = replace_numeral(&out, &numeral);
        }
    }
    out
}

fn scrub(v: &Value, secrets: &Secrets) -> Value {
    match v {
        Value::String(s) => Value::String(scrub_str(s, secrets)),
        Value::Number(n) if secrets.is_secret_number(n) => Value::String(REDACTED.into()),
        Value::Array(items) => Value::Array(items.iter().map(|i| scrub(i, secrets)).collect()),
        Value::Object(m) => Value::Object(scrub_map(m, secrets)),
        other => other.clone(),
    }
}

fn scrub_map(m: &Map<String, Value>, secrets: &Secrets) -> Map<String, Value> {
    m.iter()
        .filter(|(k, _)| !k.to_ascii_lowercase().contains("seed"))
        .map(|(k, v)| (scrub_str(k, secrets), scrub(v, secrets)))
        .collect()
}

/// Builds the blinded package. `image_manifest_hash` is the hash of the roll's ImageManifest/1.
pub fn judge_package(
    header: &Evidence,
    brief: &str,
    proof: &ProofPackage,
    image_manifest_hash: &Hash,
) -> JudgePackage {
    let secrets = Secrets::of(header, proof);
    let mut obligations: Vec<PackageObligation> = header
        .proof_obligations
        .iter()
        .map(|o| PackageObligation {
            id: o.id.clone(),
            description: scrub_str(&o.description, &secrets),
            required: o.required,
            check: o.check.as_ref().map(|c| Assertion {
                path: c.path.clone(),
                op: c.op.clone(),
                value: c.value.as_ref().map(|v| scrub(v, &secrets)),
                why: c.why.as_ref().map(|w| scrub_str(w, &secrets)),
            }),
        })
        .collect();
    obligations.sort_by(|a, b| a.id.cmp(&b.id));
    JudgePackage {
        schema_version: JUDGE_PACKAGE.into(),
        genre: header.genre,
        brief: Brief {
            text: scrub_str(brief, &secrets),
        },
        obligations,
        actions: proof.actions.iter().map(|a| a.normalized.clone()).collect(),
        events: proof
            .events
            .iter()
            .map(|e| GameEvent {
                seq: e.seq,
                name: scrub_str(&e.name, &secrets),
                t_ms: e.t_ms,
                data: scrub_map(&e.data, &secrets),
            })
            .collect(),
        frames: proof
            .frames
            .iter()
            .map(|f| PackageFrame {
                hash: f.hash.clone(),
                at_ms: f.at_ms,
            })
            .collect(),
        image_manifest_hash: image_manifest_hash.clone(),
    }
}

/// The ImageManifest/1 of a roll: one entry per distinct frame, sorted by hash.
pub fn image_manifest(mut frames: Vec<ManifestEntry>) -> ImageManifest {
    frames.sort();
    frames.dedup_by(|a, b| a.hash == b.hash);
    ImageManifest {
        schema_version: IMAGE_MANIFEST.into(),
        frames,
    }
}

/// The media type of a frame from its first bytes (what the judge endpoint is told).
pub fn sniff_media_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else {
        None
    }
}

/// Every forbidden value found in stored package bytes (empty when blinded). Used by
/// `seal verify` and the blinding property test. Field names need no search here: the
/// package schema allows no field beyond the allow-list, and verify validates it.
pub fn leaks(package_bytes: &[u8], header: &Evidence, proof: &ProofPackage) -> Vec<String> {
    let text = String::from_utf8_lossy(package_bytes);
    let mut found = Vec::new();
    let secrets = Secrets::of(header, proof);
    for s in &secrets.strings {
        // Search for the JSON-escaped form: that is how a string appears in JSON bytes.
        let escaped = serde_json::to_string(s).unwrap_or_default();
        let inner = escaped.trim_matches('"');
        if !inner.is_empty() && text.contains(inner) {
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
        let raw = serde_json::to_string(&a.request.raw).unwrap_or_default();
        let inner = raw.trim_matches('"');
        if inner.len() >= 8 && text.contains(inner) {
            found.push(format!("actor text of {}", a.action_id));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    //! The rules of the scrub one at a time, on hand-made secrets and on the sealed fixtures'
    //! inputs (the property tests of `tests/blinding_props.rs` plant random secrets and so do
    //! not separate a threshold or one branch of a condition).
    use super::*;
    use serde_json::json;

    fn inputs(run: &str) -> (Evidence, ProofPackage) {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../sealed-fixtures/inputs")
            .join(run);
        let read = |p: &str| std::fs::read(dir.join(p)).unwrap();
        (
            serde_json::from_slice(&read("header.json")).unwrap(),
            serde_json::from_slice(&read("roll-1/proof-package.json")).unwrap(),
        )
    }

    fn secrets() -> Secrets {
        Secrets {
            strings: vec!["run-secret-1".into()],
            seeds: vec![123_456],
            costs: vec![0.3714],
        }
    }

    #[test]
    fn seeds_and_costs_are_searched_as_their_json_numerals() {
        assert_eq!(secrets().numerals(), ["123456", "0.3714"]);
    }

    #[test]
    fn a_number_is_secret_when_its_magnitude_is_a_seed_or_the_cost() {
        let s = secrets();
        let secret = |v: Value| match v {
            Value::Number(n) => s.is_secret_number(&n),
            _ => unreachable!(),
        };
        assert!(secret(json!(123_456)));
        assert!(secret(json!(-123_456)));
        assert!(secret(json!(123_456.0)));
        assert!(secret(json!(0.3714)));
        assert!(!secret(json!(7)));
        assert!(!secret(json!(123_457)));
        // Either list alone makes a number secret.
        let seeds_only = Secrets {
            costs: vec![],
            ..secrets()
        };
        assert!(seeds_only.is_secret_number(&serde_json::Number::from(123_456)));
        let costs_only = Secrets {
            seeds: vec![],
            ..secrets()
        };
        assert!(costs_only.is_secret_number(&serde_json::Number::from_f64(0.3714).unwrap()));
    }

    #[test]
    fn a_numeral_is_replaced_only_where_it_stands_as_a_whole_number() {
        let r = |text: &str| replace_numeral(text, "123456");
        assert_eq!(r("123456"), REDACTED);
        assert_eq!(r("seed 123456 here"), "seed [redacted] here");
        assert_eq!(r("a 123456, b 123456"), "a [redacted], b [redacted]");
        assert_eq!(r("(123456)"), "([redacted])");
        // A digit or a point on either side alone makes it part of a longer number.
        for longer in [
            "9123456",
            "1234569",
            "0.123456",
            "123456.5",
            "x9123456 ",
            " 1234567x",
            "abc 1234567",
        ] {
            assert_eq!(r(longer), longer);
        }
        assert_eq!(r("1234567 and 123456"), "1234567 and [redacted]");
    }

    #[test]
    fn identity_seeds_and_legacy_ids_become_secrets_with_their_thresholds() {
        let (header, proof) = inputs("run-trpg-0021-pass");
        let s = Secrets::of(&header, &proof);
        for id in [
            "run-trpg-0021-pass",
            "game-e69452602104",
            "_template-trpg",
            "actor-e056f073ac39f6e6",
            "actor-9d4615766cd44f91",
            "qwen-vl-max",
            "actor.visual-target",
        ] {
            assert!(s.strings.iter().any(|x| x == id), "{id} missing: {s:?}");
        }
        let mut seeds = s.seeds.clone();
        seeds.sort();
        assert_eq!(seeds, [52_285_596, 1_188_197_331, 1_204_701_033]);
        assert_eq!(s.costs, [0.3714]);

        // Short strings and small seeds are left alone (they would match by chance); the
        // boundaries themselves count.
        let (mut header, mut proof) = (header, proof);
        header.game_id = "abc".into();
        header.template_route = "abcd".into();
        proof.requested_game_seed = 65_535;
        proof.actual_game_seed = 65_536;
        proof.policy_seed = 7;
        let s = Secrets::of(&header, &proof);
        assert!(!s.strings.iter().any(|x| x == "abc"), "{s:?}");
        assert!(s.strings.iter().any(|x| x == "abcd"), "{s:?}");
        assert_eq!(s.seeds, [65_536]);

        // An adapted legacy Verdict's ids ride along, as strings and as numbers.
        let (header, proof) = inputs("legacy-accept");
        let s = Secrets::of(&header, &proof);
        for id in [
            "3f9a1c0e7b2d48a6915e0c7d2b4f6a8e1d3c5b7a9f0e2d4c6b8a0f1e3d5c7b9a",
            "1893764520187392",
            "8c1f4e2a-6b3d-4f7e-9a15-2d7c0b8e4f61",
            "1893764520190001",
        ] {
            assert!(s.strings.iter().any(|x| x == id), "{id} missing: {s:?}");
        }
    }

    #[test]
    fn a_cost_is_secret_only_when_fractional_and_four_characters_long() {
        let (header, mut proof) = inputs("run-trpg-0021-pass");
        let mut costs = |c: f64| {
            proof.actor_cost_rmb = c;
            Secrets::of(&header, &proof).costs
        };
        assert_eq!(costs(0.3714), [0.3714]);
        assert_eq!(costs(0.25), [0.25]);
        // A round number, however long, or a short fraction would match by chance.
        assert!(costs(1234.0).is_empty());
        assert!(costs(12.0).is_empty());
        assert!(costs(0.5).is_empty());
    }

    #[test]
    fn scrubbing_redacts_identity_and_numerals_in_text_and_secret_numbers_in_values() {
        let s = secrets();
        assert_eq!(
            scrub_str("by run-secret-1 with 123456 for 0.3714 of 7", &s),
            "by [redacted] with [redacted] for [redacted] of 7"
        );
        assert_eq!(scrub_str("nothing to hide", &s), "nothing to hide");
        let v = json!({
            "who": "run-secret-1",
            "score": 7,
            "n": 123456,
            "list": [0.3714, 3, "ok", true, null],
            "nested": {"run-secret-1": {"gameSeed": 1, "x": 2}},
            "levelSeedUsed": 99,
            "SEED": "x",
        });
        assert_eq!(
            scrub(&v, &s),
            json!({
                "who": REDACTED,
                "score": 7,
                "n": REDACTED,
                "list": [REDACTED, 3, "ok", true, null],
                "nested": {REDACTED: {"x": 2}},
            })
        );
    }

    #[test]
    fn the_image_manifest_holds_each_frame_once_sorted_by_hash() {
        let entry = |bytes: &[u8], size| ManifestEntry {
            hash: Hash::of(bytes),
            media_type: "image/png".into(),
            bytes: size,
        };
        let (a, b) = (entry(b"a", 1), entry(b"b", 2));
        let (first, last) = if a.hash < b.hash { (a, b) } else { (b, a) };
        let m = image_manifest(vec![
            last.clone(),
            first.clone(),
            last.clone(),
            first.clone(),
        ]);
        assert_eq!(m.schema_version, IMAGE_MANIFEST);
        assert_eq!(m.frames, [first, last]);
    }

    #[test]
    fn media_types_are_sniffed_from_magic_bytes() {
        let cases: [(&[u8], Option<&str>); 10] = [
            (b"\x89PNG\r\n\x1a\n rest", Some("image/png")),
            (&[0xFF, 0xD8, 0xFF, 0xE0], Some("image/jpeg")),
            (b"RIFF\x10\0\0\0WEBPVP8 ", Some("image/webp")),
            (b"RIFF\x10\0\0\0WEBP", Some("image/webp")),
            (b"GIF87a..", Some("image/gif")),
            (b"GIF89a..", Some("image/gif")),
            // A RIFF that is not WebP, WebP's tag without RIFF, and headers too short to say.
            (b"RIFF\x10\0\0\0WAVEfmt ", None),
            (b"XXXX\x10\0\0\0WEBPVP8 ", None),
            (b"RIFF\x10\0\0\0WEB", None),
            (b"", None),
        ];
        for (head, want) in cases {
            assert_eq!(sniff_media_type(head), want, "{head:?}");
        }
        assert_eq!(sniff_media_type(b"<svg></svg>"), None);
    }

    #[test]
    fn the_package_carries_the_observations_unchanged_when_nothing_in_them_is_secret() {
        let (header, proof) = inputs("run-trpg-0021-pass");
        let brief = "Make a dice game.";
        let hash = Hash::of(b"manifest");
        let pkg = judge_package(&header, brief, &proof, &hash);
        assert_eq!(pkg.brief.text, brief);
        assert_eq!(pkg.events, proof.events);
        let ids: Vec<&str> = pkg.obligations.iter().map(|o| o.id.as_str()).collect();
        let mut want: Vec<&str> = header
            .proof_obligations
            .iter()
            .map(|o| o.id.as_str())
            .collect();
        want.sort();
        assert_eq!(ids, want);
        for o in &pkg.obligations {
            let h = header
                .proof_obligations
                .iter()
                .find(|h| h.id == o.id)
                .unwrap();
            assert_eq!(o.description, h.description);
            assert_eq!(o.check, h.check);
        }
        assert_eq!(pkg.image_manifest_hash, hash);
    }
}
