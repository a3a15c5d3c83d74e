//! RFC 8785 canonicalization: canonical bytes parse back to the same value and are a fixed
//! point (canonicalizing them again changes nothing).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(v) = seal_core::json::parse(data, 1 << 20) else {
        return;
    };
    let Ok(c) = seal_core::canonical::canonical_bytes(&v) else {
        return;
    };
    let back = seal_core::json::parse(&c, 1 << 22).expect("canonical bytes parse");
    let again = seal_core::canonical::canonical_bytes(&back).expect("canonical again");
    assert_eq!(c, again, "canonicalization is not a fixed point");
});
