//! What a verifier requires of witnesses (`seal log verify`, `seal verify`): N of M trusted
//! witnesses cosigned the checkpoint the verification relies on (the latest one the store
//! holds), and, when asked (`--witness-url`), that a witness's own latest checkpoint of the log
//! is not ahead of, nor different from, the store's.
//!
//! Why this catches a whole-store rollback: restoring an old snapshot of the store (runs, log
//! entries, checkpoints and cosignatures together) leaves a log that is self-consistent, so the
//! log's own checks pass. But the next checkpoint published there is smaller than, or forks,
//! the one the witnesses last cosigned: each witness refuses it, so the store's latest
//! checkpoint lacks a quorum ([`witnessed`] names the missing witnesses). Before any new
//! checkpoint, the restored latest one still carries its old cosignatures; there a witness's
//! own latest checkpoint ([`ask_witness`]) is larger than anything in the store.
//!
//! Cosignatures are read from the checkpoint note itself and from the objects under
//! `log/cosignatures/<size>/`; objects that do not parse or do not verify are ignored (anyone
//! may write there), each trusted witness counts once.

use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

use super::cosig::{self, Cosignature, WitnessKey};
use super::{protocol, WitnessSpec, LOG_COSIGNATURES};
use crate::finding::Finding;
use crate::storage::LogStorage;
use seal_core::fault::{Fault, HasFault};
use seal_core::tlog::{self, LogTrust, SignedCheckpoint};
use seal_core::vocab::AuditCheck;
use seal_store::{Bounded, Key, StoreError};

/// Largest witness answer or stored cosignature object read.
const MAX_READ_BYTES: usize = 64 * 1024;

/// Why witnesses could not be asked or required.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WitnessError {
    #[error("witness key: {0}")]
    Key(#[from] seal_core::sealing::KeyError),
    #[error(
        "a witness quorum of {quorum} without any witness key (--witness PEM or [[witnesses]])"
    )]
    QuorumWithoutKeys { quorum: usize },
    #[error("witness quorum {quorum} must be between 1 and the {keys} witness keys given")]
    Quorum { quorum: usize, keys: usize },
    #[error("witness HTTP client: {0}")]
    Client(reqwest::Error),
    #[error("witness {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl HasFault for WitnessError {
    fn fault(&self) -> Fault {
        match self {
            WitnessError::Key(_)
            | WitnessError::QuorumWithoutKeys { .. }
            | WitnessError::Quorum { .. } => Fault::Caller,
            WitnessError::Client(_) | WitnessError::Unreachable { .. } => Fault::Infrastructure,
            WitnessError::Store(e) => e.fault(),
        }
    }
}

/// The witnesses a verifier trusts and how many must have cosigned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    pub keys: Vec<WitnessKey>,
    pub quorum: usize,
}

impl Policy {
    /// The config's witnesses and quorum plus `--witness PEM` keys (any name) and
    /// `--witness-quorum`; the quorum defaults to the config's, else to every witness.
    pub fn load(
        config: &[WitnessSpec],
        config_quorum: Option<usize>,
        extra: &[PathBuf],
        quorum: Option<usize>,
    ) -> Result<Policy, WitnessError> {
        let mut keys: Vec<WitnessKey> = Vec::new();
        let named = config.iter().map(|s| (Some(s.name.clone()), &s.public_key));
        for (name, path) in named.chain(extra.iter().map(|p| (None, p))) {
            let public = seal_fs::keys::load_public_key(path)?.raw();
            // The same key twice (config and flag) is one witness.
            if !keys.iter().any(|k| k.public == public) {
                keys.push(WitnessKey { name, public });
            }
        }
        let quorum = match (quorum.or(config_quorum), keys.len()) {
            (None, n) => n,
            (Some(q), 0) => return Err(WitnessError::QuorumWithoutKeys { quorum: q }),
            (Some(q), n) if q == 0 || q > n => {
                return Err(WitnessError::Quorum { quorum: q, keys: n })
            }
            (Some(q), _) => q,
        };
        Ok(Policy { keys, quorum })
    }

    /// No witness is required.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// Which trusted witnesses cosigned a checkpoint.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Witnessed {
    pub size: u64,
    pub cosigned_by: Vec<String>,
    pub missing: Vec<String>,
    pub quorum: usize,
}

impl Witnessed {
    /// The `log_witness` problem when fewer than the quorum cosigned.
    pub fn problem(&self) -> Option<Finding> {
        if self.cosigned_by.len() >= self.quorum {
            return None;
        }
        let of = self.cosigned_by.len() + self.missing.len();
        Some(Finding::mismatch(
            AuditCheck::LogWitness,
            Key::log_checkpoint(self.size).as_str(),
            format!("{} of {of} witness cosignatures", self.quorum),
            format!("{} ({})", self.cosigned_by.len(), self.cosigned_by.join(", ")),
            format!(
                "the checkpoint this verification relies on (tree size {}) lacks a quorum of witness cosignatures (missing: {}): witnesses refuse a checkpoint that rolls back or forks the log they cosigned, so a rollback of the whole store shows exactly like this; so does a witness that was unreachable when the checkpoint was published (seal log verify --witness-url asks a witness for its latest)",
                self.size,
                self.missing.join(", ")
            ),
        ))
    }
}

/// The cosignatures of the checkpoint of `size` leaves with note `note`: its own signature
/// lines and every stored object under `log/cosignatures/<size>/` (unreadable ones skipped).
pub async fn cosignatures(
    store: &impl LogStorage,
    size: u64,
    note: &[u8],
) -> Result<Vec<Cosignature>, StoreError> {
    let mut out = Vec::new();
    let text = String::from_utf8_lossy(note);
    if let Some((_, block)) = text.rsplit_once("\n\n") {
        out.extend(cosig::parse_lines(block.as_bytes()).unwrap_or_default());
    }
    let dir = format!("{LOG_COSIGNATURES}/{size:020}");
    for key in store.list(&dir).await?.keys {
        match store.get_bounded(&key, MAX_READ_BYTES as u64).await {
            Ok(Bounded::Read(bytes)) => {
                out.extend(cosig::parse_lines(&bytes).unwrap_or_default());
            }
            Ok(Bounded::Absent | Bounded::Larger { .. }) => {}
            // An object that cannot be read as seal wrote it counts for nothing; an
            // unreachable store stops the verification.
            Err(e) if e.fault().is_environmental() => return Err(e),
            Err(_) => {}
        }
    }
    Ok(out)
}

/// Which of the policy's witnesses validly cosigned the checkpoint `c`.
pub async fn witnessed(
    store: &impl LogStorage,
    policy: &Policy,
    c: &SignedCheckpoint,
) -> Result<Witnessed, StoreError> {
    let body = signed_note::Note::from_bytes(c.text.as_bytes())
        .map(|n| n.text().to_vec())
        .unwrap_or_default();
    let lines = cosignatures(store, c.size, c.text.as_bytes()).await?;
    let by = cosig::cosigners(&body, &lines, &policy.keys);
    let (mut cosigned_by, mut missing) = (Vec::new(), Vec::new());
    for (i, k) in policy.keys.iter().enumerate() {
        if by.contains(&i) {
            cosigned_by.push(k.label());
        } else {
            missing.push(k.label());
        }
    }
    Ok(Witnessed {
        size: c.size,
        cosigned_by,
        missing,
        quorum: policy.quorum,
    })
}

/// `seal verify`: the problem every run report gets when the latest checkpoint lacks a quorum
/// (None without witnesses or without a checkpoint: the log checks name that already).
pub async fn quorum_problem(
    store: &impl LogStorage,
    policy: &Policy,
    latest: Option<&SignedCheckpoint>,
) -> Result<Option<Finding>, StoreError> {
    match latest {
        Some(c) if !policy.is_empty() => Ok(witnessed(store, policy, c).await?.problem()),
        _ => Ok(None),
    }
}

/// What a witness answered about its latest checkpoint of the log.
#[derive(Debug, Clone)]
pub struct Asked {
    pub url: String,
    /// The size the witness holds (None: it cosigned nothing of this log).
    pub size: Option<u64>,
    pub problems: Vec<Finding>,
}

/// `--witness-url`: asks the witness at `url` for its latest cosigned checkpoint of `origin`
/// and compares it with the store (`store_latest`: the size of the store's latest verified
/// checkpoint). Problems are named; only an unreachable witness is an error (`Err`).
pub async fn ask_witness(
    store: &impl LogStorage,
    trust: &LogTrust,
    url: &str,
    origin: &str,
    store_latest: Option<u64>,
) -> Result<Asked, WitnessError> {
    let object = format!("witness {url}");
    let Some(note) = fetch_latest(url, origin).await? else {
        let problems = store_latest
            .map(|s| {
                vec![Finding::new(
                    AuditCheck::LogWitness,
                    object.clone(),
                    format!("the witness has cosigned no checkpoint of log {origin:?}, while the store's log reaches size {s}: checkpoints are not reaching this witness"),
                )]
            })
            .unwrap_or_default();
        return Ok(Asked {
            url: url.into(),
            size: None,
            problems,
        });
    };
    let theirs = match trust.open_checkpoint(&note) {
        Ok(c) => c,
        Err(e) => {
            let p = Finding::new(
                AuditCheck::LogWitness,
                object,
                format!("the witness's checkpoint is not signed by a trusted log key: {e}"),
            );
            return Ok(Asked {
                url: url.into(),
                size: None,
                problems: vec![p],
            });
        }
    };
    let problems = against_store(store, trust, &object, &theirs, store_latest).await?;
    Ok(Asked {
        url: url.into(),
        size: Some(theirs.size),
        problems,
    })
}

/// A checkpoint the log signed, as a witness holds it, against the store's checkpoints.
async fn against_store(
    store: &impl LogStorage,
    trust: &LogTrust,
    object: &str,
    theirs: &SignedCheckpoint,
    store_latest: Option<u64>,
) -> Result<Vec<Finding>, StoreError> {
    if store_latest.is_none_or(|s| s < theirs.size) {
        return Ok(vec![Finding::mismatch(
            AuditCheck::LogWitness,
            object,
            format!("a checkpoint of size {} or more", theirs.size),
            store_latest.map_or("none".to_string(), |s| format!("size {s}")),
            "the witness cosigned a larger tree of this log than the store's latest checkpoint: the store was rolled back (runs, entries and checkpoints deleted together) or its latest checkpoints were deleted",
        )]);
    }
    let key = Key::log_checkpoint(theirs.size);
    let Some(ours) = crate::checkpoints::bounded_checkpoint(store, theirs.size)
        .await?
        .read()
    else {
        return Ok(vec![Finding::new(
            AuditCheck::LogWitness,
            key.as_str(),
            format!("missing, while the witness cosigned the log's checkpoint of size {}: a checkpoint was deleted", theirs.size),
        )]);
    };
    match trust.open_checkpoint(&ours) {
        Ok(c) if c.root == theirs.root => Ok(Vec::new()),
        Ok(c) => Ok(vec![Finding::mismatch(
            AuditCheck::LogFork,
            key.as_str(),
            tlog::hex(&theirs.root),
            tlog::hex(&c.root),
            "the witness cosigned another tree of this size than the store holds: the log was forked",
        )]),
        // `seal log verify` names an unsigned stored checkpoint already.
        Err(_) => Ok(Vec::new()),
    }
}

/// The witness's latest checkpoint of `origin` (None on 404).
async fn fetch_latest(url: &str, origin: &str) -> Result<Option<Vec<u8>>, WitnessError> {
    let target = protocol::checkpoint_url(url, origin);
    let unreachable = |reason: String| WitnessError::Unreachable {
        url: url.to_string(),
        reason,
    };
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(WitnessError::Client)?;
    let mut resp = client
        .get(&target)
        .send()
        .await
        .map_err(|e| unreachable(e.to_string()))?;
    match resp.status().as_u16() {
        200 => {}
        404 => return Ok(None),
        s => return Err(unreachable(format!("{target} answered {s}"))),
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| unreachable(e.to_string()))? {
        if body.len() + chunk.len() > MAX_READ_BYTES {
            return Err(unreachable(format!("answer over {MAX_READ_BYTES} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}
