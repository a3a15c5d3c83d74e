//! The golden consensus cases, continued: the roll decision, degraded rolls and independence
//! (docs/DESIGN.md §5), built by `consensus_golden`'s helpers.

use super::consensus_builders::*;
use seal_core::doc::*;
use serde_json::json;

/// The cases of the roll decision, degraded rolls and independence checks.
pub(crate) fn decision_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let one = || vec![req("core.loop")];
    let id = "spec.check";
    // 4. Roll decision.
    let two = || vec![req("core.loop"), req("ui.text")];
    cases.push(
        Case::new(
            "decision-both-slots-failed",
            "Both slots failed (slotFailed set, every obligation missing) → infra_error, not \
             inconclusive. Statuses are missing (rule 3: missing/missing); failureSignature lists \
             the required obligations that are not satisfied.",
        )
        .covers(&["decision:both-slots-failed", "decision:failure-signature"])
        .obligations(two())
        .judges(Judge::SlotFailed, Judge::SlotFailed)
        .expect(
            Outcome::InfraError,
            &[("core.loop", OS::Missing), ("ui.text", OS::Missing)],
            &[],
            Some("infra_error:missing:core.loop|missing:ui.text"),
        ),
    );
    cases.push(
        Case::new(
            "decision-both-slots-failed-with-holding-check",
            "Both slots failed → infra_error, even though the only required obligation has a \
             check that holds (satisfied): with no judge at all there is no two-judge decision.",
        )
        .covers(&["decision:both-slots-failed"])
        .obligations(vec![checked(id, "score", "increased", None)])
        .judges(Judge::SlotFailed, Judge::SlotFailed)
        .expect(
            Outcome::InfraError,
            &[(id, OS::Satisfied)],
            &[],
            Some("infra_error:"),
        ),
    );
    cases.push(
        Case::new(
            "decision-floor-failed-judges-pass",
            "floor.passed == false → fail whatever the judges said: both judges satisfy every \
             required obligation (which alone would pass). failureSignature is `fail:` with an \
             empty list, since no required obligation is unsatisfied.",
        )
        .covers(&["decision:floor-failed", "decision:failure-signature"])
        .obligations(two())
        .floor(false)
        .judges(
            answered(vec![v("core.loop", S), v("ui.text", S)]),
            answered(vec![v("core.loop", S), v("ui.text", S)]),
        )
        .expect(
            Outcome::Fail,
            &[("core.loop", OS::Satisfied), ("ui.text", OS::Satisfied)],
            &[],
            Some("fail:"),
        ),
    );
    cases.push(
        Case::new(
            "decision-floor-failed-judges-disputed",
            "floor.passed == false → fail, not inconclusive, although the judges dispute a \
             required obligation.",
        )
        .covers(&["decision:floor-failed"])
        .obligations(two())
        .floor(false)
        .judges(
            answered(vec![v("core.loop", S), v("ui.text", S)]),
            answered(vec![v("core.loop", F), v("ui.text", S)]),
        )
        .expect(
            Outcome::Fail,
            &[("core.loop", OS::Disputed), ("ui.text", OS::Satisfied)],
            &["core.loop: A=satisfied B=failed"],
            Some("fail:disputed:core.loop"),
        ),
    );
    cases.push(
        Case::new(
            "decision-floor-failed-both-slots-failed",
            "Floor failed AND both slots failed. §5 lists both `both slots failed → infra_error` \
             and `floor.passed == false → fail whatever the judges said`; the floor is \
             deterministic evidence that does not depend on any judge, so the roll is fail \
             (reading: the floor rule overrides everything the judges did or did not say).",
        )
        .covers(&["decision:floor-failed", "decision:both-slots-failed"])
        .obligations(one())
        .floor(false)
        .judges(Judge::SlotFailed, Judge::SlotFailed)
        .expect(
            Outcome::Fail,
            &[("core.loop", OS::Missing)],
            &[],
            Some("fail:missing:core.loop"),
        ),
    );
    cases.push(
        Case::new(
            "decision-required-failed-beats-inconclusive",
            "§5: any required contradicted/disputed/missing → inconclusive, UNLESS some required \
             obligation is failed → fail. Here one required is failed (both judges agree) and one \
             is disputed. failureSignature entries are sorted as whole `<status>:<id>` strings \
             (disputed:z… before failed:a…), not by id.",
        )
        .covers(&[
            "decision:required-failed",
            "decision:required-disputed",
            "decision:failure-signature",
        ])
        .obligations(vec![req("a.first"), req("z.last")])
        .judges(
            answered(vec![v("a.first", F), v("z.last", S)]),
            answered(vec![v("a.first", F), v("z.last", M)]),
        )
        .expect(
            Outcome::Fail,
            &[("a.first", OS::Failed), ("z.last", OS::Disputed)],
            &["z.last: A=satisfied B=missing"],
            Some("fail:disputed:z.last|failed:a.first"),
        ),
    );
    cases.push(
        Case::new(
            "decision-required-failed-with-contradicted-and-missing",
            "Required failed (checked: lives increased does not hold, nobody claims otherwise), \
             another required contradicted (unsupported citation), another missing → fail. \
             The signature lists all three, sorted.",
        )
        .covers(&[
            "decision:required-failed",
            "decision:required-contradicted",
            "decision:required-missing",
            "decision:failure-signature",
        ])
        .obligations(vec![
            checked("b.lives", "lives", "increased", None),
            req("c.claims"),
            req("d.silent"),
        ])
        .judges(
            answered(vec![
                v("b.lives", F),
                cite("c.claims", S, vec![events(8, 8)], vec![]),
                v("d.silent", M),
            ]),
            answered(vec![v("b.lives", M), v("c.claims", S), v("d.silent", M)]),
        )
        .expect(
            Outcome::Fail,
            &[
                ("b.lives", OS::Failed),
                ("c.claims", OS::Contradicted),
                ("d.silent", OS::Missing),
            ],
            &["c.claims: A=satisfied B=satisfied unsupported=A"],
            Some("fail:contradicted:c.claims|failed:b.lives|missing:d.silent"),
        ),
    );
    cases.push(
        Case::new(
            "decision-inconclusive-mixed",
            "No required obligation failed; one is contradicted (check score increased holds, B \
             claims failed), one disputed, one missing, one satisfied → inconclusive; the \
             signature lists the three unsatisfied ones, sorted; conflicts has a line for the \
             contradicted and the disputed obligation only.",
        )
        .covers(&[
            "decision:required-contradicted",
            "decision:required-disputed",
            "decision:required-missing",
            "decision:conflicts",
            "decision:failure-signature",
        ])
        .obligations(vec![
            checked("a.score", "score", "increased", None),
            req("b.disputed"),
            req("c.missing"),
            req("d.agreed"),
        ])
        .judges(
            answered(vec![
                v("a.score", S),
                v("b.disputed", F),
                v("c.missing", M),
                v("d.agreed", S),
            ]),
            answered(vec![
                v("a.score", F),
                v("b.disputed", M),
                v("c.missing", M),
                v("d.agreed", S),
            ]),
        )
        .expect(
            Outcome::Inconclusive,
            &[
                ("a.score", OS::Contradicted),
                ("b.disputed", OS::Disputed),
                ("c.missing", OS::Missing),
                ("d.agreed", OS::Satisfied),
            ],
            &[
                "a.score: A=satisfied B=failed check=satisfied",
                "b.disputed: A=failed B=missing",
            ],
            Some("inconclusive:contradicted:a.score|disputed:b.disputed|missing:c.missing"),
        ),
    );
    cases.push(
        Case::new(
            "decision-optional-obligations-do-not-matter-pass",
            "Both required obligations satisfied → pass, although the optional ones are failed, \
             disputed, contradicted and missing (only required obligations enter the decision and \
             the signature). Conflicts still name every non-agreeing obligation, optional or not.",
        )
        .covers(&[
            "decision:optional-ignored",
            "decision:all-required-satisfied",
            "decision:conflicts",
        ])
        .obligations(vec![
            req("core.loop"),
            req("ui.text"),
            opt("polish.failed"),
            opt("polish.disputed"),
            opt("polish.contradicted"),
            opt("polish.missing"),
        ])
        .judges(
            answered(vec![
                v("core.loop", S),
                v("ui.text", S),
                v("polish.failed", F),
                v("polish.disputed", S),
                cite(
                    "polish.contradicted",
                    F,
                    vec![ev(Stream::Actions, 5, 5)],
                    vec![],
                ),
            ]),
            answered(vec![
                v("core.loop", S),
                v("ui.text", S),
                v("polish.failed", F),
                v("polish.disputed", F),
                v("polish.contradicted", F),
            ]),
        )
        .expect(
            Outcome::Pass,
            &[
                ("core.loop", OS::Satisfied),
                ("polish.contradicted", OS::Contradicted),
                ("polish.disputed", OS::Disputed),
                ("polish.failed", OS::Failed),
                ("polish.missing", OS::Missing),
                ("ui.text", OS::Satisfied),
            ],
            &[
                "polish.contradicted: A=failed B=failed unsupported=A",
                "polish.disputed: A=satisfied B=failed",
            ],
            None,
        ),
    );
    cases.push(
        Case::new(
            "decision-optional-failed-does-not-make-fail",
            "An optional obligation failed by both judges does not trigger `unless some required \
             obligation is failed → fail`: the required one is disputed → inconclusive, and the \
             signature names only the required obligation.",
        )
        .covers(&["decision:optional-ignored", "decision:required-disputed"])
        .obligations(vec![req("core.loop"), opt("polish.sound")])
        .judges(
            answered(vec![v("core.loop", S), v("polish.sound", F)]),
            answered(vec![v("core.loop", F), v("polish.sound", F)]),
        )
        .expect(
            Outcome::Inconclusive,
            &[("core.loop", OS::Disputed), ("polish.sound", OS::Failed)],
            &["core.loop: A=satisfied B=failed"],
            Some("inconclusive:disputed:core.loop"),
        ),
    );
    cases.push(
        Case::new(
            "decision-no-required-obligations-pass",
            "Only optional obligations (one disputed): `all required satisfied` holds vacuously, \
             both judges answered, floor passed, independence holds → pass.",
        )
        .covers(&["decision:optional-ignored"])
        .obligations(vec![opt("polish.sound")])
        .judges(
            answered(vec![v("polish.sound", S)]),
            answered(vec![v("polish.sound", M)]),
        )
        .expect(
            Outcome::Pass,
            &[("polish.sound", OS::Disputed)],
            &["polish.sound: A=satisfied B=missing"],
            None,
        ),
    );

    // Degraded: exactly one slot failed.
    cases.push(
        Case::new(
            "degraded-a-failed-checks-hold-never-pass",
            "Slot A failed, B answered. Every required obligation is checked and its check holds, \
             B agrees → all satisfied, which would pass; but one judge never yields pass \
             (degraded; §9: never a pass from one judge) → inconclusive. Signature `inconclusive:` \
             with no unsatisfied required obligation.",
        )
        .covers(&["decision:degraded-never-passes"])
        .obligations(vec![
            checked("a.score", "score", "increased", None),
            checked("b.phase", "phase", "==", Some(json!("gameover"))),
        ])
        .judges(
            Judge::SlotFailed,
            answered(vec![v("a.score", S), v("b.phase", S)]),
        )
        .degraded()
        .expect(
            Outcome::Inconclusive,
            &[("a.score", OS::Satisfied), ("b.phase", OS::Satisfied)],
            &[],
            Some("inconclusive:"),
        ),
    );
    cases.push(
        Case::new(
            "degraded-b-failed-single-claim-is-disputed",
            "Slot B failed; A says satisfied on an unchecked obligation. B's statuses are missing, \
             so the pair is satisfied/missing → disputed (rule 3) → inconclusive, degraded.",
        )
        .covers(&["decision:degraded-never-passes", "decision:required-disputed"])
        .obligations(one())
        .judges(answered(vec![v("core.loop", S)]), Judge::SlotFailed)
        .degraded()
        .expect(
            Outcome::Inconclusive,
            &[("core.loop", OS::Disputed)],
            &["core.loop: A=satisfied B=missing"],
            Some("inconclusive:disputed:core.loop"),
        ),
    );
    cases.push(
        Case::new(
            "degraded-single-failed-claim-is-not-fail",
            "Slot A failed; B says failed on an unchecked obligation: missing/failed → disputed, \
             so one judge cannot fail the game either → inconclusive, degraded.",
        )
        .covers(&["decision:degraded-never-passes"])
        .obligations(one())
        .judges(Judge::SlotFailed, answered(vec![v("core.loop", F)]))
        .degraded()
        .expect(
            Outcome::Inconclusive,
            &[("core.loop", OS::Disputed)],
            &["core.loop: A=missing B=failed"],
            Some("inconclusive:disputed:core.loop"),
        ),
    );
    cases.push(
        Case::new(
            "degraded-failing-check-fails",
            "Slot B failed; the required obligation's check (lives increased) does not hold, so it \
             is failed deterministically → fail (degraded only forbids pass).",
        )
        .covers(&["decision:degraded-never-passes", "decision:required-failed"])
        .obligations(vec![checked("b.lives", "lives", "increased", None)])
        .judges(answered(vec![v("b.lives", F)]), Judge::SlotFailed)
        .degraded()
        .expect(
            Outcome::Fail,
            &[("b.lives", OS::Failed)],
            &[],
            Some("fail:failed:b.lives"),
        ),
    );

    // Independence (§4): a failed required check voids the roll.
    let agreeing = || {
        (
            answered(vec![v("core.loop", S), v("ui.text", S)]),
            answered(vec![v("core.loop", S), v("ui.text", S)]),
        )
    };
    for (check, _) in all_true().required() {
        let name = check.as_str();
        let mut ind = all_true();
        match name {
            "differentLogicalClient" => ind.different_logical_client = false,
            "differentSession" => ind.different_session = false,
            "differentPolicySeed" => ind.different_policy_seed = false,
            "differentPromptArtifact" => ind.different_prompt_artifact = false,
            "differentEvidenceDir" => ind.different_evidence_dir = false,
            "differentRawFile" => ind.different_raw_file = false,
            "sameJudgePackage" => ind.same_judge_package = false,
            "sameImageManifest" => ind.same_image_manifest = false,
            other => panic!("unknown independence check {other}"),
        }
        let (a, b) = agreeing();
        let slug: String = name
            .chars()
            .flat_map(|c| {
                if c.is_ascii_uppercase() {
                    vec!['-', c.to_ascii_lowercase()]
                } else {
                    vec![c]
                }
            })
            .collect();
        cases.push(
            Case::new(
                format!("independence-{slug}-false"),
                format!(
                    "§4: required independence check {name} is false → the roll is void \
                     (rollOutcome infra_error), although both judges satisfy everything. The \
                     consensus records the false check; statuses are still computed."
                ),
            )
            .covers(&[format!("independence:{name}").as_str()])
            .obligations(two())
            .independence(ind)
            .judges(a, b)
            .expect(
                Outcome::InfraError,
                &[("core.loop", OS::Satisfied), ("ui.text", OS::Satisfied)],
                &[],
                Some("infra_error:"),
            ),
        );
    }
    let (a, b) = agreeing();
    cases.push(
        Case::new(
            "independence-same-model-is-recorded-not-required",
            "§4: sameModel is recorded, not required. Both judges run the same model and agree on \
             everything → pass, with sameModel true in the document.",
        )
        .obligations(two())
        .independence(IndependenceChecks {
            same_model: true,
            ..all_true()
        })
        .judges(a, b)
        .expect(
            Outcome::Pass,
            &[("core.loop", OS::Satisfied), ("ui.text", OS::Satisfied)],
            &[],
            None,
        ),
    );
    let (a, b) = agreeing();
    cases.push(
        Case::new(
            "independence-false-and-floor-failed",
            "A required independence check is false AND the floor failed. §4: a failed required \
             check voids the roll (rollOutcome = infra_error, and no projection with a false check \
             ever reaches the evidence), so the void wins over the floor's fail.",
        )
        .covers(&["independence:differentSession", "decision:floor-failed"])
        .obligations(two())
        .floor(false)
        .independence(IndependenceChecks {
            different_session: false,
            ..all_true()
        })
        .judges(a, b)
        .expect(
            Outcome::InfraError,
            &[("core.loop", OS::Satisfied), ("ui.text", OS::Satisfied)],
            &[],
            Some("infra_error:"),
        ),
    );
    cases.push(
        Case::new(
            "independence-false-and-one-slot-failed",
            "A required independence check is false and slot B failed: void → infra_error \
             (degraded is still recorded as true: exactly one slot failed).",
        )
        .covers(&["independence:differentRawFile"])
        .obligations(one())
        .independence(IndependenceChecks {
            different_raw_file: false,
            ..all_true()
        })
        .judges(answered(vec![v("core.loop", S)]), Judge::SlotFailed)
        .degraded()
        .expect(
            Outcome::InfraError,
            &[("core.loop", OS::Disputed)],
            &["core.loop: A=satisfied B=missing"],
            Some("infra_error:disputed:core.loop"),
        ),
    );
    cases.push(
        Case::new(
            "roll-2-everything-agrees-pass",
            "The same rules on roll-2: two required obligations (one checked: reached play at \
             event 3), both judges agree and cite valid events, actions and frames → pass; \
             failureSignature null, no conflicts.",
        )
        .covers(&["decision:all-required-satisfied"])
        .obligations(vec![
            req("core.loop"),
            checked("spec.reached", "phase", "reached", Some(json!(["play"]))),
        ])
        .judges(
            answered(vec![
                cite(
                    "core.loop",
                    S,
                    vec![ev(Stream::Actions, 0, 2), events(0, 5)],
                    vec![frame1(), frame2()],
                ),
                v("spec.reached", S),
            ]),
            answered(vec![v("core.loop", S), v("spec.reached", S)]),
        )
        .expect(
            Outcome::Pass,
            &[
                ("core.loop", OS::Satisfied),
                ("spec.reached", OS::Satisfied),
            ],
            &[],
            None,
        ),
    );
    cases
}
