//! The page of `seal stats --html`: one self-contained file with inline SVG charts (confusion
//! heatmaps, κ per obligation with its 95% interval, daily series) and the figures as tables;
//! no script. Pure: the same report gives the same bytes. Every piece of text (obligation ids,
//! model names, prompt ids, run ids and problems come from the store) goes through
//! [`esc`]; the page carries the Content-Security-Policy of `seal explain`'s page.

use std::fmt::Write;

use super::aggregate::{Agreement, StatsReport};
pub use crate::html::esc;
use crate::html::CSP;

const STYLE: &str = "body{font:14px/1.45 system-ui,\"Noto Sans\",\"Noto Sans CJK SC\",sans-serif;margin:0;background:#fafafa;color:#222}main{max-width:1100px;margin:0 auto;padding:16px}h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}th{background:#f0f0f0}td.l,th.l{text-align:left}.maps{display:flex;flex-wrap:wrap;gap:16px}figure{margin:0;background:#fff;border:1px solid #ddd;padding:8px}figcaption{font-weight:600;font-size:13px}svg text{font:11px system-ui,\"Noto Sans CJK SC\",sans-serif}.warn{color:#a00}";

fn f3(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into())
}

fn pct(v: Option<f64>) -> String {
    v.map(|x| format!("{:.1}%", x * 100.0))
        .unwrap_or_else(|| "-".into())
}

/// A page's head (its Content-Security-Policy, no referrer, the style) and its heading.
fn page_head(title: &str, heading: &str) -> String {
    let mut h = String::with_capacity(32 * 1024);
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(
        h,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
        esc(CSP)
    );
    let _ = write!(h, "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><meta name=\"referrer\" content=\"no-referrer\"><title>{}</title><style>", esc(title));
    h.push_str(STYLE);
    let _ = write!(h, "</style></head><body><main><h1>{}</h1>", esc(heading));
    h
}

/// Renders the page.
pub fn render(r: &StatsReport) -> String {
    let mut h = page_head("seal stats", "seal stats");
    summary(&mut h, r);
    agreement_section(&mut h, r);
    human_section(&mut h, &r.human);
    reliability_section(&mut h, &r.reliability);
    drift_section(&mut h, &r.served_models);
    queue_section(&mut h, r);
    runs_section(&mut h, r);
    slots_section(&mut h, r);
    replay_section(&mut h, r);
    daily_section(&mut h, r);
    h.push_str("<footer><p>Made by <code>seal stats</code> from the verified, stored objects of the store. Categories are the judges' raw verdicts (parsed JudgeOutput); missing = no verdict.</p></footer></main></body></html>\n");
    h
}

/// The page of a signed reliability report (`seal report reliability --html`): who signed it,
/// over what, a chart of each judge's and the consensus's agreement with people (95%
/// intervals as whiskers), then the figures as tables. Pure: the same statement, the same bytes.
pub fn render_reliability(
    st: &super::report::ReliabilityStatement,
    envelope_sha256: &str,
    key_id: &str,
) -> String {
    let p = &st.predicate;
    let mut h = page_head(
        "seal reliability report",
        "How far the judges can be trusted",
    );
    let _ = write!(
        h,
        "<section id=\"signed\"><p>A signed report (<code>{}</code>), generated {} over {} original runs, {} of them reviewed by a trusted person. Query: since {}, until {}, genre {}. Envelope sha256 <code>{}</code>, signed by seal key <code>{}</code>; {} subjects (the reviewed runs' seals and reviews, by digest). Formulas: {}. Bootstrap seed {} ({} resamples).</p></section>",
        esc(&p.schema_version),
        esc(&p.generated_at),
        p.runs_used,
        p.reviewed_runs,
        esc(p.query.since.as_deref().unwrap_or("-")),
        esc(p.query.until.as_deref().unwrap_or("-")),
        esc(p.query.genre.as_deref().unwrap_or("all")),
        esc(envelope_sha256),
        esc(key_id),
        st.subject.len(),
        esc(&p.formulas),
        esc(&p.seed),
        p.bootstrap_resamples
    );
    h.push_str("<section id=\"chart\"><h2>Agreement with people</h2><figure><figcaption>Accuracy of judge A, judge B, and the consensus when it decided, per obligation (dot: the figure; line: its 95% interval)</figcaption>");
    h.push_str(&agreement_chart(&p.reliability));
    h.push_str("</figure></section>");
    reliability_section(&mut h, &p.reliability);
    human_section(&mut h, &p.human);
    drift_section(&mut h, &p.served_models);
    h.push_str("<footer><p>Made by <code>seal report reliability</code>. Check the signature with the seal public key, then recompute every figure from the subjects (docs/VERIFYING.md).</p></footer></main></body></html>\n");
    h
}

/// Rows of three 0–1 figures (A, B, consensus when decided) with whiskers.
fn agreement_chart(rs: &super::reliability::ReliabilitySection) -> String {
    let rows: Vec<(&str, &super::reliability::Reliability)> = std::iter::once(("all", &rs.all))
        .chain(rs.by_obligation.iter().map(|(k, v)| (k.as_str(), v)))
        .collect();
    let (left, width, row_h) = (260.0, 420.0, 46.0);
    let height = 40.0 + row_h * rows.len() as f64;
    let x = |v: f64| left + v.clamp(0.0, 1.0) * width;
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" role=\"img\" aria-label=\"agreement with people per obligation\">", left + width + 130.0);
    for t in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let _ = write!(s, "<line x1=\"{0}\" x2=\"{0}\" y1=\"10\" y2=\"{1}\" stroke=\"#ddd\"/><text x=\"{0}\" y=\"{2}\" text-anchor=\"middle\">{t}</text>", x(t), height - 16.0, height - 4.0);
    }
    let series = [("A", "#2a5"), ("B", "#25a"), ("consensus", "#a52")];
    for (i, (id, rel)) in rows.iter().enumerate() {
        let y0 = 16.0 + row_h * i as f64;
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            left - 8.0,
            y0 + 16.0,
            esc(id)
        );
        let Some(f) = &rel.figures else {
            let _ = write!(
                s,
                "<text x=\"{}\" y=\"{}\" fill=\"#888\">too few reviews (n {})</text>",
                x(0.0) + 4.0,
                y0 + 16.0,
                rel.counts.n
            );
            continue;
        };
        for (k, fig) in [&f.accuracy_a, &f.accuracy_b, &f.consensus_agreement]
            .into_iter()
            .enumerate()
        {
            let y = y0 + 6.0 + 12.0 * k as f64;
            let (name, color) = series[k];
            if let Some([lo, hi]) = fig.ci95 {
                let _ = write!(s, "<line x1=\"{}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"{color}\" stroke-width=\"2\"/>", x(lo), x(hi));
            }
            if let Some(v) = fig.value {
                let _ = write!(s, "<circle cx=\"{}\" cy=\"{y}\" r=\"4\" fill=\"{color}\"><title>{name} {v:.3}</title></circle>", x(v));
            }
            let _ = write!(
                s,
                "<text x=\"{}\" y=\"{}\" fill=\"{color}\">{name} {}</text>",
                left + width + 10.0,
                y + 4.0,
                f3(fig.value)
            );
        }
    }
    s.push_str("</svg>");
    s
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

fn human_section(h: &mut String, hs: &super::human::HumanSection) {
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

fn figure(f: &super::reliability::Figure) -> String {
    match (f.value, f.ci95) {
        (Some(v), Some([lo, hi])) => format!("{v:.3} <small>[{lo:.3}, {hi:.3}]</small>"),
        (Some(v), None) => format!("{v:.3}"),
        _ => "-".into(),
    }
}

fn reliability_section(h: &mut String, rs: &super::reliability::ReliabilitySection) {
    let _ = write!(
        h,
        "<section id=\"reliability\"><h2>How far the judges can be trusted</h2><p>Against the people's decisions, per reviewed obligation, with 95% bootstrap intervals. Accuracy: the share a judge decided as the person did. Error &#966;: how much A's and B's mistakes go together (0: independent, 1: one copies the other). Effective votes: 2 / (1 + &#966;), what the two judges are worth as independent votes. Coverage: the share the consensus decided; agreement: of those, the share decided as the person did. Fewer than {} reviews give no figures.</p><table><tr><th class=\"l\">obligation</th><th>n</th><th>accuracy A</th><th>accuracy B</th><th>error &#966;</th><th>effective votes</th><th>coverage</th><th>agreement when decided</th></tr>",
        rs.min_reviewed
    );
    let rows = std::iter::once(("all".to_string(), &rs.all))
        .chain(rs.by_obligation.iter().map(|(k, v)| (k.clone(), v)));
    for (k, v) in rows {
        match &v.figures {
            Some(f) => {
                let _ = write!(
                    h,
                    "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&k),
                    v.counts.n,
                    figure(&f.accuracy_a),
                    figure(&f.accuracy_b),
                    figure(&f.error_phi),
                    figure(&f.effective_votes),
                    figure(&f.consensus_coverage),
                    figure(&f.consensus_agreement)
                );
            }
            None => {
                let _ = write!(
                    h,
                    "<tr><td class=\"l\">{}</td><td>{}</td><td class=\"l\" colspan=\"6\">too few reviews</td></tr>",
                    esc(&k),
                    v.counts.n
                );
            }
        }
    }
    h.push_str("</table></section>");
}

fn drift_section(h: &mut String, groups: &[super::drift::DriftGroup]) {
    h.push_str("<section id=\"served-models\"><h2>Served models</h2><p>Per slot and judging set-up (endpoint host, model requested, prompt), each model and fingerprint the endpoint said it served, with the runs it answered. More than one is flagged: the same configuration was answered by something else.</p><table><tr><th class=\"l\">slot</th><th class=\"l\">set-up</th><th class=\"l\">served model</th><th class=\"l\">fingerprint</th><th>runs</th><th class=\"l\">first</th><th class=\"l\">last</th><th>&#954; A&#215;B</th><th>pass rate</th></tr>");
    for g in groups {
        for p in &g.periods {
            let _ = write!(
                h,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{} {} {}{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td></tr>",
                esc(&g.slot),
                esc(&g.endpoint_host),
                esc(&g.model_requested),
                esc(&g.prompt),
                if g.flags.is_empty() {
                    String::new()
                } else {
                    format!(" <b class=\"warn\">{}</b>", esc(&g.flags.join(", ")))
                },
                esc(&p.served_model),
                esc(p.system_fingerprint.as_deref().unwrap_or("-")),
                p.runs,
                esc(&p.first_decided_at),
                esc(&p.last_decided_at),
                figure(&p.kappa),
                figure(&p.pass_rate)
            );
        }
    }
    h.push_str("</table></section>");
}

fn queue_section(h: &mut String, r: &StatsReport) {
    let _ = write!(
        h,
        "<section id=\"review-queue\"><h2>Adjudication queue</h2><p>{} decided inconclusive run(s) without a trusted review, oldest first.</p><table><tr><th class=\"l\">run</th><th class=\"l\">decided at</th><th class=\"l\">review it</th></tr>",
        r.review_queue.len()
    );
    for q in &r.review_queue {
        let _ = write!(
            h,
            "<tr><td class=\"l\"><code>{0}</code></td><td class=\"l\">{1}</td><td class=\"l\"><a href=\"{2}\">{2}</a></td></tr>",
            esc(&q.run_id),
            esc(&q.decided_at),
            esc(&crate::stats::human::workbench_link(&q.run_id))
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

/// One confusion matrix as an SVG heatmap. The column headers rise to the right from their
/// column (anchored at their start), so they never run into the row labels on the left; the
/// figure is wide enough for the last one.
fn heatmap(name: &str, a: &Agreement, cats: &[String]) -> String {
    let cell = 44;
    let left = 104;
    let top = 70;
    let size = left + cell * 4 + 76;
    let max = a.matrix.iter().flatten().copied().max().unwrap_or(0).max(1);
    let mut s = format!(
        "<figure><figcaption>{}</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{size}\" height=\"{}\" role=\"img\" aria-label=\"confusion matrix {}\">",
        esc(name),
        top + cell * 4 + 10,
        esc(name)
    );
    for (i, c) in cats.iter().enumerate().take(4) {
        let x = left + cell * i as u32 + cell / 2;
        let _ = write!(s, "<text x=\"{x}\" y=\"{}\" text-anchor=\"start\" transform=\"rotate(-40 {x} {})\">B {}</text>", top - 8, top - 8, esc(c));
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
        "<section id=\"replay\"><h2>Replays</h2><p>{} replays, {} compared with their parent, {} flipped, {} whose parent is outside the query; the live ones paid their judges {:.4} RMB.</p><table><tr><th class=\"l\">by</th><th>compared</th><th>flipped</th></tr>",
        p.replays, p.compared, p.flipped, p.parent_not_used, p.live_cost_rmb
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::reliability::{Counts, Figure, Figures, Reliability, ReliabilitySection};

    /// The boxes of an SVG's `<text>` elements: 11 px type, 6.5 px a character (wider than
    /// the sans-serif glyphs on average), placed by `text-anchor`.
    fn text_boxes(svg: &str) -> Vec<(f64, f64, f64, f64, String)> {
        let attr = |tag: &str, name: &str| -> Option<f64> {
            let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
            tag[at..].split('"').next()?.parse().ok()
        };
        let mut out = Vec::new();
        for part in svg.split("<text").skip(1) {
            let (tag, rest) = part.split_once('>').unwrap();
            let body = rest.split("</text>").next().unwrap();
            let (x, y) = (attr(tag, "x").unwrap(), attr(tag, "y").unwrap());
            let w = body.chars().count() as f64 * 6.5;
            let left = if tag.contains("text-anchor=\"end\"") {
                x - w
            } else if tag.contains("text-anchor=\"middle\"") {
                x - w / 2.0
            } else {
                x
            };
            out.push((left, y - 10.0, left + w, y + 1.0, body.to_string()));
        }
        out
    }

    #[test]
    fn the_report_chart_has_no_overlapping_text() {
        let fig = |v: f64| Figure {
            value: Some(v),
            ci95: Some([v - 0.1, v + 0.1]),
        };
        let figures = Figures {
            accuracy_a: fig(0.9),
            accuracy_b: fig(0.85),
            error_phi: fig(0.3),
            effective_votes: fig(1.54),
            consensus_coverage: fig(0.7),
            consensus_agreement: fig(0.95),
        };
        let counts = Counts {
            n: 40,
            errors: [[30, 5], [3, 2]],
            decided: 28,
            decided_agree: 27,
        };
        let with = Reliability {
            counts: counts.clone(),
            too_few_reviews: false,
            figures: Some(figures),
        };
        let without = Reliability {
            counts,
            too_few_reviews: true,
            figures: None,
        };
        let section = ReliabilitySection {
            min_reviewed: 10,
            all: with.clone(),
            by_obligation: [
                ("core.loop-reached".to_string(), with.clone()),
                ("a-rather-long.obligation-id-of-forty".to_string(), without),
                ("ui.text-readable".to_string(), with),
            ]
            .into_iter()
            .collect(),
        };
        let svg = agreement_chart(&section);
        let boxes = text_boxes(&svg);
        assert!(boxes.len() > 12, "{svg}");
        for (i, a) in boxes.iter().enumerate() {
            assert!(a.0 >= 0.0, "{} starts left of the chart", a.4);
            for b in &boxes[i + 1..] {
                let apart = a.2 <= b.0 || b.2 <= a.0 || a.3 <= b.1 || b.3 <= a.1;
                assert!(apart, "{:?} overlaps {:?}", a, b);
            }
        }
    }
}
