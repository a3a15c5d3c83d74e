//! The page of `seal explain --html`: one self-contained file a reviewer opens offline or
//! attaches to a ticket. Pure: the same tree and documents give the same bytes.
//!
//! Game text (events, brief, obligation descriptions) and judge rationales are hostile: every
//! piece of text goes through [`esc`], in HTML and in the inline SVG alike, and the page
//! carries a Content-Security-Policy that allows no script and no remote load (images only as
//! `data:` URIs of the four frame types, styles only inline).

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;

use super::tree::{
    obligation_node_id, review_node_id, review_status, roll_prefix, short, RollDocs, RunDocs,
};
use crate::canonical::Hash;
use crate::doc::*;
pub use crate::html::{esc, CSP};
use crate::ids::Slot;
use crate::review::TrustedReview;
use crate::vocab::join;

/// Largest frame embedded as a thumbnail (bytes); larger frames are shown by hash.
pub const MAX_FRAME_BYTES: u64 = 256 * 1024;
/// Most frame bytes embedded in one page.
pub const MAX_PAGE_FRAME_BYTES: u64 = 4 * 1024 * 1024;
/// Longest piece of game or judge text quoted in one place (characters).
const MAX_QUOTE: usize = 600;
/// Most events quoted per roll.
const MAX_EVENTS: usize = 200;

/// A frame as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameImage {
    Embedded { media_type: String, bytes: Vec<u8> },
    NotEmbedded { bytes: u64 },
}

/// Whether frames of this media type may be embedded (`data:` URIs of raster images only).
pub fn embeddable(media_type: &str) -> bool {
    matches!(
        media_type,
        "image/png" | "image/jpeg" | "image/webp" | "image/gif"
    )
}

/// Everything the page shows.
pub struct Page<'a> {
    pub tree: &'a DecisionTree,
    pub tree_hash: &'a Hash,
    pub run: &'a RunDocs,
    pub brief: &'a str,
    pub frames: &'a BTreeMap<Hash, FrameImage>,
    pub verify_command: &'a str,
    /// The run's trusted reviews (verified under the trusted reviewer keys, logged), in order.
    pub reviews: &'a [TrustedReview],
}

/// At most `max` characters of `s`, with an ellipsis when cut.
fn cut(s: &str, max: usize) -> String {
    crate::contracts::shorten(s, max)
}

/// The `seal verify` command a page shows to re-prove `run`: a store on the local disk
/// (`file://`) as `STORE_URL`, each key by its file name alone, so that a page handed on names
/// no path of the machine it was made on.
pub fn verify_command(
    run: &str,
    store_url: &str,
    trust: &[String],
    reviewers: &[String],
) -> String {
    let store = if store_url.starts_with("file:") {
        "STORE_URL"
    } else {
        store_url
    };
    let base = |p: &String| p.rsplit('/').next().unwrap_or(p).to_string();
    let mut cmd = format!("seal verify {run} --store {store}");
    for t in trust {
        cmd.push_str(&format!(" --trust {}", base(t)));
    }
    for r in reviewers {
        cmd.push_str(&format!(" --trust-reviewer {}", base(r)));
    }
    cmd
}

/// Escaped and cut.
fn q(s: &str, max: usize) -> String {
    esc(&cut(s, max))
}

/// Renders the page: [`STYLE`] and [`main`] in a document of their own.
pub fn render(p: &Page<'_>) -> String {
    let mut h = String::with_capacity(64 * 1024);
    head(&mut h, p);
    h.push_str(&main(p));
    h.push_str("</body></html>\n");
    h
}

/// The page's content, `<main>…</main>`: what the review workbench shows beside its decision
/// form (one renderer for both, so the workbench shows exactly what `seal explain` shows).
pub fn main(p: &Page<'_>) -> String {
    let mut h = String::with_capacity(64 * 1024);
    h.push_str("<main>");
    summary(&mut h, p);
    h.push_str("<section id=\"tree\"><h2>Decision tree</h2>");
    h.push_str("<p class=\"legend\"><span class=\"k pass\">&#10003; passed, satisfied</span> <span class=\"k guard\">! disputed, inconclusive, held by a guard</span> <span class=\"k blocked\">&#10005; failed, contradicted, refused</span> <span class=\"k neutral\">&#183; not taken</span> <span class=\"k human\">a person&#39;s review</span> The thick line is the path the run took; every box links to its evidence below.</p>");
    h.push_str("<div class=\"tree-wrap\">");
    h.push_str(&super::svg::render(p.tree));
    h.push_str("</div></section>");
    run_section(&mut h, p);
    for r in &p.run.rolls {
        roll_section(&mut h, p, r);
    }
    if p.run.rolls.len() < 2 {
        h.push_str("<section id=\"r2\"><h2>roll-2</h2><p>");
        h.push_str(&q(
            &p.tree
                .node("r2-start")
                .map(|n| n.detail.clone())
                .unwrap_or_else(|| "roll-2 was not played".into()),
            MAX_QUOTE,
        ));
        h.push_str("</p></section>");
    }
    decision_section(&mut h, p);
    reviews_section(&mut h, p);
    seal_section(&mut h, p);
    let review = crate::stats::human::workbench_link(&p.run.evidence.run_id);
    h.push_str(&format!(
        "<footer>Made by <code>seal explain</code> from the verified, stored objects of this run. Game text and judge rationales are quoted as data. On the daemon, people review this run at <a href=\"{0}\">{0}</a>.</footer></main>",
        esc(&review)
    ));
    h
}

fn head(h: &mut String, p: &Page<'_>) {
    let ev = &p.run.evidence;
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    h.push_str(&format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
        esc(CSP)
    ));
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    h.push_str("<meta name=\"referrer\" content=\"no-referrer\">");
    h.push_str(&format!("<title>seal explain {}</title>", esc(&ev.run_id)));
    h.push_str("<style>");
    h.push_str(STYLE);
    h.push_str("</style></head><body>");
}

fn badge(outcome: Outcome) -> String {
    format!(
        "<span class=\"badge {}\">{}</span>",
        outcome.as_str(),
        outcome.as_str()
    )
}

fn summary(h: &mut String, p: &Page<'_>) {
    let ev = &p.run.evidence;
    let o = &p.tree.observed;
    h.push_str(&format!(
        "<header id=\"top\"><h1>Why did run <code>{}</code> end {}?</h1><dl class=\"facts\">",
        esc(&ev.run_id),
        badge(o.outcome)
    ));
    let rolls: Vec<String> = o
        .roll_outcomes
        .iter()
        .map(|r| format!("{} {}", r.roll_id, r.outcome))
        .collect();
    let rows = [
        ("Decision", o.decision_action.as_str().to_string()),
        ("Reasons", join(&o.reasons, ", ")),
        (
            "Source roll",
            o.source_roll_id
                .map(|r| r.to_string())
                .unwrap_or_else(|| "none".into()),
        ),
        ("Rolls", rolls.join(", ")),
        ("Accepted", if o.accepted { "yes" } else { "no" }.into()),
        (
            "Postguard",
            if o.postguard_passed {
                "every check holds"
            } else {
                "a check FAILED"
            }
            .into(),
        ),
        (
            "Modes",
            format!(
                "acceptance {}, evidence {}",
                o.acceptance_mode.as_str(),
                evidence_mode(o.evidence_mode)
            ),
        ),
        ("Run cost", format!("{} RMB", ev.cost_rmb)),
    ];
    for (k, v) in rows {
        h.push_str(&format!("<dt>{k}</dt><dd>{}</dd>", q(&v, MAX_QUOTE)));
    }
    h.push_str("</dl></header>");
}

fn evidence_mode(m: EvidenceMode) -> &'static str {
    match m {
        EvidenceMode::Native => "native",
        EvidenceMode::LegacyAdapted => "legacy-adapted",
    }
}

fn run_section(h: &mut String, p: &Page<'_>) {
    let ev = &p.run.evidence;
    h.push_str("<section id=\"run\"><h2>The run</h2><dl class=\"facts\">");
    let genre = serde_json::to_value(ev.genre)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    for (k, v) in [
        ("Run", ev.run_id.clone()),
        ("Game", format!("{} ({genre})", ev.game_id)),
        ("Template", ev.template_route.clone()),
        ("Artifact sha256", ev.artifact_hash.to_string()),
        ("Brief sha256", ev.brief_hash.to_string()),
        ("Repair round", ev.repair.round.to_string()),
    ] {
        h.push_str(&format!("<dt>{k}</dt><dd>{}</dd>", q(&v, MAX_QUOTE)));
    }
    h.push_str("</dl><h3>Brief</h3><pre class=\"quote\">");
    h.push_str(&q(p.brief, 4000));
    h.push_str("</pre><h3>Obligations</h3><div class=\"scroll\"><table><thead><tr><th>id</th><th>required</th><th>description</th></tr></thead><tbody>");
    for o in &ev.proof_obligations {
        h.push_str(&format!(
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
            q(&o.id, 200),
            if o.required { "required" } else { "optional" },
            q(&o.description, MAX_QUOTE)
        ));
    }
    h.push_str("</tbody></table></div></section>");
}

fn roll_section(h: &mut String, p: &Page<'_>, r: &RollDocs) {
    let pre = roll_prefix(r.roll.roll_id);
    h.push_str(&format!(
        "<section id=\"{pre}\" class=\"roll\"><h2>{}: {}</h2>",
        r.roll.roll_id,
        badge(r.roll.roll_outcome)
    ));
    floor_and_guard(h, r);
    judges(h, r);
    independence(h, r);
    obligations(h, p, r);
    events(h, r);
    frames(h, p, r);
    roll_outcome(h, p, r);
    h.push_str("</section>");
}

fn ok(b: bool) -> &'static str {
    if b {
        "<span class=\"ok\">ok</span>"
    } else {
        "<span class=\"no\">FAILED</span>"
    }
}

fn floor_and_guard(h: &mut String, r: &RollDocs) {
    let pre = roll_prefix(r.roll.roll_id);
    let f = &r.proof.floor;
    h.push_str(&format!(
        "<div id=\"{pre}-floor\"><h3>Floor</h3><p>The deterministic floor {}.</p>",
        if f.passed { "passed" } else { "FAILED" }
    ));
    if !f.checks.is_empty() {
        h.push_str("<table><tbody>");
        for c in &f.checks {
            let s = match c.status {
                FloorStatus::Pass => ok(true),
                FloorStatus::Fail => ok(false),
                FloorStatus::Skip => "skip",
            };
            h.push_str(&format!(
                "<tr><td><code>{}</code></td><td>{s}</td><td>{}</td></tr>",
                q(&c.id, 100),
                q(&c.detail, MAX_QUOTE)
            ));
        }
        h.push_str("</tbody></table>");
    }
    h.push_str(&format!(
        "</div><div id=\"{pre}-guard\"><h3>Roll guard: {}</h3><table><tbody>",
        match r.roll.roll_guard.status {
            GuardStatus::Pass => "pass",
            GuardStatus::Blocked => "BLOCKED (no judge was called)",
        }
    ));
    for c in &r.roll.roll_guard.checks {
        h.push_str(&format!(
            "<tr><td><code>{}</code></td><td>{}</td><td class=\"wrap\">{}</td></tr>",
            q(c.id.as_str(), 100),
            ok(c.ok),
            q(&c.detail, MAX_QUOTE)
        ));
    }
    let pkg = &r.package;
    h.push_str(&format!(
        "</tbody></table></div><div id=\"{pre}-blinding\"><h3>Blinding</h3><p>Both judges got one JudgePackage/1, sha256 <code class=\"hash\">{}</code>: {} obligations, {} actions, {} events, {} frames (image manifest <code class=\"hash\">{}</code>). Run, game and session ids, seeds, cost, models and earlier outcomes are not in it.</p></div>",
        r.roll.judge_package_hash,
        pkg.obligations.len(),
        pkg.actions.len(),
        pkg.events.len(),
        pkg.frames.len(),
        pkg.image_manifest_hash
    ));
}

fn judges(h: &mut String, r: &RollDocs) {
    let pre = roll_prefix(r.roll.roll_id);
    h.push_str("<div class=\"judges\">");
    for slot in Slot::BOTH {
        let s = r.slot(slot);
        let m = s.final_meta();
        h.push_str(&format!(
            "<div id=\"{pre}-judge-{}\" class=\"judge\"><h3>Judge {}</h3><p>",
            slot.as_str(),
            slot.upper()
        ));
        if let Some(m) = m {
            h.push_str(&format!(
                "Model <code>{}</code> (answered <code>{}</code>), prompt <code>{}@{}</code>, session <code>{}</code>, host <code>{}</code>.",
                q(&m.model_requested, 100),
                q(m.model_answered.as_deref().unwrap_or("-"), 100),
                q(&m.prompt_artifact.id, 100),
                q(&m.prompt_artifact.version, 40),
                q(&m.session_id, 100),
                q(&m.endpoint_host, 100)
            ));
        }
        match &s.result.slot_failed {
            Some(f) => h.push_str(&format!(
                " <span class=\"no\">Failed</span>: <code>{}</code> after {} attempt(s).",
                f.error_class, f.attempts
            )),
            None => h.push_str(" Answered."),
        }
        h.push_str("</p><table><thead><tr><th>attempt</th><th>HTTP</th><th>error</th><th>latency</th><th>cost</th><th>accepted</th></tr></thead><tbody>");
        for m in &s.metas {
            h.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} ms</td><td>{} RMB</td><td>{}</td></tr>",
                m.attempt,
                m.http_status.map(|s| s.to_string()).unwrap_or_else(|| "-".into()),
                m.error_class.map(|c| c.as_str()).unwrap_or("-"),
                m.latency_ms,
                m.cost_rmb,
                if m.accepted { "yes" } else { "no" }
            ));
        }
        h.push_str("</tbody></table></div>");
    }
    h.push_str("</div>");
}

fn independence(h: &mut String, r: &RollDocs) {
    let pre = roll_prefix(r.roll.roll_id);
    let ic = &r.consensus.independence_checks;
    h.push_str(&format!(
        "<div id=\"{pre}-independence\"><h3>Independence</h3><table><tbody>"
    ));
    for (name, holds) in ic.required() {
        h.push_str(&format!(
            "<tr><td><code>{name}</code></td><td>{}</td><td>required</td></tr>",
            ok(holds)
        ));
    }
    h.push_str(&format!(
        "<tr><td><code>sameModel</code></td><td>{}</td><td>recorded only</td></tr></tbody></table></div>",
        ic.same_model
    ));
}

/// Cited ranges as links to the quoted events (`events 3–5`).
fn cites<F: AsRef<str>>(pre: &str, refs: &[SequenceRef], frames: &[F]) -> String {
    let mut parts: Vec<String> = refs
        .iter()
        .map(|r| {
            let range = if r.from == r.to {
                r.from.to_string()
            } else {
                format!("{}–{}", r.from, r.to)
            };
            match r.stream {
                Stream::Events => format!("<a href=\"#{pre}-ev-{}\">events {range}</a>", r.from),
                Stream::Actions => format!("actions {range}"),
            }
        })
        .collect();
    parts.extend(frames.iter().map(|f| {
        let f = f.as_ref();
        let s = cut(f, 12);
        format!(
            "<a href=\"#{pre}-fr-{}\">frame {}</a>",
            esc(&anchor_part(f)),
            esc(&s)
        )
    }));
    if parts.is_empty() {
        String::new()
    } else {
        format!("<div class=\"cites\">cites {}</div>", parts.join(", "))
    }
}

/// The part of an anchor made from a frame hash (12 lowercase hex digits, else `x`).
fn anchor_part(hash: &str) -> String {
    let s: String = hash
        .chars()
        .take(12)
        .filter(|c| c.is_ascii_hexdigit())
        .flat_map(char::to_lowercase)
        .collect();
    if s.is_empty() {
        "x".into()
    } else {
        s
    }
}

fn obligations(h: &mut String, p: &Page<'_>, r: &RollDocs) {
    let pre = roll_prefix(r.roll.roll_id);
    h.push_str(&format!(
        "<div id=\"{pre}-obligations\"><h3>Obligations × judges</h3><div class=\"scroll\"><table class=\"obs\"><thead><tr><th>obligation</th><th>judge A</th><th>judge B</th><th>check</th><th>consensus</th></tr></thead><tbody>"
    ));
    for (i, o) in r.consensus.obligation_results.iter().enumerate() {
        let id = obligation_node_id(r.roll.roll_id, i, &o.id);
        let po = r.package.obligations.iter().find(|x| x.id == o.id);
        h.push_str(&format!(
            "<tr id=\"{id}\"><td><code>{}</code> <small>{}</small><div class=\"desc\">{}</div></td>",
            q(&o.id, 200),
            if r.required(&o.id) { "required" } else { "optional" },
            q(po.map(|x| x.description.as_str()).unwrap_or(""), MAX_QUOTE)
        ));
        for slot in Slot::BOTH {
            judge_cell(h, pre, r, slot, &o.id);
        }
        let check = p
            .tree
            .node(&id)
            .and_then(|n| n.detail.split_once("; PlaySpec check "))
            .map(|(_, c)| c.to_string());
        h.push_str(&format!(
            "<td>{}</td><td><span class=\"st {}\">{}</span>{}</td></tr>",
            check
                .map(|c| q(&c, MAX_QUOTE))
                .unwrap_or_else(|| "—".into()),
            o.status.as_str(),
            o.status.as_str(),
            cites(pre, &o.sequence_refs, &o.evidence_refs)
        ));
    }
    h.push_str("</tbody></table></div></div>");
    let c = &r.consensus.conflicts;
    h.push_str(&format!("<div id=\"{pre}-conflicts\"><h3>Conflicts</h3>"));
    if c.is_empty() {
        h.push_str("<p>None: the judges and the checks agree on every obligation.</p>");
    } else {
        h.push_str("<ul>");
        for line in c {
            h.push_str(&format!("<li><code>{}</code></li>", q(line, MAX_QUOTE)));
        }
        h.push_str("</ul>");
    }
    h.push_str("</div>");
}

fn judge_cell(h: &mut String, pre: &str, r: &RollDocs, slot: Slot, id: &str) {
    match r.slot(slot).result.obligations.iter().find(|x| x.id == id) {
        None => h.push_str("<td>missing</td>"),
        Some(o) => h.push_str(&format!(
            "<td><span class=\"st {}\">{}</span><div class=\"rationale\">{}</div>{}</td>",
            o.status.as_str(),
            o.status.as_str(),
            q(&o.rationale, 4000),
            cites(pre, &o.sequence_refs, &o.frame_hashes)
        )),
    }
}

/// The events any judge or the consensus cites, quoted by seq.
fn events(h: &mut String, r: &RollDocs) {
    let pre = roll_prefix(r.roll.roll_id);
    let mut cited: BTreeSet<u64> = BTreeSet::new();
    let mut add = |refs: &[SequenceRef]| {
        for s in refs.iter().filter(|s| s.stream == Stream::Events) {
            for seq in s.from..=s.to.min(s.from.saturating_add(MAX_EVENTS as u64)) {
                cited.insert(seq);
            }
        }
    };
    for o in &r.consensus.obligation_results {
        add(&o.sequence_refs);
    }
    for s in &r.slots {
        for o in &s.result.obligations {
            add(&o.sequence_refs);
        }
    }
    let starts: BTreeSet<u64> = r
        .consensus
        .obligation_results
        .iter()
        .flat_map(|o| o.sequence_refs.iter())
        .chain(r.slots.iter().flat_map(|s| {
            s.result
                .obligations
                .iter()
                .flat_map(|o| o.sequence_refs.iter())
        }))
        .filter(|s| s.stream == Stream::Events)
        .map(|s| s.from)
        .collect();
    h.push_str(&format!(
        "<div id=\"{pre}-events\"><h3>Cited events</h3><div class=\"scroll\"><table><thead><tr><th>seq</th><th>event</th><th>t</th><th>data</th></tr></thead><tbody>"
    ));
    let mut shown = BTreeSet::new();
    for e in r
        .package
        .events
        .iter()
        .filter(|e| cited.contains(&e.seq))
        .take(MAX_EVENTS)
    {
        shown.insert(e.seq);
        let data = serde_json::to_string(&e.data).unwrap_or_default();
        h.push_str(&format!(
            "<tr id=\"{pre}-ev-{}\"><td>{}</td><td><code>{}</code></td><td>{} ms</td><td><code class=\"data\">{}</code></td></tr>",
            e.seq,
            e.seq,
            q(&e.name, 200),
            e.t_ms,
            q(&data, MAX_QUOTE)
        ));
    }
    // Every cited start has an anchor, even when the event is not in the package (an
    // unsupported citation) or beyond the quote limit.
    for seq in starts.difference(&shown) {
        h.push_str(&format!(
            "<tr id=\"{pre}-ev-{seq}\"><td>{seq}</td><td colspan=\"3\">not quoted (not in the package, or beyond {MAX_EVENTS} events)</td></tr>"
        ));
    }
    h.push_str("</tbody></table></div></div>");
}

fn frames(h: &mut String, p: &Page<'_>, r: &RollDocs) {
    let pre = roll_prefix(r.roll.roll_id);
    h.push_str(&format!(
        "<div id=\"{pre}-frames\"><h3>Frames</h3><div class=\"frames\">"
    ));
    let mut seen = BTreeSet::new();
    for f in &r.proof.frames {
        let a = anchor_part(f.hash.as_str());
        if !seen.insert(a.clone()) {
            continue;
        }
        h.push_str(&format!("<figure id=\"{pre}-fr-{a}\">"));
        match p.frames.get(&f.hash) {
            Some(FrameImage::Embedded { media_type, bytes }) if embeddable(media_type) => {
                h.push_str(&format!(
                    "<img src=\"data:{media_type};base64,{}\" alt=\"frame {} at {} ms\">",
                    base64::engine::general_purpose::STANDARD.encode(bytes),
                    short(&f.hash),
                    f.at_ms
                ));
            }
            Some(FrameImage::NotEmbedded { bytes }) => h.push_str(&format!(
                "<div class=\"noimg\">{bytes} bytes: not embedded</div>"
            )),
            _ => h.push_str("<div class=\"noimg\">not embedded</div>"),
        }
        h.push_str(&format!(
            "<figcaption>{} ms<br><code>{}</code></figcaption></figure>",
            f.at_ms,
            short(&f.hash)
        ));
    }
    // Anchors for cited frames that are not in this roll's proof package.
    let cited: BTreeSet<String> = r
        .consensus
        .obligation_results
        .iter()
        .flat_map(|o| o.evidence_refs.iter().map(Hash::as_str))
        .chain(r.slots.iter().flat_map(|s| {
            s.result
                .obligations
                .iter()
                .flat_map(|o| o.frame_hashes.iter().map(String::as_str))
        }))
        .map(anchor_part)
        .collect();
    for a in cited.difference(&seen) {
        h.push_str(&format!(
            "<figure id=\"{pre}-fr-{a}\"><div class=\"noimg\">cited, not in the package</div></figure>"
        ));
    }
    h.push_str("</div></div>");
}

fn roll_outcome(h: &mut String, p: &Page<'_>, r: &RollDocs) {
    let pre = roll_prefix(r.roll.roll_id);
    let id = format!("{pre}-outcome");
    let detail = p
        .tree
        .node(&id)
        .map(|n| n.detail.clone())
        .unwrap_or_default();
    let c = &r.reservation;
    let judges: f64 = r
        .slots
        .iter()
        .flat_map(|s| s.metas.iter())
        .map(|m| m.cost_rmb)
        .sum();
    h.push_str(&format!(
        "<div id=\"{id}\"><h3>{}: {}</h3><p>{}</p><p>Cost: actor {} RMB, judges {} RMB, roll {} RMB. Reserved before dispatch {} RMB of a {} RMB budget ({} spent before; within budget: {}).</p></div>",
        r.roll.roll_id,
        badge(r.roll.roll_outcome),
        q(&detail, 2000),
        r.proof.actor_cost_rmb,
        micro_to_rmb(rmb_to_micro(judges)),
        r.roll.cost_rmb,
        c.reserved_rmb,
        c.budget_rmb,
        c.spent_before_rmb,
        if c.within_budget { "yes" } else { "no" }
    ));
}

fn decision_section(h: &mut String, p: &Page<'_>) {
    let ev = &p.run.evidence;
    let node = |id: &str| {
        p.tree
            .node(id)
            .map(|n| n.detail.clone())
            .unwrap_or_default()
    };
    h.push_str(&format!(
        "<section id=\"merge\"><h2>Merge</h2><p>{}</p></section>",
        q(&node("merge"), MAX_QUOTE)
    ));
    h.push_str("<section id=\"postguard\"><h2>finalPostguard</h2><table><tbody>");
    if let Some(pg) = &ev.final_postguard {
        for c in &pg.checks {
            h.push_str(&format!(
                "<tr><td><code>{}</code></td><td>{}</td><td class=\"wrap\">{}</td></tr>",
                q(c.id.as_str(), 100),
                ok(c.ok),
                q(&c.detail, MAX_QUOTE)
            ));
        }
    }
    h.push_str("</tbody></table></section>");
    h.push_str(&format!(
        "<section id=\"decision\"><h2>Decision</h2><p>{}</p><div id=\"outcome\"><p>Outcome {} — action <b>{}</b>.</p></div></section>",
        q(&node("decision"), MAX_QUOTE),
        badge(p.tree.observed.outcome),
        p.tree.observed.decision_action.as_str()
    ));
}

/// The trusted reviews, each with its reviewer, time, key, per-obligation decisions and note.
/// Names and notes are the reviewer's text: escaped like game text.
fn reviews_section(h: &mut String, p: &Page<'_>) {
    if p.reviews.is_empty() {
        return;
    }
    h.push_str("<section id=\"reviews\"><h2>Human reviews</h2><p>Signed by each reviewer's own key and logged; they never change the sealed outcome above, which stays the decision of record.</p>");
    for r in p.reviews {
        let pr = &r.predicate;
        let status = review_status(pr);
        h.push_str(&format!(
            "<div id=\"{}\" class=\"review {}\"><h3>Review {} by <span class=\"reviewer\">{}</span></h3><dl class=\"facts\">",
            review_node_id(r.index),
            status.as_str(),
            r.index,
            q(&pr.reviewer, 200)
        ));
        for (k, v) in [
            ("Reviewed at", pr.reviewed_at.clone()),
            ("Reviewer key", r.key_id.clone()),
            ("Review sha256", r.sha256.to_string()),
            ("Shown tree sha256", pr.shown_sha256.clone()),
        ] {
            h.push_str(&format!(
                "<dt>{k}</dt><dd><code class=\"hash\">{}</code></dd>",
                q(&v, 200)
            ));
        }
        h.push_str("</dl><table class=\"decisions\"><thead><tr><th>obligation</th><th>the reviewer's decision</th></tr></thead><tbody>");
        for d in &pr.decisions {
            h.push_str(&format!(
                "<tr><td><code>{}</code></td><td><span class=\"st {}\">{}</span></td></tr>",
                q(&d.obligation_id, 200),
                d.status.as_str(),
                d.status.as_str()
            ));
        }
        h.push_str("</tbody></table>");
        if let Some(note) = pr.note.as_deref().filter(|n| !n.is_empty()) {
            h.push_str("<h4>Note</h4><pre class=\"quote note\">");
            h.push_str(&q(note, crate::review::MAX_NOTE));
            h.push_str("</pre>");
        }
        h.push_str("</div>");
    }
    h.push_str("</section>");
}

fn seal_section(h: &mut String, p: &Page<'_>) {
    let ev = &p.run.evidence;
    let b = &p.tree.evidence_bindings;
    h.push_str("<section id=\"seal\"><h2>Seal</h2><dl class=\"facts\">");
    let mut rows = vec![
        ("Key id".to_string(), b.seal_key_id.clone()),
        ("evidence.json sha256".into(), b.evidence_sha256.to_string()),
        ("seal.dsse.json sha256".into(), b.seal_sha256.to_string()),
        (
            "judging.json sha256".into(),
            b.judging_snapshot_sha256.to_string(),
        ),
        ("This tree's sha256".into(), p.tree_hash.to_string()),
    ];
    for r in &b.rolls {
        rows.push((
            format!("{} proof package", r.roll_id),
            r.proof_package_sha256.to_string(),
        ));
        rows.push((
            format!("{} judge package", r.roll_id),
            r.judge_package_sha256.to_string(),
        ));
        rows.push((
            format!("{} judge A result", r.roll_id),
            r.judge_a_result_sha256.to_string(),
        ));
        rows.push((
            format!("{} judge B result", r.roll_id),
            r.judge_b_result_sha256.to_string(),
        ));
        rows.push((
            format!("{} consensus", r.roll_id),
            r.consensus_sha256.to_string(),
        ));
    }
    for (k, v) in rows {
        h.push_str(&format!(
            "<dt>{}</dt><dd><code class=\"hash\">{}</code></dd>",
            esc(&k),
            q(&v, 200)
        ));
    }
    h.push_str(&format!(
        "</dl><p>Decided at {}. Re-prove this run with the public key alone, from a copy of the store (its URL in place of <code>STORE_URL</code>) and the public key files named:</p><pre class=\"cmd\"><code>{}</code></pre></section>",
        q(ev.final_postguard.as_ref().map(|p| p.decided_at.as_str()).unwrap_or("-"), 64),
        q(p.verify_command, 2000)
    ));
}

/// The page's style sheet (also served by the review workbench as a file of its own).
pub const STYLE: &str = r#"
:root{--pass:#1a7f37;--guard:#9a6700;--blocked:#cf222e;--neutral:#8c959f;--fg:#1f2328;--mute:#59636e;--line:#d1d9e0}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Noto Sans CJK SC","Noto Sans CJK JP",sans-serif;color:var(--fg);background:#fff}
main{max-width:1180px;margin:0 auto;padding:12px 16px 40px}
h1{font-size:1.45rem;margin:.3rem 0 .6rem;overflow-wrap:anywhere}
h2{font-size:1.2rem;margin:1.6rem 0 .5rem;padding-top:.4rem;border-top:2px solid var(--line)}
h3{font-size:1rem;margin:1rem 0 .35rem}
code{font:13px/1.35 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}
.hash{font-size:12px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.15rem .9rem;margin:.4rem 0}
dl.facts dt{color:var(--mute)}
dl.facts dd{margin:0;overflow-wrap:anywhere}
.badge{display:inline-block;padding:.05rem .55rem;border-radius:1rem;color:#fff;font-weight:600;font-size:.9em;vertical-align:.1em}
.badge.pass{background:var(--pass)}.badge.fail{background:var(--blocked)}.badge.inconclusive{background:var(--guard)}.badge.infra_error{background:#6e40c9}
.legend{color:var(--mute);font-size:.9rem}
.k{display:inline-block;padding:0 .4rem;border:2px solid;border-radius:4px;font-size:.8rem}
.k.pass{border-color:var(--pass);background:#dafbe1}.k.guard{border-color:var(--guard);background:#fff8c5}.k.blocked{border-color:var(--blocked);background:#ffebe9}.k.neutral{border:1px dashed var(--neutral);color:var(--mute)}
.tree-wrap{overflow-x:auto;border:1px solid var(--line);border-radius:6px;background:#fbfcfd}
.tree-wrap svg{display:block;width:100%;min-width:760px;height:auto}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans CJK SC",sans-serif}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;margin:.3rem 0;font-size:.92rem}
th,td{border:1px solid var(--line);padding:.3rem .45rem;text-align:left;vertical-align:top}
th{background:#f6f8fa;font-weight:600}
td.wrap,td{overflow-wrap:anywhere}
table.obs td{min-width:9rem}
.desc,.cites{color:var(--mute);font-size:.85rem;margin-top:.2rem}
.rationale{margin-top:.2rem;white-space:pre-wrap;overflow-wrap:anywhere}
.st{font-weight:600}.st.satisfied{color:var(--pass)}.st.failed,.st.contradicted{color:var(--blocked)}.st.missing,.st.disputed{color:var(--guard)}
.ok{color:var(--pass);font-weight:600;white-space:nowrap}.no{color:var(--blocked);font-weight:600;white-space:nowrap}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f8fa;border:1px solid var(--line);border-radius:6px;padding:.5rem .7rem;max-height:18rem;overflow:auto}
pre.cmd{max-height:none}
.judges{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:0 1rem}
.frames{display:flex;flex-wrap:wrap;gap:.5rem}
figure{margin:0;width:132px;font-size:.75rem;color:var(--mute)}
figure img{display:block;width:132px;height:auto;border:1px solid var(--line);border-radius:4px;background:#fff}
.noimg{width:132px;height:74px;border:1px dashed var(--line);display:flex;align-items:center;justify-content:center;text-align:center}
code.data{font-size:12px}
footer{margin-top:2rem;color:var(--mute);font-size:.85rem}
:target{outline:3px solid #0969da;outline-offset:2px}
.edge path{fill:none}
.edge.alt path{stroke:#afb8c1;stroke-width:1.4;stroke-dasharray:5 4}
.edge.sel path{stroke:#0969da;stroke-width:3.2}
.lbl{font-size:11px;fill:#59636e;paint-order:stroke;stroke:#fbfcfd;stroke-width:4px;stroke-linejoin:round}
.edge.sel .lbl{fill:#0a3069;font-weight:600}
.node .box{fill:#fff;stroke:#8c959f;stroke-width:1.2}
.node.off .box{stroke-dasharray:4 3;fill:#fafbfc}
.node.off text{fill:#8c959f}
.node.on .box{stroke-width:2.6}
.node.on.pass .box{fill:#dafbe1;stroke:#1a7f37}
.node.on.guard .box{fill:#fff8c5;stroke:#9a6700}
.node.on.blocked .box{fill:#ffebe9;stroke:#cf222e}
.node.on.neutral .box{fill:#f6f8fa;stroke:#8c959f}
.node .t1{font-size:12px;font-weight:600;fill:#1f2328}
.node .t2{font-size:10.5px;fill:#59636e}
.node .glyph{font-size:14px;font-weight:700}
.node.on.pass .glyph{fill:#1a7f37}.node.on.guard .glyph{fill:#9a6700}.node.on.blocked .glyph{fill:#cf222e}
.node.human .box{stroke:#6e40c9;stroke-width:2.6}
.node:hover .box{stroke:#0969da}
.k.human{border-color:#6e40c9;background:#fbefff}
@media (max-width:640px){body{font-size:14px}main{padding:8px 10px 30px}dl.facts{grid-template-columns:1fr}dl.facts dt{margin-top:.3rem}}
@media print{body{font-size:11px}main{max-width:none;padding:0}.tree-wrap{overflow:visible;border:none}.tree-wrap svg{min-width:0}pre{max-height:none;overflow:visible}a{color:inherit;text-decoration:none}h2{break-after:avoid}tr,figure{break-inside:avoid}section#tree{break-after:page}}
"#;
