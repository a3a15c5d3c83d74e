//! The reservation MAC: a roll's cost reservation says, under the deployment's seed salt, that
//! this deployment reserved the roll and which request each slot sends.
//!
//! Why: a roll in flight when `seal serve` stops may be resumed by a process whose judge
//! configuration changed (another model, prompt or price). The stored reservation and requests
//! are then not what the new configuration derives, and without a MAC they cannot be told from
//! bytes a store writer planted, so the roll could never finish. With it, the resume knows the
//! stored reservation is ours; each slot's `requestSha256` then authenticates the stored request
//! of every attempt (all attempts of a slot send the same bytes), and the slot is closed as
//! `config_changed` instead of re-sending an old request or refusing for ever.
//!
//! `reservationMac` = `"hmac-sha256:" ‖ hex(HMAC-SHA256(K, canonical reservation without the
//! mac))`, `K` derived from the salt with the label `seal/reservation-mac` and the run and roll
//! (as the seeds are): it cannot be moved to another run or roll. Like the attempt MAC it is
//! for resume only: `seal verify` has no salt, and the seal binds the reservation's bytes.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::canonical::canonical_bytes;
use crate::doc::CostReservation;
use crate::ids::{RunId, Slot};

/// Label of the key derivation (distinct from the seed, session and attempt labels).
pub const LABEL: &str = "seal/reservation-mac";
/// Prefix of a `reservationMac` value.
pub const PREFIX: &str = "hmac-sha256:";

fn compute(salt: &[u8], run: &RunId, reservation: &CostReservation) -> Option<[u8; 32]> {
    let mut core = reservation.clone();
    core.reservation_mac = None;
    let bytes = canonical_bytes(&core).ok()?;
    let key = super::seeds::derive(salt, LABEL, run, reservation.roll_id, Slot::A, 0);
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(&bytes);
    Some(mac.finalize().into_bytes().into())
}

/// `reservation` with its `reservationMac` set for `run` under `salt`.
pub fn sign(salt: &[u8], run: &RunId, mut reservation: CostReservation) -> CostReservation {
    reservation.reservation_mac = None;
    reservation.reservation_mac =
        compute(salt, run, &reservation).map(|m| format!("{PREFIX}{}", hex::encode(m)));
    reservation
}

/// Whether `reservation`'s MAC verifies for `run` under `salt` (constant time).
pub fn verifies(salt: &[u8], run: &RunId, reservation: &CostReservation) -> bool {
    use subtle::ConstantTimeEq;
    let Some(want) = compute(salt, run, reservation) else {
        return false;
    };
    reservation
        .reservation_mac
        .as_deref()
        .and_then(|m| m.strip_prefix(PREFIX))
        .and_then(|h| hex::decode(h).ok())
        .is_some_and(|g| g.len() == 32 && bool::from(g.ct_eq(&want)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::Hash;
    use crate::doc::{PriceTable, SlotPrice, COST_RESERVATION};
    use crate::ids::RollId;

    fn price(model: &str) -> SlotPrice {
        SlotPrice {
            model: model.into(),
            input_rmb_per_m_tok: 2.0,
            output_rmb_per_m_tok: 8.0,
            image_rmb: 0.01,
            max_attempts: 3,
            max_input_tokens: 1000,
            max_output_tokens: 800,
            images: 2,
            worst_case_rmb: 0.05,
            request_sha256: Some(Hash::of(model.as_bytes())),
        }
    }

    fn reservation(roll: RollId) -> CostReservation {
        CostReservation {
            schema_version: COST_RESERVATION.into(),
            roll_id: roll,
            budget_rmb: 5.0,
            spent_before_rmb: 0.1,
            reserved_rmb: 0.1,
            within_budget: true,
            price_table: PriceTable {
                a: price("judge-a"),
                b: price("judge-b"),
            },
            reservation_mac: None,
        }
    }

    fn run(s: &str) -> RunId {
        RunId::parse(s).unwrap()
    }

    #[test]
    fn a_signed_reservation_verifies_for_its_run_and_salt_only() {
        let r = sign(b"salt-1", &run("run-1"), reservation(RollId::R1));
        assert!(r.reservation_mac.as_deref().unwrap().starts_with(PREFIX));
        assert!(verifies(b"salt-1", &run("run-1"), &r));
        assert!(!verifies(b"salt-2", &run("run-1"), &r), "another salt");
        assert!(!verifies(b"salt-1", &run("run-2"), &r), "another run");
        // Signing is deterministic: two replicas reserving the same roll store the same bytes.
        assert_eq!(r, sign(b"salt-1", &run("run-1"), reservation(RollId::R1)));
    }

    #[test]
    fn every_field_of_a_reservation_is_under_its_mac() {
        let r = sign(b"salt", &run("run-1"), reservation(RollId::R1));
        type Edit = Box<dyn Fn(&mut CostReservation)>;
        let edits: Vec<Edit> = vec![
            Box::new(|r| r.roll_id = RollId::R2),
            Box::new(|r| r.within_budget = false),
            Box::new(|r| r.budget_rmb = 50.0),
            Box::new(|r| r.reserved_rmb = 0.0),
            Box::new(|r| r.price_table.b.model = "other".into()),
            Box::new(|r| r.price_table.a.request_sha256 = Some(Hash::of(b"planted"))),
            Box::new(|r| r.price_table.b.request_sha256 = None),
        ];
        for (i, edit) in edits.iter().enumerate() {
            let mut planted = r.clone();
            edit(&mut planted);
            assert!(!verifies(b"salt", &run("run-1"), &planted), "edit {i}");
        }
    }

    #[test]
    fn a_reservation_without_or_with_a_malformed_mac_does_not_verify() {
        let r = sign(b"salt", &run("run-1"), reservation(RollId::R1));
        for mac in [
            None,
            Some(String::new()),
            Some("hmac-sha256:zz".to_string()),
            Some(format!("hmac-sha256:{}", "0".repeat(64))),
            Some(
                r.reservation_mac
                    .clone()
                    .unwrap()
                    .replace(PREFIX, "sha256:"),
            ),
        ] {
            let mut planted = r.clone();
            planted.reservation_mac = mac.clone();
            assert!(!verifies(b"salt", &run("run-1"), &planted), "{mac:?}");
        }
    }
}
