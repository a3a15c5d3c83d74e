//! `seal judges check`: one tiny request per slot, through the production HTTP path (the same
//! client builder and the same credentials as an attempt, see [`super::client`]), read into
//! four answers an operator can act on: is the endpoint reachable, does it take the key, does
//! it know the model, does it support structured output.
//!
//! The check stores nothing, opens no store and needs no deployment secret, so it
//! can run on a fresh host before anything else; it costs about 40 tokens per slot.

use std::time::Instant;

use serde::Serialize;
use serde_json::{json, Value};

use crate::config::{Config, SlotConfig};
use seal_core::judge::parse::{mask_key_shapes, provider_message};
use seal_core::judge::redact::Redactor;

/// Most tokens the check asks a judge for.
pub const CHECK_MAX_TOKENS: u64 = 16;
/// Most bytes of an answer the check reads.
const MAX_CHECK_BODY: usize = 64 * 1024;
/// Most characters of a judge's answer shown with a structured-output failure: enough to see
/// what the model did instead (prose, a fenced block, another shape), bounded so that a model
/// that talks on does not flood the terminal.
pub const MAX_SHOWN_ANSWER: usize = 200;

/// One column of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    Fail,
    /// Not reached (an earlier check failed) or not asked (structured output off).
    Skipped,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Fail => "FAIL",
            Verdict::Skipped => "-",
        }
    }
}

/// What the check found for one slot.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SlotCheck {
    pub slot: String,
    pub host: String,
    pub model: String,
    pub reach: Verdict,
    pub auth: Verdict,
    #[serde(rename = "modelKnown")]
    pub model_known: Verdict,
    pub structured: Verdict,
    pub latency_ms: Option<u64>,
    /// What went wrong, or the model that answered when it differs; redacted.
    pub detail: String,
    /// The URL the check posted to: a wrong path or port is visible at once.
    pub url: String,
    /// What the judge answered when it answered outside the schema (its message content, else
    /// the body), redacted and at most [`MAX_SHOWN_ANSWER`] characters. Model text: whoever
    /// prints it escapes it for the terminal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The configured base URL was changed ([`SlotConfig::base_url_note`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl SlotCheck {
    pub fn passed(&self) -> bool {
        ![self.reach, self.auth, self.model_known, self.structured].contains(&Verdict::Fail)
    }
}

/// The request of the check: a one-line question whose answer is `{"ok": true}`.
pub fn check_request(c: &SlotConfig) -> Value {
    let mut body = json!({
        "model": c.model,
        "messages": [{"role": "user", "content": "Answer with the JSON object {\"ok\": true}."}],
        "max_tokens": CHECK_MAX_TOKENS,
        "temperature": 0,
        "user": "seal-judges-check",
    });
    if c.structured_output {
        body["response_format"] = json!({"type": "json_schema", "json_schema": {
            "name": "check", "strict": true,
            "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}},
                       "required": ["ok"], "additionalProperties": false}}});
    }
    body
}

/// Checks one slot (never fails: every failure is a row of the table).
pub async fn check_slot(config: &Config, c: &SlotConfig) -> SlotCheck {
    let redactor = redactor_of(config);
    let clean = |s: &str| {
        let (scrubbed, _) = redactor.scrub(s.as_bytes());
        mask_key_shapes(&String::from_utf8_lossy(&scrubbed))
    };
    let mut row = SlotCheck {
        slot: c.slot.as_str().to_string(),
        host: c.host(),
        model: c.model.clone(),
        reach: Verdict::Fail,
        auth: Verdict::Skipped,
        model_known: Verdict::Skipped,
        structured: Verdict::Skipped,
        latency_ms: None,
        detail: String::new(),
        url: c.shown_endpoint(),
        answer: None,
        note: c.base_url_note.clone(),
    };
    let http = match super::client::http_client(c) {
        Ok(h) => h,
        Err(e) => {
            row.detail = clean(&e.to_string());
            return row;
        }
    };
    let t0 = Instant::now();
    let sent = super::client::authorized_post(&http, c)
        .body(check_request(c).to_string())
        .send()
        .await;
    let resp = match sent {
        Ok(r) => r,
        Err(e) => {
            row.detail = clean(&super::transport::error_chain(&e));
            return row;
        }
    };
    let status = resp.status().as_u16();
    let body = read_capped(resp).await;
    row.latency_ms = Some(t0.elapsed().as_millis() as u64);
    row.reach = Verdict::Ok;
    let said = provider_message(&body)
        .map(|m| clean(&m))
        .unwrap_or_default();
    classify(&mut row, c, status, &body, said);
    // Scrubbed whole, then shortened: a cut could split a key the redactor would know.
    row.answer = row
        .answer
        .take()
        .map(|a| shortened(&clean(&a), MAX_SHOWN_ANSWER));
    row
}

/// Fills the auth, model and structured columns from the answer.
fn classify(row: &mut SlotCheck, c: &SlotConfig, status: u16, body: &[u8], said: String) {
    let lower = said.to_ascii_lowercase();
    let with_status = |s: &str| format!("HTTP {status}: {s}");
    if matches!(status, 401 | 403) {
        row.auth = Verdict::Fail;
        row.detail = with_status(&said);
        return;
    }
    row.auth = Verdict::Ok;
    let names_format = lower.contains("response_format") || lower.contains("json_schema");
    if status == 404 || (status == 400 && lower.contains("model") && !names_format) {
        row.model_known = Verdict::Fail;
        row.detail = with_status(&said);
        return;
    }
    if status == 400 && names_format {
        row.model_known = Verdict::Ok;
        row.structured = Verdict::Fail;
        row.detail = with_status(&format!("{said}; set structured_output = false"));
        return;
    }
    if !(200..300).contains(&status) {
        row.model_known = Verdict::Fail;
        row.detail = with_status(&said);
        return;
    }
    row.model_known = Verdict::Ok;
    let v: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    if let Some(answered) = v.get("model").and_then(Value::as_str) {
        // Providers add dates or tags to the name they were asked for.
        if !answered.starts_with(c.model.as_str()) {
            row.detail = format!("answered as model {}", mask_key_shapes(answered));
        }
    }
    if c.structured_output {
        let content = v
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str);
        let ok = content
            .and_then(|s| serde_json::from_str::<Value>(s.trim()).ok())
            .is_some_and(|a| a == json!({"ok": true}));
        row.structured = if ok { Verdict::Ok } else { Verdict::Fail };
        if !ok {
            row.detail = "answered outside the schema: set structured_output = false".into();
            let said = content.map_or_else(|| String::from_utf8_lossy(body), Into::into);
            row.answer = Some(said.into_owned());
        }
    }
}

/// At most `max` characters of `s`, an ellipsis and the count of the rest when it was longer.
fn shortened(s: &str, max: usize) -> String {
    let total = s.chars().count();
    if total <= max {
        return s.to_string();
    }
    let head: String = s.chars().take(max).collect();
    format!("{head}… ({} more characters)", total - max)
}

/// Every secret of the configuration, for scrubbing what is shown.
fn redactor_of(config: &Config) -> Redactor {
    let slots = [&config.a, &config.b];
    let keys = slots.iter().filter_map(|s| s.api_key.as_ref());
    let headers = slots
        .iter()
        .flat_map(|s| s.headers.iter().filter_map(|h| h.value.as_ref()));
    Redactor::new(keys.chain(headers).map(|s| s.expose()))
}

/// The body, at most [`MAX_CHECK_BODY`] bytes (a broken read is an empty body).
async fn read_capped(mut resp: reqwest::Response) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_CHECK_BODY {
            body.truncate(MAX_CHECK_BODY);
            break;
        }
    }
    body
}
