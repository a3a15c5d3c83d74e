//! `seal serve`: the HTTP API, once the listen address is judged safe, until a signal stops it.

use super::*;

pub(super) fn cmd_serve(
    cli: &Cli,
    listen: Option<&str>,
    store: Option<&str>,
    key: Option<&Path>,
    insecure_no_auth: bool,
) -> u8 {
    init_logging(cli.log_format, "info");
    let config = match load_config(cli.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let addr = match serve_address(&config, listen, insecure_no_auth) {
        Ok(a) => a,
        Err(code) => return code,
    };
    // `--key`, when given, is the key; the default secret file is the one beside it.
    let config = config.with_signing_key(key);
    let key = match load_key(&config.signing_key) {
        Ok(k) => k,
        Err(code) => return code,
    };
    let mut trusted = vec![key.public()];
    for p in &config.trusted_keys {
        match seal_core::sealing::PublicKey::load(p) {
            Ok(k) => trusted.push(k),
            Err(e) => return fail(e),
        }
    }
    if let Err(e) = seal_core::contracts::self_check() {
        return fail(e);
    }
    let rt = match runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    rt.block_on(async {
        let engine = match engine(config, store, Some(key)).await {
            Ok(e) => e,
            Err(code) => return code,
        };
        // G2 (docs/DESIGN.md §13): never serve, and so never sign, a log that does not account
        // for the store's sealed runs; the operator looks, then runs `seal log rebuild`.
        if let Some(key) = engine.key() {
            if let Err(e) = engine.log().admit(key, &trusted).await {
                return fail(format!(
                    "refusing to serve: {}",
                    terminal_safe(&e.to_string())
                ));
            }
        }
        let listener = match tokio::net::TcpListener::bind(&addr).await {
            Ok(l) => l,
            Err(e) => return fail(format!("cannot listen on {addr}: {e}")),
        };
        let local = listener.local_addr().map(|a| a.to_string()).unwrap_or(addr);
        tracing::info!(addr = %local, store = %engine.store().url(), "seal serve listening");
        // The first stdout line tells scripts (and tests binding port 0) where we are.
        println!("seal serve listening on http://{local}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let state = seal_server::AppState::new(engine, trusted);
        match seal_server::run(listener, state, shutdown_signal()).await {
            Ok(()) => {
                tracing::info!("stopped");
                0
            }
            Err(e) => fail(e),
        }
    })
}

/// The address `seal serve` listens on, checked before anything else: an open daemon on the
/// network is refused, not discovered later (see `server::exposure`).
pub(super) fn serve_address(
    config: &Config,
    listen: Option<&str>,
    insecure_no_auth: bool,
) -> Result<String, u8> {
    let addr = listen
        .map(str::to_owned)
        .unwrap_or_else(|| config.server.listen.clone());
    let has_token = config.server.bearer_token.is_some();
    match seal_server::exposure(&addr, has_token, insecure_no_auth) {
        Ok(seal_server::Exposure::OpenToNetwork) => tracing::warn!(
            addr = %addr,
            "INSECURE: --insecure-no-auth: listening beyond loopback without an API token; \
             anyone who can reach this address can submit, judge and finalize runs"
        ),
        Ok(_) => {}
        Err(e) => return Err(fail(e)),
    }
    Ok(addr)
}

/// Resolves on SIGTERM or SIGINT.
pub(super) async fn shutdown_signal() {
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
