//! The judge policy each attempt names (`seal_core::policy`): stored under its digest, and
//! describing the attempt (its endpoint, model, prompt, attempt number) and the request it sent
//! (model, temperature, token cap, structured output). A policy that is not stored, or that
//! does not describe its attempts, is a `refs_resolve` problem: the attempt refers to a set-up
//! it was not made under. Whether the policy was in the log before the run's first judge call
//! is `seal verify`'s check (`judge_policy`), which holds the log.

use std::collections::BTreeMap;

use super::{Audit, RollLoad};
use seal_core::doc::SlotMeta;
use seal_core::ids::RunId;
use seal_core::policy::{self, PolicyRef};
use seal_core::vocab::AuditCheck;
use seal_store::{Key, Store};

/// A policy the run's attempts name, and the earliest time one of them was sent (`None`: none
/// was sent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsedPolicy {
    pub reference: PolicyRef,
    pub first_call: Option<String>,
}

/// `requireDistinctServedModels`: a roll whose two accepted answers name the same served model
/// fails `independence` when a policy its answers were made under requires them to differ (the
/// consensus records `sameModel` either way).
fn distinct_served_models(
    a: &mut Audit,
    rolls: &[RollLoad],
    policies: &BTreeMap<PolicyRef, Option<policy::JudgePolicy>>,
) {
    let served = |m: &SlotMeta| {
        m.model_answered
            .clone()
            .unwrap_or_else(|| m.model_requested.clone())
    };
    for l in rolls {
        let Some(d) = &l.docs else { continue };
        let accepted: Vec<&SlotMeta> = d
            .slots
            .iter()
            .filter_map(|s| s.run.attempts.iter().map(|r| &r.meta).find(|m| m.accepted))
            .collect();
        let [x, y] = accepted.as_slice() else {
            continue;
        };
        if served(x) != served(y) {
            continue;
        }
        let requiring = [x, y]
            .into_iter()
            .filter_map(|m| m.policy.as_ref())
            .find(|r| matches!(policies.get(r), Some(Some(p)) if p.require_distinct_served_models));
        if let Some(r) = requiring {
            let model: String = served(x).chars().take(100).collect();
            a.push(
                AuditCheck::Independence,
                l.roll.judge_consensus_ref.as_str(),
                format!(
                    "both judges' accepted answers were served by {model:?}, and the judge policy {} requires distinct served models",
                    r.sha256
                ),
            );
        }
    }
}

/// What an attempt that was never sent says as its time: it has no clock.
const NEVER_SENT: &str = "1970-01-01T00:00:00Z";

/// Checks every attempt of `rolls` against the policy it names; the policies named.
pub(super) async fn check(
    a: &mut Audit,
    store: &Store,
    run: &RunId,
    rolls: &[RollLoad],
) -> Vec<UsedPolicy> {
    let mut used: BTreeMap<PolicyRef, Option<String>> = BTreeMap::new();
    let mut attempts = Vec::new();
    for l in rolls {
        let Some(d) = &l.docs else { continue };
        for s in &d.slots {
            for rec in &s.run.attempts {
                let Some(r) = &rec.meta.policy else { continue };
                let first = used.entry(r.clone()).or_default();
                let sent = rec.meta.started_at.as_str();
                if sent != NEVER_SENT {
                    let earlier = match first.as_deref() {
                        Some(f) => seal_core::policy::earlier(sent, f),
                        None => true,
                    };
                    if earlier {
                        *first = Some(sent.to_string());
                    }
                }
                let request = s.requests.iter().find(|(k, _)| *k == rec.attempt);
                let object =
                    Key::attempt_file(run, l.roll.roll_id, s.run.slot, rec.attempt, "meta.json");
                attempts.push((r.clone(), object, &rec.meta, request.map(|(_, v)| v)));
            }
        }
    }
    let mut policies = BTreeMap::new();
    for r in used.keys() {
        let key = Key::policy(&r.sha256);
        let found = match crate::policy::stored(store, &r.sha256).await {
            Ok(Some(Ok(c))) => Some(c.policy),
            Ok(Some(Err(e))) => {
                a.push(AuditCheck::Refs, key.as_str(), format!("judge policy: {e}"));
                None
            }
            Ok(None) => {
                a.push(
                    AuditCheck::Refs,
                    key.as_str(),
                    "the judge policy the attempts name is not stored",
                );
                None
            }
            Err(e) => {
                a.push(AuditCheck::Refs, key.as_str(), format!("judge policy: {e}"));
                None
            }
        };
        policies.insert(r.clone(), found);
    }
    for (r, object, meta, request) in attempts {
        let Some(Some(p)) = policies.get(&r) else {
            continue;
        };
        if let Err(m) = policy::check_attempt(p, meta) {
            a.push(
                AuditCheck::Refs,
                object.as_str(),
                format!(
                    "not made under the judge policy it names ({}): {m}",
                    r.sha256
                ),
            );
        } else if let Some((field, found)) =
            request.and_then(|v| policy::check_request(p.slot(meta.slot), v))
        {
            a.push(
                AuditCheck::Refs,
                object.as_str(),
                format!(
                    "its request's {field} is {found}, not what the judge policy it names ({}) says",
                    r.sha256
                ),
            );
        }
    }
    distinct_served_models(a, rolls, &policies);
    used.into_iter()
        .map(|(reference, first_call)| UsedPolicy {
            reference,
            first_call,
        })
        .collect()
}
