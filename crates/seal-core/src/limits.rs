//! Work bounds of one proof package (DESIGN §8, "Admission and limits"), checked on the raw
//! bytes **before** the document is parsed into a tree: a streaming pass that counts the
//! elements of `events`, `actions` and `frames` and allocates nothing per element, so a package
//! of 150,000 small events is refused for the price of reading it once.
//!
//! Bytes that are not JSON pass here unchanged; the strict parser that follows names the error.

use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;

/// Most elements a proof package may carry (config `[limits]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackageLimits {
    pub max_events: usize,
    pub max_actions: usize,
    pub max_frames: usize,
}

impl Default for PackageLimits {
    fn default() -> PackageLimits {
        PackageLimits {
            max_events: 20_000,
            max_actions: 5_000,
            max_frames: 2_000,
        }
    }
}

/// A bound a package is over: the field, its count and the limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} has {count} elements, over the limit of {limit} (config [limits] max_{field})")]
pub struct OverLimit {
    pub field: &'static str,
    pub count: usize,
    pub limit: usize,
}

struct Count(usize);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Count, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
                let mut n = 0usize;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Count(n))
            }
            // Any other value counts as none: the schema check reports it.
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Count, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Count(0))
            }
            fn visit_unit<E>(self) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Count, E> {
                Ok(Count(0))
            }
            fn visit_str<E>(self, _: &str) -> Result<Count, E> {
                Ok(Count(0))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
struct Counts {
    #[serde(default)]
    events: Option<Count>,
    #[serde(default)]
    actions: Option<Count>,
    #[serde(default)]
    frames: Option<Count>,
}

/// Checks the element counts of a proof package's bytes against `limits`.
pub fn check_package(bytes: &[u8], limits: &PackageLimits) -> Result<(), OverLimit> {
    let Ok(c) = serde_json::from_slice::<Counts>(bytes) else {
        return Ok(());
    };
    let n = |c: Option<Count>| c.map(|c| c.0).unwrap_or(0);
    for (field, count, limit) in [
        ("events", n(c.events), limits.max_events),
        ("actions", n(c.actions), limits.max_actions),
        ("frames", n(c.frames), limits.max_frames),
    ] {
        if count > limit {
            return Err(OverLimit {
                field,
                count,
                limit,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_without_building_the_document() {
        let l = PackageLimits {
            max_events: 2,
            max_actions: 1,
            max_frames: 1,
        };
        assert!(check_package(
            br#"{"events":[{},{}],"actions":[1],"x":{"events":[1,2,3]}}"#,
            &l
        )
        .is_ok());
        let e = check_package(br#"{"events":[{"a":[1]},{},{}]}"#, &l).unwrap_err();
        assert_eq!((e.field, e.count, e.limit), ("events", 3, 2));
        assert!(check_package(b"not json", &l).is_ok());
        assert!(check_package(br#"{"events":"x"}"#, &l).is_ok());
    }
}
