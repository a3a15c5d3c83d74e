//! The page of `seal stats --html`: one self-contained file with inline SVG charts (confusion
//! heatmaps, κ per obligation with its 95% interval, daily series) and the figures as tables;
//! no script. Pure: the same report gives the same bytes. Every piece of text (obligation ids,
//! model names, prompt ids, run ids and problems come from the store) goes through
//! [`esc`]; the page carries the Content-Security-Policy of `seal explain`'s page.

use std::fmt::Write;

use super::aggregate::{Agreement, StatsReport};
pub use crate::html::esc;
use crate::html::CSP;

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:0;background:#fafafa;color:#222}main{max-width:1100px;margin:0 auto;padding:16px}h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}th{background:#f0f0f0}td.l,th.l{text-align:left}.maps{display:flex;flex-wrap:wrap;gap:16px}figure{margin:0;background:#fff;border:1px solid #ddd;padding:8px}figcaption{font-weight:600;font-size:13px}svg text{font:11px system-ui,sans-serif}.warn{color:#a00}";

fn f3(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into())
}

fn pct(v: Option<f64>) -> String {
    v.map(|x| format!("{:.1}%", x * 100.0))
        .unwrap_or_else(|| "-".into())
}

/// Renders the page.
pub fn render(r: &StatsReport) -> String {
    let mut h = String::with_capacity(32 * 1024);
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(
        h,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
        esc(CSP)
    );
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><meta name=\"referrer\" content=\"no-referrer\"><title>seal stats</title><style>");
    h.push_str(STYLE);
    h.push_str("</style></head><body><main><h1>seal stats</h1>");
    summary(&mut h, r);
    agreement_section(&mut h, r);
    human_section(&mut h, r);
    queue_section(&mut h, r);
    runs_section(&mut h, r);
    slots_section(&mut h, r);
    replay_section(&mut h, r);
    daily_section(&mut h, r);
    h.push_str("<footer><p>Made by <code>seal stats</code> from the verified, stored objects of the store. Categories are the judges' raw verdicts (parsed JudgeOutput); missing = no verdict.</p></footer></main></body></html>\n");
    h
}

fn summary(h: &mut String, r: &StatsReport) {
    let c = &r.runs;
    let _ = write!(
        h,
        "<section id=\"summary\"><p>{} decided runs listed, <b>{}</b> used, {} replays, {} outside the query, <span class=\"{}\">{} not verified</span>. Query: since {}, until {}, genre {}. Bootstrap seed {} ({} resamples).</p>",
        c.listed,
        c.used,
        c.replays,
        c.filtered_out,
        if c.not_verified > 0 { "warn" } else { "" },
        c.not_verified,
        esc(r.query.since.as_deref().unwrap_or("-")),
        esc(r.query.until.as_deref().unwrap_or("-")),
        esc(r.query.genre.as_deref().unwrap_or("all")),
        esc(&r.seed),
        r.bootstrap_resamples
    );
    if !c.not_verified_runs.is_empty() {
        h.push_str("<table><tr><th class=\"l\">run not verified</th><th>problems</th><th class=\"l\">first problem</th></tr>");
        for u in &c.not_verified_runs {
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
    h.push_str("</section>");
}

fn human_section(h: &mut String, r: &StatsReport) {
    let hs = &r.human;
    let _ = write!(
        h,
        "<section id=\"human\"><h2>People against the judges</h2><p>{} reviewed runs; the latest trusted review's decision per obligation against each judge's normalized status and the consensus (categories {}).</p><table><tr><th class=\"l\">obligation</th><th>n</th><th>&#954; A</th><th>A 95% CI</th><th>&#954; B</th><th>B 95% CI</th><th>&#954; consensus</th><th>consensus 95% CI</th></tr>",
        hs.reviewed_runs,
        esc(&hs.categories.join(" / "))
    );
    let ci = |v: &super::human::HumanVs| {
        v.kappa_ci95
            .map(|[lo, hi]| format!("[{lo:.3}, {hi:.3}]"))
            .unwrap_or_else(|| "-".into())
    };
    let rows = std::iter::once(("all".to_string(), &hs.all))
        .chain(hs.by_obligation.iter().map(|(k, v)| (k.clone(), v)));
    for (k, v) in rows {
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&k),
            v.n,
            f3(v.judge_a.kappa),
            ci(&v.judge_a),
            f3(v.judge_b.kappa),
            ci(&v.judge_b),
            f3(v.consensus.kappa),
            ci(&v.consensus)
        );
    }
    h.push_str("</table></section>");
}

fn queue_section(h: &mut String, r: &StatsReport) {
    let _ = write!(
        h,
        "<section id=\"review-queue\"><h2>Adjudication queue</h2><p>{} decided inconclusive run(s) without a trusted review, oldest first.</p><table><tr><th class=\"l\">run</th><th class=\"l\">decided at</th><th class=\"l\">explain</th></tr>",
        r.review_queue.len()
    );
    for q in &r.review_queue {
        let _ = write!(
            h,
            "<tr><td class=\"l\"><code>{}</code></td><td class=\"l\">{}</td><td class=\"l\"><code>{}</code></td></tr>",
            esc(&q.run_id),
            esc(&q.decided_at),
            esc(&q.explain)
        );
    }
    h.push_str("</table></section>");
}

fn agreement_section(h: &mut String, r: &StatsReport) {
    h.push_str("<section id=\"agreement\"><h2>Judge agreement</h2><table><tr><th class=\"l\">key</th><th>n</th><th>agreement</th><th>&#954;</th><th>&#954; 95% CI</th><th>disputed</th><th>contradicted</th><th>A vs check</th><th>B vs check</th></tr>");
    let a = &r.agreement;
    let rows = std::iter::once(("all".to_string(), &a.all))
        .chain(a.by_genre.iter().map(|(k, v)| (format!("genre {k}"), v)))
        .chain(a.by_obligation.iter().map(|(k, v)| (k.clone(), v)));
    for (k, v) in rows {
        let (ca, cb) = v
            .check
            .as_ref()
            .map(|c| (pct(c.a.agreement), pct(c.b.agreement)))
            .unwrap_or_else(|| ("-".into(), "-".into()));
        let ci = v
            .kappa_ci95
            .map(|[lo, hi]| format!("[{lo:.3}, {hi:.3}]"))
            .unwrap_or_else(|| "-".into());
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{ca}</td><td>{cb}</td></tr>",
            esc(&k), v.n, pct(v.agreement), f3(v.kappa), ci, pct(v.disputed_rate), pct(v.contradicted_rate)
        );
    }
    h.push_str("</table><h3>&#954; per obligation, with 95% bootstrap interval</h3>");
    h.push_str(&kappa_chart(r));
    h.push_str("<h3>Confusion matrices (rows: judge A, columns: judge B)</h3><div class=\"maps\">");
    h.push_str(&heatmap("all", &a.all, &r.categories));
    for (k, v) in &a.by_obligation {
        h.push_str(&heatmap(k, v, &r.categories));
    }
    h.push_str("</div></section>");
}

/// One confusion matrix as an SVG heatmap.
fn heatmap(name: &str, a: &Agreement, cats: &[String]) -> String {
    let cell = 44;
    let left = 90;
    let top = 70;
    let size = left + cell * 4 + 10;
    let max = a.matrix.iter().flatten().copied().max().unwrap_or(0).max(1);
    let mut s = format!(
        "<figure><figcaption>{}</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{size}\" height=\"{}\" role=\"img\" aria-label=\"confusion matrix {}\">",
        esc(name),
        top + cell * 4 + 10,
        esc(name)
    );
    for (i, c) in cats.iter().enumerate().take(4) {
        let x = left + cell * i as u32 + cell / 2;
        let _ = write!(s, "<text x=\"{x}\" y=\"{}\" text-anchor=\"end\" transform=\"rotate(-40 {x} {})\">B {}</text>", top - 6, top - 6, esc(c));
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">A {}</text>",
            left - 4,
            top + cell * i as u32 + cell / 2 + 4,
            esc(c)
        );
    }
    for (i, row) in a.matrix.iter().enumerate() {
        for (j, v) in row.iter().enumerate() {
            let shade = 245 - (200 * v / max) as u32;
            let (x, y) = (left + cell * j as u32, top + cell * i as u32);
            let ink = if shade < 140 { "#fff" } else { "#222" };
            let _ = write!(
                s,
                "<rect x=\"{x}\" y=\"{y}\" width=\"{cell}\" height=\"{cell}\" fill=\"rgb({shade},{shade},255)\" stroke=\"#ccc\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{ink}\">{v}</text>",
                x + cell / 2,
                y + cell / 2 + 4
            );
        }
    }
    s.push_str("</svg></figure>");
    s
}

/// κ per obligation: a dot at κ and a whisker over its interval, on a −1..1 axis.
fn kappa_chart(r: &StatsReport) -> String {
    let rows: Vec<(&String, &Agreement)> = r.agreement.by_obligation.iter().collect();
    let (left, width, row_h) = (260.0, 460.0, 22.0);
    let height = 30.0 + row_h * rows.len().max(1) as f64;
    let x = |k: f64| left + (k + 1.0) / 2.0 * width;
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" role=\"img\" aria-label=\"kappa per obligation\">", left + width + 20.0);
    for t in [-1.0, -0.5, 0.0, 0.5, 1.0] {
        let _ = write!(s, "<line x1=\"{0}\" x2=\"{0}\" y1=\"10\" y2=\"{1}\" stroke=\"#ddd\"/><text x=\"{0}\" y=\"{2}\" text-anchor=\"middle\">{t}</text>", x(t), height - 14.0, height - 2.0);
    }
    for (i, (id, a)) in rows.iter().enumerate() {
        let y = 20.0 + row_h * i as f64;
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            left - 6.0,
            y + 4.0,
            esc(id)
        );
        if let Some([lo, hi]) = a.kappa_ci95 {
            let _ = write!(s, "<line x1=\"{}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"#557\" stroke-width=\"2\"/>", x(lo), x(hi));
        }
        match a.kappa {
            Some(k) => {
                let _ = write!(s, "<circle cx=\"{}\" cy=\"{y}\" r=\"4\" fill=\"#225\"><title>{k:.3}</title></circle>", x(k));
            }
            None => {
                let _ = write!(
                    s,
                    "<text x=\"{}\" y=\"{}\" fill=\"#888\">undefined (n {})</text>",
                    x(-1.0) + 4.0,
                    y + 4.0,
                    a.n
                );
            }
        }
    }
    s.push_str("</svg>");
    s
}

fn runs_section(h: &mut String, r: &StatsReport) {
    let o = &r.outcomes;
    let list = |m: &std::collections::BTreeMap<String, u64>| {
        m.iter()
            .map(|(k, v)| format!("{} {v}", esc(k)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let c = &o.cost_per_decided_run_rmb;
    let _ = write!(
        h,
        "<section id=\"runs\"><h2>Runs</h2><table><tr><th class=\"l\">runs</th><td>{}</td></tr><tr><th class=\"l\">outcome</th><td class=\"l\">{}</td></tr><tr><th class=\"l\">decision</th><td class=\"l\">{}</td></tr><tr><th class=\"l\">rolls judged / blocked</th><td>{} / {}</td></tr><tr><th class=\"l\">degraded rolls</th><td>{} ({})</td></tr><tr><th class=\"l\">roll 2</th><td>{} ({}); ended {}; settled {} ({})</td></tr><tr><th class=\"l\">infra causes</th><td class=\"l\">{}</td></tr><tr><th class=\"l\">cost per decided run (RMB)</th><td>mean {} p50 {} p95 {}</td></tr></table></section>",
        o.runs, list(&o.outcome), list(&o.action), o.rolls_judged, o.rolls_blocked, o.degraded_rolls, pct(o.degraded_rate),
        o.roll2_runs, pct(o.roll2_rate), list(&o.roll2_outcome), o.roll2_settled, pct(o.roll2_settled_rate),
        list(&o.infra_causes), f3(c.mean), f3(c.p50), f3(c.p95)
    );
}

fn slots_section(h: &mut String, r: &StatsReport) {
    h.push_str("<section id=\"slots\"><h2>Judge slots</h2><table><tr><th class=\"l\">slot</th><th class=\"l\">model</th><th class=\"l\">prompt</th><th>rolls</th><th>attempts</th><th>retries</th><th>failed</th><th class=\"l\">failure classes</th><th>latency ms p50/p95/p99</th><th>cost/roll RMB mean/p50/p95</th></tr>");
    let ms = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_else(|| "-".into());
    for s in &r.slots {
        let classes = s
            .failure_classes
            .iter()
            .map(|(k, v)| format!("{} {v}", esc(k)))
            .collect::<Vec<_>>()
            .join(", ");
        let c = &s.cost_per_roll_rmb;
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{classes}</td><td>{}/{}/{}</td><td>{}/{}/{}</td></tr>",
            esc(&s.slot), esc(&s.model), esc(&s.prompt), s.rolls, s.attempts, s.retries, s.failed_slots,
            ms(s.latency_ms.p50), ms(s.latency_ms.p95), ms(s.latency_ms.p99), f3(c.mean), f3(c.p50), f3(c.p95)
        );
    }
    h.push_str("</table></section>");
}

fn replay_section(h: &mut String, r: &StatsReport) {
    let p = &r.replay;
    let _ = write!(
        h,
        "<section id=\"replay\"><h2>Replays</h2><p>{} replays, {} compared with their parent, {} flipped, {} whose parent is outside the query.</p><table><tr><th class=\"l\">by</th><th>compared</th><th>flipped</th></tr>",
        p.replays, p.compared, p.flipped, p.parent_not_used
    );
    for (k, v) in p.by_mode.iter().chain(&p.by_model_pair) {
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(k),
            v.compared,
            v.flipped
        );
    }
    h.push_str("</table></section>");
}

/// One daily series as an SVG polyline, with a dot per day (days without a value are gaps).
fn series(name: &str, points: &[Option<f64>], lo: f64, hi: f64) -> String {
    let (w, ht, pad) = (520.0, 140.0, 30.0);
    let n = points.len().max(2) as f64 - 1.0;
    let span = if hi > lo { hi - lo } else { 1.0 };
    let px = |i: usize| pad + (w - 2.0 * pad) * i as f64 / n;
    let py = |v: f64| ht - pad - (ht - 2.0 * pad) * (v - lo) / span;
    let mut s = format!("<figure><figcaption>{}</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{ht}\" role=\"img\" aria-label=\"{}\">", esc(name), esc(name));
    let _ = write!(s, "<line x1=\"{pad}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"#aaa\"/><text x=\"2\" y=\"{}\">{lo:.2}</text><text x=\"2\" y=\"{}\">{hi:.2}</text>", w - pad, ht - pad, ht - pad, ht - pad, pad);
    let mut path = String::new();
    for (i, p) in points.iter().enumerate() {
        match p {
            Some(v) => {
                let step = if path.is_empty() { "M" } else { "L" };
                let _ = write!(path, "{step}{:.1},{:.1} ", px(i), py(*v));
                let _ = write!(s, "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"#225\"><title>{v:.4}</title></circle>", px(i), py(*v));
            }
            None => {
                if !path.is_empty() {
                    let _ = write!(
                        s,
                        "<path d=\"{}\" fill=\"none\" stroke=\"#557\"/>",
                        path.trim_end()
                    );
                    path.clear();
                }
            }
        }
    }
    if !path.is_empty() {
        let _ = write!(
            s,
            "<path d=\"{}\" fill=\"none\" stroke=\"#557\"/>",
            path.trim_end()
        );
    }
    s.push_str("</svg></figure>");
    s
}

fn daily_section(h: &mut String, r: &StatsReport) {
    h.push_str("<section id=\"daily\"><h2>Daily</h2><div class=\"maps\">");
    let kappa: Vec<Option<f64>> = r.daily.iter().map(|d| d.kappa).collect();
    let disputed: Vec<Option<f64>> = r.daily.iter().map(|d| d.disputed_rate).collect();
    let cost: Vec<Option<f64>> = r.daily.iter().map(|d| d.mean_cost_rmb).collect();
    let max_cost = cost.iter().flatten().copied().fold(0.0, f64::max);
    h.push_str(&series("kappa per day", &kappa, -1.0, 1.0));
    h.push_str(&series("disputed rate per day", &disputed, 0.0, 1.0));
    h.push_str(&series(
        "mean cost per run per day (RMB)",
        &cost,
        0.0,
        max_cost,
    ));
    h.push_str("</div><table><tr><th class=\"l\">day</th><th>runs</th><th>n</th><th>&#954;</th><th>disputed</th><th>cost RMB</th></tr>");
    for d in &r.daily {
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.4}</td></tr>",
            esc(&d.day), d.runs, d.n, f3(d.kappa), pct(d.disputed_rate), d.cost_rmb
        );
    }
    h.push_str("</table></section>");
}
