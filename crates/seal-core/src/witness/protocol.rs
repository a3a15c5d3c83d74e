//! C2SP `tlog-witness` on the wire, pure: the `add-checkpoint` request body, the 409 size body,
//! the cosignature answer, and the monitoring path of a log (`<sha256(origin) hex>/checkpoint`).
//!
//! Request body: `old <size>\n`, at most 63 lines of base64 consistency-proof hashes, an empty
//! line, then the signed checkpoint note. Sizes are ASCII decimal without leading zeroes (`0`
//! alone for zero), so one size has one spelling and a body has one parse.
//!
//! A body that breaks any of these rules is refused whole (400) before any signature
//! is checked or any state is read; the witness then works on checked values only.

use base64::Engine as _;
use sha2::Digest as _;

use crate::tlog::NodeHash;

/// Most consistency-proof lines a client may send (the spec's bound).
pub const MAX_PROOF_LINES: usize = 63;
/// Largest `add-checkpoint` body a witness reads (a note with a few hundred signatures fits).
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// Content type of the 409 answer: the witness's size, in decimal, and a newline.
pub const SIZE_CONTENT_TYPE: &str = "text/x.tlog.size";
/// The submission path, under the witness's URL prefix.
pub const ADD_CHECKPOINT: &str = "add-checkpoint";

/// Why a body is not a well-formed protocol message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ProtocolError(pub String);

fn bad(msg: impl Into<String>) -> ProtocolError {
    ProtocolError(msg.into())
}

/// A parsed `add-checkpoint` request: nothing in it is verified yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddCheckpoint {
    /// The size of the checkpoint the client believes the witness holds.
    pub old: u64,
    /// The RFC 6962 consistency proof from `old` to the checkpoint's size.
    pub proof: Vec<NodeHash>,
    /// The signed checkpoint note, exactly as sent.
    pub note: Vec<u8>,
}

/// Parses a decimal size: digits only, no sign, no leading zero unless the size is zero.
pub fn parse_size(s: &str) -> Result<u64, ProtocolError> {
    let ok =
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    if !ok {
        return Err(bad(format!(
            "{:?} is not a tree size (decimal digits, no leading zero)",
            shown(s)
        )));
    }
    s.parse()
        .map_err(|_| bad(format!("{:?} is not a 64-bit tree size", shown(s))))
}

/// At most 40 characters of hostile text, control characters escaped.
fn shown(s: &str) -> String {
    s.chars().take(40).flat_map(char::escape_default).collect()
}

/// The request body.
pub fn encode_add_checkpoint(old: u64, proof: &[NodeHash], note: &[u8]) -> Vec<u8> {
    let mut out = format!("old {old}\n").into_bytes();
    for h in proof {
        out.extend_from_slice(
            base64::engine::general_purpose::STANDARD
                .encode(h)
                .as_bytes(),
        );
        out.push(b'\n');
    }
    out.push(b'\n');
    out.extend_from_slice(note);
    out
}

/// Parses a request body (see the module doc); every rule broken is a [`ProtocolError`].
pub fn parse_add_checkpoint(body: &[u8]) -> Result<AddCheckpoint, ProtocolError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(bad(format!("body over {MAX_BODY_BYTES} bytes")));
    }
    let split = body
        .windows(2)
        .position(|w| w == b"\n\n")
        .ok_or_else(|| bad("no empty line between the old size and the checkpoint"))?;
    let head = std::str::from_utf8(&body[..split])
        .map_err(|_| bad("the old size and proof lines are not UTF-8"))?;
    let mut lines = head.split('\n');
    let old_line = lines.next().unwrap_or_default();
    let old = parse_size(
        old_line
            .strip_prefix("old ")
            .ok_or_else(|| bad("the first line must be `old <size>`"))?,
    )?;
    let mut proof = Vec::new();
    for line in lines {
        if proof.len() == MAX_PROOF_LINES {
            return Err(bad(format!(
                "more than {MAX_PROOF_LINES} consistency proof lines"
            )));
        }
        proof.push(parse_hash(line)?);
    }
    Ok(AddCheckpoint {
        old,
        proof,
        note: body[split + 2..].to_vec(),
    })
}

fn parse_hash(line: &str) -> Result<NodeHash, ProtocolError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(line)
        .map_err(|_| bad(format!("proof line {:?} is not base64", shown(line))))?;
    bytes.try_into().map_err(|_| {
        bad(format!(
            "proof line {:?} is not a 32-byte hash",
            shown(line)
        ))
    })
}

/// The 409 body: the witness's size and a newline.
pub fn encode_size(size: u64) -> String {
    format!("{size}\n")
}

/// Parses a 409 body.
pub fn parse_size_body(body: &[u8]) -> Result<u64, ProtocolError> {
    let text = std::str::from_utf8(body).map_err(|_| bad("the size body is not UTF-8"))?;
    parse_size(
        text.strip_suffix('\n')
            .ok_or_else(|| bad("the size body must end in a newline"))?,
    )
}

/// The lowercase hex SHA-256 of a log's origin: its folder under the monitoring prefix.
pub fn origin_hash(origin: &str) -> String {
    hex::encode(sha2::Sha256::digest(origin.as_bytes()))
}

/// `<prefix>/<sha256(origin) hex>/checkpoint`: where a witness serves its latest cosigned
/// checkpoint of a log.
pub fn checkpoint_url(prefix: &str, origin: &str) -> String {
    format!(
        "{}/{}/checkpoint",
        prefix.trim_end_matches('/'),
        origin_hash(origin)
    )
}

/// `<prefix>/add-checkpoint`.
pub fn add_checkpoint_url(prefix: &str) -> String {
    format!("{}/{ADD_CHECKPOINT}", prefix.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The request body of C2SP tlog-witness's example, byte for byte.
    const SPEC_EXAMPLE: &str = "old 20852014
PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=
jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=
5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=
/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=

example.com/behind-the-sofa
20852163
CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=

— example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=
— example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=
";

    #[test]
    fn the_spec_example_request_parses_and_encodes_back() {
        let req = parse_add_checkpoint(SPEC_EXAMPLE.as_bytes()).unwrap();
        assert_eq!(req.old, 20_852_014);
        assert_eq!(req.proof.len(), 4);
        assert!(req
            .note
            .starts_with(b"example.com/behind-the-sofa\n20852163\n"));
        assert_eq!(
            encode_add_checkpoint(req.old, &req.proof, &req.note),
            SPEC_EXAMPLE.as_bytes()
        );
        let note = signed_note::Note::from_bytes(&req.note).unwrap();
        assert_eq!(
            note.text(),
            b"example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
        );
    }

    #[test]
    fn malformed_bodies_are_refused_whole() {
        let note = "o\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— o AAAA\n";
        for bad in [
            format!("old 01\n\n{note}"),
            format!("old +1\n\n{note}"),
            format!("old -0\n\n{note}"),
            format!("old 1\n{note}"),
            format!("new 1\n\n{note}"),
            format!("old  1\n\n{note}"),
            format!("old 1\nnot base64!\n\n{note}"),
            format!("old 1\nAAAA\n\n{note}"),
            format!("old 18446744073709551616\n\n{note}"),
            format!(
                "old 1\n{}\n{note}",
                "PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=\n".repeat(64)
            ),
        ] {
            assert!(parse_add_checkpoint(bad.as_bytes()).is_err(), "{bad:?}");
        }
        let ok = format!(
            "old 1\n{}\n{note}",
            "PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=\n".repeat(63)
        );
        assert_eq!(parse_add_checkpoint(ok.as_bytes()).unwrap().proof.len(), 63);
        assert!(parse_add_checkpoint(&vec![b'\n'; MAX_BODY_BYTES + 1]).is_err());
    }

    #[test]
    fn sizes_and_paths() {
        assert_eq!(parse_size_body(encode_size(0).as_bytes()).unwrap(), 0);
        assert_eq!(parse_size_body(b"20852014\n").unwrap(), 20_852_014);
        assert!(parse_size_body(b"12").is_err());
        assert!(parse_size_body(b"012\n").is_err());
        assert_eq!(
            checkpoint_url("http://w.test/", "example.com/behind-the-sofa"),
            format!(
                "http://w.test/{}/checkpoint",
                hex::encode(sha2::Sha256::digest(b"example.com/behind-the-sofa"))
            )
        );
        assert_eq!(
            add_checkpoint_url("http://w.test/x/"),
            "http://w.test/x/add-checkpoint"
        );
    }
}
