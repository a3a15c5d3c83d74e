//! What the commands share, built once: logging, the configuration, the runtime, keys, stores
//! and the engine, so no command repeats the preamble (load the config, read the keys, start a
//! runtime, open the store, set its document limit, build the engine).
//!
//! A command that only reads opens its store with [`Context::read_store`], which never creates
//! one; a writer uses [`Context::write_store`], once the deployment secret is known to be usable
//! (docs/DECISIONS.md, "A command that only reads never creates a store").

use std::future::Future;
use std::path::{Path, PathBuf};

use seal_core::ids::RunId;
use seal_core::sealing::{PublicKey, SigningKey};
use seal_engine::config::Config;
use seal_engine::engine::Engine;
use seal_store::Store;

use super::args::StoreArg;
use super::error::CliError;
use super::telemetry::Traces;
use super::LogFormat;

/// Logs on stderr, in `format`, at the level of `SEAL_LOG` (else `default_level`). Colour only
/// when stderr is a terminal and `NO_COLOR` is unset: escape codes in a file or a pipe are
/// noise to every reader but a terminal. JSON lines carry the current span's fields (the
/// request id of `http.request`) under `span`. Spans also become OpenTelemetry spans,
/// exported when `otlp_endpoint` (the config's) or the standard variables say where
/// ([`super::telemetry`]); the caller shuts the returned [`Traces`] down at exit.
pub fn init_logging(format: LogFormat, default_level: &str, otlp_endpoint: Option<&str>) -> Traces {
    use std::io::IsTerminal;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};
    let filter =
        EnvFilter::try_from_env("SEAL_LOG").unwrap_or_else(|_| EnvFilter::new(default_level));
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let target = super::telemetry::export_target(otlp_endpoint, &|k| std::env::var(k).ok());
    let (traces, problem) = Traces::new(target.as_ref());
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let fmt = match format {
        LogFormat::Json => fmt.json().with_ansi(false).with_filter(filter).boxed(),
        LogFormat::Human => fmt.with_ansi(colour).with_filter(filter).boxed(),
    };
    let otel = traces.layer().with_filter(super::telemetry::span_filter());
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(otel)
        .try_init();
    if let Some(p) = problem {
        tracing::warn!("{p}");
    } else if let Some(t) = &target {
        let to = match t {
            super::telemetry::Target::Url(u) => u.as_str(),
            super::telemetry::Target::Environment => "OTEL_EXPORTER_OTLP_*",
        };
        tracing::debug!(to = %to, "traces exported over OTLP/HTTP");
    }
    traces
}

/// Threads for blocking file I/O (see [`runtime`]).
pub const MAX_BLOCKING_THREADS: usize = 32;

/// The runtime every command but validate, keygen and adapt runs on.
pub fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    // Blocking threads do the file store's I/O; a bound keeps memory flat under load while
    // staying far above what one disk can use.
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .build()
        .map_err(CliError::Runtime)
}

/// Resolves on SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Whether a writer may create its store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// `seal judge`, `seal serve`, `seal replay --from`: a new deployment starts empty.
    CreateIfMissing,
    /// `seal replay` in place: the runs replayed are in the store, so it must exist.
    ExistingOnly,
}

/// The configuration and the runtime of one command.
pub struct Context {
    config: Config,
    runtime: tokio::runtime::Runtime,
}

/// What a writer signs with: the configuration as `--key` changes it, and the key.
pub struct Signing {
    config: Config,
    key: SigningKey,
}

impl Signing {
    pub fn key(&self) -> &SigningKey {
        &self.key
    }

    pub fn config(&self) -> &Config {
        &self.config
    }
}

impl Context {
    /// Loads the configuration (`--config`, else the default) and starts the runtime.
    pub fn new(config: Option<&Path>) -> Result<Context, CliError> {
        let config = Config::load(config)?;
        tracing::debug!(config = %config.source, "configuration loaded");
        Ok(Context {
            config,
            runtime: runtime()?,
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Runs a command's async part to its end on the runtime.
    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.runtime.block_on(f)
    }

    /// `--store`, else the config's `store`.
    pub fn store_url(&self, given: Option<&StoreArg>) -> Result<StoreArg, CliError> {
        match given {
            Some(url) => Ok(url.clone()),
            None => Ok(StoreArg::parse(&self.config.store)?),
        }
    }

    /// The public keys of the config's `keys.trusted` and of every `extra` (`--trust`),
    /// possibly none.
    pub fn public_keys(&self, extra: &[PathBuf]) -> Result<Vec<PublicKey>, CliError> {
        let keys = self.config.trusted_keys.iter().chain(extra);
        Ok(keys
            .map(|p| seal_fs::keys::load_public_key(p))
            .collect::<Result<_, _>>()?)
    }

    /// The reviewer keys of the config's `reviewers.trusted` and of every `extra`
    /// (`--trust-reviewer`), possibly none.
    pub fn reviewer_keys(&self, extra: &[PathBuf]) -> Result<Vec<PublicKey>, CliError> {
        let keys = self.config.reviewer_keys.iter().chain(extra);
        Ok(keys
            .map(|p| seal_fs::keys::load_public_key(p))
            .collect::<Result<_, _>>()?)
    }

    /// The keys a run or a checkpoint is trusted under: `signer` (when given), the config's
    /// `keys.trusted` and every `extra`; at least one.
    pub fn trusted(
        &self,
        extra: &[PathBuf],
        signer: Option<PublicKey>,
    ) -> Result<Vec<PublicKey>, CliError> {
        let mut keys: Vec<PublicKey> = signer.into_iter().collect();
        keys.extend(self.public_keys(extra)?);
        if keys.is_empty() {
            return Err(CliError::Usage(
                "no trusted public key: give --trust PEM (or keys.trusted in the config)".into(),
            ));
        }
        Ok(keys)
    }

    /// The public half of the configured signing key, when it loads (`seal log prove` trusts
    /// it, so an operator on the signing host needs no `--trust`).
    pub fn own_public_key(&self) -> Option<PublicKey> {
        seal_fs::keys::load_signing_key(&self.config.signing_key)
            .ok()
            .map(|k| k.public())
    }

    /// The signing key: `--key` when given (the default secret file is then the one beside
    /// it), else the config's `keys.signing_key`.
    pub fn signing(&self, key: Option<&Path>) -> Result<Signing, CliError> {
        let config = self.config.clone().with_signing_key(key);
        let key = seal_fs::keys::load_signing_key(&config.signing_key)?;
        Ok(Signing { config, key })
    }

    /// `seal verify`'s verdict over `store` under `trusted`, the config's reviewer keys and the
    /// witness policy (`--witness`/`--witness-quorum` over the config's, as `verify` takes it):
    /// `explain`, `export` and `stats` ask it, so they refuse exactly what `verify` refuses.
    pub async fn verifier(
        &self,
        store: &Store,
        trusted: Vec<PublicKey>,
        witnesses: &super::args::WitnessArgs,
        scope: seal_engine::verify::Scope<'_>,
    ) -> Result<seal_engine::verify::Verifier, CliError> {
        let policy = witnesses.policy(&self.config)?;
        let reviewers = self.reviewer_keys(&[])?;
        Ok(seal_engine::verify::Verifier::load(
            store,
            trusted,
            &self.config.log_origin,
            &policy,
            scope,
        )
        .await?
        .with_reviewers(reviewers))
    }

    /// An existing store, read-only in spirit: never created (see the module doc), its
    /// documents bounded by `limits.max_document_bytes`.
    pub async fn read_store(&self, url: &StoreArg) -> Result<Store, CliError> {
        let store = Store::open_existing(url.as_str()).await?;
        tracing::debug!(store = %url, "store opened (existing only)");
        Ok(store.with_doc_limit(self.config.max_document_bytes))
    }

    /// A writer's store, opened once the deployment secret loads (a command that cannot judge
    /// creates nothing); created when missing only with [`Opening::CreateIfMissing`].
    pub async fn write_store(
        &self,
        signing: &Signing,
        url: &StoreArg,
        opening: Opening,
    ) -> Result<Store, CliError> {
        signing
            .config
            .deployment_secret()
            .map_err(CliError::failed)?;
        let store = match opening {
            Opening::CreateIfMissing => Store::open(url.as_str()).await?,
            Opening::ExistingOnly => Store::open_existing(url.as_str()).await?,
        };
        tracing::debug!(store = %url, ?opening, "store opened for writing");
        Ok(store.with_doc_limit(self.config.max_document_bytes))
    }

    /// Refuses, before any store is opened, a writer that would call judges without their
    /// credentials: the deployment secret first (as [`Context::write_store`] checks it), then
    /// every judge key and header variable, all of them named.
    pub fn judge_keys(&self, signing: &Signing) -> Result<(), CliError> {
        signing
            .config
            .deployment_secret()
            .map_err(CliError::failed)?;
        signing
            .config
            .judge_credentials()
            .map_err(|e| CliError::within("refusing to call the judges", e))?;
        for c in [&signing.config.a, &signing.config.b] {
            if c.allow_plain_http && c.base_url.scheme() == "http" {
                tracing::warn!(
                    slot = c.slot.as_str(),
                    host = %c.host(),
                    "judge over plain http (allow_plain_http): its key and requests travel in clear"
                );
            }
        }
        Ok(())
    }

    /// The engine over `store`, signing with `signing`'s key; the judges are set up from its
    /// configuration.
    pub fn engine(&self, signing: Signing, store: Store) -> Result<Engine, CliError> {
        Engine::new(store, signing.config, Some(signing.key))
            .map_err(|e| CliError::Setup(e.to_string()))
    }

    /// [`Context::engine`] for `seal replay --judges stored`, whose judges are never called
    /// (their keys are not required).
    pub fn engine_for_stored_answers(
        &self,
        signing: Signing,
        store: Store,
    ) -> Result<Engine, CliError> {
        Engine::for_stored_answers(store, signing.config, Some(signing.key))
            .map_err(|e| CliError::Setup(e.to_string()))
    }

    /// A run named on the command line must be in the store: "no such run" is not a run
    /// that does not verify, nor one missing from the log.
    pub async fn named_run(
        &self,
        store: &Store,
        url: &StoreArg,
        run: &RunId,
    ) -> Result<(), CliError> {
        if seal_engine::verify::run_exists(store, run).await? {
            Ok(())
        } else {
            Err(CliError::NoRun {
                run: run.clone(),
                store: url.to_string(),
            })
        }
    }
}
