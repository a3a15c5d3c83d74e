//! A loopback judge on a fixed address, for CI steps that drive a real `seal serve` (the
//! schemathesis run of `.ci/run`). Prints `loopback judge on http://ADDR/v1` and serves until
//! killed; each model answers by itself with the default persona.
//!
//! ```sh
//! cargo run -p seal-testkit --bin loopback-judge -- 127.0.0.1:49200
//! cargo run -p seal-testkit --bin loopback-judge -- 127.0.0.1:49200 200   # answers after 200 ms
//! SEAL_LOOPBACK_UNIQUE_IDS=1 cargo run -p seal-testkit --bin loopback-judge  # ids of their own
//! ```

use std::time::Duration;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_string());
    // The second argument: each answer's latency in milliseconds (benchmarks simulate judges).
    let latency_ms = match std::env::args().nth(2) {
        None => 1,
        Some(ms) => ms.parse::<u64>().map_err(|e| {
            std::io::Error::other(format!(
                "latency {ms:?} is not a number of milliseconds: {e}"
            ))
        })?,
    };
    let lb = seal_testkit::loopback::Loopback::start_on(&addr, Duration::from_millis(latency_ms))
        .await?;
    if std::env::var_os("SEAL_LOOPBACK_UNIQUE_IDS").is_some_and(|v| v == "1") {
        lb.unique_ids();
    }
    println!("loopback judge on {}", lb.url());
    tokio::signal::ctrl_c().await?;
    drop(lb);
    Ok(())
}
