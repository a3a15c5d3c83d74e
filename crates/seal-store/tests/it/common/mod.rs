//! The S3-compatible server the store tests run against when CI starts one (`.ci/run`).
#![allow(dead_code)]

use seal_store::Store;

/// The S3-compatible endpoint CI starts (moto), if any.
pub fn s3_endpoint() -> Option<String> {
    std::env::var("SEAL_TEST_S3_ENDPOINT")
        .ok()
        .filter(|s| !s.is_empty())
}

/// The S3 bucket the CI script creates.
pub fn s3_bucket() -> String {
    std::env::var("SEAL_TEST_S3_BUCKET").unwrap_or_else(|_| "seal-test".into())
}

/// An S3 store under a fresh prefix, or None (with the reason printed) when no server is set.
/// In CI (`SEAL_REQUIRE_S3=1`) a missing server is a failure, never a skip.
pub async fn s3_store(test: &str) -> Option<Store> {
    let Some(ep) = s3_endpoint() else {
        if std::env::var("SEAL_REQUIRE_S3").as_deref() == Ok("1") {
            panic!("SEAL_REQUIRE_S3=1 but SEAL_TEST_S3_ENDPOINT is not set");
        }
        eprintln!("SKIPPED {test} on s3://: SEAL_TEST_S3_ENDPOINT is not set (see .ci/run)");
        return None;
    };
    let prefix = format!("t-{}-{}", test.replace('_', "-"), random_hex(6));
    let url = format!("s3://{}/{prefix}?endpoint={ep}", s3_bucket());
    Some(Store::open(&url).await.expect("open s3 store"))
}

/// `bytes` random bytes as lowercase hex: unique prefixes.
pub fn random_hex(bytes: usize) -> String {
    use rand::RngCore;
    let mut b = vec![0u8; bytes];
    rand::thread_rng().fill_bytes(&mut b);
    hex::encode(b)
}
