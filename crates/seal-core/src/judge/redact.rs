//! Secrets out of stored answers (DESIGN §4): an endpoint or a gateway may echo the request's
//! `Authorization` header in its answer ("Incorrect API key provided: Bearer sk-…"). Before a
//! raw answer is stored, every configured secret (both judges' API keys, the API bearer token,
//! the seed salt), as it is and as it appears inside a JSON string, is replaced by
//! `[redacted]`; the SlotMeta then records the sha256 of the bytes as they were received
//! (`unredactedRawHash`), so that the redaction itself is on record. The `Bearer` form is covered
//! because the secret is replaced wherever it occurs.

use crate::canonical::Hash;

/// What replaces a secret.
pub const MARK: &[u8] = b"[redacted]";

/// Secrets shorter than this are not searched for (they would match ordinary text).
pub const MIN_SECRET_BYTES: usize = 8;

/// The secrets to scrub, each with its JSON-escaped form when that differs.
#[derive(Clone, Default)]
pub struct Redactor {
    needles: Vec<Vec<u8>>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} needles)", self.needles.len())
    }
}

impl Redactor {
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Redactor {
        let mut needles: Vec<Vec<u8>> = Vec::new();
        for s in secrets {
            if s.len() < MIN_SECRET_BYTES {
                continue;
            }
            needles.push(s.as_bytes().to_vec());
            if let Ok(quoted) = serde_json::to_string(s) {
                let escaped = quoted.trim_matches('"');
                if escaped != s {
                    needles.push(escaped.as_bytes().to_vec());
                }
            }
        }
        // Longest first: a secret that contains another is replaced whole.
        needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
        needles.dedup();
        Redactor { needles }
    }

    /// The bytes with every secret replaced, and the hash of the original bytes if anything
    /// was replaced.
    pub fn scrub(&self, bytes: &[u8]) -> (Vec<u8>, Option<Hash>) {
        let mut out = bytes.to_vec();
        let mut changed = false;
        for needle in &self.needles {
            if let Some(replaced) = replace_all(&out, needle) {
                out = replaced;
                changed = true;
            }
        }
        let original = changed.then(|| Hash::of(bytes));
        (out, original)
    }
}

fn replace_all(hay: &[u8], needle: &[u8]) -> Option<Vec<u8>> {
    let first = find(hay, needle, 0)?;
    let mut out = Vec::with_capacity(hay.len());
    let mut from = 0;
    let mut at = Some(first);
    while let Some(i) = at {
        out.extend_from_slice(&hay[from..i]);
        out.extend_from_slice(MARK);
        from = i + needle.len();
        at = find(hay, needle, from);
    }
    out.extend_from_slice(&hay[from..]);
    Some(out)
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_secret_and_its_bearer_form_is_replaced() {
        let r = Redactor::new(["sk-live-abcdef123456", "short", "tok/with\"quote"]);
        let body = br#"{"error":"Incorrect API key provided: Bearer sk-live-abcdef123456 (sk-live-abcdef123456)","t":"tok/with\"quote","s":"short"}"#;
        let (out, original) = r.scrub(body);
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("sk-live"), "{text}");
        assert!(text.contains("Bearer [redacted] ([redacted])"), "{text}");
        assert!(text.contains("short"), "short secrets are not searched");
        assert_eq!(original, Some(Hash::of(body)));
        let (same, none) = r.scrub(b"nothing here");
        assert_eq!(same, b"nothing here");
        assert_eq!(none, None);
    }
}
