//! Per roll each slot gets a policy seed and a session id derived from (runId, rollId, slot)
//! and a secret salt: distinct between A and B, fresh for every roll, unpredictable without the
//! salt, and the same after a crash, so a resumed roll re-sends byte-identical requests.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::ids::{RollId, RunId, Slot};

pub(crate) fn derive(
    salt: &[u8],
    label: &str,
    run: &RunId,
    roll: RollId,
    slot: Slot,
    counter: u32,
) -> [u8; 32] {
    // HMAC keys of any length are valid, so `new_from_slice` cannot fail; fall back to the
    // unkeyed digest rather than panic if a future version disagrees.
    let mut mac = match Hmac::<Sha256>::new_from_slice(salt) {
        Ok(m) => m,
        Err(_) => return <Sha256 as sha2::Digest>::digest(label.as_bytes()).into(),
    };
    for part in [
        label,
        run.as_str(),
        roll.as_str(),
        slot.as_str(),
        &counter.to_string(),
    ] {
        mac.update(part.as_bytes());
        mac.update(&[0]);
    }
    mac.finalize().into_bytes().into()
}

/// Policy seeds of A and B for a roll: 31-bit (every provider accepts them), never equal.
pub fn policy_seeds(salt: &[u8], run: &RunId, roll: RollId) -> (u64, u64) {
    let seed = |slot, counter| {
        let d = derive(salt, "seal/policy-seed", run, roll, slot, counter);
        u64::from(u32::from_be_bytes([d[0], d[1], d[2], d[3]]) & 0x7fff_ffff)
    };
    let a = seed(Slot::A, 0);
    let mut b = seed(Slot::B, 0);
    let mut counter = 1;
    while b == a {
        b = seed(Slot::B, counter);
        counter += 1;
    }
    (a, b)
}

/// The session id of a slot for a roll (sent as `X-Session-Id` and `user`).
pub fn session_id(salt: &[u8], run: &RunId, roll: RollId, slot: Slot) -> String {
    let d = derive(salt, "seal/session", run, roll, slot, 0);
    format!("sess-{}-{}", slot, hex::encode(&d[..12]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_and_sessions_are_distinct_stable_and_salted() {
        let run = RunId::parse("run-1").unwrap();
        let (a, b) = policy_seeds(b"salt", &run, RollId::R1);
        assert_ne!(a, b);
        assert_eq!((a, b), policy_seeds(b"salt", &run, RollId::R1));
        assert_ne!((a, b), policy_seeds(b"salt", &run, RollId::R2));
        assert_ne!((a, b), policy_seeds(b"other", &run, RollId::R1));
        assert!(a < 1 << 31 && b < 1 << 31);
        let sa = session_id(b"salt", &run, RollId::R1, Slot::A);
        let sb = session_id(b"salt", &run, RollId::R1, Slot::B);
        assert_ne!(sa, sb);
        assert_ne!(sa, session_id(b"salt", &run, RollId::R2, Slot::A));
    }
}
