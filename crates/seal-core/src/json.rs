//! Strict JSON input: the one parser every outside document goes through.
//!
//! `serde_json` silently keeps the last of two duplicate keys and silently rounds integers
//! beyond 2^64 to doubles. For evidence that decides an outcome both are attacks
//! (`{"outcome":"fail","outcome":"pass"}`), so [`parse`] refuses duplicate keys, numbers JCS
//! cannot carry exactly, nesting deeper than [`MAX_DEPTH`], and input over a size limit.

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

use crate::canonical::MAX_SAFE_INTEGER;

/// Deepest nesting accepted; real documents are under 12 levels deep.
pub const MAX_DEPTH: usize = 64;

/// Why bytes are not an acceptable JSON document.
#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    #[error("document is {size} bytes, over the limit of {limit} bytes")]
    TooLarge { size: u64, limit: u64 },
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
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = StrictSeed { depth: 0 }
        .deserialize(&mut de)
        .map_err(|e| JsonError::Syntax(explain(bytes, &e)))?;
    de.end().map_err(|e| JsonError::Syntax(e.to_string()))?;
    Ok(v)
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

    #[test]
    fn trailing_garbage_is_refused() {
        assert!(parse(b"{} {}", L).is_err());
        assert!(parse(b"", L).is_err());
    }
}
