//! DSSE envelope and in-toto statement parsing and verification against a fixed key: never
//! panics, never verifies (the fuzzer has no signing key).
#![no_main]
use libfuzzer_sys::fuzz_target;
use seal_core::sealing::{verify_envelope, Envelope, SigningKey, Statement};
use std::sync::OnceLock;

fuzz_target!(|data: &[u8]| {
    static KEY: OnceLock<SigningKey> = OnceLock::new();
    let key = KEY.get_or_init(|| SigningKey::from_seed(&[7; 32]));
    if let Ok(env) = seal_core::json::parse_as::<Envelope>(data, 1 << 20) {
        assert!(verify_envelope(&env, &[key.public()]).is_err());
    }
    let _ = seal_core::json::parse_as::<Statement>(data, 1 << 20);
});
