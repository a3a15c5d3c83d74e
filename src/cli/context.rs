//! Shared by the commands: logging, the configuration, the runtime, keys and the engine.

use super::*;

pub(super) fn init_logging(format: LogFormat, default_level: &str) {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_env("SEAL_LOG").unwrap_or_else(|_| EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Human => builder.try_init(),
    };
}

pub(super) fn load_config(path: Option<&Path>) -> Result<Config, u8> {
    Config::load(path).map_err(fail)
}

/// Threads for blocking file I/O (see `runtime`).
pub(super) const MAX_BLOCKING_THREADS: usize = 32;

pub(super) fn runtime() -> Result<tokio::runtime::Runtime, u8> {
    // Blocking threads do the file store's I/O; a bound keeps memory flat under load while
    // staying far above what one disk can use.
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .build()
        .map_err(fail)
}

pub(super) fn load_key(path: &Path) -> Result<SigningKey, u8> {
    SigningKey::load(path).map_err(fail)
}

pub(super) async fn engine(
    config: Config,
    store_url: Option<&str>,
    key: Option<SigningKey>,
) -> Result<Engine, u8> {
    // Checked before the store is opened: a command that cannot judge creates nothing.
    if let Err(e) = config.deployment_secret() {
        return Err(fail(e));
    }
    let url = store_url
        .map(str::to_owned)
        .unwrap_or_else(|| config.store.clone());
    let store = Store::open(&url).await.map_err(fail)?;
    Engine::new(store, config, key).map_err(fail)
}

/// The config's trusted keys plus `--trust`; at least one.
pub(super) fn trusted_keys(
    config: &Config,
    trust: &[PathBuf],
) -> Result<Vec<seal_core::sealing::PublicKey>, u8> {
    let trusted = load_trusted(config, trust)?;
    if trusted.is_empty() {
        return Err(fail(
            "no trusted public key: give --trust PEM (or keys.trusted in the config)",
        ));
    }
    Ok(trusted)
}

/// The public keys of the config's `keys.trusted` and of every `--trust`, possibly none.
pub(super) fn load_trusted(
    config: &Config,
    trust: &[PathBuf],
) -> Result<Vec<seal_core::sealing::PublicKey>, u8> {
    config
        .trusted_keys
        .iter()
        .chain(trust)
        .map(|p| seal_core::sealing::PublicKey::load(p).map_err(fail))
        .collect()
}
