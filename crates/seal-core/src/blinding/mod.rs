//! Blinding: header + brief + ProofPackage/1 → the one JudgePackage/1 both judges see. Pure.
//!
//! The package is built field by field from an allow-list (docs/DESIGN.md §3.3): genre, brief text,
//! obligations sorted by id (with the play-spec `check` where there is one), normalized
//! actions, events, frames by hash, and the image manifest hash. Nothing else is copied, so
//! the actor's words (`request.raw`, `request.parsed`), seeds, session, model, costs, the
//! game's identity and the history of the run cannot leak by accident.
//!
//! Event `data` is game-controlled, so it could carry identity on purpose or by accident
//! (a game that prints its own id or seed). It is scrubbed by the rule of [`rule`]: fields whose
//! name contains `seed` are dropped, and every forbidden value the rule recognises in a string
//! or key (a distinctive identity value as a whole token, a seed or the actor's cost as a whole
//! number), or as a number (a seed, the cost), becomes `"[redacted]"`. The same scrub covers
//! the brief, obligation descriptions and play-spec checks, which games' authors also write.
//! [`leaks`] is the one predicate over the built bytes: the builder blocks a package that fails
//! it ([`guard_check`]), and the postguard and `seal verify` run it on the stored bytes.

pub mod rule;

/// The version of the blinding rules (what a judge package may hold and how it is scrubbed):
/// a judge policy names it (`crate::policy`), so changing the rules is a change of policy.
pub const RULES: &str = "blinding/1";

use serde_json::{Map, Value};

use crate::canonical::Hash;
use crate::doc::*;
pub use rule::{guard_check, is_distinctive, leaks, Secrets, LEGACY_ID_FIELDS, REDACTED};

fn scrub_str(s: &str, secrets: &Secrets) -> String {
    secrets.scrub_str(s)
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

#[cfg(test)]
mod tests {
    //! The rules of the scrub one at a time, on hand-made secrets and on the sealed fixtures'
    //! inputs (the property tests of `tests/blinding_props.rs` plant random secrets and so do
    //! not separate a threshold or one branch of a condition).
    use super::rule::replace_numeral;
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

        // Short, numeric and low-entropy identity values and small seeds are left alone
        // (they would match by chance); the boundaries themselves count.
        let (mut header, mut proof) = (header, proof);
        header.game_id = "game-ab".into();
        header.template_route = "route-ab".into();
        header.run_id = "aaaa-bbbb".into();
        header.parent_run_id = Some("12345678-90".into());
        proof.requested_game_seed = 65_535;
        proof.actual_game_seed = 65_536;
        proof.policy_seed = 7;
        let s = Secrets::of(&header, &proof);
        assert!(!s.strings.iter().any(|x| x == "game-ab"), "{s:?}");
        assert!(s.strings.iter().any(|x| x == "route-ab"), "{s:?}");
        assert!(!s.strings.iter().any(|x| x == "aaaa-bbbb"), "{s:?}");
        assert!(!s.strings.iter().any(|x| x == "12345678-90"), "{s:?}");
        assert_eq!(s.seeds, [65_536]);

        // An adapted legacy Verdict's ids ride along, as strings and as numbers.
        let (header, proof) = inputs("legacy-accept");
        let s = Secrets::of(&header, &proof);
        for id in [
            "3f9a1c0e7b2d48a6915e0c7d2b4f6a8e1d3c5b7a9f0e2d4c6b8a0f1e3d5c7b9a",
            "8c1f4e2a-6b3d-4f7e-9a15-2d7c0b8e4f61",
            "task-1893764520187392",
        ] {
            assert!(s.strings.iter().any(|x| x == id), "{id} missing: {s:?}");
        }
        // The numeric `_taskId` and `_versionId` are numbers among the game's numbers.
        for id in ["1893764520187392", "1893764520190001"] {
            assert!(!s.strings.iter().any(|x| x == id), "{id} searched: {s:?}");
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
        // Only as a whole token: inside a longer name it is another value.
        assert_eq!(
            scrub_str("run-secret-12, xrun-secret-1, run-secret-1-v2", &s),
            "run-secret-12, xrun-secret-1, [redacted]-v2"
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
