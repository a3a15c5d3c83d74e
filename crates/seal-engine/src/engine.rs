//! The engine: what a command or a request handler needs to judge runs (store, config, judges,
//! signing key), built once and shared. No global state: tests build as many as they like.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::OwnedMutexGuard;

use crate::config::Config;
use crate::judge_http::Judges;
use seal_core::fault::{Fault, HasFault};
use seal_core::ids::RunId;
use seal_core::sealing::SigningKey;
use seal_store::Store;

/// What a command or a request handler judges runs with, built once by [`Engine::new`]. Its
/// parts are read through accessors: only `new` (and the `with_*` builders) put them together,
/// so the log, the notary and the witnesses always work on the engine's own store and key.
#[derive(Clone)]
pub struct Engine {
    pub(crate) store: Store,
    pub(crate) config: Arc<Config>,
    pub(crate) judges: Arc<Judges>,
    /// None for read-only uses (verify); finalizing needs it.
    pub(crate) key: Option<Arc<SigningKey>>,
    pub(crate) clock: Arc<dyn Clock>,
    /// The transparency log of seals in `store` (appended by the postguard).
    pub(crate) log: seal_log::Log,
    /// Issues and checks the receipts of what this deployment accepted or wrote.
    pub(crate) notary: crate::notary::Notary,
    /// The witnesses every checkpoint of `log` is sent to (`[[witnesses]]`; none by default).
    pub(crate) witnesses: seal_log::publish::Publisher,
    runs: Arc<RunLocks>,
    /// The judge policy, registered by the first live roll ([`crate::policy`]).
    pub(crate) policy: Arc<tokio::sync::OnceCell<seal_core::policy::PolicyRef>>,
}

/// One async lock per run id in this process: a roll, a finalize and an intake of the same run
/// take turns, so a finalize never races a roll of the same run inside one daemon. (Replicas
/// rely on create-only writes and the run's stored phase.) Entries die with their last guard.
#[derive(Default)]
struct RunLocks(Mutex<HashMap<RunId, Weak<tokio::sync::Mutex<()>>>>);

/// The clock, injected so that the postguard's `decidedAt` is an input, not a side effect.
pub trait Clock: Send + Sync {
    /// Now, as an RFC 3339 UTC timestamp.
    fn now_rfc3339(&self) -> String;
}

/// The system clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_rfc3339(&self) -> String {
        time::OffsetDateTime::now_utc()
            .replace_nanosecond(0)
            .unwrap_or_else(|_| time::OffsetDateTime::now_utc())
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
    }
}

/// A clock that always says the same time (tests, fixtures).
pub struct FixedClock(pub String);

impl Clock for FixedClock {
    fn now_rfc3339(&self) -> String {
        self.0.clone()
    }
}

/// Why an engine could not be built from a configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    #[error(transparent)]
    Secret(#[from] crate::config::SecretError),
    #[error(transparent)]
    Judges(#[from] crate::judge_http::JudgesError),
    #[error(transparent)]
    Witnesses(#[from] seal_log::publish::PublisherError),
    /// A key of `keys.trusted` does not load: the log could not tell its leaves and
    /// checkpoints from planted ones.
    #[error("keys.trusted: {0}")]
    TrustedKey(#[from] seal_core::sealing::KeyError),
}

impl HasFault for EngineError {
    fn fault(&self) -> Fault {
        match self {
            EngineError::Secret(e) => e.fault(),
            EngineError::Judges(e) => e.fault(),
            EngineError::Witnesses(e) => e.fault(),
            EngineError::TrustedKey(_) => Fault::Caller,
        }
    }
}

impl Engine {
    pub fn new(
        store: Store,
        config: Config,
        key: Option<SigningKey>,
    ) -> Result<Engine, EngineError> {
        let judges = Judges::new(&config)?;
        Self::with_judges(store, config, key, judges)
    }

    /// An engine for a replay of stored judge answers: its judges are never called, so their
    /// credentials are not required ([`Judges::for_stored_answers`]).
    pub fn for_stored_answers(
        store: Store,
        config: Config,
        key: Option<SigningKey>,
    ) -> Result<Engine, EngineError> {
        let judges = Judges::for_stored_answers(&config)?;
        Self::with_judges(store, config, key, judges)
    }

    fn with_judges(
        store: Store,
        config: Config,
        key: Option<SigningKey>,
        judges: Judges,
    ) -> Result<Engine, EngineError> {
        let store = store.with_doc_limit(config.max_document_bytes);
        let notary = crate::notary::Notary::new(judges.salt(), judges.replica().to_string());
        let witnesses = seal_log::publish::Publisher::new(
            &config.witnesses,
            store.clone(),
            judges.metrics.clone(),
        )?;
        // The keys this log's leaves and checkpoints count under besides the signing key
        // (those it signed with before a rotation, or other replicas' keys), loaded once.
        let trusted = (config.trusted_keys.iter())
            .map(|p| seal_fs::keys::load_public_key(p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Engine {
            log: seal_log::Log::new(store.clone(), &config.log_origin)
                .with_trusted(trusted)
                .with_witnesses(witnesses.clone()),
            witnesses,
            store,
            config: Arc::new(config),
            judges: Arc::new(judges),
            key: key.map(Arc::new),
            clock: Arc::new(SystemClock),
            notary,
            runs: Arc::new(RunLocks::default()),
            policy: Arc::default(),
        })
    }

    /// Waits for this process's lock on `run` (see [`RunLocks`]).
    pub async fn lock_run(&self, run: &RunId) -> OwnedMutexGuard<()> {
        let lock = {
            let mut map = match self.runs.0.lock() {
                Ok(m) => m,
                // A panic while holding this map lock left it poisoned; its data (weak
                // pointers) is still consistent.
                Err(p) => p.into_inner(),
            };
            map.retain(|_, w| w.strong_count() > 0);
            match map.get(run).and_then(Weak::upgrade) {
                Some(l) => l,
                None => {
                    let l = Arc::new(tokio::sync::Mutex::new(()));
                    map.insert(run.clone(), Arc::downgrade(&l));
                    l
                }
            }
        };
        lock.lock_owned().await
    }

    /// Stores the receipt of `stored` (see [`crate::notary`]), dated by this engine's clock.
    pub async fn receipt(
        &self,
        kind: crate::notary::ReceiptKind,
        stored: &seal_store::Stored,
        from: Option<&RunId>,
    ) -> Result<(), crate::notary::ReceiptError> {
        let at = self.clock.now_rfc3339();
        self.notary
            .issue(&self.store, kind, stored, from, &at)
            .await
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Engine {
        self.clock = clock;
        self
    }

    /// The same engine, reading a `file://` store on the calling thread
    /// ([`Store::with_direct_io`]): for one blocking task per run.
    pub fn with_direct_io(mut self) -> Engine {
        self.store = self.store.with_direct_io();
        self
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn judges(&self) -> &Judges {
        &self.judges
    }

    /// The signing key; `None` for read-only uses.
    pub fn key(&self) -> Option<&SigningKey> {
        self.key.as_deref()
    }

    pub fn log(&self) -> &seal_log::Log {
        &self.log
    }

    pub fn witnesses(&self) -> &seal_log::publish::Publisher {
        &self.witnesses
    }
}
