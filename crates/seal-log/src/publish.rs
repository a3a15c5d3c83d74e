//! The witness client of every process that publishes checkpoints (`seal serve`, `seal judge`,
//! `seal replay`): each new checkpoint goes to every configured witness with a consistency
//! proof from the size that witness holds, and the cosignatures that come back are stored,
//! create-only, under `log/cosignatures/<size, 20 digits>/<key id>-<timestamp>` (the
//! cosignature line exactly as the witness answered it).
//!
//! Never in the way of sealing: [`Publisher::offer`] only records the checkpoint and returns;
//! one task per witness sends the latest checkpoint offered (older ones are superseded: a
//! cosignature of the latest vouches for all before it). An unreachable witness is retried
//! with back-off (1 s doubling to 60 s) while the process lives; a refusal (400, 403, 404,
//! 422) is logged as an error and counted (`seal_witness_submissions_total`), and the next
//! checkpoint is tried afresh. One-shot commands call [`Publisher::settle`] before they exit
//! so that their last checkpoint reaches the witnesses (bounded by the witnesses' timeouts).
//!
//! The size a witness holds is learnt from the protocol itself: the first request says
//! `old 0`, a 409 answers the witness's size, and the request is sent again with a proof
//! from there. A witness that holds a larger tree than this store has a checkpoint of has seen
//! a log this store no longer has: the store was rolled back or forked, and that is logged as
//! an error naming both sizes.
//!
//! Proofs come from a mirror of the log's tree kept here (the leaf hashes only, 64
//! bytes a seal), caught up from the appender's tree at each offer, so the log's own locking
//! and caching stay untouched and a 409 can be answered without reading the store.

use bytes::Bytes;
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use crate::cosign::WitnessSpec;
use seal_core::tlog::{NodeHash, TlogError, Tree};
use seal_core::witness::cosig::{self, WitnessKey};
use seal_core::witness::protocol;
use seal_store::{Key, Store, StoreError};

use crate::storage::LogStorage;

const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// Largest witness answer read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// 409 answers followed in one submission (the witness moved between two requests).
const MAX_CONFLICTS: usize = 2;

/// Where the publisher counts the witnesses' answers (`seal_witness_submissions_total`): the
/// engine's metrics implement it, so that the log does not depend on them.
pub trait SubmissionCounts: Send + Sync {
    /// A configured witness, so that its counters exist (at 0) before its first answer.
    fn known_witness(&self, witness: &str);
    /// One submission to `witness` came to `result` (`cosigned`, `refused`, `unreachable`).
    fn witness_submission(&self, witness: &str, result: &str);
}

/// A checkpoint to send.
#[derive(Clone)]
struct Offer {
    size: u64,
    note: Bytes,
    /// The note's text: what a cosignature covers.
    body: Arc<Vec<u8>>,
}

struct Endpoint {
    name: String,
    url: String,
    key: WitnessKey,
    timeout: Duration,
}

struct Inner<S> {
    endpoints: Vec<Endpoint>,
    store: S,
    http: reqwest::Client,
    metrics: Arc<dyn SubmissionCounts>,
    mirror: Mutex<Tree>,
    latest: tokio::sync::watch::Sender<Option<Offer>>,
    /// Per witness: the largest offered size it has finished at least one attempt for.
    attempted: tokio::sync::watch::Sender<Vec<u64>>,
    started: Once,
}

/// What one submission came to.
enum Outcome {
    /// Cosigned, or refused for good: wait for the next checkpoint.
    Finished,
    /// The witness could not be reached or failed: try again later.
    Retry,
}

/// A witness's HTTP answer.
struct Answer {
    status: u16,
    body: Vec<u8>,
}

/// Sends checkpoints to the configured witnesses; cheap to clone, inert without witnesses.
pub struct Publisher<S: LogStorage = Store> {
    inner: Option<Arc<Inner<S>>>,
}

impl<S: LogStorage> Clone for Publisher<S> {
    fn clone(&self) -> Publisher<S> {
        Publisher {
            inner: self.inner.clone(),
        }
    }
}

impl<S: LogStorage> Default for Publisher<S> {
    fn default() -> Publisher<S> {
        Publisher { inner: None }
    }
}

impl<S: LogStorage> std::fmt::Debug for Publisher<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.inner.as_ref().map_or(0, |i| i.endpoints.len());
        write!(f, "Publisher({n} witnesses)")
    }
}

impl<S: LogStorage> Publisher<S> {
    /// A publisher to `specs` storing cosignatures in `store`; loads the witness keys.
    pub fn new(
        specs: &[WitnessSpec],
        store: S,
        metrics: Arc<dyn SubmissionCounts>,
    ) -> Result<Publisher<S>, PublisherError> {
        if specs.is_empty() {
            return Ok(Publisher::default());
        }
        let mut endpoints = Vec::new();
        for s in specs {
            metrics.known_witness(&metric_name(&s.name));
            let public = seal_fs::keys::load_public_key(&s.public_key)
                .map_err(|e| PublisherError::WitnessKey {
                    name: s.name.clone(),
                    reason: e.to_string(),
                })?
                .raw();
            endpoints.push(Endpoint {
                name: s.name.clone(),
                url: s.url.as_str().trim_end_matches('/').to_string(),
                key: WitnessKey {
                    name: Some(s.name.clone()),
                    public,
                },
                timeout: s.timeout,
            });
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("seal/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| PublisherError::Client {
                reason: e.to_string(),
            })?;
        let n = endpoints.len();
        Ok(Publisher {
            inner: Some(Arc::new(Inner {
                endpoints,
                store,
                http,
                metrics,
                mirror: Mutex::new(Tree::new()),
                latest: tokio::sync::watch::Sender::new(None),
                attempted: tokio::sync::watch::Sender::new(vec![0; n]),
                started: Once::new(),
            })),
        })
    }

    /// Records that the checkpoint `note` of the tree's first `size` leaves was published; the
    /// witnesses get it in the background. Call it on a tokio runtime.
    pub fn offer(&self, tree: &Tree, size: u64, note: &[u8]) {
        let Some(inner) = &self.inner else { return };
        if let Err(e) = inner.catch_up(tree) {
            tracing::error!(error = %e, "witness client: cannot mirror the log's tree; checkpoint not sent");
            return;
        }
        let body = match signed_note::Note::from_bytes(note) {
            Ok(n) => Arc::new(n.text().to_vec()),
            Err(e) => {
                tracing::error!(error = %e, "witness client: the published checkpoint is not a note");
                return;
            }
        };
        let offer = Offer {
            size,
            note: Bytes::copy_from_slice(note),
            body,
        };
        inner.latest.send_if_modified(|cur| {
            let newer = cur.as_ref().is_none_or(|c| c.size < size);
            if newer {
                *cur = Some(offer);
            }
            newer
        });
        start(inner);
    }

    /// Waits until every witness has had at least one answer (or failure) for the latest
    /// checkpoint offered, at most a few of their timeouts; says which did not cosign.
    pub async fn settle(&self) {
        let Some(inner) = &self.inner else { return };
        let Some(size) = inner.latest.borrow().as_ref().map(|o| o.size) else {
            return;
        };
        let slowest = inner
            .endpoints
            .iter()
            .map(|e| e.timeout)
            .max()
            .unwrap_or_default();
        let wait = slowest * (MAX_CONFLICTS as u32 + 1) + Duration::from_secs(1);
        let mut rx = inner.attempted.subscribe();
        let done = tokio::time::timeout(wait, rx.wait_for(|a| a.iter().all(|&s| s >= size))).await;
        if !matches!(done, Ok(Ok(_))) {
            tracing::warn!(
                size,
                "not every witness answered for the latest checkpoint before exit"
            );
        }
    }
}

/// Spawns one task per witness, once.
fn start<S: LogStorage>(inner: &Arc<Inner<S>>) {
    inner
        .started
        .call_once(|| match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                for i in 0..inner.endpoints.len() {
                    handle.spawn(worker(inner.clone(), i));
                }
            }
            Err(_) => tracing::error!("witness client: no async runtime; witnesses get nothing"),
        });
}

/// Sends the latest checkpoint to witness `i`, again and again as new ones are offered.
async fn worker<S: LogStorage>(inner: Arc<Inner<S>>, i: usize) {
    let mut rx = inner.latest.subscribe();
    let mut known = 0u64;
    let mut done = 0u64;
    let mut backoff = BACKOFF_MIN;
    loop {
        let offer = rx.borrow_and_update().clone();
        let Some(offer) = offer.filter(|o| o.size > done) else {
            if rx.changed().await.is_err() {
                return;
            }
            continue;
        };
        let outcome = inner.submit(i, &offer, &mut known).await;
        inner.attempted.send_modify(|a| {
            if let Some(s) = a.get_mut(i) {
                *s = (*s).max(offer.size);
            }
        });
        match outcome {
            Outcome::Finished => {
                done = offer.size;
                backoff = BACKOFF_MIN;
            }
            Outcome::Retry => {
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    changed = rx.changed() => if changed.is_err() { return },
                }
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
    }
}

/// Why the witnesses of the configuration cannot be published to.
#[derive(Debug, thiserror::Error)]
pub enum PublisherError {
    /// A `[[witnesses]]` public key that does not load: the operator's to fix.
    #[error("witness {name}: {reason}")]
    WitnessKey { name: String, reason: String },
    #[error("witness HTTP client: {reason}")]
    Client { reason: String },
}

impl seal_core::fault::HasFault for PublisherError {
    fn fault(&self) -> seal_core::fault::Fault {
        match self {
            PublisherError::WitnessKey { .. } => seal_core::fault::Fault::Caller,
            PublisherError::Client { .. } => seal_core::fault::Fault::Infrastructure,
        }
    }
}

/// Why a checkpoint could not be offered to a witness (logged; sealing goes on).
#[derive(Debug, thiserror::Error)]
enum Unsent {
    #[error("leaf {index}: {reason}")]
    Leaf { index: u64, reason: String },
    #[error(transparent)]
    Tree(#[from] TlogError),
    #[error(transparent)]
    Http(#[from] reqwest::Error),
    #[error("answer over {MAX_ANSWER_BYTES} bytes")]
    TooLarge,
}

impl<S: LogStorage> Inner<S> {
    /// Brings the mirror up to `tree` (leaf hashes read from the appender's tree).
    fn catch_up(&self, tree: &Tree) -> Result<(), Unsent> {
        use tlog_tiles::HashReader as _;
        let mut mirror = self.mirror.lock().unwrap_or_else(|e| e.into_inner());
        if tree.size() < mirror.size() {
            // The appender started over (another process state): mirror it from scratch.
            *mirror = Tree::new();
        }
        for i in mirror.size()..tree.size() {
            let leaf = tree
                .read_hashes(&[tlog_tiles::stored_hash_index(0, i)])
                .map_err(|e| Unsent::Leaf {
                    index: i,
                    reason: e.to_string(),
                })?;
            let leaf = leaf.first().ok_or_else(|| Unsent::Leaf {
                index: i,
                reason: "missing".into(),
            })?;
            mirror.push_leaf_hash(leaf.0)?;
        }
        Ok(())
    }

    fn proof(&self, old: u64, size: u64) -> Result<Vec<NodeHash>, Unsent> {
        let mirror = self.mirror.lock().unwrap_or_else(|e| e.into_inner());
        Ok(mirror.consistency(old, size)?)
    }

    fn count(&self, ep: &Endpoint, result: &str) {
        let name = metric_name(&ep.name);
        self.metrics.witness_submission(&name, result);
    }

    /// One submission of `offer` to witness `i`, following 409s; `known` is the witness's size.
    async fn submit(&self, i: usize, offer: &Offer, known: &mut u64) -> Outcome {
        let Some(ep) = self.endpoints.get(i) else {
            return Outcome::Finished;
        };
        for _ in 0..=MAX_CONFLICTS {
            if *known > offer.size {
                return self.ahead(ep, offer.size, *known).await;
            }
            let proof = match self.proof(*known, offer.size) {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!(witness = %ep.name, error = %e, "no consistency proof for the witness");
                    return Outcome::Finished;
                }
            };
            let body = protocol::encode_add_checkpoint(*known, &proof, &offer.note);
            let answer = match self.post(ep, body).await {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(witness = %ep.name, url = %ep.url, error = %e, size = offer.size, "witness unreachable; sealing goes on, retrying");
                    self.count(ep, "unreachable");
                    return Outcome::Retry;
                }
            };
            match answer.status {
                200 => return self.cosigned(ep, offer, &answer.body, known).await,
                409 => match protocol::parse_size_body(&answer.body) {
                    Ok(w) if w != *known => *known = w,
                    _ => return self.refused(ep, offer.size, &answer),
                },
                400 | 403 | 404 | 422 => return self.refused(ep, offer.size, &answer),
                status => {
                    tracing::warn!(witness = %ep.name, status, size = offer.size, "witness failed; retrying");
                    self.count(ep, "unreachable");
                    return Outcome::Retry;
                }
            }
        }
        tracing::warn!(witness = %ep.name, "the witness's size kept changing; trying with the next checkpoint");
        Outcome::Finished
    }

    async fn post(&self, ep: &Endpoint, body: Vec<u8>) -> Result<Answer, Unsent> {
        let mut resp = self
            .http
            .post(protocol::add_checkpoint_url(&ep.url))
            .timeout(ep.timeout)
            .body(body)
            .send()
            .await?;
        let status = resp.status().as_u16();
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await? {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(Unsent::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Answer { status, body })
    }

    /// A 200: keeps the lines that are valid cosignatures by this witness, stores them.
    async fn cosigned(
        &self,
        ep: &Endpoint,
        offer: &Offer,
        body: &[u8],
        known: &mut u64,
    ) -> Outcome {
        let lines: Vec<cosig::Cosignature> = cosig::parse_lines(body)
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.verifies(&offer.body, &ep.key))
            .collect();
        if lines.is_empty() {
            tracing::error!(witness = %ep.name, size = offer.size, "the witness answered no valid cosignature (is its configured public key right?)");
            self.count(ep, "refused");
            return Outcome::Finished;
        }
        *known = offer.size;
        for c in &lines {
            if let Err(e) = self.store_line(offer.size, c).await {
                tracing::warn!(witness = %ep.name, error = %e, "cosignature not stored; asking again");
                return Outcome::Retry;
            }
        }
        tracing::info!(witness = %ep.name, size = offer.size, "checkpoint cosigned");
        self.count(ep, "cosigned");
        Outcome::Finished
    }

    async fn store_line(&self, size: u64, c: &cosig::Cosignature) -> Result<(), StoreError> {
        let key = Key::log_cosignature(size, c.key_id, c.timestamp);
        match self.store.create(&key, Bytes::from(c.to_line())).await {
            // The same line from another replica, or an object planted there: verifiers read
            // every object of the folder and count only valid cosignatures.
            Ok(_) | Err(StoreError::Conflict { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn refused(&self, ep: &Endpoint, size: u64, answer: &Answer) -> Outcome {
        let said: String = String::from_utf8_lossy(&answer.body)
            .chars()
            .take(300)
            .flat_map(char::escape_default)
            .collect();
        tracing::error!(witness = %ep.name, size, status = answer.status, answer = %said, "the witness REFUSED the checkpoint (a fork or a rollback of the log, or a misconfigured witness)");
        self.count(ep, "refused");
        Outcome::Finished
    }

    /// The witness holds `held`, more than the checkpoint's `size`. Every size a witness holds
    /// was a stored checkpoint first (checkpoints are offered only once created), so an honest
    /// store still has `log/checkpoints/<held>`: another process published it. Without it, the
    /// witness has seen a log this store no longer holds.
    async fn ahead(&self, ep: &Endpoint, size: u64, held: u64) -> Outcome {
        match self.store.exists(&Key::log_checkpoint(held)).await {
            Ok(true) => {
                tracing::debug!(witness = %ep.name, size, held, "the witness holds a newer checkpoint of this store");
            }
            Ok(false) => {
                tracing::error!(witness = %ep.name, witness_size = held, size, "the witness has cosigned a larger tree than this store's log holds: the store was ROLLED BACK or forked (docs/DESIGN.md §13)");
                self.count(ep, "refused");
            }
            Err(e) => {
                tracing::warn!(witness = %ep.name, error = %e, "cannot read the store's checkpoints")
            }
        }
        Outcome::Finished
    }
}

/// A witness name as a metric label value: characters beyond `[A-Za-z0-9./:_-]` become `_`.
fn metric_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "./:_-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}
