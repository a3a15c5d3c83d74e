//! Store key parsing: an accepted key is relative, has no empty, `.` or `..` segment, and
//! round-trips through its own text.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|s: &str| {
    if let Ok(k) = seal_core::key::Key::parse(s) {
        let t = k.as_str();
        assert!(!t.starts_with('/') && !t.contains('\0') && !t.contains('\\'));
        assert!(t.split('/').all(|p| !p.is_empty() && p != "." && p != ".."));
        assert_eq!(seal_core::key::Key::parse(t).ok(), Some(k.clone()));
        let _ = k.cas_hash();
        let _ = k.run_id();
        if let Some(t) = seal_core::tlog::key_tile(&k) {
            assert_eq!(seal_core::tlog::tile_key(&t), Some(k.clone()));
        }
    }
});
