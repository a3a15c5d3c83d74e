//! `seal witness …`: run a transparency-log witness (docs/DESIGN.md §13, docs/DEPLOYING.md).
//!
//! `serve` answers C2SP `tlog-witness` requests for the logs it is told to trust: it cosigns a
//! checkpoint of such a log only if it extends, by a valid consistency proof, the last one it
//! cosigned, and keeps that in its own state file. Its first stdout line is
//! `seal witness listening on http://ADDR` (tests bind port 0), the second its verifier key.
//!
//! A witness takes its keys and state from flags, not from seal's config (docs/DECISIONS.md,
//! "A witness is a separate process").
//!
//! Exit 0 after SIGTERM or SIGINT, 2 could not start.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Subcommand;

use super::context::{runtime, shutdown_signal};
use super::error::{CliError, ExitStatus};
use seal_log::cosign::service::{self, Witness};
use seal_log::cosign::state::StateFile;

/// Default key name of a witness's cosignatures.
pub const DEFAULT_NAME: &str = "seal.local/witness";

#[derive(Debug, Subcommand)]
pub enum WitnessCommand {
    /// Run a C2SP tlog-witness: POST /add-checkpoint cosigns checkpoints that extend the last
    /// one it cosigned (refusing rollbacks, forks and bad proofs), GET /<sha256(origin)>/checkpoint
    /// serves its latest cosigned checkpoint. Exit 0 after SIGTERM, 2 could not start.
    Serve {
        /// Address to listen on.
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7879")]
        listen: String,
        /// The witness's own ed25519 private key (PKCS#8 PEM, mode 0600; `seal keygen`).
        #[arg(long, value_name = "PEM")]
        key: PathBuf,
        /// The witness's state file (created if missing; keep it: see docs/DEPLOYING.md).
        #[arg(long, value_name = "FILE")]
        state: PathBuf,
        /// A public key (SPKI PEM) the log signs its checkpoints with; repeatable.
        #[arg(long = "log-key", value_name = "PEM", required = true)]
        log_keys: Vec<PathBuf>,
        /// The log's origin (its checkpoints' first line).
        #[arg(long, value_name = "ORIGIN", default_value = seal_log::DEFAULT_ORIGIN)]
        origin: String,
        /// The name this witness cosigns under (verifiers configure it with its public key).
        #[arg(long, value_name = "NAME", default_value = DEFAULT_NAME)]
        name: String,
    },
}

/// Runs a `seal witness` command until `shutdown` resolves.
pub async fn run(
    cmd: &WitnessCommand,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<ExitStatus, CliError> {
    let WitnessCommand::Serve {
        listen,
        key,
        state,
        log_keys,
        origin,
        name,
    } = cmd;
    let witness = Arc::new(build(key, state, log_keys, origin, name).await?);
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(CliError::io(format!("cannot listen on {listen}")))?;
    let local = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| listen.clone());
    let vkey = witness.verifier_key();
    tracing::info!(addr = %local, %vkey, %origin, "seal witness listening");
    // The first stdout line tells scripts (and tests binding port 0) where we are; a reader
    // that stops reading after it must not kill the witness (no `println!`, errors ignored).
    use std::io::Write;
    let mut out = std::io::stdout();
    let _ = write!(
        out,
        "seal witness listening on http://{local}\nverifier key {vkey}\n"
    );
    let _ = out.flush();
    seal_server::witness_http::run(listener, witness, shutdown)
        .await
        .map_err(CliError::io("serving"))?;
    Ok(ExitStatus::Yes)
}

async fn build(
    key: &std::path::Path,
    state: &std::path::Path,
    log_keys: &[PathBuf],
    origin: &str,
    name: &str,
) -> Result<Witness, CliError> {
    let key = seal_fs::keys::load_signing_key(key)?;
    let mut trusted = Vec::new();
    for p in log_keys {
        trusted.push(seal_fs::keys::load_public_key(p)?.raw());
    }
    if trusted.contains(&key.public().raw()) {
        return Err(CliError::Usage("the witness key must not be one of the log's keys (a witness signs separately from the log it watches)".into()));
    }
    let path = state.to_path_buf();
    let (file, held) = tokio::task::spawn_blocking(move || StateFile::open(&path))
        .await
        .map_err(|e| CliError::Io {
            what: format!("witness state {}", state.display()),
            source: e.into(),
        })?
        .map_err(CliError::failed)?;
    if held.logs.is_empty() {
        tracing::warn!(state = %state.display(), "starting with an empty state: this witness has cosigned nothing yet");
    }
    let logs = BTreeMap::from([(origin.to_string(), trusted)]);
    Witness::new(name, key, logs, file, held, service::system_clock())
        .map_err(|e| CliError::Usage(e.to_string()))
}

/// `seal witness …` from the command line: on its own runtime, until a signal.
pub(super) fn run_command(cmd: WitnessCommand) -> Result<ExitStatus, CliError> {
    runtime()?.block_on(run(&cmd, shutdown_signal()))
}
