//! The witness itself (C2SP `tlog-witness`, `add-checkpoint`): a checkpoint is cosigned only
//! if a trusted key of its log signed it and it extends, by a valid consistency proof, the
//! latest checkpoint this witness cosigned for that log. So a witness never cosigns a rollback
//! (a smaller tree) nor a fork (another tree of a size it has seen, or one that does not
//! contain it), whoever holds the log's key.
//!
//! Each request runs these steps, the spec's status on the first that fails:
//! parse the body (400) → parse the note and checkpoint (400) → known origin (404) → a valid
//! signature by a trusted log key, and no invalid one (403) → old size ≤ new size (400) → old
//! size = the size this witness holds (409, answering its size) → the empty tree's root at size
//! 0, no proof from size 0, equal roots at equal sizes, else a verifying consistency proof (422)
//! → cosign, persist, answer the cosignature line (200).
//!
//! The check against the held size and the update that follows happen under one
//! lock, and the answer is given only after the new state is on disk; a failed write answers
//! 503 and changes nothing in memory either. Two requests can therefore never both pass the
//! check against the same old size (the race the spec warns about), and a crash never loses a
//! size the witness has answered for.

use signed_note::Note;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::cosig;
use super::protocol::{self, AddCheckpoint};
use super::state::{LogState, State, StateFile};
use seal_core::sealing::SigningKey;
use seal_core::tlog::{self, NodeHash};

/// Why a checkpoint was not cosigned, with its HTTP status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("bad request: {0}")]
    BadRequest(String),
    #[error("unknown log: {0}")]
    UnknownLog(String),
    #[error("forbidden: {0}")]
    Forbidden(String),
    #[error("old size does not match this witness's size {0}")]
    Conflict(u64),
    #[error("not consistent: {0}")]
    Inconsistent(String),
    #[error("state not saved: {0}")]
    Unavailable(String),
}

impl Refusal {
    /// The HTTP status the spec prescribes.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::BadRequest(_) => 400,
            Refusal::Forbidden(_) => 403,
            Refusal::UnknownLog(_) => 404,
            Refusal::Conflict(_) => 409,
            Refusal::Inconsistent(_) => 422,
            Refusal::Unavailable(_) => 503,
        }
    }
}

/// The current time as POSIX seconds (injected so tests can fix it).
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The system clock in seconds.
pub fn system_clock() -> Clock {
    Arc::new(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    })
}

/// A witness: its name and key, the logs it follows and what it cosigned.
pub struct Witness {
    name: String,
    key: SigningKey,
    /// Trusted public keys per log origin.
    logs: BTreeMap<String, Vec<[u8; 32]>>,
    state: tokio::sync::Mutex<State>,
    file: Arc<StateFile>,
    clock: Clock,
}

impl std::fmt::Debug for Witness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Witness({})", self.name)
    }
}

/// A checkpoint whose note parsed and whose log signature verified.
struct Submitted {
    origin: String,
    size: u64,
    root: NodeHash,
    /// The note's text (the checkpoint body the cosignature covers).
    body: Vec<u8>,
    /// The log's signature lines that verified under a trusted key.
    log_lines: String,
}

impl Witness {
    /// A witness named `name` (its cosignatures' key name), trusting `logs` (origin → keys).
    pub fn new(
        name: &str,
        key: SigningKey,
        logs: BTreeMap<String, Vec<[u8; 32]>>,
        file: StateFile,
        state: State,
        clock: Clock,
    ) -> Result<Witness, BadWitness> {
        if !signed_note::is_key_name_valid(name) {
            return Err(BadWitness::Name(name.to_string()));
        }
        for origin in logs.keys() {
            if !tlog::is_origin_valid(origin) {
                return Err(BadWitness::Origin(origin.clone()));
            }
        }
        Ok(Witness {
            name: name.to_string(),
            key,
            logs,
            state: tokio::sync::Mutex::new(state),
            file: Arc::new(file),
            clock,
        })
    }

    /// The verifier key (vkey) clients and verifiers configure for this witness.
    pub fn verifier_key(&self) -> String {
        cosig::verifier_key(&self.name, &self.key.public().raw())
    }

    /// `add-checkpoint`: the cosignature line(s) to answer, or the refusal.
    pub async fn add_checkpoint(&self, body: &[u8]) -> Result<String, Refusal> {
        let req =
            protocol::parse_add_checkpoint(body).map_err(|e| Refusal::BadRequest(e.to_string()))?;
        let sub = self.open(&req)?;
        if req.old > sub.size {
            return Err(Refusal::BadRequest(format!(
                "old size {} is above the checkpoint's size {}",
                req.old, sub.size
            )));
        }
        let mut state = self.state.lock().await;
        let held = state.logs.get(&sub.origin);
        let held_size = held.map(|l| l.size).unwrap_or(0);
        if req.old != held_size {
            return Err(Refusal::Conflict(held_size));
        }
        if let Err(why) = consistent(held, &req, &sub) {
            // Signed by the log's key yet inconsistent: evidence of a fork or a rollback.
            tracing::warn!(origin = %sub.origin, old = req.old, size = sub.size, %why, "refused an inconsistent checkpoint");
            return Err(Refusal::Inconsistent(why.to_string()));
        }
        let line = self.cosign(&sub)?;
        let mut next = state.clone();
        next.logs.insert(
            sub.origin.clone(),
            LogState {
                size: sub.size,
                root: b64(&sub.root),
                checkpoint: format!(
                    "{}\n{}{line}",
                    String::from_utf8_lossy(&sub.body),
                    sub.log_lines
                ),
            },
        );
        let file = self.file.clone();
        let saved = next.clone();
        tokio::task::spawn_blocking(move || file.persist(&saved))
            .await
            .map_err(|e| Refusal::Unavailable(e.to_string()))?
            .map_err(|e| Refusal::Unavailable(e.to_string()))?;
        *state = next;
        tracing::info!(origin = %sub.origin, size = sub.size, "cosigned");
        Ok(line)
    }

    /// The latest cosigned checkpoint of the log whose origin hashes to `origin_hash`.
    pub async fn latest(&self, origin_hash: &str) -> Option<String> {
        let state = self.state.lock().await;
        state
            .logs
            .iter()
            .find(|(origin, _)| protocol::origin_hash(origin) == origin_hash)
            .map(|(_, l)| l.checkpoint.clone())
    }

    /// Parses the note and verifies the log's signature.
    fn open(&self, req: &AddCheckpoint) -> Result<Submitted, Refusal> {
        let note = Note::from_bytes(&req.note)
            .map_err(|e| Refusal::BadRequest(format!("the checkpoint note: {e}")))?;
        let (origin, size, root) = tlog::parse_checkpoint_unverified(&req.note)
            .map_err(|e| Refusal::BadRequest(e.to_string()))?;
        let trusted = self.logs.get(&origin).ok_or_else(|| {
            Refusal::UnknownLog(format!(
                "this witness follows no log with origin {:?}",
                origin.chars().take(80).collect::<String>()
            ))
        })?;
        tlog::open_checkpoint(&req.note, trusted).map_err(|e| Refusal::Forbidden(e.to_string()))?;
        Ok(Submitted {
            log_lines: log_lines(&req.note, &origin, trusted),
            origin,
            size,
            root,
            body: note.text().to_vec(),
        })
    }

    fn cosign(&self, sub: &Submitted) -> Result<String, Refusal> {
        let now = (self.clock)();
        let public = self.key.public().raw();
        cosig::cosign(&self.name, &public, now, &sub.body, &|m| self.key.sign(m))
            .map(|c| c.to_line())
            .map_err(|e| Refusal::Unavailable(e.to_string()))
    }
}

/// A witness that cannot be set up as configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadWitness {
    #[error("witness name {0:?} is not a valid signed-note key name (no spaces, no '+')")]
    Name(String),
    #[error("log origin {0:?} is not valid")]
    Origin(String),
}

/// Why a checkpoint does not extend the one held (the text is the 422's).
#[derive(Debug, thiserror::Error)]
enum Inconsistency {
    #[error("a checkpoint of size 0 must carry the empty tree's root")]
    EmptyRoot,
    #[error("a consistency proof from size 0 must be empty")]
    ProofFromZero,
    #[error("the held checkpoint has no readable root")]
    HeldRoot,
    #[error(transparent)]
    Proof(#[from] tlog::TlogError),
}

/// The checks of the module doc past the held size: `Err` names the inconsistency.
fn consistent(
    held: Option<&LogState>,
    req: &AddCheckpoint,
    sub: &Submitted,
) -> Result<(), Inconsistency> {
    if sub.size == 0 && sub.root != empty_root() {
        return Err(Inconsistency::EmptyRoot);
    }
    if req.old == 0 {
        return if req.proof.is_empty() {
            Ok(())
        } else {
            Err(Inconsistency::ProofFromZero)
        };
    }
    let held_root = held
        .and_then(LogState::root_hash)
        .ok_or(Inconsistency::HeldRoot)?;
    Ok(tlog::check_consistency(
        &req.proof, req.old, &held_root, sub.size, &sub.root,
    )?)
}

/// The note's signature lines by one of the log's trusted keys (all of them verified: a note
/// with a bad signature by a trusted key was refused before), each newline-terminated.
fn log_lines(note: &[u8], origin: &str, trusted: &[[u8; 32]]) -> String {
    let ids: Vec<u32> = trusted
        .iter()
        .map(|k| tlog::note_key_id(origin, k))
        .collect();
    let text = String::from_utf8_lossy(note);
    let block = text.rsplit_once("\n\n").map(|(_, b)| b).unwrap_or("");
    block
        .lines()
        .filter(|l| {
            signed_note::Signature::from_bytes(l.as_bytes())
                .is_ok_and(|s| s.name() == origin && ids.contains(&s.id()))
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The RFC 6962 root of the empty tree: SHA-256 of the empty string.
fn empty_root() -> NodeHash {
    use sha2::Digest as _;
    sha2::Sha256::digest(b"").into()
}

fn b64(h: &NodeHash) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Log {
        key: SigningKey,
        tree: tlog::Tree,
    }

    impl Log {
        fn new() -> Log {
            Log::with_secret(rand::random())
        }
        fn with_secret(secret: [u8; 32]) -> Log {
            Log {
                key: SigningKey::from_dalek(ed25519_dalek::SigningKey::from_bytes(&secret)),
                tree: tlog::Tree::new(),
            }
        }
        fn grow(&mut self, n: usize) {
            for _ in 0..n {
                let i = self.tree.size();
                self.tree.push(format!("leaf {i}").as_bytes()).unwrap();
            }
        }
        fn note(&self, size: u64) -> String {
            let body = tlog::checkpoint_body("seal.test/log", size, &self.tree.root(size).unwrap())
                .unwrap();
            tlog::sign_checkpoint(&body, &self.key.public().raw(), &|m| self.key.sign(m)).unwrap()
        }
        fn request(&self, old: u64, size: u64) -> Vec<u8> {
            let proof = self.tree.consistency(old, size).unwrap();
            protocol::encode_add_checkpoint(old, &proof, self.note(size).as_bytes())
        }
    }

    fn witness(dir: &std::path::Path, log: &Log) -> Witness {
        let (file, state) = StateFile::open(&dir.join("state.json")).unwrap();
        let logs = BTreeMap::from([("seal.test/log".to_string(), vec![log.key.public().raw()])]);
        Witness::new(
            "w.test/1",
            seal_fs::keys::generate_signing_key(),
            logs,
            file,
            state,
            Arc::new(|| 1_767_225_600),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn rollbacks_forks_and_bad_proofs_are_refused_with_the_spec_status() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = Log::with_secret([3u8; 32]);
        log.grow(5);
        let w = witness(dir.path(), &log);
        let line = w.add_checkpoint(&log.request(0, 3)).await.unwrap();
        assert!(
            line.starts_with("— w.test/1 ") && line.ends_with('\n'),
            "{line}"
        );
        // Old size other than the held one: 409 with the held size.
        assert_eq!(
            w.add_checkpoint(&log.request(0, 5)).await,
            Err(Refusal::Conflict(3))
        );
        // A rollback to size 2 from old 3: 400 (old above new).
        let rollback = protocol::encode_add_checkpoint(3, &[], log.note(2).as_bytes());
        assert_eq!(w.add_checkpoint(&rollback).await.unwrap_err().status(), 400);
        // A tampered proof: 422.
        let mut proof = log.tree.consistency(3, 5).unwrap();
        proof[0][0] ^= 1;
        let tampered = protocol::encode_add_checkpoint(3, &proof, log.note(5).as_bytes());
        assert_eq!(w.add_checkpoint(&tampered).await.unwrap_err().status(), 422);
        // A fork: another tree of the same size signed by the same key.
        let mut fork = Log::with_secret([3u8; 32]);
        fork.tree.push(b"another history").unwrap();
        fork.grow(2);
        let forked = protocol::encode_add_checkpoint(3, &[], fork.note(3).as_bytes());
        assert_eq!(w.add_checkpoint(&forked).await.unwrap_err().status(), 422);
        // A proof from the empty tree must be empty; another log: 404; another key: 403.
        let other = Log::new();
        assert_eq!(
            w.add_checkpoint(&other.request(0, 0))
                .await
                .unwrap_err()
                .status(),
            403
        );
        let unknown = "old 0\n\nother.test/log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n\n— other.test/log AAAAAAAA\n";
        assert_eq!(
            w.add_checkpoint(unknown.as_bytes())
                .await
                .unwrap_err()
                .status(),
            404
        );
        // The honest extension is cosigned, and its cosignature verifies.
        let line = w.add_checkpoint(&log.request(3, 5)).await.unwrap();
        let c = cosig::Cosignature::parse_line(line.as_bytes())
            .unwrap()
            .unwrap();
        let body = tlog::checkpoint_body("seal.test/log", 5, &log.tree.root(5).unwrap()).unwrap();
        let key = cosig::WitnessKey {
            name: Some("w.test/1".into()),
            public: w.key.public().raw(),
        };
        assert!(c.verifies(body.as_bytes(), &key));
        assert_eq!(c.timestamp, 1_767_225_600);
        let served = w
            .latest(&protocol::origin_hash("seal.test/log"))
            .await
            .unwrap();
        assert!(
            served.starts_with(&body) && served.ends_with(&line),
            "{served}"
        );
        assert!(tlog::open_checkpoint(served.as_bytes(), &[log.key.public().raw()]).is_ok());
    }
}
