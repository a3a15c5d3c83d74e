//! Strict JSON input: the one parser every outside document goes through.
//!
//! `serde_json` silently keeps the last of two duplicate keys and silently rounds integers
//! beyond 2^64 to doubles. For evidence that decides an outcome both are attacks
//! (`{"outcome":"fail","outcome":"pass"}`), so [`parse`] refuses duplicate keys, numbers JCS
//! cannot carry exactly, nesting deeper than [`MAX_DEPTH`], and input over a size limit.
//!
//! Memory: a tree of `serde_json` values costs far more than its text where the text is dense
//! (a one-member object is 8 bytes of text and a 632-byte B-tree node; a bare `0,` is 2 bytes
//! and a 32-byte value), so a planted 16 MiB document took a reader past 300 MiB. Before a
//! tree is built for a document over [`ESTIMATE_FROM`] bytes, one pass over its bytes that
//! allocates nothing but a small stack reckons the tree's size ([`tree_estimate`]); a document
//! whose tree would take more than [`MAX_TREE_FACTOR`] times its size, or more than
//! [`MAX_TREE_BYTES`], is refused unparsed ([`JsonError::TooDense`]). The peak of a parse is
//! then the text and at most that multiple of it, never more than the cap.

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

use crate::canonical::MAX_SAFE_INTEGER;

/// Deepest nesting accepted; real documents are under 12 levels deep.
pub const MAX_DEPTH: usize = 64;

/// Documents up to this size are parsed without the estimate: the densest tree one can make
/// (about 90 times its text, a list of one-member objects) stays under 24 MiB.
pub const ESTIMATE_FROM: usize = 256 * 1024;

/// The most a document's tree may cost, as a multiple of its text. seal's documents cost 8 to
/// 15 times their canonical text (`tree_estimate` over sealed-fixtures/); the densest honest
/// text is a list of small actions (`{"seq":1,"t":"tap","x":2,"y":3}`, about 29 times). Only
/// text built to be dense (one-member objects, ~90 times) is past it.
pub const MAX_TREE_FACTOR: u64 = 32;

/// The most any document's tree may cost, whatever its size: a reader holds the text, the tree
/// and (for evidence) its canonical bytes again, two at once in `seal verify --all` on two
/// cores, under the CronJob's 256 MiB. The largest package [`crate::limits::PackageLimits`]
/// admits (20,000 events, 5,000 actions, 2,000 frames of seal's example shapes) makes a tree of
/// about 40 MiB; the evidence and snapshot that carry it, a few MiB more.
pub const MAX_TREE_BYTES: u64 = 64 * 1024 * 1024;

/// Why bytes are not an acceptable JSON document.
#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    #[error("document is {size} bytes, over the limit of {limit} bytes")]
    TooLarge { size: u64, limit: u64 },
    #[error("document is {size} bytes whose tree would take about {tree} bytes, over the {most} bytes a tree may take ({MAX_TREE_FACTOR} times its size, at most {MAX_TREE_BYTES}): refused before it is built")]
    TooDense { size: u64, tree: u64, most: u64 },
    #[error("not valid JSON: {0}")]
    Syntax(String),
}

/// Parses `bytes` as one strict JSON value (see the module doc).
pub fn parse(bytes: &[u8], limit: u64) -> Result<Value, JsonError> {
    if bytes.len() as u64 > limit {
        return Err(JsonError::TooLarge {
            size: bytes.len() as u64,
            limit,
        });
    }
    if bytes.len() > ESTIMATE_FROM {
        let size = bytes.len() as u64;
        let most = size.saturating_mul(MAX_TREE_FACTOR).min(MAX_TREE_BYTES);
        let tree = tree_estimate(bytes, most);
        if tree > most {
            return Err(JsonError::TooDense { size, tree, most });
        }
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = StrictSeed { depth: 0 }
        .deserialize(&mut de)
        .map_err(|e| JsonError::Syntax(explain(bytes, &e)))?;
    de.end().map_err(|e| JsonError::Syntax(e.to_string()))?;
    Ok(v)
}

/// Heap bytes of a tree of `serde_json` values on a 64-bit target, as [`tree_estimate`]
/// reckons them: a value (`size_of::<Value>()`), a B-tree node of a map (an internal one: 11
/// `String` keys, 11 values, 12 edges), what the allocator adds to each allocation.
const VALUE: u64 = 32;
const MAP_NODE: u64 = 728;
const ALLOC: u64 = 16;

/// About the heap bytes the tree of `bytes` takes once parsed (an upper estimate: every array
/// at the capacity its growth reaches, every map's nodes a third full, every string at its
/// escaped length), reckoned from the text alone without allocating; it stops counting once
/// past `stop`. Text that is not JSON gets some number: the parse that follows refuses it, having
/// built at most what the text before its error holds.
pub fn tree_estimate(bytes: &[u8], stop: u64) -> u64 {
    /// An open array or object: whether it is a map, and how many members it has so far.
    struct Open {
        map: bool,
        members: u64,
    }
    let closed = |o: &Open| -> u64 {
        match (o.map, o.members) {
            (_, 0) => 0,
            (false, n) => n.next_power_of_two().max(4) * VALUE + ALLOC,
            (true, n) if n <= 11 => MAP_NODE + ALLOC,
            (true, n) => n.div_ceil(4) * (MAP_NODE + ALLOC),
        }
    };
    let mut stack: Vec<Open> = Vec::new();
    let mut total = VALUE;
    // Whether the innermost open container has a member yet (its first value or key).
    let mut started = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        i += 1;
        let value_starts = match b {
            b'"' => {
                let start = i;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                let len = (i.min(bytes.len()) - start) as u64;
                i += 1;
                if len > 0 {
                    total += len.next_multiple_of(8) + ALLOC;
                }
                true
            }
            b'[' | b'{' => true,
            b',' => {
                if let Some(o) = stack.last_mut() {
                    o.members += 1;
                }
                false
            }
            b']' | b'}' => {
                if let Some(o) = stack.pop() {
                    total += closed(&o);
                }
                started = true;
                false
            }
            b' ' | b'\t' | b'\n' | b'\r' | b':' => false,
            // A number or a literal (or a byte the parse will refuse).
            _ => true,
        };
        if value_starts && !started {
            if let Some(o) = stack.last_mut() {
                o.members = 1;
            }
            started = true;
        }
        if b == b'[' || b == b'{' {
            if stack.len() > MAX_DEPTH {
                // The parse refuses this depth before it builds anything deeper.
                break;
            }
            stack.push(Open {
                map: b == b'{',
                members: 0,
            });
            started = false;
        }
        if total > stop {
            return total;
        }
    }
    // Containers still open where the text ends or the parse would stop.
    total + stack.iter().map(closed).sum::<u64>()
}

/// Parses `bytes` strictly, then into `T` (whose serde rules reject unknown fields).
pub fn parse_as<T: serde::de::DeserializeOwned>(bytes: &[u8], limit: u64) -> Result<T, JsonError> {
    let v = parse(bytes, limit)?;
    serde_json::from_value(v).map_err(|e| JsonError::Syntax(e.to_string()))
}

/// serde_json's message, with an unsafe number quoted as written (the visitor only sees the
/// rounded double, which may be a number that is not in the document).
fn explain(bytes: &[u8], e: &serde_json::Error) -> String {
    let msg = e.to_string();
    if !msg.contains(UNSAFE_MARK) {
        return msg;
    }
    let line_start = bytes
        .split(|b| *b == b'\n')
        .take(e.line().saturating_sub(1))
        .map(|l| l.len() + 1)
        .sum::<usize>();
    let end = (line_start + e.column()).min(bytes.len());
    let is_num = |b: u8| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E');
    let mut stop = end;
    while stop < bytes.len() && is_num(bytes[stop]) {
        stop += 1;
    }
    let mut start = end.min(stop);
    while start > 0 && is_num(bytes[start - 1]) {
        start -= 1;
    }
    let literal = String::from_utf8_lossy(&bytes[start..stop]);
    format!(
        "number {literal} at line {} column {} is beyond 2^53 and cannot be carried exactly; send it as a string",
        e.line(),
        e.column()
    )
}

const UNSAFE_MARK: &str = "is beyond 2^53";

struct StrictSeed {
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for StrictSeed {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(StrictVisitor { depth: self.depth })
    }
}

struct StrictVisitor {
    depth: usize,
}

fn unsafe_number<E: de::Error>(n: impl fmt::Display) -> E {
    E::custom(format_args!(
        "number {n} is beyond 2^53 and cannot be carried exactly; send it as a string"
    ))
}

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        if v.unsigned_abs() > MAX_SAFE_INTEGER {
            return Err(unsafe_number(v));
        }
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        if v > MAX_SAFE_INTEGER {
            return Err(unsafe_number(v));
        }
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        if !v.is_finite() || v.abs() > MAX_SAFE_INTEGER as f64 {
            return Err(unsafe_number(v));
        }
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| unsafe_number(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let depth = self.enter::<A::Error>()?;
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(StrictSeed { depth })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let depth = self.enter::<A::Error>()?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // One search of the map a member (the entry), not two (a lookup, then the insert):
            // key comparisons were a tenth of `seal verify`'s parsing.
            match out.entry(key) {
                serde_json::map::Entry::Occupied(o) => {
                    return Err(de::Error::custom(format_args!(
                        "duplicate key {:?}",
                        o.key()
                    )));
                }
                serde_json::map::Entry::Vacant(slot) => {
                    slot.insert(map.next_value_seed(StrictSeed { depth })?);
                }
            }
        }
        Ok(Value::Object(out))
    }
}

impl StrictVisitor {
    fn enter<E: de::Error>(&self) -> Result<usize, E> {
        if self.depth >= MAX_DEPTH {
            return Err(E::custom(format_args!(
                "nested deeper than {MAX_DEPTH} levels"
            )));
        }
        Ok(self.depth + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: u64 = 1 << 20;

    #[test]
    fn duplicate_keys_are_refused() {
        let e = parse(br#"{"outcome":"fail","outcome":"pass"}"#, L).unwrap_err();
        assert!(e.to_string().contains("duplicate key \"outcome\""), "{e}");
    }

    #[test]
    fn big_integers_are_refused() {
        for s in [
            "9007199254740993",
            "18446744073709551617",
            "-9007199254740993",
            "1e300",
        ] {
            let e = parse(s.as_bytes(), L).unwrap_err();
            assert!(e.to_string().contains("beyond 2^53"), "{s}: {e}");
        }
        assert!(parse(b"9007199254740991", L).is_ok());
        assert!(parse(b"0.5", L).is_ok());
    }

    #[test]
    fn deep_nesting_is_refused() {
        let s = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(parse(s.as_bytes(), L).is_err());
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(parse(ok.as_bytes(), L).is_ok());
    }

    #[test]
    fn size_limit_is_checked_before_parsing() {
        assert!(matches!(
            parse(b"[1,2,3]", 3),
            Err(JsonError::TooLarge { size: 7, limit: 3 })
        ));
    }

    /// A document built to be dense (one-member objects: 8 bytes of text, a B-tree node each)
    /// is refused before its tree is built; the same members spread over one object, and a
    /// long string, are not. Fails without the estimate (the dense one parses, at ~85 times
    /// its size).
    #[test]
    fn a_document_whose_tree_would_dwarf_it_is_refused_unbuilt() {
        let n = 200_000;
        let dense = format!("[{}]", vec![r#"{"a":0}"#; n].join(","));
        assert!(dense.len() > ESTIMATE_FROM);
        match parse(dense.as_bytes(), 1 << 30) {
            Err(JsonError::TooDense { size, tree, most }) => {
                assert_eq!(size, dense.len() as u64);
                assert_eq!(most, size * MAX_TREE_FACTOR);
                assert!(tree > most, "{tree}");
            }
            other => panic!("{:?}", other.map(|_| ())),
        }
        let e = parse_as::<Value>(dense.as_bytes(), 1 << 30).unwrap_err();
        assert!(e.to_string().contains("refused before it is built"), "{e}");
        let spread: Vec<String> = (0..n).map(|i| format!(r#""k{i}":"value {i}""#)).collect();
        let spread = format!("{{{}}}", spread.join(","));
        assert!(parse(spread.as_bytes(), 1 << 30).is_ok());
        let long = format!(r#"{{"s":"{}"}}"#, "x".repeat(4 << 20));
        assert!(parse(long.as_bytes(), 1 << 30).is_ok());
        // The densest honest text, a list of small actions, is under the factor.
        let actions: Vec<String> = (0..20_000)
            .map(|i| format!(r#"{{"seq":{i},"t":"tap","x":1,"y":2}}"#))
            .collect();
        assert!(parse(format!("[{}]", actions.join(",")).as_bytes(), 1 << 30).is_ok());
        // Past the cap, a tree is refused whatever its density: 80 MiB of strings.
        let strings = format!(
            "[{}]",
            vec![format!(r#""{}""#, "y".repeat(1000)); 80_000].join(",")
        );
        assert!(matches!(
            parse(strings.as_bytes(), 1 << 30),
            Err(JsonError::TooDense {
                most: MAX_TREE_BYTES,
                ..
            })
        ));
        // Small documents are not reckoned at all: the densest tree of one stays small.
        let small = format!("[{}]", vec![r#"{"a":0}"#; 1000].join(","));
        assert!(parse(small.as_bytes(), 1 << 30).is_ok());
    }

    /// The estimate's counting: members, nesting, strings, and text that ends inside a
    /// container or a string (it never panics on what is not JSON).
    #[test]
    fn the_estimate_counts_what_the_tree_holds() {
        assert_eq!(tree_estimate(b"[]", u64::MAX), VALUE);
        assert_eq!(
            tree_estimate(b"[1,2,3]", u64::MAX),
            VALUE + 4 * VALUE + ALLOC
        );
        assert_eq!(
            tree_estimate(br#"{"a":[1]}"#, u64::MAX),
            VALUE + (8 + ALLOC) + (4 * VALUE + ALLOC) + (MAP_NODE + ALLOC)
        );
        assert_eq!(
            tree_estimate(br#"["a,b]"]"#, u64::MAX),
            VALUE + (8 + ALLOC) + 4 * VALUE + ALLOC
        );
        for junk in [&b"[[[[\"[1,"[..], b"\"\\", b"}}}]]", b"{\"a"] {
            tree_estimate(junk, u64::MAX);
        }
        // Past `stop` it returns at once.
        let big = format!("[{}]", vec!["[1]"; 1000].join(","));
        assert!(tree_estimate(big.as_bytes(), 100) > 100);
    }

    /// seal's own documents (every JSON object of sealed-fixtures/) cost well under the bound
    /// as trees: an honest document is never refused as too dense.
    #[test]
    fn seals_own_documents_are_far_from_the_bound() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sealed-fixtures");
        let mut stack = vec![root];
        let (mut worst, mut seen) = (0.0f64, 0);
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                    continue;
                }
                let bytes = std::fs::read(&p).unwrap();
                if parse(&bytes, 1 << 30).is_err() || bytes.len() < 512 {
                    continue;
                }
                let ratio = tree_estimate(&bytes, u64::MAX) as f64 / bytes.len() as f64;
                seen += 1;
                if ratio > worst {
                    worst = ratio;
                    eprintln!("{ratio:.1}x {}", p.display());
                }
            }
        }
        assert!(seen > 100, "{seen}");
        assert!(worst < MAX_TREE_FACTOR as f64 * 0.6, "{worst}");
    }

    #[test]
    fn trailing_garbage_is_refused() {
        assert!(parse(b"{} {}", L).is_err());
        assert!(parse(b"", L).is_err());
    }
}
