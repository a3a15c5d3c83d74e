//! The one rule, for each document kind: read under its own key it passes; copied under
//! another run, roll, slot, attempt or review index it is refused, naming the key and field.
//! The documents are the sealed fixtures' own bytes (honest runs pass unchanged).

use super::*;
use crate::canonical::Hash;
use crate::ids::RunId;
use crate::json::parse_as;

const RUN: &str = "run-heritage-0017-disputed-font";

macro_rules! stored {
    ($path:literal) => {
        include_bytes!(concat!(
            "../../../../sealed-fixtures/store/runs/run-heritage-0017-disputed-font/",
            $path
        ))
    };
}

fn key(s: &str) -> Key {
    Key::parse(s).unwrap()
}

fn doc<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> T {
    parse_as(bytes, 1 << 24).unwrap()
}

/// `doc` passes under `home` and is refused under each of `elsewhere`, naming `field`.
fn bound_to<T: Bound>(doc: &T, home: &str, elsewhere: &[(&str, &str)]) {
    assert_eq!(check(&key(home), doc), Ok(()), "{home}");
    for (other, field) in elsewhere {
        let e = check(&key(other), doc).expect_err(other);
        assert_eq!(e.key.as_str(), *other);
        assert_eq!(e.field, *field, "{other}: {e}");
        assert_eq!(e.kind, T::KIND);
        assert!(e.to_string().contains("planted document"), "{e}");
    }
}

/// What `key` names in the dimension of `part`, spelled out.
fn named(key_str: &str, part: Part<'_>) -> Option<String> {
    key(key_str).identity().get(part).map(|p| p.to_string())
}

#[test]
fn the_key_names_run_roll_slot_attempt_and_review() {
    let meta = "runs/r/roll-2/judge-b/attempt-3/meta.json";
    assert_eq!(named(meta, Part::Run("")).as_deref(), Some("run r"));
    assert_eq!(named(meta, Part::Roll(0)).as_deref(), Some("roll-2"));
    assert_eq!(named(meta, Part::Slot(Slot::A)).as_deref(), Some("judge-b"));
    assert_eq!(named(meta, Part::Attempt(0)).as_deref(), Some("attempt-3"));
    assert_eq!(named(meta, Part::Review(0)), None);
    let review = "runs/r/reviews/12.dsse.json";
    assert_eq!(named(review, Part::Review(0)).as_deref(), Some("review 12"));
    assert_eq!(named(review, Part::Roll(0)), None);
    // A non-canonical review number names no index (it is no review key).
    assert_eq!(named("runs/r/reviews/012.dsse.json", Part::Review(0)), None);
    let receipt = "receipts/r/roll-1/roll.json";
    assert_eq!(named(receipt, Part::Run("")).as_deref(), Some("run r"));
    assert_eq!(named(receipt, Part::Roll(0)).as_deref(), Some("roll-1"));
    let lease = "leases/r/roll-1/judge-a/attempt-2/000001";
    assert_eq!(named(lease, Part::Attempt(0)).as_deref(), Some("attempt-2"));
    for outside in [
        "cas/sha256/ab/ab",
        "log/entries/00000000000000000001",
        "healthz",
    ] {
        assert!(key(outside).identity() == Identity::default(), "{outside}");
    }
}

#[test]
fn a_cost_reservation_is_bound_to_its_roll() {
    let r: CostReservation = doc(stored!("roll-1/cost-reservation.json"));
    bound_to(
        &r,
        &format!("runs/{RUN}/roll-1/cost-reservation.json"),
        &[(
            &format!("runs/{RUN}/roll-2/cost-reservation.json"),
            "rollId",
        )],
    );
    // The issue's reproduction: roll 1's reservation copied to roll-2/ names roll-1 and roll-2.
    let e = check(
        &key(&format!("runs/{RUN}/roll-2/cost-reservation.json")),
        &r,
    )
    .unwrap_err();
    assert_eq!((e.claimed.as_str(), e.named.as_str()), ("roll-1", "roll-2"));
}

#[test]
fn a_proof_package_and_a_consensus_are_bound_to_their_roll() {
    let p: ProofPackage = doc(stored!("roll-2/proof-package.json"));
    bound_to(
        &p,
        &format!("runs/{RUN}/roll-2/proof-package.json"),
        &[(&format!("runs/{RUN}/roll-1/proof-package.json"), "rollId")],
    );
    let c: JudgeConsensus = doc(stored!("roll-1/consensus.json"));
    bound_to(
        &c,
        &format!("runs/{RUN}/roll-1/consensus.json"),
        &[(&format!("runs/{RUN}/roll-2/consensus.json"), "rollId")],
    );
}

#[test]
fn a_roll_record_is_bound_by_its_roll_id_and_its_number() {
    let r: Roll = doc(stored!("roll-1/roll.json"));
    bound_to(
        &r,
        &format!("runs/{RUN}/roll-1/roll.json"),
        &[(&format!("runs/{RUN}/roll-2/roll.json"), "rollId")],
    );
    let mut renumbered = r.clone();
    renumbered.roll = 2;
    let e = check(&key(&format!("runs/{RUN}/roll-1/roll.json")), &renumbered).unwrap_err();
    assert_eq!(e.field, "roll");
}

#[test]
fn attempts_are_bound_to_their_slot_and_number() {
    let meta: SlotMeta = doc(stored!("roll-1/judge-a/attempt-1/meta.json"));
    bound_to(
        &meta,
        &format!("runs/{RUN}/roll-1/judge-a/attempt-1/meta.json"),
        &[
            (
                &format!("runs/{RUN}/roll-1/judge-b/attempt-1/meta.json"),
                "slot",
            ),
            (
                &format!("runs/{RUN}/roll-1/judge-a/attempt-2/meta.json"),
                "attempt",
            ),
        ],
    );
    let failure: AttemptFailure = serde_json::from_value(serde_json::json!({
        "schemaVersion": crate::doc::ATTEMPT_FAILURE,
        "slot": "b",
        "sessionId": "s",
        "attempt": 2,
        "stage": "transport",
        "errorClass": "timeout",
        "detail": "d",
    }))
    .unwrap();
    bound_to(
        &failure,
        &format!("runs/{RUN}/roll-2/judge-b/attempt-2/raw.json"),
        &[
            (
                &format!("runs/{RUN}/roll-2/judge-a/attempt-2/raw.json"),
                "slot",
            ),
            (
                &format!("runs/{RUN}/roll-2/judge-b/attempt-1/raw.json"),
                "attempt",
            ),
        ],
    );
    // A slot's parsed.json names no attempt: the failure of its last attempt stands there.
    assert_eq!(
        check(
            &key(&format!("runs/{RUN}/roll-2/judge-b/parsed.json")),
            &failure
        ),
        Ok(())
    );
    let result: JudgeResult = doc(stored!("roll-2/judge-b/normalized.json"));
    bound_to(
        &result,
        &format!("runs/{RUN}/roll-2/judge-b/normalized.json"),
        &[(
            &format!("runs/{RUN}/roll-2/judge-a/normalized.json"),
            "slot",
        )],
    );
}

#[test]
fn run_documents_and_the_seal_are_bound_to_their_run() {
    for bytes in [
        &stored!("header.json")[..],
        &stored!("judging.json")[..],
        &stored!("evidence.json")[..],
    ] {
        let ev: Evidence = doc(bytes);
        bound_to(
            &ev,
            &format!("runs/{RUN}/evidence.json"),
            &[("runs/another-run/evidence.json", "runId")],
        );
    }
    let ev: Evidence = doc(stored!("evidence.json"));
    let run = RunId::parse(RUN).unwrap();
    let statement =
        crate::sealing::statement_for(&run, &ev, &Hash::of(stored!("evidence.json"))).unwrap();
    bound_to(
        &statement,
        &format!("runs/{RUN}/seal.dsse.json"),
        &[("runs/another-run/seal.dsse.json", "predicate.runId")],
    );
}

#[test]
fn a_review_is_bound_to_its_run_and_index() {
    let review: ReviewStatement = serde_json::from_value(serde_json::json!({
        "_type": crate::sealing::STATEMENT_TYPE,
        "subject": [],
        "predicateType": crate::review::PREDICATE_TYPE,
        "predicate": {
            "schemaVersion": crate::review::SCHEMA_VERSION,
            "runId": RUN,
            "reviewer": "r",
            "reviewedAt": "2026-01-01T00:00:00Z",
            "decisions": [],
            "note": null,
            "shownSha256": "x",
            "reviewIndex": 1,
            "previousReviewSha256": null,
        },
    }))
    .unwrap();
    bound_to(
        &review,
        &format!("runs/{RUN}/reviews/1.dsse.json"),
        &[
            ("runs/another-run/reviews/1.dsse.json", "predicate.runId"),
            (
                &format!("runs/{RUN}/reviews/0.dsse.json"),
                "predicate.reviewIndex",
            ),
        ],
    );
}

#[test]
fn a_receipt_is_bound_to_the_object_its_key_mirrors() {
    let object = key(&format!("runs/{RUN}/roll-1/roll.json"));
    let receipt = crate::receipt::make(
        b"secret",
        crate::receipt::ReceiptKind::Roll,
        &crate::key::Stored::of(object.clone(), b"{}"),
        None,
        "2026-01-01T00:00:00Z",
        "replica",
    );
    bound_to(
        &receipt,
        Key::receipt_for(&object).unwrap().as_str(),
        &[
            (&format!("receipts/{RUN}/roll-2/roll.json"), "object"),
            ("receipts/another-run/roll-1/roll.json", "runId"),
        ],
    );
}
