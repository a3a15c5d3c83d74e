//! The strict JSON parser (duplicate keys, depth, size, numbers): never panics; what it accepts
//! re-parses to the same value from its own serialization.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(v) = seal_core::json::parse(data, 1 << 20) {
        let again = serde_json::to_vec(&v).expect("a parsed value serializes");
        assert_eq!(seal_core::json::parse(&again, 1 << 22).ok(), Some(v));
    }
});
