//! `seal serve`: the HTTP API, once the listen address is judged safe, until a signal stops it.
//!
//! Exit 0 after SIGTERM or SIGINT; 2 refused or could not start (an address open to the network
//! without a token, a log that does not account for the store, key, config, store, listener).

use std::path::PathBuf;

use seal_core::fault::HasFault;
use seal_core::sealing::PublicKey;
use seal_engine::config::Config;
use seal_engine::engine::Engine;
use seal_log::LogError;
use seal_server::{Admission, AdmissionGate};

use super::args::{self, StoreArg};
use super::context::{shutdown_signal, Context, Opening};
use super::error::{CliError, ExitStatus};
use super::LogFormat;

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
    /// Create a `file://` store whose folder does not exist yet (a new deployment). Without
    /// it a missing folder is refused: a mistyped path would start an empty store.
    #[arg(long)]
    pub create_store: bool,
}

pub fn run(ctx: &Context, args: ServeArgs, format: LogFormat) -> Result<ExitStatus, CliError> {
    let addr = serve_address(ctx.config(), args.listen.as_deref(), args.insecure_no_auth)?;
    let url = ctx.store_url(args.store.as_ref())?;
    let signing = ctx.signing(args.key.as_deref())?;
    let trusted = ctx.trusted(&[], Some(signing.key().public()))?;
    let reviewers = ctx.reviewer_keys(&[])?;
    seal_core::contracts::self_check().map_err(|e| CliError::Setup(e.to_string()))?;
    ctx.judge_keys(&signing)?;
    // After the keys and the secret: a daemon that could not judge creates nothing either way.
    if !args.create_store {
        missing_folder(&url, args.store.is_some(), &ctx.config().source)?;
    }
    ctx.block_on(async {
        let store = ctx
            .write_store(&signing, &url, Opening::CreateIfMissing)
            .await?;
        let engine = ctx.engine(signing, store)?;
        // The port first: liveness and readiness answer while the log admission reads the
        // history (it grows with every seal); only finalize waits for it (`server::routes::health`).
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .map_err(|source| CliError::Listen {
                addr: addr.clone(),
                from: match args.listen {
                    Some(_) => "--listen".to_string(),
                    None => format!("server.listen of {}", ctx.config().source),
                },
                source,
            })?;
        let local = listener.local_addr().map(|a| a.to_string()).unwrap_or(addr);
        summary(&engine, &local).await;
        // The first stdout line tells scripts (and tests binding port 0) where we are. Logs go
        // to stderr; in JSON mode this line is JSON too, so that a collector reading both
        // streams parses every line.
        match format {
            LogFormat::Human => println!("seal serve listening on http://{local}"),
            LogFormat::Json => println!(
                "{}",
                serde_json::json!({"message": "seal serve listening", "url": format!("http://{local}")})
            ),
        }
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let state = seal_server::AppState::new(engine.clone(), trusted.clone())
            .with_reviewers(reviewers.clone())
            .with_build(super::build_info());
        let gate = state.admission_gate();
        gate.set(Admission::Pending);
        let served = seal_server::run(listener, state, shutdown_signal());
        tokio::select! {
            r = served => r.map_err(CliError::io("serving"))?,
            refused = admit(engine, trusted, gate) => return Err(refused),
        }
        tracing::info!("stopped");
        Ok(ExitStatus::Yes)
    })
}

/// Refuses a `file://` store whose folder is missing (`--create-store` not given), naming the
/// path, where the URL came from and the flag. A daemon pointed at a mistyped path would
/// otherwise serve, seal and log into a new empty store while the real one sits unread;
/// `memory://` is empty by nature and `s3://` buckets are made by their owner.
fn missing_folder(url: &StoreArg, flag: bool, config: &str) -> Result<(), CliError> {
    let seal_store::StoreUrl::File(path, _) = url.url() else {
        return Ok(());
    };
    if path.exists() {
        return Ok(());
    }
    Err(CliError::MissingStore {
        url: url.to_string(),
        path: path.clone(),
        from: if flag {
            "--store".to_string()
        } else {
            format!("store of {config}")
        },
    })
}

/// The one start-up summary line (info): what this daemon runs as and talks to, so an
/// operator reading one line knows the build, the address, the store, the replica, each judge
/// (model, endpoint host, auth) and the API's auth mode. Never a secret: the store is shown
/// without user info, judges by host only, tokens by whether they are set.
async fn summary(engine: &Engine, addr: &str) {
    let c = engine.config();
    let build = super::build_info();
    let judge = |s: &seal_engine::config::SlotConfig| {
        format!("{} @ {} (auth {})", s.model, s.host(), s.auth.as_str())
    };
    let api_auth = if c.server.bearer_token.is_some() {
        "token"
    } else {
        "none"
    };
    let metrics_auth = match (&c.server.metrics_token, &c.server.bearer_token) {
        (Some(_), _) => "metrics token",
        (None, Some(_)) => "api token",
        (None, None) => "none",
    };
    let key_id = engine.key().map(|k| k.public().key_id).unwrap_or_default();
    // The largest stored checkpoint's size, from one listing of names (a number, nothing read:
    // checking it is the admission's work, off the start path, and reading planted notes here
    // would hold the health routes back). A number; absent when the listing fails.
    let log_size: Option<u64> = match seal_log::checkpoint_sizes(engine.store()).await {
        Ok(sizes) => Some(sizes.first().copied().unwrap_or(0)),
        Err(_) => None,
    };
    tracing::info!(
        version = build.version,
        commit = build.commit,
        addr = %addr,
        config = %c.source,
        store = %without_userinfo(&engine.store().url().to_string()),
        replica = engine.judges().replica(),
        judge_a = %judge(&c.a),
        judge_b = %judge(&c.b),
        api_auth,
        metrics_auth,
        key_id = %key_id,
        log_size,
        "seal serve listening"
    );
}

/// `text` with the user info (`user:password@`) of every URL in it removed: an S3 endpoint
/// may carry credentials, a log line must not.
fn without_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let authority_end = tail.find(['/', ' ', '?', '#', ')']).unwrap_or(tail.len());
        let authority = &tail[..authority_end];
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        out.push_str(host);
        rest = &tail[authority_end..];
    }
    out.push_str(rest);
    out
}

/// The log admission (G2, docs/DESIGN.md §13), off the start path: never append to, and so
/// never sign, a log that does not account for the store's sealed runs. Its first half reads
/// the latest checkpoint's tree from the tiles (independent of history) and opens finalize;
/// the seal scan (O(history)) follows behind the first appends. Resolves only when it refuses
/// (the daemon then exits 2, after readiness turned 503; the operator looks, then runs
/// `seal log rebuild`); once the scan passed it stays pending for ever, leaving the server to
/// run.
async fn admit(engine: Engine, trusted: Vec<PublicKey>, gate: AdmissionGate) -> CliError {
    // Test builds only (debug assertions, what `cargo test` runs): the shipped binary has no
    // hook, whatever its environment says.
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var(ADMISSION_DELAY_HOOK)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    let Some(key) = engine.key() else {
        gate.set(Admission::Admitted);
        return std::future::pending().await;
    };
    let t0 = std::time::Instant::now();
    let scan_due = match engine.log().admit_quick(key, &trusted).await {
        Ok(due) => due,
        Err(e) => return refused(&gate, e),
    };
    gate.set(Admission::Admitted);
    let ms = t0.elapsed().as_millis() as u64;
    tracing::info!(admission_ms = ms, "log admitted: finalize may append");
    if scan_due {
        let t1 = std::time::Instant::now();
        loop {
            match engine.log().scan(key, &trusted).await {
                Ok(()) => break,
                Err(e @ LogError::Refused { .. }) => return refused(&gate, e),
                // The store failed under the scan: appends go on, the scan is tried again.
                Err(e) => {
                    tracing::warn!(error = %e, "log seal scan: the store failed, trying again");
                    tokio::time::sleep(SCAN_RETRY).await;
                }
            }
        }
        let ms = t1.elapsed().as_millis() as u64;
        tracing::info!(scan_ms = ms, "log seal scan: every stored seal is logged");
    }
    if let Err(e) = register_policy(&engine).await {
        gate.set(Admission::Refused);
        return e;
    }
    std::future::pending().await
}

/// The judge policy, logged once the log is admitted whole, before any request asks a judge
/// anything (a roll arriving first registers it itself, the same way). Bytes planted under its
/// name are a store this daemon must not judge into: it exits, naming them; a store that is
/// only unavailable now is left to the first roll.
async fn register_policy(engine: &Engine) -> Result<(), CliError> {
    match engine.policy().await {
        Ok(p) => tracing::info!(policy = %p.sha256, leaf = p.leaf_index, "judge policy logged"),
        Err(e) if e.fault() == seal_core::fault::Fault::Corruption => {
            tracing::error!(error = %e, "judge policy refused: readiness is 503, exiting");
            return Err(CliError::within("refusing to serve", e));
        }
        Err(e) => tracing::warn!(error = %e, "judge policy not logged yet: the first roll logs it"),
    }
    Ok(())
}

/// How long the seal scan waits after a store failure before reading again.
const SCAN_RETRY: std::time::Duration = std::time::Duration::from_secs(5);

fn refused(gate: &AdmissionGate, e: LogError) -> CliError {
    gate.set(Admission::Refused);
    tracing::error!(error = %e, "log admission refused: readiness is 503, exiting");
    CliError::within("refusing to serve", e)
}

/// Test hook: delays the log admission by this many milliseconds, so tests can watch a
/// daemon that serves before its admission ended. Compiled with debug assertions only.
#[cfg(debug_assertions)]
const ADMISSION_DELAY_HOOK: &str = "SEAL_TEST_ADMISSION_DELAY_MS";

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_urls_lose_their_user_info() {
        assert_eq!(
            without_userinfo("s3://b/p (endpoint http://ak:sk@minio:9000)"),
            "s3://b/p (endpoint http://minio:9000)"
        );
        assert_eq!(without_userinfo("file:///var/seal"), "file:///var/seal");
    }
}
