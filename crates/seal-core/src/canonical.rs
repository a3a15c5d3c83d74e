//! Canonical bytes and content hashes: one JSON value, one byte string, one sha256.
//!
//! Every JSON document seal stores is written as its RFC 8785 (JCS) canonical form, so that a
//! value has exactly one hash on any machine. The writer ([`write_jcs`]) walks the parsed value
//! once into one buffer; numbers are formatted by `ryu-js` (ECMAScript's Number-to-String, what
//! JCS prescribes). It replaced the `serde_json_canonicalizer` crate's serializer, which re-parsed
//! every object key and buffered every member separately (a quarter of the daemon's CPU per run,
//! docs/BENCHMARKS.md); that crate stays the reference the tests compare against byte for byte.
//! JCS numbers are IEEE doubles: an integer beyond 2^53 would be rewritten silently, so
//! [`canonical_bytes`] refuses any number whose magnitude exceeds 2^53 instead of changing it.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use std::fmt;

/// The largest integer an IEEE double (and therefore JCS) represents exactly.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Why a value has no canonical form.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CanonicalError {
    /// A number JCS would silently change.
    #[error("number {number} at {pointer} is beyond 2^53 and would change in canonical JSON; carry it as a string")]
    UnsafeNumber { pointer: String, number: String },
    /// The value did not serialize (a map with non-string keys, say).
    #[error("value cannot be serialized as JSON: {0}")]
    Serialize(String),
}

/// A lowercase hex SHA-256 digest (64 characters). The only way to name a content hash.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Hash(String);

impl Hash {
    /// SHA-256 of `bytes`.
    pub fn of(bytes: &[u8]) -> Hash {
        Hash(hex::encode(Sha256::digest(bytes)))
    }

    /// Parses a lowercase hex digest; anything else is refused.
    pub fn parse(s: &str) -> Result<Hash, HashParseError> {
        if s.len() == 64
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            Ok(Hash(s.to_owned()))
        } else {
            Err(HashParseError(truncate_for_message(s)))
        }
    }

    /// The 32 bytes its 64 hex digits spell (a `Hash` is only ever made of lowercase hex:
    /// [`Hash::parse`], [`Hash::of`]).
    pub fn to_bytes(&self) -> [u8; 32] {
        fn nibble(c: u8) -> u8 {
            match c {
                b'0'..=b'9' => c - b'0',
                _ => c.wrapping_sub(b'a').wrapping_add(10),
            }
        }
        let mut out = [0u8; 32];
        for (byte, pair) in out.iter_mut().zip(self.0.as_bytes().chunks_exact(2)) {
            *byte = nibble(pair[0]) * 16 + nibble(pair[1]);
        }
        out
    }

    /// From a finished hasher.
    pub fn from_hasher(h: Sha256) -> Hash {
        Hash(hex::encode(h.finalize()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Hash {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.0)
    }
}

impl TryFrom<String> for Hash {
    type Error = HashParseError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        Hash::parse(&s)
    }
}

impl From<Hash> for String {
    fn from(h: Hash) -> String {
        h.0
    }
}

/// A string that is not a lowercase hex sha256.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{0:?} is not a lowercase hex sha256 (64 characters 0-9a-f)")]
pub struct HashParseError(String);

fn truncate_for_message(s: &str) -> String {
    s.chars().take(80).collect()
}

/// The RFC 8785 canonical bytes of `value`.
pub fn canonical_bytes<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CanonicalError> {
    let v = serde_json::to_value(value).map_err(|e| CanonicalError::Serialize(e.to_string()))?;
    canonical_value_bytes(&v)
}

/// [`canonical_bytes`] of a parsed document, without first copying it into a new `Value`
/// (what `serde_json::to_value` does for a `&Value`).
pub fn canonical_value_bytes(v: &Value) -> Result<Vec<u8>, CanonicalError> {
    check_numbers(v, &mut String::new())?;
    let mut out = Vec::with_capacity(256);
    write_jcs(v, &mut out)?;
    Ok(out)
}

/// A JSON object's canonical bytes, with the byte range of each member (`"key":value`) in
/// them, in their canonical order: what lets a caller hash the object without some of its
/// members (the JUDGING snapshot of a DECIDED evidence) from the bytes already written.
#[derive(Debug)]
pub struct CanonicalObject<'a> {
    pub bytes: Vec<u8>,
    pub members: Vec<(&'a str, std::ops::Range<usize>)>,
}

/// [`canonical_value_bytes`] of an object, with its members' ranges; `None` when `v` is not
/// an object.
pub fn canonical_object(v: &Value) -> Result<Option<CanonicalObject<'_>>, CanonicalError> {
    let Value::Object(map) = v else {
        return Ok(None);
    };
    check_numbers(v, &mut String::new())?;
    let sorted = sorted_members(map);
    let mut bytes = Vec::with_capacity(256);
    let mut members = Vec::with_capacity(sorted.len());
    bytes.push(b'{');
    for (i, (k, item)) in sorted.into_iter().enumerate() {
        if i > 0 {
            bytes.push(b',');
        }
        let start = bytes.len();
        write_string(k, &mut bytes)?;
        bytes.push(b':');
        write_jcs(item, &mut bytes)?;
        members.push((k.as_str(), start..bytes.len()));
    }
    bytes.push(b'}');
    Ok(Some(CanonicalObject { bytes, members }))
}

/// Appends the JCS form of `v` to `out` (RFC 8785 §3.2): no whitespace; literals as is;
/// numbers as IEEE doubles in ECMAScript form; strings with only `"`, `\\` and control
/// characters escaped (`\b \t \n \f \r`, else `\u00xx` in lowercase hex), exactly serde_json's
/// escaping; object members sorted by the UTF-16 code units of their keys.
fn write_jcs(v: &Value, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(n, out)?,
        Value::String(s) => write_string(s, out)?,
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_jcs(item, out)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            // A map iterates in UTF-8 byte order, i.e. code point order (serde_json's
            // `preserve_order` is off: `a_map_iterates_in_code_point_order`); JCS wants UTF-16
            // code unit order, which differs only between a character from U+E000 to U+FFFF
            // and one beyond U+FFFF, so members are sorted again only when two neighbours are
            // out of UTF-16 order (`the_writer_matches_the_reference_engine` draws such keys).
            // Checked pair by pair, so an insertion-ordered map would still be sorted. The
            // members are written in the map's order while that holds (one pass, no list of
            // members); at the first pair out of order, what was written of this object is
            // dropped and it is written again from a sorted list.
            let start = out.len();
            out.push(b'{');
            let mut previous: Option<&str> = None;
            let mut in_order = true;
            for (i, (k, item)) in map.iter().enumerate() {
                if previous.is_some_and(|p| !utf16_lt(p, k)) {
                    in_order = false;
                    break;
                }
                previous = Some(k);
                if i > 0 {
                    out.push(b',');
                }
                write_string(k, out)?;
                out.push(b':');
                write_jcs(item, out)?;
            }
            if !in_order {
                #[cfg(test)]
                WRITTEN_AGAIN.with(|n| n.set(n.get() + 1));
                out.truncate(start + 1);
                write_members(sorted_members(map).into_iter(), out)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

#[cfg(test)]
thread_local! {
    /// Objects this thread wrote again from a sorted list: the tests check that a map already
    /// in UTF-16 order takes the one-pass path (the bytes are the same either way).
    static WRITTEN_AGAIN: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// `a` sorts before `b` by UTF-16 code units. Keys are ASCII nearly always, and for keys
/// without a character from U+E000 up the byte order is the UTF-16 order.
fn utf16_lt(a: &str, b: &str) -> bool {
    let high = |k: &str| !k.is_ascii() && k.chars().any(|c| c >= '\u{E000}');
    if high(a) || high(b) {
        a.encode_utf16().cmp(b.encode_utf16()).is_lt()
    } else {
        a < b
    }
}

/// An object's members in UTF-16 key order (sorted only if the map's order is not that).
fn sorted_members(map: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut members: Vec<(&String, &Value)> = map.iter().collect();
    if !members.windows(2).all(|w| utf16_lt(w[0].0, w[1].0)) {
        members.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
    }
    members
}

fn write_members<'a>(
    members: impl Iterator<Item = (&'a String, &'a Value)>,
    out: &mut Vec<u8>,
) -> Result<(), CanonicalError> {
    for (i, (k, item)) in members.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_string(k, out)?;
        out.push(b':');
        write_jcs(item, out)?;
    }
    Ok(())
}

/// A number in ECMAScript form. An integer JSON number (serde_json keeps it as one) is the
/// double of the same value, and ECMAScript writes a safe integer as its decimal digits, so it
/// is formatted as an integer (a fifth of the canonical writer's time went to formatting
/// integers as doubles); any other number goes through `ryu-js`.
fn write_number(n: &serde_json::Number, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    let mut digits = itoa::Buffer::new();
    match (n.as_u64(), n.as_i64()) {
        (Some(u), _) if u <= MAX_SAFE_INTEGER => {
            out.extend_from_slice(digits.format(u).as_bytes());
        }
        (None, Some(i)) if i.unsigned_abs() <= MAX_SAFE_INTEGER => {
            out.extend_from_slice(digits.format(i).as_bytes());
        }
        _ => {
            let f = n
                .as_f64()
                .filter(|f| f.is_finite())
                .ok_or_else(|| CanonicalError::Serialize(format!("number {n} is not a double")))?;
            out.extend_from_slice(ryu_js::Buffer::new().format_finite(f).as_bytes());
        }
    }
    Ok(())
}

fn write_string(s: &str, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    serde_json::to_writer(&mut *out, s).map_err(|e| CanonicalError::Serialize(e.to_string()))
}

/// Canonical bytes and their hash, computed together because callers always need both.
pub fn canonical_with_hash<T: Serialize + ?Sized>(
    value: &T,
) -> Result<(Vec<u8>, Hash), CanonicalError> {
    let bytes = canonical_bytes(value)?;
    let hash = Hash::of(&bytes);
    Ok((bytes, hash))
}

/// Refuses numbers JCS would change; `pointer` is the JSON pointer of `v`.
pub fn check_numbers(v: &Value, pointer: &mut String) -> Result<(), CanonicalError> {
    // Nearly every document is safe: it is walked without building a pointer per member, and
    // the pointers are built only to name the first unsafe number.
    if numbers_are_safe(v) {
        return Ok(());
    }
    check_numbers_at(v, pointer)
}

fn numbers_are_safe(v: &Value) -> bool {
    match v {
        Value::Number(n) => number_is_safe(n),
        Value::Array(items) => items.iter().all(numbers_are_safe),
        Value::Object(map) => map.values().all(numbers_are_safe),
        _ => true,
    }
}

fn check_numbers_at(v: &Value, pointer: &mut String) -> Result<(), CanonicalError> {
    match v {
        Value::Number(n) => {
            if !number_is_safe(n) {
                return Err(CanonicalError::UnsafeNumber {
                    pointer: if pointer.is_empty() {
                        "/".into()
                    } else {
                        pointer.clone()
                    },
                    number: n.to_string(),
                });
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                check_numbers_at(item, pointer)?;
                pointer.truncate(len);
            }
            Ok(())
        }
        Value::Object(map) => {
            for (k, item) in map {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                check_numbers_at(item, pointer)?;
                pointer.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// True when the number survives a round trip through an IEEE double unchanged.
pub fn number_is_safe(n: &serde_json::Number) -> bool {
    if let Some(u) = n.as_u64() {
        u <= MAX_SAFE_INTEGER
    } else if let Some(i) = n.as_i64() {
        i.unsigned_abs() <= MAX_SAFE_INTEGER
    } else if let Some(f) = n.as_f64() {
        // Every double of magnitude >= 2^53 is an integer that may stand for several source
        // integers (18446744073709551617 parses as 2^64): refuse rather than guess.
        f.is_finite() && f.abs() <= MAX_SAFE_INTEGER as f64
    } else {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_objects_member_ranges_are_its_members_canonical_bytes() {
        let doc = json!({"b": 1, "phase": "DECIDED", "a": [1.5, {"z": null}], "\u{10000}": 2, "\u{E000}": {"y": 1, "x": 2}});
        let o = canonical_object(&doc).unwrap().unwrap();
        assert_eq!(o.bytes, canonical_value_bytes(&doc).unwrap());
        let keys: Vec<&str> = o.members.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ["a", "b", "phase", "\u{10000}", "\u{E000}"]);
        for (k, r) in &o.members {
            let alone = canonical_value_bytes(&json!({ *k: doc[*k] })).unwrap();
            assert_eq!(&o.bytes[r.clone()], &alone[1..alone.len() - 1], "{k}");
        }
        assert!(canonical_object(&json!([1])).unwrap().is_none());
        let e = canonical_object(&json!({"k/x": {"n": 9007199254740993u64}})).unwrap_err();
        assert!(e.to_string().contains("/k~1x/n"), "{e}");
    }

    #[test]
    fn a_hash_is_the_sha256_bytes_its_hex_spells() {
        use sha2::Digest as _;
        for data in [&b"seal"[..], b"", b"\xff\x00"] {
            let want: [u8; 32] = Sha256::digest(data).into();
            assert_eq!(Hash::of(data).to_bytes(), want);
            assert_eq!(Hash::parse(&hex::encode(want)).unwrap().to_bytes(), want);
        }
        assert_ne!(Hash::of(b"seal").to_bytes(), Hash::of(b"seaL").to_bytes());
    }

    /// Objects whose map order is UTF-16 order (ASCII and most keys) are written in one pass;
    /// only an object with a key from U+E000 before one beyond U+FFFF is written again.
    #[test]
    fn an_object_in_utf16_order_is_written_once() {
        let again = || WRITTEN_AGAIN.with(|n| n.get());
        let before = again();
        let v = serde_json::json!({"a": 1, "b": {"c": [1, {"d": 2, "\u{e9}": 3}]}, "\u{e000}": 0});
        assert_eq!(
            canonical_value_bytes(&v).unwrap(),
            "{\"a\":1,\"b\":{\"c\":[1,{\"d\":2,\"\u{e9}\":3}]},\"\u{e000}\":0}".as_bytes()
        );
        assert_eq!(again(), before, "in order: one pass");
        let v = serde_json::json!({"x": {"\u{e000}": 1, "\u{10000}": 2}});
        assert_eq!(
            canonical_value_bytes(&v).unwrap(),
            "{\"x\":{\"\u{10000}\":2,\"\u{e000}\":1}}".as_bytes()
        );
        assert_eq!(again(), before + 1, "the inner object, written again");
    }

    /// A JSON number stands for its IEEE double (RFC 8785 §3.2.2.3): a safe integer is written
    /// as its digits, one past 2^53 as the double it rounds to. The public writers refuse
    /// unsafe numbers before writing, so this reaches `write_number` directly.
    #[test]
    fn write_number_writes_the_double_of_the_number() {
        let written = |n: serde_json::Number| {
            let mut out = Vec::new();
            write_number(&n, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        let safe = MAX_SAFE_INTEGER;
        assert_eq!(written(safe.into()), "9007199254740991");
        assert_eq!(written((-(safe as i64)).into()), "-9007199254740991");
        assert_eq!(written((safe + 2).into()), "9007199254740992");
        assert_eq!(written((-(safe as i64) - 2).into()), "-9007199254740992");
        assert_eq!(written(u64::MAX.into()), "18446744073709552000");
        assert_eq!(written(0u64.into()), "0");
        assert_eq!(written((-1i64).into()), "-1");
    }

    /// The writer's order test: byte order for ASCII and below U+E000, UTF-16 code units once
    /// a character from U+E000 up meets one beyond U+FFFF (a surrogate pair, 0xD800.., sorts
    /// before 0xE000.. in UTF-16 but after it in UTF-8). The writer's output is also checked
    /// against the reference engine; this pins the one-pass path, which a wrong answer here
    /// would only send to the slower sorted path.
    #[test]
    fn utf16_lt_is_utf16_code_unit_order() {
        assert!(utf16_lt("a", "b"));
        assert!(!utf16_lt("b", "a"));
        assert!(!utf16_lt("a", "a"));
        assert!(utf16_lt("a", "ab"));
        assert!(utf16_lt("\u{e9}", "\u{4e2d}"));
        assert!(utf16_lt("\u{10000}", "\u{e000}"), "a surrogate pair first");
        assert!(!utf16_lt("\u{e000}", "\u{10000}"));
        assert!("\u{e000}" < "\u{10000}", "byte order says the opposite");
    }

    #[test]
    fn a_map_iterates_in_code_point_order() {
        // The JCS writer relies on it to skip sorting most objects; a dependency that turned
        // on serde_json's `preserve_order` would make maps iterate in insertion order.
        let v = json!({"b": 1, "a": 2, "\u{e9}": 3, "B": 4});
        let keys: Vec<&str> = v
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(keys, ["B", "a", "b", "\u{e9}"]);
        assert_eq!(
            canonical_value_bytes(&v).ok(),
            Some("{\"B\":4,\"a\":2,\"b\":1,\"\u{e9}\":3}".as_bytes().to_vec())
        );
    }

    #[test]
    fn hash_of_empty_is_the_known_vector() {
        assert_eq!(
            Hash::of(b"").as_str(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    /// Every text form of a hash is its lower-case hex (`Debug` with the algorithm): what
    /// error messages, keys and logs name is the digest itself.
    #[test]
    fn a_hash_reads_as_its_hex_in_every_text_form() {
        let h = Hash::of(b"");
        let hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        assert_eq!(AsRef::<str>::as_ref(&h), hex);
        assert_eq!(h.to_string(), hex);
        assert_eq!(format!("{h:?}"), format!("sha256:{hex}"));
        assert_eq!(String::from(h), hex);
    }

    /// A refused hash is quoted in the error, cut to its first 80 characters (input can be
    /// any size; the message stays readable).
    #[test]
    fn a_refused_hash_is_quoted_in_the_error_up_to_80_characters() {
        let err = Hash::parse("not-a-hash").unwrap_err();
        assert_eq!(err, HashParseError("not-a-hash".into()));
        assert!(
            err.to_string().starts_with("\"not-a-hash\" is not"),
            "{err}"
        );
        let long = "x".repeat(1000);
        assert_eq!(
            Hash::parse(&long).unwrap_err(),
            HashParseError("x".repeat(80))
        );
    }

    #[test]
    fn hash_parse_refuses_uppercase_and_short() {
        assert!(Hash::parse(&"A".repeat(64)).is_err());
        assert!(Hash::parse("abc").is_err());
        assert!(Hash::parse(&"a".repeat(64)).is_ok());
    }

    #[test]
    fn unsafe_integer_is_refused_with_pointer() {
        let v = json!({"rolls": [{"seed": 9007199254740993u64}]});
        let err = canonical_bytes(&v).unwrap_err();
        assert_eq!(
            err,
            CanonicalError::UnsafeNumber {
                pointer: "/rolls/0/seed".into(),
                number: "9007199254740993".into()
            }
        );
    }

    #[test]
    fn max_safe_integer_is_accepted() {
        let v = json!({"n": MAX_SAFE_INTEGER, "m": -(MAX_SAFE_INTEGER as i64)});
        assert_eq!(
            canonical_bytes(&v).unwrap(),
            br#"{"m":-9007199254740991,"n":9007199254740991}"#
        );
    }
}
