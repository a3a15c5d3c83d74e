//! C2SP `tlog-cosignature`, the Ed25519 type (`cosignature/v1`, signed-note algorithm 0x04):
//! the statement a witness signs and every verifier checks, pure (bytes in, bytes out).
//!
//! A cosignature is a signed-note signature line `— <name> base64(key id ‖ timestamp ‖ sig)`:
//! the key id is the first 4 bytes of `SHA-256(name ‖ 0x0A ‖ 0x04 ‖ public key)`, the
//! timestamp is a big-endian u64 of POSIX seconds, and the Ed25519 signature is over
//! `cosignature/v1\ntime <timestamp>\n` followed by the whole checkpoint body (the note text up
//! to and including its last newline, no signature lines).
//!
//! Line syntax and key ids come from `signed_note` (docs/DECISIONS.md, "`tlog_tiles` and
//! `signed_note`"); only the cosigned message and the timestamp are ours, because `signed_note`
//! 0.2 predates the cosignature type. Verification is strict Ed25519 (small-order keys and
//! non-canonical signatures refused), as for seals and checkpoints. Checked against the spec's
//! example line and an independently made vector (`tests/data/witness/cosignature.json`).
//!
//! What we ignore, and why: ML-DSA-44 cosignatures and subtree cosigning (seal's witnesses and
//! verifiers agree on Ed25519; a line of another type is simply not one of our witnesses').

use base64::Engine as _;
use signed_note::Signature;

/// The signed-note signature type byte of an Ed25519 `cosignature/v1` key.
pub const ALG_COSIGNATURE_V1: u8 = 0x04;
/// The header line of the cosigned message (domain separation).
pub const HEADER: &str = "cosignature/v1";
/// Largest timestamp the spec allows (2^63 - 1).
const MAX_TIMESTAMP: u64 = i64::MAX as u64;

/// Why a cosignature could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum CosigError {
    #[error("cosignature line: {0}")]
    Line(String),
    #[error("cosigner name {0:?} is not a valid signed-note key name (no spaces, no '+')")]
    Name(String),
    #[error("cosignature timestamp {0} is outside 1..=2^63-1")]
    Timestamp(u64),
}

impl crate::fault::HasFault for CosigError {
    fn fault(&self) -> crate::fault::Fault {
        // Bad lines come from a witness's answer or the store; callers reclassify.
        crate::fault::Fault::Caller
    }
}

/// A witness a verifier trusts: its Ed25519 public key and, when the verifier knows it, the
/// name it cosigns under (without one, a line's own name is taken, and its key id must still
/// match the key under that name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessKey {
    pub name: Option<String>,
    pub public: [u8; 32],
}

impl WitnessKey {
    /// How this witness is named in messages.
    pub fn label(&self) -> String {
        match &self.name {
            Some(n) => n.clone(),
            None => format!("witness key {}", hex::encode(&self.public[..8])),
        }
    }
}

/// The `cosignature/v1` key id of an Ed25519 key under a name.
pub fn key_id(name: &str, public: &[u8; 32]) -> u32 {
    let mut key = vec![ALG_COSIGNATURE_V1];
    key.extend_from_slice(public);
    signed_note::key_id(name, &key)
}

/// The C2SP verifier key (vkey) `<name>+<hex key id>+<base64(0x04 ‖ public key)>`.
pub fn verifier_key(name: &str, public: &[u8; 32]) -> String {
    let mut key = vec![ALG_COSIGNATURE_V1];
    key.extend_from_slice(public);
    format!(
        "{name}+{:08x}+{}",
        key_id(name, public),
        base64::engine::general_purpose::STANDARD.encode(key)
    )
}

/// The exact bytes a witness signs for a checkpoint body at a time.
pub fn signed_message(timestamp: u64, body: &[u8]) -> Vec<u8> {
    let mut m = format!("{HEADER}\ntime {timestamp}\n").into_bytes();
    m.extend_from_slice(body);
    m
}

/// One parsed Ed25519 cosignature line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cosignature {
    pub name: String,
    pub key_id: u32,
    /// POSIX seconds at which the witness signed.
    pub timestamp: u64,
    pub signature: [u8; 64],
}

impl Cosignature {
    /// Reads a signature line (`— name base64…`, with or without its final newline); `Ok(None)`
    /// for a well-formed line of another shape (another signature type: not a cosignature).
    pub fn parse_line(line: &[u8]) -> Result<Option<Cosignature>, CosigError> {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let sig = Signature::from_bytes(line).map_err(|e| CosigError::Line(e.to_string()))?;
        Cosignature::from_signature(&sig)
    }

    /// The cosignature a signed-note signature carries, if it has the `cosignature/v1` shape
    /// (8 bytes of timestamp, 64 of signature).
    pub fn from_signature(sig: &Signature) -> Result<Option<Cosignature>, CosigError> {
        let bytes = sig.signature();
        if bytes.len() != 8 + 64 {
            return Ok(None);
        }
        let (ts, rest) = bytes.split_at(8);
        let timestamp = u64::from_be_bytes(
            ts.try_into()
                .map_err(|_| CosigError::Line("timestamp".into()))?,
        );
        if timestamp == 0 || timestamp > MAX_TIMESTAMP {
            return Err(CosigError::Timestamp(timestamp));
        }
        let signature: [u8; 64] = rest
            .try_into()
            .map_err(|_| CosigError::Line("signature is not 64 bytes".into()))?;
        Ok(Some(Cosignature {
            name: sig.name().to_string(),
            key_id: sig.id(),
            timestamp,
            signature,
        }))
    }

    /// The signature line, newline-terminated, as a note carries it.
    pub fn to_line(&self) -> String {
        let mut payload = self.key_id.to_be_bytes().to_vec();
        payload.extend_from_slice(&self.timestamp.to_be_bytes());
        payload.extend_from_slice(&self.signature);
        format!(
            "— {} {}\n",
            self.name,
            base64::engine::general_purpose::STANDARD.encode(payload)
        )
    }

    /// Whether this line is a valid cosignature of `body` by `key`: the name matches (when the
    /// key has one), the key id is the key's under that name, the signature verifies strictly.
    pub fn verifies(&self, body: &[u8], key: &WitnessKey) -> bool {
        if key.name.as_deref().is_some_and(|n| n != self.name) {
            return false;
        }
        if self.key_id != key_id(&self.name, &key.public) {
            return false;
        }
        let Ok(public) = ed25519_dalek::VerifyingKey::from_bytes(&key.public) else {
            return false;
        };
        let sig = ed25519_dalek::Signature::from_bytes(&self.signature);
        public
            .verify_strict(&signed_message(self.timestamp, body), &sig)
            .is_ok()
    }
}

/// Cosigns a checkpoint body at `timestamp` with whatever holds the witness's private key.
pub fn cosign(
    name: &str,
    public: &[u8; 32],
    timestamp: u64,
    body: &[u8],
    sign: &dyn Fn(&[u8]) -> [u8; 64],
) -> Result<Cosignature, CosigError> {
    if !signed_note::is_key_name_valid(name) {
        return Err(CosigError::Name(name.to_string()));
    }
    if timestamp == 0 || timestamp > MAX_TIMESTAMP {
        return Err(CosigError::Timestamp(timestamp));
    }
    Ok(Cosignature {
        name: name.to_string(),
        key_id: key_id(name, public),
        timestamp,
        signature: sign(&signed_message(timestamp, body)),
    })
}

/// The indices (into `keys`) of the trusted witnesses with at least one valid cosignature of
/// `body` among `lines`: each witness counts once, however many lines it has.
pub fn cosigners(body: &[u8], lines: &[Cosignature], keys: &[WitnessKey]) -> Vec<usize> {
    (0..keys.len())
        .filter(|&i| lines.iter().any(|c| c.verifies(body, &keys[i])))
        .collect()
}

/// The cosignature lines of a text made of signature lines (a witness's answer, a stored
/// cosignature, a note's signature block); lines of other signature types are skipped, a line
/// that is not a signature line at all is an error.
pub fn parse_lines(text: &[u8]) -> Result<Vec<Cosignature>, CosigError> {
    let mut out = Vec::new();
    for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        if let Some(c) = Cosignature::parse_line(line)? {
            out.push(c);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::Signer;

    /// The example of C2SP tlog-cosignature: its witness line carries the timestamp the spec's
    /// signed-message example shows, under the key id its base64 starts with.
    #[test]
    fn the_spec_example_line_reads_as_its_signed_message_says() {
        let line = "— witness.example.com/w1 jWbPPwAAAABkGFDLEZMHwSRaJNiIDoe9DYn/zXcrtPHeolMI5OWXEhZCB9dlrDJsX3b2oyin1nPZqhf5nNo0xUe+mbIUBkBIfZ+qnA==";
        let c = Cosignature::parse_line(line.as_bytes()).unwrap().unwrap();
        assert_eq!(c.name, "witness.example.com/w1");
        assert_eq!(c.key_id, 0x8d66_cf3f);
        assert_eq!(c.timestamp, 1_679_315_147);
        let body =
            "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n";
        assert_eq!(
            String::from_utf8(signed_message(c.timestamp, body.as_bytes())).unwrap(),
            "cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
        );
        assert_eq!(c.to_line(), format!("{line}\n"));
        // The log's own line in the same example is a plain Ed25519 signature, not a cosignature.
        let log_line = "— example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=";
        assert_eq!(Cosignature::parse_line(log_line.as_bytes()).unwrap(), None);
    }

    /// A vector made without seal (`tools/cosignature_vector.py`, Python `cryptography`):
    /// key id, verifier key, signed message and the whole line, byte for byte.
    #[test]
    fn an_independently_made_cosignature_is_reproduced_and_verifies() {
        let v: serde_json::Value = serde_json::from_str(include_str!(
            "../../../../tests/data/witness/cosignature.json"
        ))
        .unwrap();
        let s = |k: &str| v[k].as_str().unwrap().to_string();
        let seed: [u8; 32] = hex::decode(s("seed_hex")).unwrap().try_into().unwrap();
        let sk = ed25519_dalek::SigningKey::from_bytes(&seed);
        let public = sk.verifying_key().to_bytes();
        assert_eq!(hex::encode(public), s("public_hex"));
        let name = s("name");
        assert_eq!(format!("{:08x}", key_id(&name, &public)), s("key_id_hex"));
        assert_eq!(verifier_key(&name, &public), s("verifier_key"));
        let (ts, body) = (v["timestamp"].as_u64().unwrap(), s("body"));
        assert_eq!(
            signed_message(ts, body.as_bytes()),
            s("signed_message").as_bytes()
        );
        let made = cosign(&name, &public, ts, body.as_bytes(), &|m| {
            sk.sign(m).to_bytes()
        })
        .unwrap();
        assert_eq!(made.to_line(), s("line"));
        let read = Cosignature::parse_line(s("line").as_bytes())
            .unwrap()
            .unwrap();
        let key = WitnessKey {
            name: Some(name),
            public,
        };
        assert!(read.verifies(body.as_bytes(), &key));
    }

    #[test]
    fn cosignatures_verify_only_for_their_key_name_and_body() {
        let sk = ed25519_dalek::SigningKey::from_bytes(&[5u8; 32]);
        let public = sk.verifying_key().to_bytes();
        let body = b"seal.test/log\n2\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n";
        let c = cosign("w.test/1", &public, 1_700_000_000, body, &|m| {
            sk.sign(m).to_bytes()
        })
        .unwrap();
        let key = WitnessKey {
            name: Some("w.test/1".into()),
            public,
        };
        assert!(c.verifies(body, &key));
        let unnamed = WitnessKey { name: None, public };
        assert!(c.verifies(body, &unnamed));
        assert!(!c.verifies(
            b"seal.test/log\n3\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
            &key
        ));
        let renamed = WitnessKey {
            name: Some("w.test/2".into()),
            public,
        };
        assert!(!c.verifies(body, &renamed));
        let mut later = c.clone();
        later.timestamp += 1;
        assert!(!later.verifies(body, &key), "the timestamp is signed");
        let back = Cosignature::parse_line(c.to_line().as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(back, c);
        assert_eq!(cosigners(body, &[later, c], &[renamed, key]), vec![1]);
        assert!(matches!(
            cosign("bad name", &public, 1, body, &|m| sk.sign(m).to_bytes()),
            Err(CosigError::Name(_))
        ));
        assert!(matches!(
            cosign("w", &public, 0, body, &|m| sk.sign(m).to_bytes()),
            Err(CosigError::Timestamp(0))
        ));
    }
}
