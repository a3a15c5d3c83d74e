//! The review workbench's HTML: the page shell (its Content-Security-Policy: scripts and
//! styles from this daemon only, no inline script, no remote load), the login page, the queue
//! and a run's page. Every piece of text that came from a game, a model or a reviewer goes
//! through `seal_core::html::esc`; a run's evidence is the explain page's own content
//! (`explain::html::main`), never a second rendering of it.

use std::fmt::Write as _;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use seal_core::html::esc;
use seal_engine::stats_load::QueueEntry;

/// The workbench pages' Content-Security-Policy: the script and style sheets are files this
/// daemon serves (`/review/static/`, embedded in the binary); frames are `data:` images.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src data:; \
     connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// A page answer with the workbench's headers (never cached: it shows evidence).
pub fn html(status: StatusCode, body: String) -> Response {
    let mut resp = (status, body).into_response();
    let h = resp.headers_mut();
    for (k, v) in [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        // same-origin, not no-referrer: under no-referrer Chromium sends `Origin: null` on
        // the login form's POST, which the origin check must refuse.
        (header::REFERRER_POLICY, "same-origin"),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        h.insert(k, HeaderValue::from_static(v));
    }
    resp
}

/// 303 to `to` (a path of this daemon).
pub fn see_other(to: &str) -> Response {
    let mut resp = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp
}

/// The document around `body`; `csrf` is the session's token (for the script's POSTs).
fn shell(title: &str, csrf: Option<&str>, body: &str) -> String {
    let mut h = String::with_capacity(body.len() + 1024);
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    h.push_str("<meta name=\"referrer\" content=\"same-origin\">");
    if let Some(c) = csrf {
        let _ = write!(h, "<meta name=\"csrf-token\" content=\"{}\">", esc(c));
    }
    let _ = write!(h, "<title>{}</title>", esc(title));
    h.push_str("<link rel=\"stylesheet\" href=\"/review/static/explain.css\">");
    h.push_str("<link rel=\"stylesheet\" href=\"/review/static/workbench.css\">");
    h.push_str("<script src=\"/review/static/workbench.js\" defer></script>");
    h.push_str("</head><body>");
    h.push_str(body);
    h.push_str("</body></html>\n");
    h
}

/// The bar on top of every signed-in page.
fn top(reviewer: &str) -> String {
    format!(
        "<header class=\"wb-top\"><a href=\"/review/\" class=\"wb-home\">seal review workbench</a>\
         <span class=\"wb-who\">signed in as <strong>{}</strong></span>\
         <button type=\"button\" id=\"logout\">Log out</button></header>",
        esc(reviewer)
    )
}

/// The login page, with `error` said above the form.
pub fn login(status: StatusCode, error: Option<&str>) -> Response {
    let mut b = String::from("<main class=\"wb-login\"><h1>seal review workbench</h1>");
    if let Some(e) = error {
        let _ = write!(b, "<p class=\"wb-error\" id=\"login-error\">{}</p>", esc(e));
    }
    b.push_str(
        "<form method=\"post\" action=\"/review/login\"><label for=\"token\">Reviewer token</label>\
         <input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"current-password\" required autofocus>\
         <button type=\"submit\">Log in</button></form>\
         <p class=\"wb-hint\">Your token is one of <code>reviewers.tokens_env</code>; an operator gives it to you. \
         It opens the queue and the evidence; your reviews are signed by a key this browser holds.</p></main>",
    );
    html(status, shell("seal review: log in", None, &b))
}

/// The filters of the queue (`genre`, `obligation`), as given.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct Filters {
    pub genre: Option<String>,
    pub obligation: Option<String>,
}

impl Filters {
    pub fn keeps(&self, e: &QueueEntry) -> bool {
        let g = self.genre.as_deref().filter(|g| !g.is_empty());
        let o = self.obligation.as_deref().filter(|o| !o.is_empty());
        g.is_none_or(|g| e.genre == g) && o.is_none_or(|o| e.obligations.iter().any(|x| x == o))
    }

    /// `?genre=…&obligation=…` (empty when neither is set).
    pub fn query(&self) -> String {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in [("genre", &self.genre), ("obligation", &self.obligation)] {
            if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
                q.append_pair(k, v);
            }
        }
        let q = q.finish();
        if q.is_empty() {
            q
        } else {
            format!("?{q}")
        }
    }
}

fn select(name: &str, label: &str, options: &[String], chosen: Option<&str>) -> String {
    let mut s = format!("<label>{label} <select name=\"{name}\"><option value=\"\">any</option>");
    for o in options {
        let sel = if chosen == Some(o.as_str()) {
            " selected"
        } else {
            ""
        };
        let _ = write!(s, "<option value=\"{0}\"{sel}>{0}</option>", esc(o));
    }
    s.push_str("</select></label>");
    s
}

/// The queue: every decided inconclusive run without a trusted review, oldest first, those the
/// filters keep listed, with the count left.
pub fn queue(reviewer: &str, csrf: &str, all: &[QueueEntry], f: &Filters) -> Response {
    let shown: Vec<&QueueEntry> = all.iter().filter(|e| f.keeps(e)).collect();
    let mut genres: Vec<String> = all.iter().map(|e| e.genre.clone()).collect();
    genres.sort();
    genres.dedup();
    let mut obligations: Vec<String> = all.iter().flat_map(|e| e.obligations.clone()).collect();
    obligations.sort();
    obligations.dedup();
    let mut b = top(reviewer);
    b.push_str("<main class=\"wb-queue\"><h1>Adjudication queue</h1>");
    let _ = write!(
        b,
        "<p id=\"count\"><strong id=\"left\">{}</strong> run(s) left to review; <span id=\"shown\">{}</span> shown, oldest decision first.</p>",
        all.len(),
        shown.len()
    );
    b.push_str("<form method=\"get\" action=\"/review/\" class=\"wb-filters\">");
    b.push_str(&select("genre", "Genre", &genres, f.genre.as_deref()));
    b.push_str(&select(
        "obligation",
        "Obligation",
        &obligations,
        f.obligation.as_deref(),
    ));
    b.push_str("<button type=\"submit\">Filter</button></form>");
    b.push_str("<table id=\"queue\"><thead><tr><th>run</th><th>decided at</th><th>genre</th><th>obligations</th></tr></thead><tbody>");
    let q = f.query();
    for e in &shown {
        let _ = write!(
            b,
            "<tr><td><a class=\"run\" href=\"/review/runs/{0}{1}\"><code>{0}</code></a></td><td>{2}</td><td>{3}</td><td>{4}</td></tr>",
            esc(&e.row.run_id),
            esc(&q),
            esc(&e.row.decided_at),
            esc(&e.genre),
            e.obligations.iter().map(|o| format!("<code>{}</code>", esc(o))).collect::<Vec<_>>().join(" ")
        );
    }
    if shown.is_empty() {
        b.push_str("<tr><td colspan=\"4\" class=\"wb-empty\">Nothing left here.</td></tr>");
    }
    b.push_str("</tbody></table><p class=\"wb-hint\">Keys: <kbd>j</kbd>/<kbd>k</kbd> move, <kbd>Enter</kbd> opens.</p></main>");
    html(StatusCode::OK, shell("seal review: queue", Some(csrf), &b))
}

/// What the run page's decision form is about.
pub struct RunForm<'a> {
    pub run: &'a str,
    /// (id, required) of each obligation, in the run's order.
    pub obligations: Vec<(String, bool)>,
    pub tree_hash: &'a str,
    pub evidence_sha256: &'a str,
    pub seal_sha256: &'a str,
    /// `?genre=…` of the queue the reviewer came from (where "next" is taken from).
    pub back: String,
}

/// A run's page: the explain page's content beside the decision form and the key panel.
pub fn run(reviewer: &str, csrf: &str, form: &RunForm<'_>, explained: &str) -> Response {
    let mut b = top(reviewer);
    b.push_str("<div class=\"wb-layout\"><div class=\"wb-evidence\">");
    b.push_str(explained);
    b.push_str("</div><aside class=\"wb-panel\">");
    key_panel(&mut b);
    decision_form(&mut b, reviewer, form);
    b.push_str("</aside></div>");
    let title = format!("seal review: {}", form.run);
    html(StatusCode::OK, shell(&title, Some(csrf), &b))
}

fn key_panel(b: &mut String) {
    b.push_str(
        "<section id=\"key-panel\"><h2>Your signing key</h2>\
         <p id=\"key-state\">Looking for a key in this browser…</p>\
         <p class=\"wb-buttons\"><button type=\"button\" id=\"gen-key\">Generate a key</button> \
         <button type=\"button\" id=\"import-key\">Import a PKCS#8 key</button></p>\
         <textarea id=\"import-pem\" hidden placeholder=\"-----BEGIN PRIVATE KEY-----\" rows=\"4\"></textarea>\
         <div id=\"pub-box\" hidden><p>Key id <code id=\"key-id\"></code>. Give this public key to an operator for <code>reviewers.trusted</code>:</p>\
         <textarea id=\"pub-pem\" readonly rows=\"4\"></textarea></div></section>",
    );
}

fn decision_form(b: &mut String, reviewer: &str, f: &RunForm<'_>) {
    let _ = write!(
        b,
        "<form id=\"decide\" data-run=\"{}\" data-reviewer=\"{}\" data-shown=\"{}\" data-evidence=\"{}\" data-seal=\"{}\" data-back=\"{}\">\
         <h2>Your decision</h2><ol id=\"obligations\">",
        esc(f.run),
        esc(reviewer),
        esc(f.tree_hash),
        esc(f.evidence_sha256),
        esc(f.seal_sha256),
        esc(&f.back)
    );
    for (i, (id, required)) in f.obligations.iter().enumerate() {
        let _ = write!(
            b,
            "<li class=\"ob\" tabindex=\"0\" data-ob=\"{0}\"><code>{0}</code>{1}<div class=\"choices\">",
            esc(id),
            if *required { " <span class=\"req\">required</span>" } else { "" }
        );
        for (st, key) in [("satisfied", 's'), ("failed", 'f'), ("missing", 'm')] {
            let _ = write!(
                b,
                "<label class=\"c-{st}\"><input type=\"radio\" name=\"ob-{i}\" value=\"{st}\"> {st} <kbd>{key}</kbd></label>"
            );
        }
        b.push_str("</div></li>");
    }
    b.push_str(
        "</ol><label for=\"note\">Note</label><textarea id=\"note\" maxlength=\"8192\" rows=\"3\"></textarea>\
         <p class=\"wb-buttons\"><button type=\"submit\" id=\"submit\">Sign and submit</button> <kbd>Ctrl</kbd>+<kbd>Enter</kbd></p>\
         <p id=\"status\" role=\"status\" aria-live=\"polite\"></p>\
         <details id=\"shortcuts\"><summary>Keyboard <kbd>?</kbd></summary><dl>\
         <dt><kbd>j</kbd> <kbd>k</kbd></dt><dd>next / previous obligation</dd>\
         <dt><kbd>s</kbd> <kbd>f</kbd> <kbd>m</kbd></dt><dd>satisfied / failed / missing, then the next</dd>\
         <dt><kbd>n</kbd></dt><dd>write the note (<kbd>Esc</kbd> leaves it)</dd>\
         <dt><kbd>Ctrl</kbd>+<kbd>Enter</kbd></dt><dd>sign and submit, then the next run</dd></dl></details></form>",
    );
}

/// An error as a page (a run that does not verify, no such run, the store down).
pub fn error(status: StatusCode, reviewer: &str, message: &str) -> Response {
    let mut b = top(reviewer);
    let _ = write!(
        b,
        "<main class=\"wb-queue\"><h1>{}</h1><p class=\"wb-error\">{}</p><p><a href=\"/review/\">Back to the queue</a></p></main>",
        status.as_u16(),
        esc(message)
    );
    html(status, shell("seal review: error", None, &b))
}

/// The workbench when no reviewer token is configured.
pub fn closed() -> Response {
    let b = "<main class=\"wb-login\"><h1>The review workbench is closed</h1>\
             <p>No reviewer token is configured (<code>reviewers.tokens_env</code>, \
             <code>SEAL_REVIEWER_TOKENS</code>): see docs/DEPLOYING.md.</p></main>";
    html(StatusCode::NOT_FOUND, shell("seal review: closed", None, b))
}
