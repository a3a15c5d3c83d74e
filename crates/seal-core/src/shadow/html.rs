//! The page of `seal shadow-report --html`: one self-contained file, no script, with the
//! Content-Security-Policy of `seal explain`'s and `seal stats`' pages. Pure: the same report
//! gives the same bytes.
//!
//! Every string of the report goes through [`esc`], numbers included where they are
//! strings. Finding issues and reasons are generated game text from the pipeline, run ids and
//! problems come from a store: any of them may carry markup or a bidirectional override, and
//! each is shown as text (bidi controls as `[U+202E]` markers).

use std::fmt::Write;

use super::report::{Disagreement, Section, ShadowReport, LEGACY_DECISIONS, V3_OUTCOMES};
use crate::html::{esc, CSP};

/// Rows of each unmatched list shown on the page; `--json` has them all.
pub const LIST_SHOWN: usize = 200;

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:0;background:#fafafa;color:#222}main{max-width:1100px;margin:0 auto;padding:16px}h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right;vertical-align:top}th{background:#f0f0f0}td.l,th.l{text-align:left}.warn{color:#a00}ul{margin:2px 0;padding-left:18px}code{font-size:12px}";

fn f3(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into())
}

fn pct(v: Option<f64>) -> String {
    v.map(|x| format!("{:.1}%", x * 100.0))
        .unwrap_or_else(|| "-".into())
}

/// Renders the page. `explain_base` (an http(s) URL the caller checked) makes each
/// disagreement link to the run's page in the daemon's review workbench
/// (`<base>/review/runs/<id>`); without it the page shows the command.
pub fn render(r: &ShadowReport, explain_base: Option<&str>) -> String {
    let mut h = String::with_capacity(32 * 1024);
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(
        h,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
        esc(CSP)
    );
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><meta name=\"referrer\" content=\"no-referrer\"><title>seal shadow report</title><style>");
    h.push_str(STYLE);
    h.push_str(
        "</style></head><body><main><h1>seal shadow report: legacy Verdicts against v3</h1>",
    );
    summary(&mut h, r);
    figures(&mut h, r);
    unmatched(&mut h, r);
    disagreements(&mut h, r, explain_base);
    h.push_str("<footer><p>Made by <code>seal shadow-report</code> from the ledger and the verified runs of the store. Pairs: the latest decided <code>v3_shadow</code> run of each design and evidence mode, with the design's latest Verdict.</p></footer></main></body></html>\n");
    h
}

fn summary(h: &mut String, r: &ShadowReport) {
    let (l, runs) = (&r.ledger, &r.runs);
    let _ = write!(
        h,
        "<section id=\"summary\"><p>Ledger sha256 <code>{}</code>: {} lines, {} verdict rows, {} designs, {} superseded, <span class=\"{}\">{} rejected</span>. Store: {} decided runs listed, {} <code>v3_shadow</code> runs verified, <span class=\"{}\">{} not verified</span>. <b>{} pairs</b> ({} with a changed verdict). Bootstrap seed {} ({} resamples).</p>",
        esc(&r.ledger_sha256),
        l.lines, l.verdict_rows, l.designs, l.superseded,
        if l.rejected_count > 0 { "warn" } else { "" },
        l.rejected_count,
        runs.listed, runs.v3_shadow,
        if runs.not_verified.is_empty() { "" } else { "warn" },
        runs.not_verified.len(),
        runs.paired, runs.verdict_changed,
        esc(&r.seed), r.bootstrap_resamples,
    );
    if !runs.not_verified.is_empty() {
        h.push_str("<table><tr><th class=\"l\">run not verified (never paired)</th><th>problems</th><th class=\"l\">first problem</th></tr>");
        for u in runs.not_verified.iter().take(LIST_SHOWN) {
            let _ = write!(
                h,
                "<tr><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
                esc(&u.run_id),
                u.problems,
                esc(&u.first_problem)
            );
        }
        h.push_str("</table>");
    }
    if !l.rejected.is_empty() {
        h.push_str("<table><tr><th>ledger line</th><th class=\"l\">rejected because</th></tr>");
        for x in &l.rejected {
            let _ = write!(
                h,
                "<tr><td>{}</td><td class=\"l\">{}</td></tr>",
                x.line,
                esc(&x.reason)
            );
        }
        h.push_str("</table>");
    }
    h.push_str("</section>");
}

/// The 3 × 4 confusion as a shaded table (a heatmap without SVG).
fn heatmap(h: &mut String, s: &Section) {
    let max = s
        .confusion
        .iter()
        .flatten()
        .copied()
        .max()
        .unwrap_or(0)
        .max(1);
    h.push_str("<table id=\"confusion\"><tr><th class=\"l\">legacy \\ v3</th>");
    for o in V3_OUTCOMES {
        let _ = write!(h, "<th>{}</th>", esc(o));
    }
    h.push_str("</tr>");
    for (i, row) in s.confusion.iter().enumerate() {
        let _ = write!(h, "<tr><th class=\"l\">{}</th>", esc(LEGACY_DECISIONS[i]));
        for n in row {
            let shade = 250 - (170 * n / max);
            let ink = if shade < 140 { "#fff" } else { "#222" };
            let _ = write!(
                h,
                "<td style=\"background:rgb({shade},{shade},255);color:{ink}\">{n}</td>"
            );
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>");
}

/// A κ interval as a bar on [-1, 1].
fn kappa_bar(s: &Section) -> String {
    let a = &s.accept_vs_not;
    let x = |k: f64| ((k + 1.0) / 2.0 * 200.0).clamp(0.0, 200.0);
    let mut svg = String::from("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"210\" height=\"14\" role=\"img\" aria-label=\"kappa interval\"><line x1=\"100\" y1=\"0\" x2=\"100\" y2=\"14\" stroke=\"#bbb\"/>");
    if let Some([lo, hi]) = a.kappa_ci95 {
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"4\" width=\"{:.1}\" height=\"6\" fill=\"#9ab\"/>",
            x(lo),
            (x(hi) - x(lo)).max(1.0)
        );
    }
    if let Some(k) = a.kappa {
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"1\" width=\"2\" height=\"12\" fill=\"#234\"/>",
            x(k) - 1.0
        );
    }
    svg.push_str("</svg>");
    svg
}

fn figure_row(h: &mut String, name: &str, s: &Section) {
    let (a, d) = (&s.accept_vs_not, &s.decided);
    let ci = |v: Option<[f64; 2]>| {
        v.map(|[lo, hi]| format!("[{lo:.3}, {hi:.3}]"))
            .unwrap_or_else(|| "-".into())
    };
    let _ = write!(
        h,
        "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        esc(name), a.n, pct(a.agreement), f3(a.kappa), ci(a.kappa_ci95), kappa_bar(s),
        d.n, pct(d.agreement), f3(d.kappa), ci(d.kappa_ci95)
    );
}

fn figures(h: &mut String, r: &ShadowReport) {
    h.push_str("<section id=\"figures\"><h2>Legacy decision × v3 outcome (all pairs)</h2>");
    heatmap(h, &r.all);
    h.push_str("<h2>Accept vs not: agreement and Cohen's &#954; (95% bootstrap interval)</h2><table><tr><th class=\"l\">pairs</th><th>n</th><th>agreement</th><th>&#954;</th><th>&#954; 95% CI</th><th>&#954; on [-1, 1]</th><th>decided n</th><th>agreement</th><th>&#954;</th><th>&#954; 95% CI</th></tr>");
    figure_row(h, "all", &r.all);
    for (g, s) in &r.by_genre {
        figure_row(h, &format!("genre {g}"), s);
    }
    for (m, s) in &r.by_evidence_mode {
        figure_row(h, &format!("mode {m}"), s);
    }
    h.push_str("</table><p>Decided: the pairs v3 decided (pass or fail), its inconclusive and infra_error runs left out.</p></section>");
}

fn unmatched(h: &mut String, r: &ShadowReport) {
    let u = &r.unmatched;
    h.push_str("<section id=\"unmatched\"><h2>Not paired</h2>");
    let mut list = |title: &str, rows: Vec<String>| {
        let _ = write!(h, "<h3>{} ({})</h3><ul>", esc(title), rows.len());
        for row in rows.iter().take(LIST_SHOWN) {
            let _ = write!(h, "<li>{row}</li>");
        }
        h.push_str("</ul>");
    };
    list(
        "runs without a verdict",
        u.runs_without_verdict
            .iter()
            .map(|x| {
                format!(
                    "{} (design {}, task {})",
                    esc(&x.run_id),
                    esc(&x.design_id),
                    esc(&x.task_id)
                )
            })
            .collect(),
    );
    list(
        "verdicts without a run",
        u.verdicts_without_run
            .iter()
            .map(|x| {
                format!(
                    "design {} (task {}, ledger line {})",
                    esc(&x.design_id),
                    esc(&x.task_id),
                    x.line
                )
            })
            .collect(),
    );
    list(
        "taskId mismatches",
        u.task_mismatch
            .iter()
            .map(|x| {
                format!(
                    "{}: run task {}, verdict task {}",
                    esc(&x.run_id),
                    esc(&x.run_task_id),
                    esc(&x.verdict_task_id)
                )
            })
            .collect(),
    );
    list(
        "runs without _designId or _taskId",
        r.runs.without_ids.iter().map(|x| esc(x)).collect(),
    );
    list(
        "superseded runs",
        r.runs
            .superseded
            .iter()
            .map(|x| format!("{} (by {})", esc(&x.run_id), esc(&x.by)))
            .collect(),
    );
    h.push_str("</section>");
}

fn explain_cell(d: &Disagreement, base: Option<&str>) -> String {
    match base {
        // The review workbench's page of the run (its explanation beside a review form),
        // which a person opens with their session, not the pipeline's token.
        Some(b) => format!(
            "<a href=\"{}{}\">explain and review</a>",
            esc(b.trim_end_matches('/')),
            esc(&crate::stats::human::workbench_link(&d.run_id))
        ),
        None => format!("<code>{}</code>", esc(&d.explain.command)),
    }
}

fn disagreements(h: &mut String, r: &ShadowReport, base: Option<&str>) {
    let _ = write!(
        h,
        "<section id=\"disagreements\"><h2>Disagreements ({})</h2><table><tr><th class=\"l\">genre</th><th class=\"l\">run</th><th class=\"l\">legacy</th><th class=\"l\">legacy findings</th><th class=\"l\">v3</th><th class=\"l\">explanation</th></tr>",
        r.disagreements.len()
    );
    for d in &r.disagreements {
        let findings: String = d
            .legacy
            .findings
            .iter()
            .map(|f| format!("<li>{} {}</li>", esc(&f.severity), esc(&f.issue)))
            .collect();
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}<br>{} {}</td><td class=\"l\">{} ({}), round {}, line {}</td><td class=\"l\"><ul>{findings}</ul></td><td class=\"l\">{} / {} ({})</td><td class=\"l\">{}</td></tr>",
            esc(&d.genre),
            esc(&d.run_id),
            esc(&d.evidence_mode),
            if d.verdict_changed { "<span class=\"warn\">verdict changed</span>" } else { "" },
            esc(&d.legacy.decision),
            esc(&d.legacy.reasons.join(", ")),
            d.legacy.round,
            d.legacy.line,
            esc(&d.v3.outcome),
            esc(&d.v3.action),
            esc(&d.v3.reasons.join(", ")),
            explain_cell(d, base),
        );
    }
    h.push_str("</table></section>");
}
