//! A loopback judge: a small OpenAI-compatible chat-completions server on 127.0.0.1, for tests,
//! fixtures and benchmarks. Real HTTP/1.1 over TCP, written by hand so that every fault a real
//! provider produces can be scripted exactly: timeouts, connection resets, truncated bodies,
//! 5xx, 429 with Retry-After, refusals, `finish_reason: length`, prose and fenced answers,
//! provider flavors (OpenAI, DashScope, vLLM, Ollama; content as a string or as parts).
//!
//! Without a script a judge answers by itself: it reads the judge package between the request's
//! markers and judges it with a simple, deterministic [`Persona`] (a lenient or strict reader of
//! font sizes, say), so that example runs pass, fail or dispute the way their names say.

use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use seal_core::assertions;
use seal_core::doc::{JudgePackage, Stream};

/// How a judge reads a package when it answers by itself.
#[derive(Debug, Clone)]
pub struct Persona {
    /// Smallest font (px) this judge accepts as readable.
    pub min_font_px: f64,
    /// Cite an event that does not exist (an unsupported claim).
    pub cite_missing_events: bool,
    /// Say `failed` to everything (a hostile or broken judge).
    pub fail_everything: bool,
    /// Answer `satisfied` to everything without looking (a sloppy judge).
    pub pass_everything: bool,
    /// Provider flavor of the response body.
    pub flavor: Flavor,
    /// The `model` the answer says it served (default: the one requested), and the
    /// `system_fingerprint` of the OpenAI flavor (default `fp_loopback_1`): a provider that
    /// swaps the model behind a name.
    pub served_model: Option<String>,
    pub fingerprint: Option<String>,
    /// Mistakes made on purpose: see [`Errors`].
    pub errors: Option<Errors>,
}

/// A judge that errs: on a share `percent` of the obligations it judges `satisfied` or
/// `failed`, it says the opposite. Which ones is a function of `seed`, the judge package and
/// the obligation id only, so two judges with the same seed make the very same mistakes (they
/// copy each other's errors) and two with different seeds err independently. Each call
/// records the obligations it flipped ([`Call::flipped`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errors {
    pub seed: u64,
    pub percent: u8,
}

impl Errors {
    /// Whether this judge flips its verdict on obligation `id` of the package `package`
    /// (its bytes as the request carries them).
    pub fn flips(&self, package: &str, id: &str) -> bool {
        let keyed = format!("{}\n{id}\n{package}", self.seed);
        let h = seal_core::canonical::Hash::of(keyed.as_bytes());
        // The first 16 bits of the digest, uniform in 0..65536.
        let x = u64::from_str_radix(&h.as_str()[..4], 16).unwrap_or(0);
        x * 100 < u64::from(self.percent) * 65536
    }
}

impl Default for Persona {
    fn default() -> Persona {
        Persona {
            min_font_px: 14.0,
            cite_missing_events: false,
            fail_everything: false,
            pass_everything: false,
            flavor: Flavor::OpenAi,
            served_model: None,
            fingerprint: None,
            errors: None,
        }
    }
}

/// Response body shapes of real providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// OpenAI: `system_fingerprint`, `refusal: null`, content as a string.
    OpenAi,
    /// DashScope compatible mode: no fingerprint, `usage` with `prompt_tokens_details`.
    DashScope,
    /// vLLM: `reasoning_content` beside the content (which must be ignored), `stop_reason`.
    Vllm,
    /// Ollama's OpenAI endpoint: `fp_ollama`, model with a tag.
    Ollama,
    /// Content as an array of text parts.
    Parts,
}

/// One scripted behavior for one call.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Never answer (the client times out).
    Hang,
    /// Close the connection with a TCP reset before answering.
    Reset,
    /// Send headers and part of the body, then close.
    Truncated,
    /// Answer with this status and body (and `Retry-After` seconds, if given).
    Status {
        code: u16,
        body: String,
        retry_after: Option<u64>,
    },
    /// A 200 answer whose assistant content is exactly this text.
    Content(String),
    /// A 200 answer with `refusal` set and no content.
    Refusal(String),
    /// A 200 answer cut off (`finish_reason: length`).
    Length,
    /// A 200 answer whose whole body is this text.
    Body(String),
    /// Answer by itself, after this extra delay.
    Delay(Duration),
}

/// What the server saw of one call.
#[derive(Debug, Clone)]
pub struct Call {
    pub model: String,
    pub session: Option<String>,
    pub user: Option<String>,
    pub seed: Option<u64>,
    pub authorization: Option<String>,
    /// Every header of the call, names lower-case (gateway headers a judge is configured with).
    pub headers: HashMap<String, String>,
    pub body_bytes: usize,
    pub images: usize,
    /// The obligations this answer flipped on purpose ([`Errors`]), when it answered by
    /// itself.
    pub flipped: Vec<String>,
}

#[derive(Default)]
struct Shared {
    scripts: Mutex<HashMap<String, VecDeque<Fault>>>,
    personas: Mutex<HashMap<String, Persona>>,
    calls: Mutex<Vec<Call>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    latency: Mutex<Duration>,
    /// Each answer gets an id of its own, as a real endpoint's do ([`Loopback::unique_ids`]).
    unique_ids: std::sync::atomic::AtomicBool,
    served: std::sync::atomic::AtomicU64,
    /// Requests without `messages` answered 400 (health probes).
    probes: AtomicUsize,
}

/// A running loopback judge. Stops when dropped.
pub struct Loopback {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    stop: CancellationToken,
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Loopback {
    /// Starts a judge on 127.0.0.1 (an ephemeral port) answering after `latency`.
    pub async fn start(latency: Duration) -> std::io::Result<Loopback> {
        Self::start_on("127.0.0.1:0", latency).await
    }

    /// From now on each answer carries an id of its own (`chatcmpl-…-<n>`), as a real
    /// endpoint's do, so that two identical verdicts are not the same bytes (the S3 request
    /// count's runs: `tools/s3_requests_per_run.sh`). Off by default: the stored fixtures'
    /// bytes depend on the answers being a function of the verdict alone.
    pub fn unique_ids(&self) {
        self.shared.unique_ids.store(true, Ordering::Relaxed);
    }

    pub async fn start_on(addr: &str, latency: Duration) -> std::io::Result<Loopback> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        *shared.latency.lock().unwrap_or_else(|e| e.into_inner()) = latency;
        let stop = CancellationToken::new();
        let (s, st) = (shared.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = st.cancelled() => break,
                    accepted = listener.accept() => {
                        if let Ok((conn, _)) = accepted {
                            let _ = conn.set_nodelay(true);
                            let (s, st) = (s.clone(), st.clone());
                            tokio::spawn(async move { let _ = serve(conn, s, st).await; });
                        }
                    }
                }
            }
        });
        Ok(Loopback { addr, shared, stop })
    }

    /// The base URL to configure a slot with (`SEAL_JUDGE_A_URL`).
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues behaviors for the next calls naming `model`; afterwards the judge answers itself.
    pub fn script(&self, model: &str, faults: impl IntoIterator<Item = Fault>) {
        let mut s = self
            .shared
            .scripts
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        s.entry(model.to_string()).or_default().extend(faults);
    }

    /// Sets how the judge for `model` reads packages.
    pub fn persona(&self, model: &str, p: Persona) {
        self.shared
            .personas
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(model.to_string(), p);
    }

    pub fn set_latency(&self, latency: Duration) {
        *self
            .shared
            .latency
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = latency;
    }

    /// Every call received so far.
    pub fn calls(&self) -> Vec<Call> {
        self.shared
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The most calls that were in flight at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }

    /// Requests answered 400 for want of `messages` (seal's health probes).
    pub fn probes(&self) -> usize {
        self.shared.probes.load(Ordering::SeqCst)
    }
}

async fn serve(
    mut conn: TcpStream,
    shared: Arc<Shared>,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(64 * 1024);
    loop {
        // Read one request: headers, then Content-Length bytes of body.
        let header_end = loop {
            if let Some(i) = find(&buf, b"\r\n\r\n") {
                break i;
            }
            let mut chunk = [0u8; 16384];
            let n = tokio::select! {
                _ = stop.cancelled() => return Ok(()),
                n = conn.read(&mut chunk) => n?,
            };
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
            if buf.len() > 256 * 1024 * 1024 {
                return Ok(());
            }
        };
        let head = String::from_utf8_lossy(&buf[..header_end]).to_string();
        let mut lines = head.split("\r\n");
        let request_line = lines.next().unwrap_or("").to_string();
        let headers: HashMap<String, String> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let len: usize = headers
            .get("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        while buf.len() < header_end + 4 + len {
            let mut chunk = vec![0u8; 1 << 20];
            let n = conn.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        let body = buf[header_end + 4..header_end + 4 + len].to_vec();
        buf.drain(..header_end + 4 + len);

        if request_line.starts_with("GET") {
            write_response(&mut conn, 200, None, b"{\"ok\":true}").await?;
            continue;
        }
        // Only the endpoint itself, as a provider routes: a base URL that already ended in
        // `/chat/completions` and got it appended again is answered 404 here too.
        let path = request_line.split_whitespace().nth(1).unwrap_or("");
        let path = path.split('?').next().unwrap_or("");
        if !path.ends_with("/chat/completions") || path.matches("/chat/completions").count() > 1 {
            write_response(
                &mut conn,
                404,
                None,
                b"{\"error\":{\"message\":\"not found\"}}",
            )
            .await?;
            continue;
        }
        // A body without `messages` is answered 400 before any model runs, as OpenAI does (and
        // not counted as a call): what seal's health probe sends.
        let has_messages = serde_json::from_slice::<Value>(&body)
            .ok()
            .is_some_and(|v| v.get("messages").is_some_and(Value::is_array));
        if !has_messages {
            shared.probes.fetch_add(1, Ordering::SeqCst);
            write_response(
                &mut conn,
                400,
                None,
                b"{\"error\":{\"message\":\"'messages' is a required property\",\"type\":\"invalid_request_error\"}}",
            )
            .await?;
            continue;
        }
        let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        shared.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let result = answer(&mut conn, &shared, &headers, &body, &stop).await;
        shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        match result {
            Ok(true) => continue,
            Ok(false) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

async fn write_response(
    conn: &mut TcpStream,
    status: u16,
    retry_after: Option<u64>,
    body: &[u8],
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    if let Some(s) = retry_after {
        head.push_str(&format!("retry-after: {s}\r\n"));
    }
    head.push_str("\r\n");
    // One write: a head and a body in two segments meet Nagle and delayed ACKs (40 ms).
    let mut msg = head.into_bytes();
    msg.extend_from_slice(body);
    conn.write_all(&msg).await?;
    conn.flush().await
}

/// Answers one call; Ok(false) when the connection was closed on purpose.
async fn answer(
    conn: &mut TcpStream,
    shared: &Shared,
    headers: &HashMap<String, String>,
    body: &[u8],
    stop: &CancellationToken,
) -> std::io::Result<bool> {
    let req: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let model = req
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let images = req
        .pointer("/messages/1/content")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("image_url"))
                .count()
        })
        .unwrap_or(0);
    let fault = shared
        .scripts
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_mut(&model)
        .and_then(|q| q.pop_front());
    let persona = shared
        .personas
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&model)
        .cloned()
        .unwrap_or_default();
    shared
        .calls
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Call {
            model: model.clone(),
            session: headers.get("x-session-id").cloned(),
            user: req.get("user").and_then(Value::as_str).map(str::to_owned),
            seed: req.get("seed").and_then(Value::as_u64),
            authorization: headers.get("authorization").cloned(),
            headers: headers.clone(),
            body_bytes: body.len(),
            images,
            flipped: match (&fault, persona.errors) {
                (None | Some(Fault::Delay(_)), Some(e)) => flipped(&req, e),
                _ => Vec::new(),
            },
        });
    let latency = *shared.latency.lock().unwrap_or_else(|e| e.into_inner());
    let sleep = |d: Duration| async move {
        tokio::select! {
            _ = stop.cancelled() => false,
            _ = tokio::time::sleep(d) => true,
        }
    };
    if !sleep(latency).await {
        return Ok(false);
    }
    let prompt_tokens = (body.len() / 4) as u64;
    let serial = shared
        .unique_ids
        .load(Ordering::Relaxed)
        .then(|| shared.served.fetch_add(1, Ordering::Relaxed));
    match fault {
        Some(Fault::Hang) => {
            sleep(Duration::from_secs(3600)).await;
            Ok(false)
        }
        Some(Fault::Reset) => {
            // SO_LINGER 0 turns the close into a TCP reset.
            let _ = conn.set_zero_linger();
            Ok(false)
        }
        Some(Fault::Truncated) => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 4096\r\n\r\n{\"choices\":[{\"mess";
            conn.write_all(head.as_bytes()).await?;
            conn.flush().await?;
            let _ = conn.set_zero_linger();
            Ok(false)
        }
        Some(Fault::Status {
            code,
            body,
            retry_after,
        }) => {
            write_response(conn, code, retry_after, body.as_bytes()).await?;
            Ok(true)
        }
        Some(Fault::Body(text)) => {
            write_response(conn, 200, None, text.as_bytes()).await?;
            Ok(true)
        }
        Some(Fault::Content(text)) => {
            let b = completion(
                &model,
                &persona,
                Some(Value::String(text)),
                None,
                "stop",
                prompt_tokens,
                serial,
            );
            write_response(conn, 200, None, &b).await?;
            Ok(true)
        }
        Some(Fault::Refusal(text)) => {
            let b = completion(
                &model,
                &persona,
                None,
                Some(text),
                "stop",
                prompt_tokens,
                serial,
            );
            write_response(conn, 200, None, &b).await?;
            Ok(true)
        }
        Some(Fault::Length) => {
            let partial = "{\"obligations\":[{\"id\":\"core.loop-reached\",\"verdict\":\"sati";
            let b = completion(
                &model,
                &persona,
                Some(Value::String(partial.into())),
                None,
                "length",
                prompt_tokens,
                serial,
            );
            write_response(conn, 200, None, &b).await?;
            Ok(true)
        }
        Some(Fault::Delay(d)) => {
            if !sleep(d).await {
                return Ok(false);
            }
            own_answer(conn, &req, &persona, &model, prompt_tokens, serial).await
        }
        None => own_answer(conn, &req, &persona, &model, prompt_tokens, serial).await,
    }
}

/// The judge's own verdicts on the request's package, as a 200 answer.
async fn own_answer(
    conn: &mut TcpStream,
    req: &Value,
    persona: &Persona,
    model: &str,
    prompt_tokens: u64,
    serial: Option<u64>,
) -> std::io::Result<bool> {
    let content = judge(req, persona, model);
    let b = completion(
        model,
        persona,
        Some(Value::String(content)),
        None,
        "stop",
        prompt_tokens,
        serial,
    );
    write_response(conn, 200, None, &b).await?;
    Ok(true)
}

fn completion(
    model: &str,
    p: &Persona,
    content: Option<Value>,
    refusal: Option<String>,
    finish: &str,
    prompt_tokens: u64,
    serial: Option<u64>,
) -> Vec<u8> {
    let text = content
        .as_ref()
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let completion_tokens = (text.len() / 4) as u64 + 1;
    let mut id = format!(
        "chatcmpl-{}",
        &seal_core::canonical::Hash::of(text.as_bytes()).to_string()[..24]
    );
    if let Some(n) = serial {
        id.push_str(&format!("-{n}"));
    }
    let usage = json!({"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens});
    let model = p.served_model.as_deref().unwrap_or(model);
    let v = match p.flavor {
        Flavor::OpenAi => json!({
            "id": id, "object": "chat.completion", "created": 1764374400, "model": model,
            "system_fingerprint": p.fingerprint.as_deref().unwrap_or("fp_loopback_1"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": refusal}, "logprobs": null, "finish_reason": finish}],
            "usage": usage
        }),
        Flavor::DashScope => json!({
            "id": id, "object": "chat.completion", "created": 1764374400, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content.unwrap_or(Value::String(String::new())), "refusal": refusal}, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens, "prompt_tokens_details": {"cached_tokens": 0}}
        }),
        Flavor::Vllm => json!({
            "id": id, "object": "chat.completion", "created": 1764374400, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "reasoning_content": "Thinking. A judge would answer {\"obligations\":[]} here, but that is not my answer.", "content": content, "tool_calls": []}, "logprobs": null, "finish_reason": finish, "stop_reason": null}],
            "usage": usage, "prompt_logprobs": null
        }),
        Flavor::Ollama => json!({
            "id": id, "object": "chat.completion", "created": 1764374400, "model": format!("{model}:latest"),
            "system_fingerprint": "fp_ollama",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
            "usage": usage
        }),
        Flavor::Parts => json!({
            "id": id, "object": "chat.completion", "created": 1764374400, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content.map(|c| json!([{"type": "text", "text": c}])), "refusal": refusal}, "finish_reason": finish}],
            "usage": usage
        }),
    };
    serde_json::to_vec(&v).unwrap_or_default()
}

/// Extracts the judge package from a request (between the markers).
pub fn package_of(req: &Value) -> Option<JudgePackage> {
    serde_json::from_str(package_text(req)?).ok()
}

/// The judge package's text in a request (between the markers).
fn package_text(req: &Value) -> Option<&str> {
    let parts = req.pointer("/messages/1/content")?.as_array()?;
    for p in parts {
        let Some(text) = p.get("text").and_then(Value::as_str) else {
            continue;
        };
        let Some(b) = text.find(" BEGIN>>>\n") else {
            continue;
        };
        let rest = &text[b + " BEGIN>>>\n".len()..];
        let e = rest.rfind("\n<<<SEAL UNTRUSTED JUDGE PACKAGE")?;
        return Some(&rest[..e]);
    }
    None
}

/// The obligations of the request's package a judge erring by `e` flips.
fn flipped(req: &Value, e: Errors) -> Vec<String> {
    let (Some(text), Some(pkg)) = (package_text(req), package_of(req)) else {
        return Vec::new();
    };
    pkg.obligations
        .iter()
        .filter(|o| e.flips(text, &o.id))
        .map(|o| o.id.clone())
        .collect()
}

fn ev_ref(seq: u64) -> Value {
    json!({"stream": "events", "from": seq, "to": seq})
}

/// The persona's verdicts on a package, as the JSON text a judge would answer.
fn judge(req: &Value, p: &Persona, model: &str) -> String {
    let Some(pkg) = package_of(req) else {
        return "I could not find a judge package in the request.".into();
    };
    let last_seq = pkg.events.last().map(|e| e.seq).unwrap_or(0);
    let frame = pkg.frames.last().map(|f| f.hash.to_string());
    let flips = p.errors.map(|e| flipped(req, e));
    let mut out = Vec::new();
    for ob in &pkg.obligations {
        let (verdict, refs, why): (&str, Vec<Value>, String) = if p.fail_everything {
            ("failed", vec![ev_ref(last_seq)], "judged failed".into())
        } else if p.pass_everything {
            ("satisfied", vec![ev_ref(0)], "looks fine".into())
        } else if let Some(check) = &ob.check {
            let e = assertions::evaluate(check, &pkg.events);
            let refs = e.sequence_refs.iter().map(|r| json!({"stream": if r.stream == Stream::Events {"events"} else {"actions"}, "from": r.from, "to": r.to})).collect();
            (if e.holds { "satisfied" } else { "failed" }, refs, e.detail)
        } else {
            heuristic(&ob.id, &pkg, p)
        };
        // A judge that errs says the opposite of what it read, citing the same events.
        let verdict = match (verdict, &flips) {
            ("satisfied", Some(f)) if f.contains(&ob.id) => "failed",
            ("failed", Some(f)) if f.contains(&ob.id) => "satisfied",
            (v, _) => v,
        };
        let mut refs = refs;
        if p.cite_missing_events {
            refs.push(ev_ref(last_seq + 1000));
        }
        let frames: Vec<Value> = if verdict == "not_observed" {
            vec![]
        } else {
            frame.iter().map(|f| json!(f)).collect()
        };
        out.push(json!({"id": ob.id, "verdict": verdict, "sequenceRefs": refs, "frameHashes": frames, "rationale": format!("{model}: {why}")}));
    }
    serde_json::to_string(&json!({"obligations": out})).unwrap_or_default()
}

fn heuristic(id: &str, pkg: &JudgePackage, p: &Persona) -> (&'static str, Vec<Value>, String) {
    let find = |name: &str| {
        pkg.events
            .iter()
            .filter(|e| e.name == name)
            .collect::<Vec<_>>()
    };
    let texts: Vec<String> = pkg
        .events
        .iter()
        .flat_map(|e| {
            e.data
                .values()
                .filter_map(|v| v.as_str().map(str::to_owned))
        })
        .collect();
    match id.split('.').next_back().unwrap_or(id) {
        s if s.contains("loop") || s.contains("complete") || s.contains("end") => {
            match find("game_end")
                .iter()
                .find(|e| e.data.get("completed") == Some(&Value::Bool(true)))
            {
                Some(e) => (
                    "satisfied",
                    vec![ev_ref(e.seq)],
                    "a game_end with completed = true".into(),
                ),
                None => (
                    "failed",
                    vec![ev_ref(pkg.events.last().map(|e| e.seq).unwrap_or(0))],
                    "no completed game_end".into(),
                ),
            }
        }
        s if s.contains("readable") || s.contains("font") => {
            let renders = find("render");
            match renders
                .iter()
                .filter_map(|e| {
                    e.data
                        .get("minFontPx")
                        .and_then(Value::as_f64)
                        .map(|f| (e.seq, f))
                })
                .next()
            {
                Some((seq, px)) if px >= p.min_font_px => (
                    "satisfied",
                    vec![ev_ref(seq)],
                    format!("smallest font {px}px"),
                ),
                Some((seq, px)) => (
                    "failed",
                    vec![ev_ref(seq)],
                    format!("smallest font {px}px is below {}px", p.min_font_px),
                ),
                None => ("not_observed", vec![], "no render event".into()),
            }
        }
        s if s.contains("placeholder") => {
            if texts
                .iter()
                .any(|t| t.to_ascii_lowercase().contains("lorem"))
            {
                ("failed", vec![ev_ref(0)], "placeholder text".into())
            } else {
                (
                    "satisfied",
                    vec![ev_ref(pkg.events.first().map(|e| e.seq).unwrap_or(0))],
                    "no placeholder text".into(),
                )
            }
        }
        s if s.contains("theme") || s.contains("visible") => {
            let keywords: Vec<String> = pkg
                .brief
                .text
                .split(|c: char| {
                    c == '、'
                        || c == '，'
                        || c == ','
                        || c == '：'
                        || c == ':'
                        || c == '。'
                        || c.is_whitespace()
                })
                .filter(|w| !w.is_empty() && w.chars().count() <= 4)
                .map(str::to_owned)
                .collect();
            match find("render").iter().find(|e| {
                let vt = e
                    .data
                    .get("visibleText")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                keywords.iter().any(|k| vt.contains(k.as_str()))
            }) {
                Some(e) => (
                    "satisfied",
                    vec![ev_ref(e.seq)],
                    "theme words on screen".into(),
                ),
                None => (
                    "failed",
                    vec![ev_ref(0)],
                    "theme words not on screen".into(),
                ),
            }
        }
        _ => (
            "not_observed",
            vec![],
            "nothing in the record settles this".into(),
        ),
    }
}
