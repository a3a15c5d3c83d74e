//! Play-spec assertions evaluated over the game's `state` events (DESIGN §5, §8). Pure.
//!
//! `data` of the first `state` event is *before*, of the last one *after*. `path` is a dotted
//! path into `data` (`score`, `paddle.x`). `reached` holds when some `state` event has a value
//! in the set; `in` when *after* is in the set. A state the game does not expose fails the
//! assertion: the play-spec makes exporting that state the game's obligation.

use serde_json::Value;

use crate::doc::{Assertion, GameEvent, SequenceRef, Stream};

/// The result of one assertion: whether it held, the events it read, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    pub holds: bool,
    pub sequence_refs: Vec<SequenceRef>,
    pub detail: String,
}

/// The assertion operators the play-spec defines, all of which seal evaluates.
pub const OPS: [&str; 10] = [
    "increased",
    "decreased",
    "changed",
    ">",
    ">=",
    "<",
    "<=",
    "==",
    "in",
    "reached",
];

fn lookup<'v>(data: &'v serde_json::Map<String, Value>, path: &str) -> Option<&'v Value> {
    let mut parts = path.split('.');
    let mut cur = data.get(parts.next()?)?;
    for p in parts {
        cur = match cur {
            Value::Object(m) => m.get(p)?,
            Value::Array(a) => a.get(p.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// JSON equality with numbers compared by value (1 == 1.0).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn set_of(value: Option<&Value>) -> Option<Vec<&Value>> {
    match value? {
        Value::Array(items) => Some(items.iter().collect()),
        // A scalar is read as the one-element set, as the pipeline's harness does.
        other => Some(vec![other]),
    }
}

fn point(seq: u64) -> SequenceRef {
    SequenceRef {
        stream: Stream::Events,
        from: seq,
        to: seq,
    }
}

/// Evaluates `a` over `events`.
pub fn evaluate(a: &Assertion, events: &[GameEvent]) -> Evaluation {
    let states: Vec<&GameEvent> = events.iter().filter(|e| e.name == "state").collect();
    let fail = |detail: String, refs: Vec<SequenceRef>| Evaluation {
        holds: false,
        sequence_refs: refs,
        detail,
    };
    let (Some(first), Some(last)) = (states.first(), states.last()) else {
        return fail(
            format!("no state events: {} cannot be read", a.path),
            Vec::new(),
        );
    };
    let mut refs = vec![point(first.seq)];
    if last.seq != first.seq {
        refs.push(point(last.seq));
    }
    let before = lookup(&first.data, &a.path);
    let after = lookup(&last.data, &a.path);
    let show = |v: Option<&Value>| v.map(|v| v.to_string()).unwrap_or_else(|| "absent".into());
    let cmp = |f: fn(f64, f64) -> bool, what: &str| -> Evaluation {
        let Some(threshold) = a.value.as_ref().and_then(num) else {
            return fail(
                format!("{} {what} needs a numeric value", a.path),
                refs.clone(),
            );
        };
        match after.and_then(num) {
            Some(x) => Evaluation {
                holds: f(x, threshold),
                sequence_refs: refs.clone(),
                detail: format!("{} after = {x}, {what} {threshold}", a.path),
            },
            None => fail(
                format!("{} after is {} (not a number)", a.path, show(after)),
                refs.clone(),
            ),
        }
    };
    match a.op.as_str() {
        "increased" | "decreased" => match (before.and_then(num), after.and_then(num)) {
            (Some(b), Some(x)) => Evaluation {
                holds: if a.op == "increased" { x > b } else { x < b },
                sequence_refs: refs,
                detail: format!("{} {b} -> {x}", a.path),
            },
            _ => fail(
                format!(
                    "{} before {} after {}: not numbers",
                    a.path,
                    show(before),
                    show(after)
                ),
                refs,
            ),
        },
        "changed" => match (before, after) {
            (Some(b), Some(x)) => Evaluation {
                holds: !json_eq(b, x),
                sequence_refs: refs,
                detail: format!("{} {b} -> {x}", a.path),
            },
            _ => fail(
                format!("{} before {} after {}", a.path, show(before), show(after)),
                refs,
            ),
        },
        ">" => cmp(|x, t| x > t, ">"),
        ">=" => cmp(|x, t| x >= t, ">="),
        "<" => cmp(|x, t| x < t, "<"),
        "<=" => cmp(|x, t| x <= t, "<="),
        "==" => match (after, a.value.as_ref()) {
            (Some(x), Some(v)) => Evaluation {
                holds: json_eq(x, v),
                sequence_refs: refs,
                detail: format!("{} after = {x}, expected {v}", a.path),
            },
            (None, _) => fail(format!("{} after is absent", a.path), refs),
            (_, None) => fail("== needs a value".into(), refs),
        },
        "in" => match (after, set_of(a.value.as_ref())) {
            (Some(x), Some(set)) => Evaluation {
                holds: set.iter().any(|v| json_eq(x, v)),
                sequence_refs: refs,
                detail: format!("{} after = {x}", a.path),
            },
            (None, _) => fail(format!("{} after is absent", a.path), refs),
            (_, None) => fail("in needs a set of values".into(), refs),
        },
        "reached" => {
            let Some(set) = set_of(a.value.as_ref()) else {
                return fail("reached needs a set of values".into(), refs);
            };
            match states.iter().find(|e| {
                lookup(&e.data, &a.path).is_some_and(|v| set.iter().any(|s| json_eq(v, s)))
            }) {
                Some(e) => Evaluation {
                    holds: true,
                    sequence_refs: vec![point(e.seq)],
                    detail: format!("{} reached at event {}", a.path, e.seq),
                },
                None => fail(format!("{} never reached any of the values", a.path), refs),
            }
        }
        other => fail(format!("unknown assertion op {other:?}"), refs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(seq: u64, name: &str, data: Value) -> GameEvent {
        GameEvent {
            seq,
            name: name.into(),
            t_ms: seq * 100,
            data: data.as_object().cloned().unwrap_or_default(),
        }
    }

    fn events() -> Vec<GameEvent> {
        vec![
            ev(0, "game_loaded", json!({})),
            ev(
                1,
                "state",
                json!({"phase": "menu", "score": 0, "p": {"x": 5}}),
            ),
            ev(
                2,
                "state",
                json!({"phase": "play", "score": 4, "p": {"x": 9}}),
            ),
            ev(
                3,
                "state",
                json!({"phase": "gameover", "score": 12, "p": {"x": 9}}),
            ),
        ]
    }

    fn a(path: &str, op: &str, value: Option<Value>) -> Assertion {
        Assertion {
            path: path.into(),
            op: op.into(),
            value,
            why: None,
        }
    }

    #[test]
    fn every_op_both_ways() {
        let e = events();
        let cases: Vec<(Assertion, bool)> = vec![
            (a("score", "increased", None), true),
            (a("score", "decreased", None), false),
            (a("p.x", "changed", None), true),
            (a("phase", "changed", None), true),
            (a("score", ">", Some(json!(11))), true),
            (a("score", ">", Some(json!(12))), false),
            (a("score", ">=", Some(json!(12))), true),
            (a("score", "<", Some(json!(12))), false),
            (a("score", "<=", Some(json!(12.0))), true),
            (a("score", "==", Some(json!(12))), true),
            (a("phase", "==", Some(json!("win"))), false),
            (a("phase", "in", Some(json!(["gameover", "win"]))), true),
            (a("phase", "in", Some(json!(["menu"]))), false),
            (a("phase", "reached", Some(json!(["play"]))), true),
            (a("phase", "reached", Some(json!(["win"]))), false),
            (a("missing.path", "increased", None), false),
        ];
        for (assertion, want) in cases {
            let r = evaluate(&assertion, &e);
            assert_eq!(r.holds, want, "{assertion:?}: {}", r.detail);
        }
        let r = evaluate(&a("score", "increased", None), &e);
        assert_eq!(r.sequence_refs, vec![point(1), point(3)]);
        assert_eq!(
            evaluate(&a("phase", "reached", Some(json!(["play"]))), &e).sequence_refs,
            vec![point(2)]
        );
    }

    #[test]
    fn no_state_events_fails() {
        let r = evaluate(
            &a("score", "increased", None),
            &[ev(0, "game_loaded", json!({}))],
        );
        assert!(!r.holds && r.sequence_refs.is_empty());
    }
}
