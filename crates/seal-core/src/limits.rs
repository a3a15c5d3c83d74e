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

/// Stored documents of known small kinds, each refused past its bound before it is read or
/// parsed (docs/DESIGN.md §11: whoever writes the store can plant a document of any size, and
/// the doc limit, 64 MiB, is sized for evidence). The bounds are far above anything seal
/// writes (sizes measured on sealed-fixtures/ in the comments) and far below what a reader
/// can afford to hold and parse several of at once.
pub mod bounds {
    use crate::key::Key;

    /// `runs/<run>/seal.dsse.json`: one DSSE envelope over one in-toto statement (a subject
    /// digest, the predicate's outcome and hashes, one signature a key): 1,016 bytes sealed.
    pub const SEAL_ENVELOPE_BYTES: u64 = 256 * 1024;
    /// `log/entries/<n>` and `log/runs/<run>/<n>`: a leaf names a run, its outcome and a few
    /// hashes (412 bytes); the log's own parser refuses a leaf past the same bound. Read by
    /// the transparency log code (which names a planted leaf as a problem of the log instead
    /// of failing on it), not by the store's kind check.
    pub const LOG_ENTRY_BYTES: u64 = 64 * 1024;
    /// `receipts/<run>/…`: a MAC, the object's key and sha256, a time and a replica (~300
    /// bytes).
    pub const RECEIPT_BYTES: u64 = 64 * 1024;
    /// `runs/<run>/<roll>/cost-reservation.json`: a roll's price bound and its MAC (528 bytes).
    pub const COST_RESERVATION_BYTES: u64 = 64 * 1024;
    /// `runs/<run>/reviews/<n>.dsse.json`: admission refuses a larger review envelope
    /// (`review::MAX_ENVELOPE_BYTES`, the same number; a test holds them equal).
    pub const REVIEW_BYTES: u64 = 256 * 1024;
    /// `runs/<run>/<roll>/roll.json`: the refs and hashes of a roll's documents, a set a slot
    /// and attempt (3,031 bytes for a roll of two slots; at most three attempts a slot).
    pub const ROLL_RECORD_BYTES: u64 = 1024 * 1024;
    /// `runs/<run>/<roll>/judge-<s>/attempt-<n>/meta.json`: an attempt's metadata, its error
    /// detail included (1,190 bytes).
    pub const SLOT_META_BYTES: u64 = 1024 * 1024;

    /// A kind of stored document and the most bytes one may hold.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct DocBound {
        /// What the document is, as an error names it ("seal envelope").
        pub kind: &'static str,
        pub bytes: u64,
    }

    /// The bound of the document stored at `key`, by its place in the store; `None` for a
    /// kind read up to the document limit (evidence, packages, judge answers, blobs) or one
    /// read by its own bounded reader (the log's entries, checkpoints and tiles).
    pub fn doc_bound(key: &Key) -> Option<DocBound> {
        let parts: Vec<&str> = key.as_str().split('/').collect();
        let bound = |kind, bytes| Some(DocBound { kind, bytes });
        match parts.as_slice() {
            ["runs", _, "seal.dsse.json"] => bound("seal envelope", SEAL_ENVELOPE_BYTES),
            ["runs", _, crate::key::REVIEWS, _] => bound("review", REVIEW_BYTES),
            ["runs", _, _, "roll.json"] => bound("roll record", ROLL_RECORD_BYTES),
            ["runs", _, _, "cost-reservation.json"] => {
                bound("cost reservation", COST_RESERVATION_BYTES)
            }
            ["runs", _, _, _, _, "meta.json"] => bound("attempt's meta", SLOT_META_BYTES),
            ["receipts", ..] => bound("receipt", RECEIPT_BYTES),
            _ => None,
        }
    }
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

    #[test]
    fn documents_of_small_kinds_are_bounded_by_their_key() {
        use super::bounds::*;
        let bound = |k: &str| doc_bound(&crate::key::Key::parse(k).unwrap()).map(|b| b.kind);
        assert_eq!(bound("runs/r1/seal.dsse.json"), Some("seal envelope"));
        assert_eq!(
            bound("runs/r1/reviews/00000000000000000001.dsse.json"),
            Some("review")
        );
        assert_eq!(bound("runs/r1/roll-2/roll.json"), Some("roll record"));
        assert_eq!(
            bound("runs/r1/roll-1/cost-reservation.json"),
            Some("cost reservation")
        );
        assert_eq!(
            bound("runs/r1/roll-1/judge-a/attempt-2/meta.json"),
            Some("attempt's meta")
        );
        assert_eq!(bound("receipts/r1/roll-1/roll.json"), Some("receipt"));
        assert_eq!(REVIEW_BYTES, crate::review::MAX_ENVELOPE_BYTES);
        for unbounded in [
            "runs/r1/evidence.json",
            "runs/r1/header.json",
            "runs/r1/roll-1/proof-package.json",
            "runs/r1/roll-1/judge-a/attempt-1/raw.json",
            "log/entries/00000000000000000001",
            "cas/sha256/aa/aa",
        ] {
            assert_eq!(bound(unbounded), None, "{unbounded}");
        }
    }
}
