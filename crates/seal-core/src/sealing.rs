//! The seal: an in-toto Statement v1 about `runs/<runId>/evidence.json`, in a DSSE envelope,
//! signed with ed25519 (docs/DESIGN.md §6). Open formats so that an auditor needs nothing from us but
//! the public key (docs/VERIFYING.md does it in Python).
//!
//! The signature is over the DSSE pre-authentication encoding (PAE) of the payload bytes,
//! never over re-serialized JSON: `"DSSEv1" SP len(type) SP type SP len(payload) SP payload`,
//! lengths as ASCII decimal byte counts. `keyid` is the lowercase hex sha256 of the raw 32-byte
//! public key.
//!
//! What verification ignores, and why: envelope signatures by keys that are not trusted (an
//! envelope may carry several; one trusted valid signature suffices, none is a failure), and
//! unknown predicate fields (none are written; the predicate is compared with the evidence
//! field by field by `seal verify`).

use base64::Engine as _;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey};
use ed25519_dalek::Signer;
use serde::{Deserialize, Serialize};

use crate::canonical::{self, Hash};

pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
pub const PREDICATE_TYPE: &str = "https://wanxiang.ai/seal/playtest-decision/v1";

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("key {path}: {reason}")]
    Key { path: String, reason: String },
}

/// A key error naming `path` (a file, or a key id for a key not read from one).
pub fn key_err(path: &str, reason: impl Into<String>) -> KeyError {
    KeyError::Key {
        path: path.to_string(),
        reason: reason.into(),
    }
}

/// The DSSE pre-authentication encoding.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {} {} ",
        payload_type.len(),
        payload_type,
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// Lowercase hex sha256 of a raw 32-byte ed25519 public key.
pub fn key_id(public: &ed25519_dalek::VerifyingKey) -> String {
    Hash::of(public.as_bytes()).to_string()
}

/// A signing key. Zeroed on drop (ed25519-dalek's `zeroize` feature); `Debug` shows the key id.
pub struct SigningKey {
    inner: ed25519_dalek::SigningKey,
    pub key_id: String,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey(keyid {})", self.key_id)
    }
}

impl SigningKey {
    /// Parses a PKCS#8 PEM private key (v1 or v2); `name` (a path) is what errors name. Reading
    /// the file, and refusing one that group or others can read, is `seal_fs::keys`.
    pub fn from_pem(name: &str, pem: &str) -> Result<SigningKey, KeyError> {
        let inner = ed25519_dalek::SigningKey::from_pkcs8_pem(pem)
            .map_err(|e| key_err(name, format!("not a PKCS#8 PEM ed25519 private key: {e}")))?;
        Ok(SigningKey::from_dalek(inner))
    }

    pub fn from_dalek(inner: ed25519_dalek::SigningKey) -> SigningKey {
        let key_id = key_id(&inner.verifying_key());
        SigningKey { inner, key_id }
    }

    /// The key whose 32 secret bytes are `seed` (RFC 8032's private key): deterministic keys
    /// for tests and golden vectors.
    pub fn from_seed(seed: &[u8; 32]) -> SigningKey {
        SigningKey::from_dalek(ed25519_dalek::SigningKey::from_bytes(seed))
    }

    /// A fresh key from `rng` (the shell passes the operating system's; tests may seed one).
    pub fn generate(rng: &mut impl rand_core::CryptoRngCore) -> SigningKey {
        SigningKey::from_dalek(ed25519_dalek::SigningKey::generate(rng))
    }

    pub fn public(&self) -> PublicKey {
        PublicKey {
            inner: self.inner.verifying_key(),
            key_id: self.key_id.clone(),
        }
    }

    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.inner.sign(message).to_bytes()
    }

    /// The private key as PKCS#8 v1 (RFC 8410 §7: `PrivateKeyInfo` without the public key), the
    /// form `openssl genpkey -algorithm ed25519` writes and OpenSSL 3.0, Python `cryptography`
    /// and Go's `x509.ParsePKCS8PrivateKey` read. (A v2 `OneAsymmetricKey` with the public key
    /// is refused by some of them.) Loading accepts both.
    pub fn to_pkcs8_v1_der(&self) -> zeroize::Zeroizing<Vec<u8>> {
        let mut der = zeroize::Zeroizing::new(Vec::with_capacity(48));
        der.extend_from_slice(&PKCS8_V1_ED25519_PREFIX);
        der.extend_from_slice(self.inner.as_bytes());
        der
    }

    /// [`SigningKey::to_pkcs8_v1_der`] as a `PRIVATE KEY` PEM (64-column base64, LF).
    pub fn to_pkcs8_v1_pem(&self) -> zeroize::Zeroizing<String> {
        let b64 = zeroize::Zeroizing::new(
            base64::engine::general_purpose::STANDARD.encode(self.to_pkcs8_v1_der().as_slice()),
        );
        let mut pem = zeroize::Zeroizing::new(String::from("-----BEGIN PRIVATE KEY-----\n"));
        for line in b64.as_bytes().chunks(64) {
            // base64 output is ASCII: every chunk is valid UTF-8.
            pem.push_str(std::str::from_utf8(line).unwrap_or_default());
            pem.push('\n');
        }
        pem.push_str("-----END PRIVATE KEY-----\n");
        pem
    }
}

/// DER of RFC 8410's `PrivateKeyInfo` up to the 32 key bytes: SEQUENCE(46) { INTEGER 0 (v1),
/// SEQUENCE { OID 1.3.101.112 (id-Ed25519) }, OCTET STRING(34) { OCTET STRING(32) … } }.
const PKCS8_V1_ED25519_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// A trusted public key.
#[derive(Clone)]
pub struct PublicKey {
    inner: ed25519_dalek::VerifyingKey,
    pub key_id: String,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey(keyid {})", self.key_id)
    }
}

impl PublicKey {
    /// The raw 32-byte ed25519 public key.
    pub fn raw(&self) -> [u8; 32] {
        self.inner.to_bytes()
    }

    /// Parses an SPKI PEM ed25519 public key; `name` (a path) is what errors name.
    pub fn from_pem(name: &str, pem: &str) -> Result<PublicKey, KeyError> {
        let inner = ed25519_dalek::VerifyingKey::from_public_key_pem(pem)
            .map_err(|e| key_err(name, format!("not an SPKI PEM ed25519 public key: {e}")))?;
        // No private key makes a small-order point, and under one the non-strict equation
        // holds for forged signatures: such a "trusted" key can only be a plant.
        if inner.is_weak() {
            return Err(key_err(
                name,
                "a small-order (weak) ed25519 public key: it vouches for nothing",
            ));
        }
        Ok(PublicKey {
            key_id: key_id(&inner),
            inner,
        })
    }

    /// The key as an SPKI PEM (LF line ends), the form [`PublicKey::from_pem`] reads.
    pub fn to_pem(&self) -> Result<String, KeyError> {
        self.inner
            .to_public_key_pem(ed25519_dalek::pkcs8::spki::der::pem::LineEnding::LF)
            .map_err(|e| key_err(&self.key_id, e.to_string()))
    }

    /// The raw 32-byte ed25519 public key.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.inner.to_bytes()
    }

    /// Strict ed25519 verification of `signature` over `message` (as for seals: no
    /// malleable or small-order signatures).
    pub fn verify_strict(
        &self,
        message: &[u8],
        signature: &ed25519_dalek::Signature,
    ) -> Result<(), ed25519_dalek::SignatureError> {
        self.inner.verify_strict(message, signature)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvelopeSignature {
    pub keyid: String,
    pub sig: String,
}

/// A DSSE envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Envelope {
    pub payload: String,
    pub payload_type: String,
    pub signatures: Vec<EnvelopeSignature>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Digest {
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subject {
    pub name: String,
    pub digest: Digest,
}

/// What the seal states about a decided run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Predicate {
    pub run_id: String,
    pub outcome: String,
    pub decision: String,
    pub source_roll_id: Option<String>,
    pub consensus_hash: Option<String>,
    pub strategy_version: Option<String>,
    pub acceptance_mode: String,
    pub decided_at: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Statement {
    #[serde(rename = "_type")]
    pub statement_type: String,
    pub subject: Vec<Subject>,
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    pub predicate: Predicate,
}

impl Statement {
    pub fn new(evidence_key: &str, evidence_hash: &Hash, predicate: Predicate) -> Statement {
        Statement {
            statement_type: STATEMENT_TYPE.into(),
            subject: vec![Subject {
                name: evidence_key.into(),
                digest: Digest {
                    sha256: evidence_hash.to_string(),
                },
            }],
            predicate_type: PREDICATE_TYPE.into(),
            predicate,
        }
    }
}

/// The in-toto statement for a run's evidence (also what `seal verify` expects to find).
/// Only a DECIDED document has one: anything else is refused, never sealed with blanks.
pub fn statement_for(
    run: &crate::ids::RunId,
    evidence: &crate::doc::Evidence,
    evidence_hash: &Hash,
) -> Result<Statement, SealError> {
    use crate::doc::Phase;
    let (Phase::Decided, Some(outcome), Some(decision), Some(pg)) = (
        evidence.phase,
        evidence.outcome,
        evidence.decision.as_ref(),
        evidence.final_postguard.as_ref(),
    ) else {
        return Err(SealError::NotDecided { run: run.clone() });
    };
    Ok(Statement::new(
        crate::key::Key::evidence(run).as_str(),
        evidence_hash,
        Predicate {
            run_id: evidence.run_id.clone(),
            outcome: outcome.as_str().to_string(),
            decision: decision.action.as_str().to_string(),
            source_roll_id: evidence.source_roll_id.map(|r| r.to_string()),
            consensus_hash: evidence
                .judge
                .as_ref()
                .and_then(|j| j.consensus_hash.as_ref())
                .map(|h| h.to_string()),
            strategy_version: evidence.judge.as_ref().map(|j| j.strategy_version.clone()),
            acceptance_mode: evidence.acceptance_mode.as_str().to_string(),
            decided_at: pg.decided_at.clone(),
        },
    ))
}

/// Signs a statement: canonical payload bytes, PAE, ed25519.
pub fn sign(
    key: &SigningKey,
    statement: &Statement,
) -> Result<Envelope, canonical::CanonicalError> {
    Ok(envelope(key, &canonical::canonical_bytes(statement)?))
}

/// The DSSE envelope of an in-toto statement's canonical bytes, with one ed25519 signature
/// over their PAE: what seals, reviews and reliability reports are.
pub fn envelope(key: &SigningKey, payload: &[u8]) -> Envelope {
    let sig = key.sign(&pae(PAYLOAD_TYPE, payload));
    let b64 = base64::engine::general_purpose::STANDARD;
    Envelope {
        payload: b64.encode(payload),
        payload_type: PAYLOAD_TYPE.into(),
        signatures: vec![EnvelopeSignature {
            keyid: key.key_id.clone(),
            sig: b64.encode(sig),
        }],
    }
}

/// Why an envelope does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("payloadType is {0:?}, expected {PAYLOAD_TYPE}")]
    PayloadType(String),
    #[error("payload is not base64: {0}")]
    Encoding(String),
    #[error("not signed by a trusted key (signed by: {0})")]
    Untrusted(String),
    #[error("{0} signatures: a seal carries exactly one")]
    SignatureCount(usize),
    #[error("signature by trusted key {0} does not verify")]
    BadSignature(String),
    #[error("payload is not an in-toto Statement v1 of this project: {0}")]
    Statement(String),
    /// Only a DECIDED document has a statement: nothing else is sealed, never with blanks.
    #[error("run {run}: only a DECIDED document is sealed")]
    NotDecided { run: crate::ids::RunId },
}

/// A seal whose signature verified under a trusted key. Only [`verify_envelope`] makes one.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct VerifiedSeal {
    pub statement: Statement,
    pub key_id: String,
}

/// Verifies an envelope against trusted keys.
///
/// The rule, one and documented: a seal carries **exactly one** signature, and it must be by a
/// trusted key and verify (strict ed25519). seal only ever writes one; an envelope with more
/// is refused whatever their order, so no verifier can be steered by which signature it
/// reads first.
pub fn verify_envelope(env: &Envelope, trusted: &[PublicKey]) -> Result<VerifiedSeal, SealError> {
    if env.payload_type != PAYLOAD_TYPE {
        return Err(SealError::PayloadType(env.payload_type.clone()));
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let payload = b64
        .decode(&env.payload)
        .map_err(|e| SealError::Encoding(e.to_string()))?;
    let [s] = env.signatures.as_slice() else {
        return Err(SealError::SignatureCount(env.signatures.len()));
    };
    let Some(key) = trusted.iter().find(|k| k.key_id == s.keyid) else {
        return Err(SealError::Untrusted(s.keyid.chars().take(80).collect()));
    };
    let raw = b64
        .decode(&s.sig)
        .map_err(|e| SealError::Encoding(e.to_string()))?;
    let sig = ed25519_dalek::Signature::from_slice(&raw)
        .map_err(|_| SealError::BadSignature(s.keyid.clone()))?;
    let message = pae(&env.payload_type, &payload);
    // `verify_strict` alone: it makes the same signature-decoding and equation checks as
    // `verify` and also refuses small-order R and A, so checking `verify` first only doubled
    // the cost of every seal's check (~3% of `verify --all`).
    key.inner
        .verify_strict(&message, &sig)
        .map_err(|_| SealError::BadSignature(s.keyid.clone()))?;
    let key_id = s.keyid.clone();
    let statement: Statement = crate::json::parse_as(&payload, 1 << 20)
        .map_err(|e| SealError::Statement(e.to_string()))?;
    if statement.statement_type != STATEMENT_TYPE || statement.predicate_type != PREDICATE_TYPE {
        return Err(SealError::Statement(format!(
            "_type {:?}, predicateType {:?}",
            statement.statement_type, statement.predicate_type
        )));
    }
    if statement.subject.len() != 1 {
        return Err(SealError::Statement("exactly one subject expected".into()));
    }
    Ok(VerifiedSeal { statement, key_id })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_matches_the_dsse_spec_example() {
        // From the DSSE protocol spec: PAE("http://example.com/HelloWorld", "hello world").
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
    }

    fn statement() -> Statement {
        Statement::new(
            "runs/r/evidence.json",
            &Hash::of(b"e"),
            Predicate {
                run_id: "r".into(),
                outcome: "pass".into(),
                decision: "accept".into(),
                source_roll_id: Some("roll-1".into()),
                consensus_hash: Some(Hash::of(b"c").to_string()),
                strategy_version: Some("dual-strict/1".into()),
                acceptance_mode: "v3".into(),
                decided_at: "2026-11-29T00:00:00Z".into(),
            },
        )
    }

    #[test]
    fn sign_then_verify_and_reject_tampering() {
        let key = SigningKey::from_seed(&[1; 32]);
        let env = sign(&key, &statement()).unwrap();
        let v = verify_envelope(&env, &[key.public()]).unwrap();
        assert_eq!(v.statement, statement());
        assert_eq!(v.key_id, key.key_id);

        let other = SigningKey::from_seed(&[2; 32]);
        assert!(matches!(
            verify_envelope(&env, &[other.public()]),
            Err(SealError::Untrusted(_))
        ));

        let mut forged = statement();
        forged.predicate.outcome = "fail".into();
        let mut tampered = env.clone();
        tampered.payload = base64::engine::general_purpose::STANDARD
            .encode(canonical::canonical_bytes(&forged).unwrap());
        assert!(matches!(
            verify_envelope(&tampered, &[key.public()]),
            Err(SealError::BadSignature(_))
        ));

        let resigned = sign(&other, &forged).unwrap();
        assert!(matches!(
            verify_envelope(&resigned, &[key.public()]),
            Err(SealError::Untrusted(_))
        ));
    }

    /// A small-order ("weak") trusted key, here the identity point, with the identity
    /// signature (R = identity, s = 0) satisfies the cofactorless equation for every message:
    /// plain `verify` accepts it as a seal over any statement. `verify_envelope` refuses it
    /// (the strict check); with plain `verify` this test fails.
    /// RFC 8032 §7.1, TEST 1: the seed's public key, its key id (sha256 of the key) and the
    /// SPKI PEM `openssl pkey -pubout` writes for it.
    #[test]
    fn keys_from_a_seed_and_their_pem_forms_are_golden() {
        let seed: [u8; 32] =
            hex::decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
                .unwrap()
                .try_into()
                .unwrap();
        let key = SigningKey::from_seed(&seed);
        let id = "21fe31dfa154a261626bf854046fd2271b7bed4b6abe45aa58877ef47f9721b9";
        assert_eq!(key.key_id, id);
        let pem = key.public().to_pem().unwrap();
        assert_eq!(
            pem,
            "-----BEGIN PUBLIC KEY-----\n\
             MCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n\
             -----END PUBLIC KEY-----\n"
        );
        assert_eq!(PublicKey::from_pem("pub.pem", &pem).unwrap().key_id, id);
        let private = SigningKey::from_pem("key.pem", &key.to_pkcs8_v1_pem()).unwrap();
        assert_eq!(private.key_id, id);
        let e = SigningKey::from_pem("key.pem", "not a key").unwrap_err();
        assert!(e.to_string().contains("key.pem"), "{e}");
        let e = PublicKey::from_pem("pub.pem", &key.to_pkcs8_v1_pem()).unwrap_err();
        assert!(e.to_string().contains("pub.pem"), "{e}");
    }

    #[test]
    fn a_weak_trusted_key_vouches_for_nothing() {
        use ed25519_dalek::Verifier as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let inner = ed25519_dalek::VerifyingKey::from_bytes(&identity).unwrap();
        let weak = PublicKey {
            key_id: key_id(&inner),
            inner,
        };
        let payload = canonical::canonical_bytes(&statement()).unwrap();
        let mut raw = [0u8; 64];
        raw[0] = 1;
        let forged = ed25519_dalek::Signature::from_bytes(&raw);
        assert!(
            inner.verify(&pae(PAYLOAD_TYPE, &payload), &forged).is_ok(),
            "the forgery is one the non-strict check accepts"
        );
        let env = Envelope {
            payload: b64.encode(&payload),
            payload_type: PAYLOAD_TYPE.into(),
            signatures: vec![EnvelopeSignature {
                keyid: weak.key_id.clone(),
                sig: b64.encode(raw),
            }],
        };
        assert!(matches!(
            verify_envelope(&env, &[weak]),
            Err(SealError::BadSignature(_))
        ));
    }
}
