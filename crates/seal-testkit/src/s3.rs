//! Scratch buckets on the S3-compatible server the tests run against (moto, `tools/s3_server.py`).
//!
//! One bucket per test store, not one shared bucket with a prefix each: moto lists a bucket by
//! scanning every key in it, so in one shared bucket each listing grew with every test that ran
//! before it, and the S3 crash-point tests (thousands of listings) slowed down as the suite went
//! on. A bucket of its own keeps every listing as small as the test's own store.

use std::io::{Read, Write};

/// A new, empty bucket for `test` on the server at `endpoint` (`http://host:port`), created
/// with an unsigned PUT as `.ci/run` creates its bucket; its name: `t-<test>-<12 hex>`, within
/// S3's 3–63 lowercase letters, digits and hyphens.
pub fn fresh_bucket(endpoint: &str, test: &str) -> std::io::Result<String> {
    let stem: String = test
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(40)
        .collect();
    let name = format!(
        "t-{}-{:012x}",
        stem.trim_matches('-'),
        rand::random::<u64>() & 0xffff_ffff_ffff
    );
    let host = endpoint.trim_start_matches("http://").trim_end_matches('/');
    let mut conn = std::net::TcpStream::connect(host)?;
    conn.set_read_timeout(Some(std::time::Duration::from_secs(30)))?;
    write!(
        conn,
        "PUT /{name} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = String::new();
    conn.read_to_string(&mut answer)?;
    let status = answer.split_whitespace().nth(1).unwrap_or("");
    if status != "200" {
        let head: String = answer.chars().take(300).collect();
        return Err(std::io::Error::other(format!(
            "creating bucket {name} at {endpoint}: {head}"
        )));
    }
    Ok(name)
}
