//! Document validation, the `seal validate` path: kind detection, schemas, invariants.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = seal_core::validate::validate_bytes(data, 1 << 20);
});
