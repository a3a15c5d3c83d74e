//! Property tests of the blinding (docs/DESIGN.md §1 principle 1, §3.2 JudgePackage/1): whatever the
//! header and the proof package carry, the package both judges see never contains the run's
//! identity (runId, gameId, parentRunId, repair.fromRunId, templateRoute), a seed, the actor's
//! session, model or prompt, the actor's own words (`request.raw`) or a cost, even when the
//! game itself echoes those values into its events.
//!
//! Inputs start from the example run folders (sealed-fixtures/inputs) and are mutated with
//! random secrets, which are then planted in event `data` (inside strings, as object keys, as
//! numbers, under keys named like `seed`, nested), in event names, in the brief and in
//! obligation descriptions. The check searches the canonical package bytes for every secret
//! with its own matcher, and also asks `blinding::leaks` (what `seal verify` runs).

use std::path::PathBuf;

use proptest::prelude::*;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

use seal_core::blinding::{judge_package, leaks};
use seal_core::canonical::{canonical_bytes, Hash};
use seal_core::contracts::Kind;
use seal_core::doc::*;
use seal_core::validate::{validate_as, Report};

struct Example {
    header: Evidence,
    brief: String,
    proofs: Vec<ProofPackage>,
}

fn examples() -> Vec<Example> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sealed-fixtures/inputs");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("header.json").is_file())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no example runs in {}", root.display());
    dirs.into_iter()
        .map(|d| {
            let header: Evidence =
                serde_json::from_slice(&std::fs::read(d.join("header.json")).unwrap()).unwrap();
            let brief = std::fs::read_to_string(d.join("brief.md")).unwrap();
            let mut proofs = Vec::new();
            for n in 1..=2 {
                let p = d.join(format!("roll-{n}/proof-package.json"));
                if p.is_file() {
                    proofs.push(serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap());
                }
            }
            assert!(!proofs.is_empty(), "{}: no proof package", d.display());
            Example {
                header,
                brief,
                proofs,
            }
        })
        .collect()
}

fn manifest_hash() -> Hash {
    Hash::of(b"image-manifest")
}

// ---------------------------------------------------------------------------------------------
// Secrets and where they are planted
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Secrets {
    run_id: String,
    game_id: String,
    parent_run_id: Option<String>,
    from_run_id: Option<String>,
    template_route: String,
    actor_session_id: String,
    header_actor_session: String,
    actor_model: String,
    actor_prompt_id: String,
    seeds: [u64; 3],
    raw_texts: Vec<String>,
    actor_cost_rmb: f64,
    header_cost_rmb: f64,
}

impl Secrets {
    fn strings(&self) -> Vec<String> {
        let mut v = vec![
            self.run_id.clone(),
            self.game_id.clone(),
            self.template_route.clone(),
            self.actor_session_id.clone(),
            self.header_actor_session.clone(),
            self.actor_model.clone(),
            self.actor_prompt_id.clone(),
        ];
        v.extend(self.parent_run_id.clone());
        v.extend(self.from_run_id.clone());
        v
    }
}

fn token(prefix: &'static str) -> impl Strategy<Value = String> {
    "[a-z0-9]{8,14}".prop_map(move |s| format!("{prefix}{s}"))
}

fn seed() -> impl Strategy<Value = u64> {
    65_536u64..(1u64 << 53)
}

fn cost() -> impl Strategy<Value = f64> {
    // Six decimals and a distinctive integer part, as the pipeline writes RMB.
    (100u64..100_000, 1u64..1_000_000).prop_map(|(i, f)| i as f64 + f as f64 / 1_000_000.0)
}

fn secrets() -> impl Strategy<Value = Secrets> {
    (
        (
            token("run-"),
            token("game-"),
            prop::option::of(token("run-parent-")),
            prop::option::of(token("run-repaired-")),
            token("_template-"),
            token("actor-sess-"),
            token("actor-hdr-"),
        ),
        (
            token("model-"),
            token("actor.prompt-"),
            [seed(), seed(), seed()],
            prop::collection::vec("[A-Za-z ,.;]{0,20}[a-z0-9]{10}[A-Za-z ,.;]{0,20}", 12),
            cost(),
            cost(),
        ),
    )
        .prop_map(
            |(
                (run_id, game_id, parent_run_id, from_run_id, template_route, sess, hdr),
                (actor_model, actor_prompt_id, seeds, raw_texts, actor_cost_rmb, header_cost_rmb),
            )| Secrets {
                run_id,
                game_id,
                parent_run_id,
                from_run_id,
                template_route,
                actor_session_id: sess,
                header_actor_session: hdr,
                actor_model,
                actor_prompt_id,
                seeds,
                raw_texts,
                actor_cost_rmb,
                header_cost_rmb,
            },
        )
}

/// Installs the secrets where they belong in the header and the proof package.
fn install(ex: &Example, roll: usize, s: &Secrets) -> (Evidence, ProofPackage) {
    let mut header = ex.header.clone();
    header.run_id = s.run_id.clone();
    header.game_id = s.game_id.clone();
    header.parent_run_id = s.parent_run_id.clone();
    header.template_route = s.template_route.clone();
    header.repair.from_run_id = s.from_run_id.clone();
    if header.repair.from_run_id.is_some() {
        header.repair.round = 1;
    }
    header.actor = Some(Actor {
        model: s.actor_model.clone(),
        prompt_id: s.actor_prompt_id.clone(),
        prompt_version: "3.1.0".into(),
        session_id: s.header_actor_session.clone(),
    });
    header.cost_rmb = s.header_cost_rmb;
    let mut proof = ex.proofs[roll % ex.proofs.len()].clone();
    proof.requested_game_seed = s.seeds[0];
    proof.actual_game_seed = s.seeds[1];
    proof.policy_seed = s.seeds[2];
    proof.actor_session_id = s.actor_session_id.clone();
    proof.actor_cost_rmb = s.actor_cost_rmb;
    for (i, a) in proof.actions.iter_mut().enumerate() {
        a.request.raw = s.raw_texts[i % s.raw_texts.len()].clone();
    }
    (header, proof)
}

const SEED_KEYS: [&str; 6] = [
    "seed",
    "gameSeed",
    "RNG_SEED",
    "policy_seed",
    "Seed",
    "levelSeedUsed",
];

/// Plants the secrets into what the game and the pipeline can put in front of a judge: event
/// data (identity strings inside strings and keys, seeds as integers, anything under keys named
/// like `seed`, nested), event names, the brief and the obligation descriptions.
///
/// With `everywhere`, also the places [`KNOWN_GAPS`] lists (a seed inside a string, as a float,
/// as a key, negated, in an obligation description; identity in a play-spec check).
fn plant(
    header: &mut Evidence,
    brief: &mut String,
    proof: &mut ProofPackage,
    s: &Secrets,
    r: u64,
    everywhere: bool,
) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(r);
    let strings = s.strings();
    let pick_str = |rng: &mut rand::rngs::StdRng| strings.choose(rng).unwrap().clone();
    let pick_seed = |rng: &mut rand::rngs::StdRng| *s.seeds.choose(rng).unwrap();

    brief.push_str(&format!(
        "\n\nInternal: built by {} for {}.\n",
        pick_str(&mut rng),
        pick_str(&mut rng)
    ));
    for o in &mut header.proof_obligations {
        if rng.gen_bool(0.5) {
            o.description = format!("{} (see {})", o.description, pick_str(&mut rng));
        }
    }
    if proof.events.is_empty() {
        proof.events.push(GameEvent {
            seq: 0,
            name: "game_loaded".into(),
            t_ms: 0,
            data: Map::new(),
        });
    }
    let n = proof.events.len();
    let kinds = if everywhere { 14 } else { 8 };
    for _ in 0..rng.gen_range(1..8) {
        let e = &mut proof.events[rng.gen_range(0..n)];
        match rng.gen_range(0..kinds) {
            0 => {
                e.data.insert(
                    "message".into(),
                    json!(format!("hello {} and bye", pick_str(&mut rng))),
                );
            }
            1 => {
                e.data
                    .insert(format!("by-{}", pick_str(&mut rng)), json!(1));
            }
            2 => {
                let key = *SEED_KEYS.choose(&mut rng).unwrap();
                let seed = pick_seed(&mut rng);
                let v = if rng.gen_bool(0.5) {
                    json!(seed)
                } else {
                    json!(seed.to_string())
                };
                e.data.insert(key.into(), v);
            }
            3 => {
                e.data.insert("value".into(), json!(pick_seed(&mut rng)));
            }
            4 => {
                let seed = pick_seed(&mut rng);
                let key = *SEED_KEYS.choose(&mut rng).unwrap();
                e.data.insert(
                    "nested".into(),
                    json!({"list": [1, pick_seed(&mut rng), {"who": pick_str(&mut rng)}],
                           "deeper": {key: seed, "id": pick_str(&mut rng)}}),
                );
            }
            5 => {
                e.name = format!("{}:{}", e.name, pick_str(&mut rng));
            }
            6 => {
                let secret = pick_str(&mut rng);
                e.data.insert(
                    "obj".into(),
                    json!({ format!("{secret}"): {"v": secret.clone()} }),
                );
            }
            7 => {
                e.data.insert(
                    "list".into(),
                    json!([pick_str(&mut rng), pick_seed(&mut rng)]),
                );
            }
            // Known gaps (see KNOWN_GAPS), planted only with `everywhere`.
            8 => {
                let seed = pick_seed(&mut rng);
                e.data
                    .insert("msg".into(), json!(format!("level built from {seed}")));
            }
            9 => {
                let seed = pick_seed(&mut rng);
                let float: Value = serde_json::from_str(&format!("{seed}.0")).unwrap();
                e.data.insert("value".into(), float);
            }
            10 => {
                e.data.insert(pick_seed(&mut rng).to_string(), json!(true));
            }
            11 => {
                e.data
                    .insert("delta".into(), json!(-(pick_seed(&mut rng) as i64)));
            }
            12 => {
                let seed = pick_seed(&mut rng);
                let o = header.proof_obligations.choose_mut(&mut rng).unwrap();
                o.description = format!("{} (seed {seed})", o.description);
            }
            _ => {
                let secret = pick_str(&mut rng);
                if let Some(o) = header
                    .proof_obligations
                    .iter_mut()
                    .find(|o| o.check.is_some())
                {
                    o.check.as_mut().unwrap().why = Some(format!("asked for by {secret}"));
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The independent matcher
// ---------------------------------------------------------------------------------------------

/// `needle` occurs in `text` as a whole number (no digit or `.` on either side; a leading `-`
/// still counts: a negated seed is the seed).
fn has_number(text: &str, needle: &str) -> bool {
    let b = text.as_bytes();
    let numberish = |c: u8| c.is_ascii_digit() || c == b'.';
    text.match_indices(needle).any(|(i, m)| {
        let before = i.checked_sub(1).map(|j| b[j]);
        let after = b.get(i + m.len()).copied();
        !before.is_some_and(numberish) && !after.is_some_and(numberish)
    })
}

/// Every forbidden value found in `bytes`, by this test's own search.
fn forbidden_in(bytes: &[u8], s: &Secrets) -> Vec<String> {
    let text = std::str::from_utf8(bytes).expect("canonical JSON is UTF-8");
    let mut found = Vec::new();
    for secret in s.strings() {
        if text.contains(&secret) {
            found.push(format!("identity {secret:?}"));
        }
    }
    for seed in s.seeds {
        if has_number(text, &seed.to_string()) {
            found.push(format!("seed {seed}"));
        }
    }
    for raw in &s.raw_texts {
        let escaped = serde_json::to_string(raw).unwrap();
        if text.contains(escaped.trim_matches('"')) {
            found.push(format!("actor text {raw:?}"));
        }
    }
    for c in [s.actor_cost_rmb, s.header_cost_rmb] {
        if has_number(text, &serde_json::to_string(&c).unwrap()) {
            found.push(format!("cost {c}"));
        }
    }
    found
}

fn seed_keys(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                if k.to_ascii_lowercase().contains("seed") {
                    out.push(k.clone());
                }
                seed_keys(v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| seed_keys(v, out)),
        _ => {}
    }
}

fn check_package(
    header: &Evidence,
    brief: &str,
    proof: &ProofPackage,
    s: &Secrets,
) -> Result<(), TestCaseError> {
    let pkg = judge_package(header, brief, proof, &manifest_hash());
    let bytes = canonical_bytes(&pkg).expect("canonical package");
    let found = forbidden_in(&bytes, s);
    prop_assert!(
        found.is_empty(),
        "forbidden values in the judge package: {found:?}\n{}",
        String::from_utf8_lossy(&bytes)
    );
    let reported = leaks(&bytes, header, proof);
    prop_assert!(reported.is_empty(), "blinding::leaks reports {reported:?}");
    let value: Value = serde_json::from_slice(&bytes).unwrap();
    match validate_as(Kind::JudgePackage, &value) {
        Report::Valid(_) => {}
        other => prop_assert!(false, "JudgePackage/1 invalid: {other:?}"),
    }
    let ids: Vec<&str> = pkg.obligations.iter().map(|o| o.id.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    prop_assert_eq!(&ids, &sorted, "obligations sorted by id");
    let mut keys = Vec::new();
    for e in &pkg.events {
        seed_keys(&Value::Object(e.data.clone()), &mut keys);
    }
    prop_assert!(keys.is_empty(), "seed-like keys survived: {keys:?}");
    // Observations are kept: same events (by seq), actions and frames as the proof package.
    prop_assert_eq!(pkg.events.len(), proof.events.len());
    prop_assert_eq!(pkg.actions.len(), proof.actions.len());
    prop_assert_eq!(pkg.frames.len(), proof.frames.len());
    Ok(())
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    /// The mutated header and proof package alone (no planting): nothing forbidden reaches the
    /// package.
    #[test]
    fn blinded_package_has_no_secret(s in secrets(), which in any::<usize>(), roll in 0usize..2) {
        let exs = examples();
        let ex = &exs[which % exs.len()];
        let (header, proof) = install(ex, roll, &s);
        check_package(&header, &ex.brief, &proof, &s)?;
    }

    /// The secrets echoed by the game into its events (and into the brief and descriptions) are
    /// scrubbed, and seed-like keys are dropped.
    #[test]
    fn planted_secrets_are_scrubbed(
        s in secrets(),
        which in any::<usize>(),
        roll in 0usize..2,
        r in any::<u64>(),
        shuffle in any::<bool>(),
    ) {
        let exs = examples();
        let ex = &exs[which % exs.len()];
        let (mut header, mut proof) = install(ex, roll, &s);
        let mut brief = ex.brief.clone();
        plant(&mut header, &mut brief, &mut proof, &s, r, false);
        if shuffle {
            let mut rng = rand::rngs::StdRng::seed_from_u64(r ^ 0x5eed);
            header.proof_obligations.shuffle(&mut rng);
        }
        check_package(&header, &brief, &proof, &s)?;
    }
}

/// `leaks` is not vacuous: each kind of secret planted straight into the package bytes is found.
#[test]
fn leaks_finds_planted_secrets() {
    let exs = examples();
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for ex in &exs {
        for roll in 0..ex.proofs.len() {
            let s = secrets()
                .new_tree(&mut runner)
                .map(|t| proptest::strategy::ValueTree::current(&t))
                .unwrap();
            let (header, proof) = install(ex, roll, &s);
            let clean = judge_package(&header, &ex.brief, &proof, &manifest_hash());
            let clean_bytes = canonical_bytes(&clean).unwrap();
            assert!(leaks(&clean_bytes, &header, &proof).is_empty());

            let mut planted: Vec<(String, JudgePackage)> = Vec::new();
            for secret in s.strings() {
                let mut p = clean.clone();
                p.brief.text.push_str(&format!(" {secret}"));
                planted.push((format!("identity string {secret:?}"), p));
            }
            for seed in s.seeds {
                let mut p = clean.clone();
                p.events[0].data.insert("score".into(), json!(seed));
                planted.push((format!("seed {seed}"), p));
            }
            if let Some(a) = proof.actions.first() {
                let mut p = clean.clone();
                p.obligations[0].description = a.request.raw.clone();
                planted.push((format!("actor text of {}", a.action_id), p));
            }
            for (want, p) in planted {
                let bytes = canonical_bytes(&p).unwrap();
                let found = leaks(&bytes, &header, &proof);
                assert!(
                    found.contains(&want),
                    "leaks missed {want}: found {found:?}"
                );
                assert!(
                    !forbidden_in(&bytes, &s).is_empty(),
                    "own matcher missed {want}"
                );
            }
            // Raw bytes, not via serde: a seed typed into the package text is found too.
            let text = String::from_utf8(clean_bytes).unwrap();
            let tampered = text.replacen(
                "\"events\":[",
                &format!(
                    "\"events\":[{{\"seq\":0,\"name\":\"x\",\"tMs\":0,\"data\":{{\"n\":{}}}}},",
                    s.seeds[1]
                ),
                1,
            );
            assert_ne!(tampered, text);
            assert!(leaks(tampered.as_bytes(), &header, &proof)
                .contains(&format!("seed {}", s.seeds[1])));
        }
    }
}

proptest! {
    #![proptest_config(config())]

    /// The same property with the secrets also planted where [`KNOWN_GAPS`] shows the scrubber
    /// does not look. Fails today; un-ignore once `blinding::judge_package` closes the gaps.
    #[test]
    fn planted_secrets_everywhere_are_scrubbed(
        s in secrets(),
        which in any::<usize>(),
        roll in 0usize..2,
        r in any::<u64>(),
    ) {
        let exs = examples();
        let ex = &exs[which % exs.len()];
        let (mut header, mut proof) = install(ex, roll, &s);
        let mut brief = ex.brief.clone();
        plant(&mut header, &mut brief, &mut proof, &s, r, true);
        check_package(&header, &brief, &proof, &s)?;
    }
}

type Plant = fn(&mut Evidence, &mut ProofPackage, &Secrets);

/// Places where a forbidden value once reached the judge package (found by this test's
/// probing, fixed in `blinding.rs`). Each is pinned: the package must stay clean, and
/// `blinding::leaks` (seal verify) must notice the value when planted straight into bytes.
const FORMER_GAPS: [(&str, Plant, bool); 9] = [
    (
        "seed inside an event data string",
        |_, p, s| {
            p.events[0].data.insert(
                "msg".into(),
                json!(format!("level built from {}", s.seeds[1])),
            );
        },
        true,
    ),
    (
        "seed as a string value under an ordinary key",
        |_, p, s| {
            p.events[0]
                .data
                .insert("n".into(), json!(s.seeds[0].to_string()));
        },
        true,
    ),
    (
        "seed as a float number (123.0 canonicalizes to 123)",
        |_, p, s| {
            let f: Value = serde_json::from_str(&format!("{}.0", s.seeds[2])).unwrap();
            p.events[0].data.insert("value".into(), f);
        },
        true,
    ),
    (
        "seed as an event data key",
        |_, p, s| {
            p.events[0].data.insert(s.seeds[0].to_string(), json!(1));
        },
        true,
    ),
    (
        "negated seed as a number",
        |_, p, s| {
            p.events[0]
                .data
                .insert("v".into(), json!(-(s.seeds[1] as i64)));
        },
        true,
    ),
    (
        "seed in an obligation description",
        |h, _, s| {
            h.proof_obligations[0].description = format!("replay with {}", s.seeds[0]);
        },
        true,
    ),
    (
        "identity string in a play-spec check's why",
        |h, _, s| {
            let o = h
                .proof_obligations
                .iter_mut()
                .find(|o| o.check.is_some())
                .expect("an example obligation with a check");
            o.check.as_mut().unwrap().why = Some(format!("requested by {}", s.game_id));
        },
        true,
    ),
    (
        "identity string as a play-spec check's value",
        |h, _, s| {
            let o = h
                .proof_obligations
                .iter_mut()
                .find(|o| o.check.is_some())
                .expect("an example obligation with a check");
            let c = o.check.as_mut().unwrap();
            c.op = "==".into();
            c.value = Some(json!(s.run_id));
        },
        true,
    ),
    (
        "actor cost echoed into event data (leaks() has no cost search)",
        |_, p, _| {
            let c = p.actor_cost_rmb;
            p.events[0].data.insert("c".into(), json!(c));
        },
        false,
    ),
];

#[test]
fn former_blinding_gaps_stay_closed() {
    let exs = examples();
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let s = secrets()
        .new_tree(&mut runner)
        .map(|t| proptest::strategy::ValueTree::current(&t))
        .unwrap();
    // An example with a play-spec check and events (the legacy-adapted one has neither).
    let ex = exs
        .iter()
        .find(|e| e.header.proof_obligations.iter().any(|o| o.check.is_some()))
        .expect("an example with a checked obligation");
    for (what, plant, _) in FORMER_GAPS {
        let (mut header, mut proof) = install(ex, 0, &s);
        plant(&mut header, &mut proof, &s);
        let pkg = judge_package(&header, &ex.brief, &proof, &manifest_hash());
        let bytes = canonical_bytes(&pkg).unwrap();
        assert!(
            forbidden_in(&bytes, &s).is_empty(),
            "{what}: the judge package leaks"
        );
        assert!(
            leaks(&bytes, &header, &proof).is_empty(),
            "{what}: verify would flag a package seal built"
        );
    }
}
