//! The accept loop of `seal serve`, written for hostile clients (DESIGN §8, "Connections").
//!
//! - **Open connections are bounded** (`server.max_connections`): past the bound a new
//!   connection is answered at once with a 503 `overloaded` error body (`Retry-After: 1`,
//!   `Connection: close`) and closed, so the daemon sheds load instead of stalling.
//! - **A request head must arrive within `server.header_timeout_ms`**; hyper starts that timer
//!   whenever it waits for a head, so it is also the idle keep-alive time. A client that sends
//!   half a header and waits is closed.
//! - **A request body may not stall** longer than `server.body_timeout_ms` between chunks
//!   (tower-http's request body timeout in the router: 408), and the whole request is bounded by
//!   `server.request_timeout_ms`.
//! - **The file-descriptor soft limit** is raised to the hard limit at start-up
//!   ([`raise_fd_limit`]); an accept that fails (EMFILE) backs off instead of spinning.
//!
//! HTTP/1.1 only: every client of the API speaks it.

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// What bounds a connection.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    pub max_connections: usize,
    pub header_timeout: Duration,
}

/// The answer to a connection past the bound.
const OVERLOADED: &str = r#"{"error":{"code":"overloaded","message":"too many open connections; retry later","object":null}}"#;

/// Back-off after a failed accept (out of descriptors, say).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Raises the soft limit of open files to the hard limit; answers the (soft, hard) limits now in
/// force, or None where they cannot be read.
pub fn raise_fd_limit() -> Option<(u64, u64)> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let lim = getrlimit(Resource::Nofile);
    let (soft, hard) = (lim.current?, lim.maximum);
    // An unlimited hard limit: raise to a bound the kernel accepts everywhere.
    let target = hard.unwrap_or(1 << 20);
    if soft < target {
        let raised = Rlimit {
            current: Some(target),
            maximum: hard,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            return Some((target, hard.unwrap_or(u64::MAX)));
        }
    }
    Some((soft, hard.unwrap_or(u64::MAX)))
}

/// The address a request's connection came from (a request extension).
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub std::net::SocketAddr);

/// Answers 503 to a connection past the bound and closes it (best effort, bounded in time).
async fn shed(mut stream: TcpStream) {
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{OVERLOADED}",
        OVERLOADED.len()
    );
    let write = async {
        stream.write_all(head.as_bytes()).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
}

/// Serves `app` on `listener` until `shutdown` resolves; then stops accepting and answers when
/// every open connection has finished (the caller bounds that wait).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnLimits,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let open = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed; backing off");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        let (stream, peer) = stream;
        let Ok(permit) = open.clone().try_acquire_owned() else {
            tracing::warn!(
                max_connections = limits.max_connections,
                "connection bound reached: answering 503"
            );
            tokio::spawn(shed(stream));
            continue;
        };
        let _ = stream.set_nodelay(true);
        // Each request carries its connection's peer, for the access line (`routes::observe`).
        let with_peer = move |mut req: hyper::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(ClientAddr(peer));
            req
        };
        let service =
            TowerToHyperService::new(tower::util::MapRequest::new(app.clone(), with_peer));
        let conn = http.serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
