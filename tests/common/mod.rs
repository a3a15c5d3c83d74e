//! Helpers shared by the integration tests.
#![allow(dead_code)]

use seal::store::Store;

/// The S3-compatible endpoint CI starts (moto), if any.
pub fn s3_endpoint() -> Option<String> {
    std::env::var("SEAL_TEST_S3_ENDPOINT").ok().filter(|s| !s.is_empty())
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
        eprintln!(
            "SKIPPED {test} on s3://: SEAL_TEST_S3_ENDPOINT is not set (CI starts an \
             S3-compatible server and sets it; see .ci/run)"
        );
        return None;
    };
    let url = format!("s3://{}/{}?endpoint={}", s3_bucket(), s3_prefix(test), ep);
    Some(Store::open(&url).await.expect("open s3 store"))
}

/// An S3 URL under a fresh prefix (for tests that start processes).
pub fn s3_url(test: &str) -> Option<String> {
    s3_endpoint().map(|ep| format!("s3://{}/{}?endpoint={}", s3_bucket(), s3_prefix(test), ep))
}

fn s3_prefix(test: &str) -> String {
    format!("t-{}-{}", test.replace('_', "-"), seal::store::random_hex(6))
}
