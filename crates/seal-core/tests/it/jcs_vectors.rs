//! RFC 8785 (JCS) conformance of seal's canonical bytes, with golden vectors as files.
//!
//! - `tests/data/jcs/input/*.json` → `output/*.json`: the cyberphone json-canonicalization test
//!   vectors (arrays, french, structures, unicode, values, weird); `output.sha256` holds their
//!   hashes as computed by coreutils `sha256sum`, an implementation independent of seal's.
//! - `numbers-ieee.txt`: RFC 8785 Appendix B, IEEE 754 bit patterns and their canonical text.
//! - `numbers-text.txt`: number literals as they may arrive and their canonical text.
//!
//! Every vector goes through seal's own path: `seal_core::json::parse` (strict input), then
//! `seal_core::canonical::canonical_bytes`. JCS numbers are IEEE doubles, so seal deliberately refuses
//! any number whose magnitude exceeds 2^53 - 1 (docs/DESIGN.md §2): for such vectors the test checks that
//! seal refuses them, and checks the expected text on the underlying JCS engine instead.

use proptest::prelude::*;
use seal_core::canonical::{self, canonical_bytes, canonical_with_hash, CanonicalError, Hash};
use serde_json::{json, Number, Value};
use sha2::{Digest, Sha256};
use std::path::PathBuf;

const LIMIT: u64 = 1 << 20;
const MAX_SAFE: f64 = canonical::MAX_SAFE_INTEGER as f64;

fn jcs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/jcs")
}

/// True when `v` holds a number seal refuses (magnitude beyond 2^53 - 1).
fn has_unsafe_number(v: &Value) -> bool {
    match v {
        Value::Number(n) => !canonical::number_is_safe(n),
        Value::Array(a) => a.iter().any(has_unsafe_number),
        Value::Object(m) => m.values().any(has_unsafe_number),
        _ => false,
    }
}

/// Data lines of a vector list: skips blanks and `#` comments.
fn lines(name: &str) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(jcs_dir().join(name)).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut it = l.split_whitespace();
            let a = it.next().unwrap().to_string();
            let b = it
                .next()
                .unwrap_or_else(|| panic!("{name}: {l:?}"))
                .to_string();
            assert!(it.next().is_none(), "{name}: {l:?}");
            (a, b)
        })
        .collect()
}

const CYBERPHONE: [&str; 6] = [
    "arrays",
    "french",
    "structures",
    "unicode",
    "values",
    "weird",
];

#[test]
fn cyberphone_vectors() {
    let mut through_seal = 0;
    for name in CYBERPHONE {
        let input = std::fs::read(jcs_dir().join(format!("input/{name}.json"))).unwrap();
        let want = std::fs::read(jcs_dir().join(format!("output/{name}.json"))).unwrap();
        let relaxed: Value = serde_json::from_slice(&input).unwrap();
        if has_unsafe_number(&relaxed) {
            // values.json carries 1E30: seal refuses it on input and in canonical_bytes...
            let err = seal_core::json::parse(&input, LIMIT)
                .unwrap_err()
                .to_string();
            assert!(err.contains("beyond 2^53"), "{name}: {err}");
            assert!(matches!(
                canonical_bytes(&relaxed),
                Err(CanonicalError::UnsafeNumber { .. })
            ));
            // ...while the JCS engine underneath still produces the RFC's bytes.
            let got = serde_json_canonicalizer::to_vec(&relaxed).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want),
                "{name}"
            );
            continue;
        }
        let v = seal_core::json::parse(&input, LIMIT).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got = canonical_bytes(&v).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want),
            "{name}"
        );
        assert_eq!(got, want, "{name}: bytes");
        through_seal += 1;
    }
    assert_eq!(
        through_seal, 5,
        "every vector but values.json goes through seal"
    );
}

/// values.json without its one number beyond 2^53: the rest of it through seal.
#[test]
fn cyberphone_values_without_the_big_number() {
    let input = std::fs::read_to_string(jcs_dir().join("input/values.json")).unwrap();
    let want = std::fs::read_to_string(jcs_dir().join("output/values.json")).unwrap();
    let input = input.replace(" 1E30,", "");
    let want = want.replace(",1e+30", "");
    let v = seal_core::json::parse(input.as_bytes(), LIMIT).unwrap();
    assert_eq!(
        String::from_utf8(canonical_bytes(&v).unwrap()).unwrap(),
        want
    );
}

#[test]
fn canonical_hash_is_sha256_of_canonical_bytes() {
    let sums = lines("output.sha256");
    assert_eq!(sums.len(), CYBERPHONE.len());
    for (hex, file) in sums {
        let name = file.trim_end_matches(".json");
        let input = std::fs::read(jcs_dir().join(format!("input/{name}.json"))).unwrap();
        let relaxed: Value = serde_json::from_slice(&input).unwrap();
        let bytes = if has_unsafe_number(&relaxed) {
            serde_json_canonicalizer::to_vec(&relaxed).unwrap()
        } else {
            let v = seal_core::json::parse(&input, LIMIT).unwrap();
            let (bytes, hash) = canonical_with_hash(&v).unwrap();
            assert_eq!(hash.as_str(), hex, "{name}: canonical_with_hash");
            assert_eq!(bytes, canonical_bytes(&v).unwrap());
            bytes
        };
        // Hash::of, sha2 directly, and the independent sha256sum all agree.
        assert_eq!(Hash::of(&bytes).as_str(), hex, "{name}: Hash::of");
        assert_eq!(hex::encode(Sha256::digest(&bytes)), hex, "{name}: sha2");
        assert_eq!(Hash::parse(&hex).unwrap(), Hash::of(&bytes));
    }
}

#[test]
fn rfc8785_appendix_b_numbers() {
    let vectors = lines("numbers-ieee.txt");
    assert!(vectors.len() >= 25);
    for (bits, want) in vectors {
        let f = f64::from_bits(u64::from_str_radix(&bits, 16).unwrap());
        if want == "error" {
            // NaN and Infinity have no JSON form: serde_json has no Number for them.
            assert!(Number::from_f64(f).is_none(), "{bits}");
            continue;
        }
        let v = Value::Number(Number::from_f64(f).unwrap());
        let engine = serde_json_canonicalizer::to_vec(&v).unwrap();
        assert_eq!(
            String::from_utf8(engine).unwrap(),
            want,
            "{bits} (JCS engine)"
        );
        if f.abs() > MAX_SAFE {
            assert!(
                matches!(
                    canonical_bytes(&v),
                    Err(CanonicalError::UnsafeNumber { .. })
                ),
                "{bits}: seal must refuse {want}"
            );
        } else {
            let got = canonical_bytes(&v).unwrap();
            assert_eq!(String::from_utf8(got).unwrap(), want, "{bits} (seal)");
        }
    }
}

#[test]
fn number_literals() {
    let vectors = lines("numbers-text.txt");
    assert!(vectors.len() >= 20);
    let mut through_seal = 0;
    for (text, want) in vectors {
        let relaxed: Value = serde_json::from_str(&text).unwrap();
        let magnitude = relaxed.as_f64().unwrap().abs();
        if magnitude > MAX_SAFE {
            let err = seal_core::json::parse(text.as_bytes(), LIMIT)
                .unwrap_err()
                .to_string();
            assert!(err.contains("beyond 2^53"), "{text}: {err}");
            assert!(matches!(
                canonical_bytes(&relaxed),
                Err(CanonicalError::UnsafeNumber { .. })
            ));
            let engine = serde_json_canonicalizer::to_vec(&relaxed).unwrap();
            assert_eq!(
                String::from_utf8(engine).unwrap(),
                want,
                "{text} (JCS engine)"
            );
            continue;
        }
        let v = seal_core::json::parse(text.as_bytes(), LIMIT).unwrap();
        let got = String::from_utf8(canonical_bytes(&v).unwrap()).unwrap();
        assert_eq!(got, want, "{text}");
        // Inside a document too (numbers are not special-cased at the top level).
        let doc = format!(r#"{{"b":[{text}],"a":{text}}}"#);
        let v = seal_core::json::parse(doc.as_bytes(), LIMIT).unwrap();
        let got = String::from_utf8(canonical_bytes(&v).unwrap()).unwrap();
        assert_eq!(got, format!(r#"{{"a":{want},"b":[{want}]}}"#), "{doc}");
        through_seal += 1;
    }
    assert!(through_seal >= 18);
}

#[test]
fn integers_beyond_2_pow_53_are_refused_by_parse() {
    for s in [
        "9007199254740992",
        "9007199254740993",
        "-9007199254740993",
        "18446744073709551615",
        "18446744073709551617",
        "1e16",
        r#"{"seed": 9007199254740993}"#,
        r#"{"rolls": [{"policySeed": 12345678901234567890}]}"#,
    ] {
        let err = seal_core::json::parse(s.as_bytes(), LIMIT)
            .unwrap_err()
            .to_string();
        assert!(err.contains("beyond 2^53"), "{s}: {err}");
    }
    for s in ["9007199254740991", "-9007199254740991", "0", "-0", "0.5"] {
        seal_core::json::parse(s.as_bytes(), LIMIT).unwrap_or_else(|e| panic!("{s}: {e}"));
    }
}

#[test]
fn integers_beyond_2_pow_53_are_refused_by_canonical_bytes() {
    let refused = [
        (
            json!({"seed": 9007199254740993u64}),
            "/seed",
            "9007199254740993",
        ),
        (
            json!({"seed": 9007199254740992u64}),
            "/seed",
            "9007199254740992",
        ),
        (
            json!({"a": [1, {"s": u64::MAX}]}),
            "/a/1/s",
            "18446744073709551615",
        ),
        (
            json!({"n": -9007199254740993i64}),
            "/n",
            "-9007199254740993",
        ),
        (
            json!({"a/b": {"~": i64::MIN}}),
            "/a~1b/~0",
            "-9223372036854775808",
        ),
        (json!(9007199254740993u64), "/", "9007199254740993"),
    ];
    for (v, pointer, number) in refused {
        assert_eq!(
            canonical_bytes(&v).unwrap_err(),
            CanonicalError::UnsafeNumber {
                pointer: pointer.into(),
                number: number.into()
            },
            "{v}"
        );
        assert!(canonical_with_hash(&v).is_err());
    }

    // A typed struct with a u64 seed: refused as well, not silently rounded.
    #[derive(serde::Serialize)]
    struct Roll {
        #[serde(rename = "policySeed")]
        policy_seed: u64,
    }
    let err = canonical_bytes(&Roll {
        policy_seed: (1 << 53) + 1,
    })
    .unwrap_err();
    assert!(err.to_string().contains("beyond 2^53"), "{err}");
    assert_eq!(
        canonical_bytes(&Roll {
            policy_seed: (1 << 53) - 1
        })
        .unwrap(),
        br#"{"policySeed":9007199254740991}"#
    );
}

// ------------------------------------------------------------------------------------------------
// Property tests

/// Any JSON value seal accepts: safe numbers only, arbitrary Unicode strings and keys.
fn json_value() -> impl Strategy<Value = Value> {
    let safe_int = -(canonical::MAX_SAFE_INTEGER as i64)..=(canonical::MAX_SAFE_INTEGER as i64);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        safe_int.prop_map(|i| json!(i)),
        (-1000i64..1000).prop_map(|i| json!(i)),
        any::<f64>()
            .prop_filter("finite and within 2^53", |f| f.is_finite()
                && f.abs() <= MAX_SAFE)
            .prop_map(|f| json!(f)),
        (-1.0e6f64..1.0e6).prop_map(|f| json!(f)),
        (-20i32..15).prop_map(|e| json!(1.5f64 * 10f64.powi(e))),
        any::<String>().prop_map(Value::String),
        "[\\x00-\\x1f\"\\\\/a\u{7f}\u{80}\u{2028}\u{fb33}\u{1f602}]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        any::<String>(),
                        "[a-c\u{e9}\u{20ac}\u{1f602}\u{fb33}\n]{0,3}"
                    ],
                    inner
                ),
                0..6
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Writes `v` as JSON text with object members in a scrambled order and random whitespace.
fn write_scrambled(v: &Value, rng: &mut u64, out: &mut String) {
    fn next(rng: &mut u64) -> u64 {
        // xorshift64*: deterministic per proptest seed.
        *rng ^= *rng >> 12;
        *rng ^= *rng << 25;
        *rng ^= *rng >> 27;
        rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn ws(rng: &mut u64, out: &mut String) {
        out.push_str([" ", "", "\n  ", "\t", ""][(next(rng) % 5) as usize]);
    }
    match v {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                ws(rng, out);
                write_scrambled(item, rng, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            for i in (1..entries.len()).rev() {
                let j = (next(rng) % (i as u64 + 1)) as usize;
                entries.swap(i, j);
            }
            out.push('{');
            for (i, (k, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                ws(rng, out);
                out.push_str(&serde_json::to_string(k).unwrap());
                ws(rng, out);
                out.push(':');
                write_scrambled(item, rng, out);
            }
            out.push('}');
        }
        other => out.push_str(&serde_json::to_string(other).unwrap()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// The same value written with its members in any order canonicalizes to the same bytes.
    #[test]
    fn canonical_bytes_ignore_member_order(v in json_value(), seed in 1u64..) {
        let want = canonical_bytes(&v).unwrap();
        let mut rng = seed;
        let mut text = String::new();
        write_scrambled(&v, &mut rng, &mut text);
        let reparsed = seal_core::json::parse(text.as_bytes(), u64::MAX).unwrap();
        prop_assert_eq!(canonical_bytes(&reparsed).unwrap(), want);
    }

    /// Canonical bytes are a fixed point: parse(canonical(v)) canonicalizes to the same bytes,
    /// and so hashes to the same sha256.
    #[test]
    fn canonical_bytes_survive_a_reparse(v in json_value()) {
        let (bytes, hash) = canonical_with_hash(&v).unwrap();
        prop_assert!(std::str::from_utf8(&bytes).is_ok());
        let reparsed = seal_core::json::parse(&bytes, u64::MAX).unwrap();
        let (again, hash_again) = canonical_with_hash(&reparsed).unwrap();
        prop_assert_eq!(&again, &bytes);
        prop_assert_eq!(hash_again, hash);
        prop_assert_eq!(Hash::of(&bytes).to_string(), hex::encode(Sha256::digest(&bytes)));
    }

    /// seal's own JCS writer gives, byte for byte, what the `serde_json_canonicalizer` crate
    /// (the engine it replaced) gives: keys that sort differently in UTF-8 and UTF-16, every
    /// escape, every kind of number.
    #[test]
    fn the_writer_matches_the_reference_engine(v in json_value()) {
        let engine = serde_json_canonicalizer::to_vec(&v).unwrap();
        let ours = canonical_bytes(&v).unwrap();
        prop_assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&engine));
        prop_assert_eq!(canonical::canonical_value_bytes(&v).unwrap(), engine);
    }

    /// Numbers: every finite double within 2^53 round-trips through canonical text exactly.
    #[test]
    fn safe_doubles_round_trip(f in any::<f64>().prop_filter("safe", |f| f.is_finite() && f.abs() <= MAX_SAFE)) {
        let bytes = canonical_bytes(&json!(f)).unwrap();
        let back = seal_core::json::parse(&bytes, LIMIT).unwrap();
        let g = back.as_f64().unwrap();
        prop_assert!(g == f, "{} -> {} -> {}", f, String::from_utf8_lossy(&bytes), g);
    }
}
