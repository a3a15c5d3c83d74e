//! Parsing a chat-completions response into a JudgeOutput (docs/DESIGN.md §4). Pure.
//!
//! The answer is the assistant message `content` only (a string, or text parts joined), never
//! `reasoning_content`, never anything from the request: a fake verdict a game hid in its text
//! can only become an answer if the judge writes it as its whole answer, and then it must
//! still name this package's obligations and cite evidence that exists.
//!
//! Accepted forms: strict JSON; exactly one fenced block; prose around exactly one JSON object.
//! Everything else is a failure with a class (`refusal`, `truncated`, `empty_content`,
//! `not_json`, `multiple_json`, `schema_mismatch`, …) that the dispatcher records and retries.

use serde_json::Value;

use crate::contracts::{self, Kind};
use crate::doc::{AttemptFailure, JudgeOutput, Usage, ATTEMPT_FAILURE};
pub use crate::vocab::ErrorClass;

/// Most bytes of response body seal reads from a judge (a JudgeOutput is a few KiB).
pub const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// Why an attempt has no valid answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseFailure {
    pub class: ErrorClass,
    pub detail: String,
}

impl ParseFailure {
    pub fn new(class: ErrorClass, detail: impl Into<String>) -> ParseFailure {
        ParseFailure {
            class,
            detail: contracts::shorten(&detail.into(), 500),
        }
    }
}

/// What an HTTP answer said besides the verdicts (kept even when parsing fails).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResponseFacts {
    pub model: Option<String>,
    pub system_fingerprint: Option<String>,
    pub usage: Option<Usage>,
    pub finish_reason: Option<String>,
}

/// Reads the facts of a response body (best effort: any of them may be absent).
pub fn response_facts(body: &[u8]) -> ResponseFacts {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return ResponseFacts::default();
    };
    let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
    let usage = match (
        v.pointer("/usage/prompt_tokens").and_then(Value::as_u64),
        v.pointer("/usage/completion_tokens")
            .and_then(Value::as_u64),
    ) {
        (Some(p), Some(c)) => Some(Usage {
            prompt_tokens: p,
            completion_tokens: c,
        }),
        _ => None,
    };
    ResponseFacts {
        model: s("/model"),
        system_fingerprint: s("/system_fingerprint"),
        usage,
        finish_reason: s("/choices/0/finish_reason"),
    }
}

/// Classifies an HTTP status that is not a success. The detail names the status only: it is
/// part of `parsed.json`, which the audit re-derives from the stored answer, so it must stay
/// what sealed runs hold. The provider's words go to the attempt's `errorDetail` instead
/// ([`with_provider_message`]).
pub fn status_failure(status: u16) -> Option<ParseFailure> {
    match status {
        200..=299 => None,
        429 => Some(ParseFailure::new(ErrorClass::Http429, "rate limited (429)")),
        500..=599 => Some(ParseFailure::new(
            ErrorClass::Http5xx,
            format!("server error {status}"),
        )),
        408 => Some(ParseFailure::new(
            ErrorClass::Http408,
            "request timeout (408)",
        )),
        _ => Some(ParseFailure::new(
            ErrorClass::Http4xx,
            format!("client error {status}"),
        )),
    }
}

/// The detail an attempt's meta records for `failure`: for an HTTP status that is not a
/// success, followed by what the provider said ([`provider_message`]), so an operator reads
/// "Incorrect API key provided" rather than "client error 401".
pub fn with_provider_message(failure: &ParseFailure, status: Option<u16>, body: &[u8]) -> String {
    let failed_status = status.is_some_and(|s| !(200..300).contains(&s));
    match provider_message(body).filter(|_| failed_status) {
        Some(said) => contracts::shorten(&format!("{}: {said}", failure.detail), 500),
        None => failure.detail.clone(),
    }
}

/// What a provider's error body says: OpenAI's (and DashScope's compatible mode)
/// `{"error": {"message", "code", "type"}}`, DashScope's `{"code", "message"}`, else the first
/// 300 characters of the body; masked by [`mask_key_shapes`]. None for an empty body.
pub fn provider_message(body: &[u8]) -> Option<String> {
    let text = match serde_json::from_slice::<Value>(body) {
        Ok(v) => {
            let e = v.get("error").filter(|e| e.is_object()).unwrap_or(&v);
            let s = |k: &str| match e.get(k) {
                Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
                Some(Value::Number(n)) => Some(n.to_string()),
                _ => None,
            };
            let mut parts: Vec<String> = s("message").into_iter().collect();
            let tags: Vec<String> = [s("code"), s("type")].into_iter().flatten().collect();
            if !tags.is_empty() {
                parts.push(format!("({})", tags.join(", ")));
            }
            parts.join(" ")
        }
        Err(_) => String::from_utf8_lossy(body).chars().take(300).collect(),
    };
    let text = mask_key_shapes(text.trim());
    (!text.is_empty()).then_some(text)
}

/// Masks what looks like a credential, because providers echo partial keys (`sk-ab***yz`)
/// that the exact-match redaction of configured secrets misses: a word starting `sk-`, or a
/// run of 24 or more key characters (letters, digits, `+/=_-`), becomes `[redacted]`.
pub fn mask_key_shapes(text: &str) -> String {
    let keyish = |c: char| c.is_ascii_alphanumeric() || "+/=_-*.".contains(c);
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let core = word.trim_end_matches('.');
        let long = core.chars().filter(|c| c.is_ascii_alphanumeric()).count() >= 24;
        if core.starts_with("sk-") || long {
            out.push_str("[redacted]");
            out.push_str(&word[core.len()..]);
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        if keyish(c) {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// What a stored attempt amounts to: its recorded failure (a transport or guard record in
/// place of an answer), its HTTP status's failure, or the parsed answer. Pure: the dispatcher,
/// the audit and replay all read stored attempts through this one function.
pub fn evaluate_raw(raw: &[u8], http_status: Option<u16>) -> Result<JudgeOutput, ParseFailure> {
    if let Ok(f) = serde_json::from_slice::<AttemptFailure>(raw) {
        if f.schema_version == ATTEMPT_FAILURE {
            return Err(ParseFailure::new(f.error_class, f.detail));
        }
    }
    if let Some(fail) = http_status.and_then(status_failure) {
        return Err(fail);
    }
    parse_answer(raw)
}

/// Parses a 2xx chat-completions body into a validated JudgeOutput.
pub fn parse_answer(body: &[u8]) -> Result<JudgeOutput, ParseFailure> {
    let v: Value = crate::json::parse(body, MAX_RESPONSE_BYTES as u64).map_err(|e| {
        ParseFailure::new(
            ErrorClass::BodyNotJson,
            format!("response body is not JSON: {e}"),
        )
    })?;
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        return Err(ParseFailure::new(
            ErrorClass::ProviderError,
            format!("provider error: {err}"),
        ));
    }
    let choice = v
        .pointer("/choices/0")
        .ok_or_else(|| ParseFailure::new(ErrorClass::NoChoices, "response has no choices[0]"))?;
    let message = choice
        .get("message")
        .ok_or_else(|| ParseFailure::new(ErrorClass::NoChoices, "choices[0] has no message"))?;
    if let Some(r) = message
        .get("refusal")
        .and_then(Value::as_str)
        .filter(|r| !r.trim().is_empty())
    {
        return Err(ParseFailure::new(
            ErrorClass::Refusal,
            format!("the model refused: {r}"),
        ));
    }
    if choice.get("finish_reason").and_then(Value::as_str) == Some("length") {
        return Err(ParseFailure::new(
            ErrorClass::Truncated,
            "finish_reason is length: the answer was cut off",
        ));
    }
    let content = message_text(message.get("content"));
    if content.trim().is_empty() {
        return Err(ParseFailure::new(
            ErrorClass::EmptyContent,
            "the answer has no content",
        ));
    }
    let object = extract_object(&content)?;
    let findings = contracts::validate(Kind::JudgeOutput, &object);
    if let Some(f) = findings.first() {
        return Err(ParseFailure::new(
            ErrorClass::SchemaMismatch,
            format!(
                "answer does not match JudgeOutput ({} problems), first: {f}",
                findings.len()
            ),
        ));
    }
    let output: JudgeOutput = serde_json::from_value(object)
        .map_err(|e| ParseFailure::new(ErrorClass::SchemaMismatch, e.to_string()))?;
    let mut seen = std::collections::BTreeSet::new();
    if let Some(dup) = output
        .obligations
        .iter()
        .find(|o| !seen.insert(o.id.as_str()))
    {
        return Err(ParseFailure::new(
            ErrorClass::DuplicateObligation,
            format!(
                "obligation {:?} is answered twice: the answer is ambiguous",
                dup.id
            ),
        ));
    }
    Ok(output)
}

/// The assistant text: a string, or the `text` of text parts in order.
fn message_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| {
                matches!(
                    p.get("type").and_then(Value::as_str),
                    Some("text") | Some("output_text") | None
                )
            })
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Finds the one JSON object in `content` (see the module doc).
pub fn extract_object(content: &str) -> Result<Value, ParseFailure> {
    let trimmed = content.trim();
    if let Ok(v) = crate::json::parse(trimmed.as_bytes(), MAX_RESPONSE_BYTES as u64) {
        return match v {
            Value::Object(_) => Ok(v),
            other => Err(ParseFailure::new(
                ErrorClass::NotJsonObject,
                format!(
                    "the answer is JSON {} , not an object",
                    contracts::type_name(&other)
                ),
            )),
        };
    }
    let fences = fenced_blocks(trimmed);
    if fences.len() > 1 {
        return Err(ParseFailure::new(
            ErrorClass::MultipleJson,
            format!("{} fenced blocks: ambiguous answer", fences.len()),
        ));
    }
    if let Some(block) = fences.first() {
        return match crate::json::parse(block.trim().as_bytes(), MAX_RESPONSE_BYTES as u64) {
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(_) => Err(ParseFailure::new(
                ErrorClass::NotJsonObject,
                "the fenced block is not a JSON object",
            )),
            Err(e) => Err(ParseFailure::new(
                ErrorClass::NotJson,
                format!("the fenced block is not JSON: {e}"),
            )),
        };
    }
    let objects = embedded_objects(trimmed);
    match objects.len() {
        0 => Err(ParseFailure::new(
            ErrorClass::NotJson,
            "no JSON object in the answer",
        )),
        1 => Ok(objects.into_iter().next().unwrap_or(Value::Null)),
        n => Err(ParseFailure::new(
            ErrorClass::MultipleJson,
            format!("{n} JSON objects in the answer: ambiguous"),
        )),
    }
}

/// Bodies of ``` fenced blocks (the info string, e.g. `json`, is dropped).
fn fenced_blocks(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        // The info string runs to the end of its line; a fence whose line never ends has no body.
        let body = after.split_once('\n').map_or("", |(_, body)| body);
        match body.find("```") {
            Some(end) => {
                out.push(&body[..end]);
                rest = &body[end + 3..];
            }
            None => break,
        }
    }
    out
}

/// Top-level balanced `{…}` spans of `s` that parse as JSON objects.
fn embedded_objects(s: &str) -> Vec<Value> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'{' {
            i += 1;
            continue;
        }
        let Some(j) = balanced_end(bytes, i) else {
            break;
        };
        if let Ok(v @ Value::Object(_)) =
            crate::json::parse(&bytes[i..=j], MAX_RESPONSE_BYTES as u64)
        {
            out.push(v);
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// The index of the `}` closing the `{` at `open`, skipping braces inside JSON strings;
/// `None` when it is never closed.
fn balanced_end(bytes: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    for (j, &c) in bytes.iter().enumerate().skip(open) {
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const GOOD: &str = r#"{"obligations":[{"id":"core.loop","verdict":"satisfied","sequenceRefs":[{"stream":"events","from":1,"to":2}],"frameHashes":[],"rationale":"ok"}]}"#;

    fn body(content: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({"choices":[{"message":{"role":"assistant","content":content},"finish_reason":"stop"}]})).unwrap()
    }

    #[test]
    fn a_provider_error_keeps_its_message_with_echoed_keys_masked() {
        // (The code is spliced in: the Python client's test reads `"code":"…"` in these sources
        // as an error code of the daemon.)
        let code = "invalid_api_key";
        let openai = format!(
            r#"{{"error":{{"message":"Incorrect API key provided: sk-ab***yz. You can find your API key at https://x.","type":"invalid_request_error","code":"{code}"}}}}"#
        );
        let openai = openai.as_bytes();
        let f = status_failure(401).unwrap();
        assert_eq!(
            (f.class, f.detail.as_str()),
            (ErrorClass::Http4xx, "client error 401")
        );
        let d = with_provider_message(&f, Some(401), openai);
        assert!(
            d.starts_with("client error 401: Incorrect API key provided: [redacted]. You can find"),
            "{d}"
        );
        assert!(
            d.contains("(invalid_api_key, invalid_request_error)"),
            "{d}"
        );
        assert!(!d.contains("sk-ab"), "{d}");
        let dashscope =
            br#"{"code":"InvalidApiKey","message":"Invalid API-key provided.","request_id":"1"}"#;
        assert_eq!(
            with_provider_message(&f, Some(401), dashscope),
            "client error 401: Invalid API-key provided. (InvalidApiKey)"
        );
        let plain = b"upstream says no: token 0123456789abcdef0123456789abcdef";
        let f5 = status_failure(502).unwrap();
        assert_eq!(
            with_provider_message(&f5, Some(502), plain),
            "server error 502: upstream says no: token [redacted]"
        );
        assert_eq!(
            with_provider_message(&f, Some(404), b""),
            "client error 401"
        );
        // A parse failure of a 2xx answer keeps its own detail.
        assert_eq!(
            with_provider_message(&f, Some(200), openai),
            "client error 401"
        );
        assert!(status_failure(200).is_none());
    }

    #[test]
    fn strict_fenced_and_prose_forms() {
        assert!(parse_answer(&body(json!(GOOD))).is_ok());
        assert!(parse_answer(&body(json!(format!("```json\n{GOOD}\n```")))).is_ok());
        assert!(parse_answer(&body(json!(format!(
            "Here is my verdict:\n{GOOD}\nThanks."
        ))))
        .is_ok());
        assert!(parse_answer(&body(json!([{"type":"text","text":GOOD}]))).is_ok());
    }

    #[test]
    fn failures_have_classes() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (body(json!("")), "empty_content"),
            (body(json!("I think it passes.")), "not_json"),
            (body(json!(format!("{GOOD} and also {GOOD}"))), "multiple_json"),
            (body(json!(format!("```json\n{GOOD}\n```\n```json\n{GOOD}\n```"))), "multiple_json"),
            (body(json!(r#"{"verdict":"pass"}"#)), "schema_mismatch"),
            (body(json!("[1,2]")), "not_json_object"),
            (b"<html>502</html>".to_vec(), "body_not_json"),
            (br#"{"choices":[]}"#.to_vec(), "no_choices"),
            (serde_json::to_vec(&json!({"choices":[{"message":{"content":null,"refusal":"I can't help"},"finish_reason":"stop"}]})).unwrap(), "refusal"),
            (serde_json::to_vec(&json!({"choices":[{"message":{"content":GOOD},"finish_reason":"length"}]})).unwrap(), "truncated"),
        ];
        for (b, class) in cases {
            assert_eq!(
                parse_answer(&b).unwrap_err().class.as_str(),
                class,
                "{}",
                String::from_utf8_lossy(&b)
            );
        }
    }

    #[test]
    fn duplicate_obligations_are_ambiguous() {
        let dup = r#"{"obligations":[{"id":"a.b","verdict":"satisfied","sequenceRefs":[],"frameHashes":[],"rationale":""},{"id":"a.b","verdict":"failed","sequenceRefs":[],"frameHashes":[],"rationale":""}]}"#;
        assert_eq!(
            parse_answer(&body(json!(dup))).unwrap_err().class.as_str(),
            "duplicate_obligation"
        );
    }

    #[test]
    fn reasoning_content_is_never_the_answer() {
        let b = serde_json::to_vec(&json!({"choices":[{"message":{"content":"","reasoning_content":GOOD},"finish_reason":"stop"}]})).unwrap();
        assert_eq!(
            parse_answer(&b).unwrap_err().class.as_str(),
            "empty_content"
        );
    }

    #[test]
    fn braces_inside_strings_do_not_confuse_the_scanner() {
        let s = format!("note: \"{{not json}}\" then {GOOD}");
        assert!(extract_object(&s).is_ok());
    }

    #[test]
    fn an_answer_up_to_four_mebibytes_is_read_and_a_larger_one_is_not() {
        // Trailing whitespace pads GOOD's body to the size wanted.
        let padded = |size: usize| {
            let mut b = body(json!(GOOD));
            b.resize(size, b' ');
            b
        };
        // Written out, not as MAX_RESPONSE_BYTES: the rule is the size, not the constant's name.
        let limit = 4 * 1024 * 1024;
        assert!(parse_answer(&padded(limit)).is_ok());
        assert_eq!(
            parse_answer(&padded(limit + 1)).unwrap_err().class,
            ErrorClass::BodyNotJson
        );
    }

    #[test]
    fn response_facts_read_model_fingerprint_usage_and_finish_reason() {
        let b = br#"{"model":"qwen-vl-max","system_fingerprint":"fp-1","usage":{"prompt_tokens":120,"completion_tokens":30},"choices":[{"finish_reason":"stop","message":{"content":""}}]}"#;
        assert_eq!(
            response_facts(b),
            ResponseFacts {
                model: Some("qwen-vl-max".into()),
                system_fingerprint: Some("fp-1".into()),
                usage: Some(Usage {
                    prompt_tokens: 120,
                    completion_tokens: 30
                }),
                finish_reason: Some("stop".into()),
            }
        );
        // Usage is both counts or none; a body that is not JSON has no facts.
        let half = br#"{"model":"m","usage":{"prompt_tokens":1}}"#;
        assert_eq!(response_facts(half).usage, None);
        assert_eq!(response_facts(half).model.as_deref(), Some("m"));
        assert_eq!(response_facts(b"<html>"), ResponseFacts::default());
    }

    #[test]
    fn each_failed_status_has_its_own_class() {
        let class = |s| status_failure(s).map(|f| f.class);
        for ok in [200, 201, 299] {
            assert_eq!(class(ok), None, "{ok}");
        }
        assert_eq!(class(429), Some(ErrorClass::Http429));
        assert_eq!(class(408), Some(ErrorClass::Http408));
        assert_eq!(class(500), Some(ErrorClass::Http5xx));
        assert_eq!(class(599), Some(ErrorClass::Http5xx));
        for other in [199, 300, 400, 404, 600] {
            assert_eq!(class(other), Some(ErrorClass::Http4xx), "{other}");
        }
        assert_eq!(status_failure(503).unwrap().detail, "server error 503");
        assert_eq!(status_failure(429).unwrap().detail, "rate limited (429)");
        assert_eq!(status_failure(408).unwrap().detail, "request timeout (408)");
    }

    #[test]
    fn a_provider_message_keeps_numeric_codes_and_drops_empty_fields() {
        let said = |b: &[u8]| provider_message(b);
        assert_eq!(
            said(br#"{"error":{"message":"slow down","code":429}}"#).as_deref(),
            Some("slow down (429)")
        );
        assert_eq!(
            said(br#"{"error":{"message":"boom","code":"","type":""}}"#).as_deref(),
            Some("boom")
        );
        assert_eq!(
            said(br#"{"error":{"message":"","code":"Throttled"}}"#).as_deref(),
            Some("(Throttled)")
        );
        assert_eq!(said(br#"{"error":{"message":""}}"#), None);
        assert_eq!(said(b"  "), None);
    }

    #[test]
    fn a_stored_attempt_failure_is_its_recorded_failure_before_any_status() {
        let record = |schema: &str| {
            serde_json::to_vec(&json!({"attempt":1,"detail":"operation timed out","errorClass":"timeout","schemaVersion":schema,"sessionId":"sess-a-1","slot":"a","stage":"transport"})).unwrap()
        };
        let f = evaluate_raw(&record(ATTEMPT_FAILURE), Some(503)).unwrap_err();
        assert_eq!(
            (f.class, f.detail.as_str()),
            (ErrorClass::Timeout, "operation timed out")
        );
        // Only the failure record's own schema makes it one; anything else is an answer.
        assert_eq!(
            evaluate_raw(&record("JudgeAttemptFailure/2"), None)
                .unwrap_err()
                .class,
            ErrorClass::NoChoices
        );
        // A failed status outranks the body; a success reads the body.
        let good = body(json!(GOOD));
        assert_eq!(
            evaluate_raw(&good, Some(503)).unwrap_err().class,
            ErrorClass::Http5xx
        );
        assert!(evaluate_raw(&good, Some(200)).is_ok());
        assert!(evaluate_raw(&good, None).is_ok());
    }

    #[test]
    fn a_null_error_and_an_empty_refusal_do_not_fail_an_answer() {
        let b = serde_json::to_vec(&json!({"error":null,"choices":[{"message":{"content":GOOD,"refusal":"  "},"finish_reason":"stop"}]})).unwrap();
        let out = parse_answer(&b).unwrap();
        assert_eq!(out.obligations[0].id, "core.loop");
        let err = serde_json::to_vec(
            &json!({"error":{"message":"overloaded"},"choices":[{"message":{"content":GOOD}}]}),
        )
        .unwrap();
        assert_eq!(
            parse_answer(&err).unwrap_err().class,
            ErrorClass::ProviderError
        );
    }

    #[test]
    fn one_fenced_block_is_the_answer_whatever_the_prose_around_it() {
        // The prose shows an example object; the fenced block alone is the answer.
        let content = format!(
            "The schema is {{\"obligations\":[]}}.\nMy answer:\n```json\n{GOOD}\n```\nDone."
        );
        assert_eq!(
            extract_object(&content).unwrap(),
            serde_json::from_str::<Value>(GOOD).unwrap()
        );
        // A fenced block that is not an object, or not JSON, is refused as such.
        assert_eq!(
            extract_object("see:\n```\n1\n```").unwrap_err().class,
            ErrorClass::NotJsonObject
        );
        assert_eq!(
            extract_object("```\n1\n```").unwrap_err().class,
            ErrorClass::NotJsonObject
        );
        assert_eq!(
            extract_object("```json\n{\"a\":}\n```").unwrap_err().class,
            ErrorClass::NotJson
        );
        // Backticks after the one block do not make a second one.
        let inline = format!("```json\n{GOOD}\n```\nas in ```x``` above");
        assert!(extract_object(&inline).is_ok());
    }

    #[test]
    fn escaped_quotes_and_braces_inside_strings_stay_inside_the_object() {
        // A lone closing brace in a string would end the object early if strings were not seen.
        assert_eq!(
            extract_object(r#"Answer: {"a":"}"} (end)"#).unwrap(),
            json!({"a": "}"})
        );
        let inner = r#"{"a":"say \"{\" or \\","b":"}{","c":{"d":"\\\"}"}}"#;
        let want: Value = serde_json::from_str(inner).unwrap();
        assert_eq!(
            extract_object(&format!("Answer: {inner} (end)")).unwrap(),
            want
        );
        assert_eq!(
            extract_object(&format!("Answer: {inner} and {inner}"))
                .unwrap_err()
                .class,
            ErrorClass::MultipleJson
        );
    }
}
