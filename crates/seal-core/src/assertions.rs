//! Play-spec assertions evaluated over the game's `state` events (docs/DESIGN.md §5, §8). Pure.
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
    let r = Reading {
        a,
        states: &states,
        before: lookup(&first.data, &a.path),
        after: lookup(&last.data, &a.path),
        refs,
    };
    match a.op.as_str() {
        "increased" | "decreased" => moved(&r),
        "changed" => changed(&r),
        ">" => compare(&r, |x, t| x > t, ">"),
        ">=" => compare(&r, |x, t| x >= t, ">="),
        "<" => compare(&r, |x, t| x < t, "<"),
        "<=" => compare(&r, |x, t| x <= t, "<="),
        "==" => equals(&r),
        "in" => member(&r),
        "reached" => reached(&r),
        other => fail(format!("unknown assertion op {other:?}"), r.refs),
    }
}

/// What every operator reads: the assertion, the `state` events, the value at `path` before
/// (first event) and after (last event), and the refs of those two events.
struct Reading<'a> {
    a: &'a Assertion,
    states: &'a [&'a GameEvent],
    before: Option<&'a Value>,
    after: Option<&'a Value>,
    refs: Vec<SequenceRef>,
}

fn fail(detail: String, refs: Vec<SequenceRef>) -> Evaluation {
    Evaluation {
        holds: false,
        sequence_refs: refs,
        detail,
    }
}

fn show(v: Option<&Value>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "absent".into())
}

/// `>`, `>=`, `<`, `<=`: the after value against the numeric threshold.
fn compare(r: &Reading<'_>, f: fn(f64, f64) -> bool, what: &str) -> Evaluation {
    let a = r.a;
    let Some(threshold) = a.value.as_ref().and_then(num) else {
        return fail(
            format!("{} {what} needs a numeric value", a.path),
            r.refs.clone(),
        );
    };
    match r.after.and_then(num) {
        Some(x) => Evaluation {
            holds: f(x, threshold),
            sequence_refs: r.refs.clone(),
            detail: format!("{} after = {x}, {what} {threshold}", a.path),
        },
        None => fail(
            format!("{} after is {} (not a number)", a.path, show(r.after)),
            r.refs.clone(),
        ),
    }
}

/// `increased` / `decreased`: before and after as numbers.
fn moved(r: &Reading<'_>) -> Evaluation {
    let a = r.a;
    match (r.before.and_then(num), r.after.and_then(num)) {
        (Some(b), Some(x)) => Evaluation {
            holds: if a.op == "increased" { x > b } else { x < b },
            sequence_refs: r.refs.clone(),
            detail: format!("{} {b} -> {x}", a.path),
        },
        _ => fail(
            format!(
                "{} before {} after {}: not numbers",
                a.path,
                show(r.before),
                show(r.after)
            ),
            r.refs.clone(),
        ),
    }
}

fn changed(r: &Reading<'_>) -> Evaluation {
    match (r.before, r.after) {
        (Some(b), Some(x)) => Evaluation {
            holds: !json_eq(b, x),
            sequence_refs: r.refs.clone(),
            detail: format!("{} {b} -> {x}", r.a.path),
        },
        _ => fail(
            format!(
                "{} before {} after {}",
                r.a.path,
                show(r.before),
                show(r.after)
            ),
            r.refs.clone(),
        ),
    }
}

/// `==`: the after value equals the value.
fn equals(r: &Reading<'_>) -> Evaluation {
    match (r.after, r.a.value.as_ref()) {
        (Some(x), Some(v)) => Evaluation {
            holds: json_eq(x, v),
            sequence_refs: r.refs.clone(),
            detail: format!("{} after = {x}, expected {v}", r.a.path),
        },
        (None, _) => fail(format!("{} after is absent", r.a.path), r.refs.clone()),
        (_, None) => fail("== needs a value".into(), r.refs.clone()),
    }
}

/// `in`: the after value is in the set.
fn member(r: &Reading<'_>) -> Evaluation {
    match (r.after, set_of(r.a.value.as_ref())) {
        (Some(x), Some(set)) => Evaluation {
            holds: set.iter().any(|v| json_eq(x, v)),
            sequence_refs: r.refs.clone(),
            detail: format!("{} after = {x}", r.a.path),
        },
        (None, _) => fail(format!("{} after is absent", r.a.path), r.refs.clone()),
        (_, None) => fail("in needs a set of values".into(), r.refs.clone()),
    }
}

/// `reached`: some state event has a value in the set; it cites the first such event only.
fn reached(r: &Reading<'_>) -> Evaluation {
    let a = r.a;
    let Some(set) = set_of(a.value.as_ref()) else {
        return fail("reached needs a set of values".into(), r.refs.clone());
    };
    match r
        .states
        .iter()
        .find(|e| lookup(&e.data, &a.path).is_some_and(|v| set.iter().any(|s| json_eq(v, s))))
    {
        Some(e) => Evaluation {
            holds: true,
            sequence_refs: vec![point(e.seq)],
            detail: format!("{} reached at event {}", a.path, e.seq),
        },
        None => fail(
            format!("{} never reached any of the values", a.path),
            r.refs.clone(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // The equality and path rules the floor's `==` and `in` assertions stand on (each found
    // by mutation testing: no fixture happened to compare arrays, objects or 1 with 1.0).
    #[test]
    fn numbers_are_equal_by_value_whatever_their_json_spelling() {
        assert!(json_eq(&json!(1), &json!(1.0)));
        assert!(!json_eq(&json!(1), &json!(2)));
    }

    #[test]
    fn arrays_are_equal_element_by_element_and_only_at_the_same_length() {
        assert!(json_eq(&json!([1, 2]), &json!([1.0, 2.0])));
        assert!(!json_eq(&json!([1, 2]), &json!([1, 3])));
        assert!(!json_eq(&json!([1]), &json!([1, 2])));
        assert!(!json_eq(&json!([1, 2]), &json!([1])));
    }

    #[test]
    fn objects_are_equal_key_by_key_and_only_with_the_same_keys() {
        assert!(json_eq(
            &json!({"a": 1, "b": [1]}),
            &json!({"b": [1.0], "a": 1.0})
        ));
        assert!(!json_eq(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(!json_eq(&json!({"a": 1, "b": 2}), &json!({"a": 1})));
        assert!(!json_eq(&json!({"a": 1}), &json!({"a": 2})));
        assert!(!json_eq(&json!({"a": 1}), &json!({"b": 1})));
    }

    #[test]
    fn a_path_descends_objects_and_array_indices() {
        let data = json!({"s": {"xs": [10, {"y": 3}]}});
        let data = data.as_object().unwrap();
        assert_eq!(lookup(data, "s.xs.1.y"), Some(&json!(3)));
        assert_eq!(lookup(data, "s.xs.0"), Some(&json!(10)));
        assert_eq!(lookup(data, "s.xs.5"), None);
        assert_eq!(lookup(data, "s.xs.a"), None);
        assert_eq!(lookup(data, "s.q"), None);
        assert_eq!(lookup(data, "s.xs.0.z"), None);
    }

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

    // Found by mutation testing: no case had a value that stayed the same, or a detail that
    // named a value that is not a number or is absent.
    #[test]
    fn a_value_that_stayed_the_same_has_neither_increased_nor_decreased() {
        let e = vec![
            ev(1, "state", json!({"lives": 3})),
            ev(2, "state", json!({"lives": 3})),
        ];
        for op in ["increased", "decreased"] {
            let r = evaluate(&a("lives", op, None), &e);
            assert!(!r.holds, "{op}: {}", r.detail);
            assert_eq!(r.detail, "lives 3 -> 3");
        }
    }

    #[test]
    fn the_detail_shows_a_value_that_is_not_a_number_and_calls_a_missing_one_absent() {
        let e = events();
        let r = evaluate(&a("phase", "increased", None), &e);
        assert_eq!(
            r.detail,
            "phase before \"menu\" after \"gameover\": not numbers"
        );
        let r = evaluate(&a("missing.path", "decreased", None), &e);
        assert_eq!(
            r.detail,
            "missing.path before absent after absent: not numbers"
        );
        let r = evaluate(&a("phase", ">", Some(json!(1))), &e);
        assert_eq!(r.detail, "phase after is \"gameover\" (not a number)");
        let r = evaluate(&a("missing", "<=", Some(json!(1))), &e);
        assert_eq!(r.detail, "missing after is absent (not a number)");
        let r = evaluate(&a("missing", "changed", None), &e);
        assert_eq!(r.detail, "missing before absent after absent");
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
