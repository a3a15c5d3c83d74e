//! The streaming element count of proof packages: never panics, and on bytes the strict parser
//! accepts it counts what the parsed tree holds.
#![no_main]
use libfuzzer_sys::fuzz_target;
use seal_core::limits::{check_package, PackageLimits};

fuzz_target!(|data: &[u8]| {
    let limits = PackageLimits {
        max_events: 3,
        max_actions: 3,
        max_frames: 3,
    };
    let verdict = check_package(data, &limits);
    if let Ok(serde_json::Value::Object(m)) = seal_core::json::parse(data, 1 << 20) {
        let over = ["events", "actions", "frames"].iter().any(|f| {
            m.get(*f)
                .and_then(|v| v.as_array())
                .is_some_and(|a| a.len() > 3)
        });
        assert_eq!(over, verdict.is_err(), "count disagrees with the parsed tree");
    }
});
