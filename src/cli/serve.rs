//! `seal serve`: the HTTP API, once the listen address is judged safe, until a signal stops it.
//!
//! Exit 0 after SIGTERM or SIGINT; 2 refused or could not start (an address open to the network
//! without a token, a log that does not account for the store, key, config, store, listener).

use std::path::PathBuf;

use seal_engine::config::Config;

use super::args::{self, StoreArg};
use super::context::{shutdown_signal, Context, Opening};
use super::error::{CliError, ExitStatus};

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on (default: server.listen of the config, 127.0.0.1:7878).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Store URL (default: the config's).
    #[arg(long, value_name = "URL", value_parser = args::store)]
    pub store: Option<StoreArg>,
    /// Signing key (default: keys.signing_key of the config).
    #[arg(long, value_name = "PEM")]
    pub key: Option<PathBuf>,
    /// Listen on a non-loopback address without an API token (every route open to the
    /// network). Refused without this flag.
    #[arg(long)]
    pub insecure_no_auth: bool,
}

pub fn run(ctx: &Context, args: ServeArgs) -> Result<ExitStatus, CliError> {
    let addr = serve_address(ctx.config(), args.listen.as_deref(), args.insecure_no_auth)?;
    let url = ctx.store_url(args.store.as_ref())?;
    let signing = ctx.signing(args.key.as_deref())?;
    let trusted = ctx.trusted(&[], Some(signing.key().public()))?;
    seal_core::contracts::self_check().map_err(|e| CliError::Setup(e.to_string()))?;
    ctx.judge_keys(&signing)?;
    ctx.block_on(async {
        let store = ctx
            .write_store(&signing, &url, Opening::CreateIfMissing)
            .await?;
        let engine = ctx.engine(signing, store)?;
        // G2 (docs/DESIGN.md §13): never serve, and so never sign, a log that does not account
        // for the store's sealed runs; the operator looks, then runs `seal log rebuild`.
        if let Some(key) = engine.key() {
            engine
                .log()
                .admit(key, &trusted)
                .await
                .map_err(|e| CliError::within("refusing to serve", e))?;
        }
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .map_err(CliError::io(format!("cannot listen on {addr}")))?;
        let local = listener.local_addr().map(|a| a.to_string()).unwrap_or(addr);
        tracing::info!(addr = %local, store = %engine.store().url(), "seal serve listening");
        // The first stdout line tells scripts (and tests binding port 0) where we are.
        println!("seal serve listening on http://{local}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let state = seal_server::AppState::new(engine, trusted);
        seal_server::run(listener, state, shutdown_signal())
            .await
            .map_err(CliError::io("serving"))?;
        tracing::info!("stopped");
        Ok(ExitStatus::Yes)
    })
}

/// The address `seal serve` listens on, checked before anything else: an open daemon on the
/// network is refused, not discovered later (see `server::exposure`).
fn serve_address(
    config: &Config,
    listen: Option<&str>,
    insecure_no_auth: bool,
) -> Result<String, CliError> {
    let addr = listen
        .map(str::to_owned)
        .unwrap_or_else(|| config.server.listen.clone());
    let has_token = config.server.bearer_token.is_some();
    let exposure =
        seal_server::exposure(&addr, has_token, insecure_no_auth).map_err(CliError::failed)?;
    if exposure == seal_server::Exposure::OpenToNetwork {
        tracing::warn!(
            addr = %addr,
            "INSECURE: --insecure-no-auth: listening beyond loopback without an API token; \
             anyone who can reach this address can submit, judge and finalize runs"
        );
    }
    Ok(addr)
}
