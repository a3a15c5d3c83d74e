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
