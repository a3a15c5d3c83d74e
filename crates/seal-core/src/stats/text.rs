//! The terminal table of `seal stats`. Pure: the same report gives the same text.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::aggregate::{Agreement, Dist, StatsReport};

fn opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into())
}

fn pct(v: Option<f64>) -> String {
    v.map(|x| format!("{:.1}%", x * 100.0))
        .unwrap_or_else(|| "-".into())
}

fn ci(a: &Agreement) -> String {
    a.kappa_ci95
        .map(|[lo, hi]| format!("[{lo:.3}, {hi:.3}]"))
        .unwrap_or_else(|| "-".into())
}

fn counts(m: &BTreeMap<String, u64>) -> String {
    if m.is_empty() {
        return "-".into();
    }
    m.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn dist(d: &Dist) -> String {
    format!("mean {} p50 {} p95 {}", opt(d.mean), opt(d.p50), opt(d.p95))
}

fn agreement_row(out: &mut String, name: &str, a: &Agreement) {
    let check = a
        .check
        .as_ref()
        .map(|c| format!("{}/{}", pct(c.a.agreement), pct(c.b.agreement)))
        .unwrap_or_else(|| "-".into());
    let _ = writeln!(
        out,
        "  {name:<28} {:>6} {:>7} {:>7} {:<18} {:>8} {:>8} {check}",
        a.n,
        pct(a.agreement),
        opt(a.kappa),
        ci(a),
        pct(a.disputed_rate),
        pct(a.contradicted_rate),
    );
}

/// Renders the report as a plain-text table.
pub fn render(r: &StatsReport) -> String {
    let mut out = String::new();
    let c = &r.runs;
    let _ = writeln!(
        out,
        "seal stats: {} decided runs listed, {} used, {} replays, {} outside the query, {} not verified",
        c.listed, c.used, c.replays, c.filtered_out, c.not_verified
    );
    for u in &c.not_verified_runs {
        let _ = writeln!(
            out,
            "  NOT VERIFIED {} ({} problems): {}",
            u.run_id, u.problems, u.first_problem
        );
    }
    let _ = writeln!(
        out,
        "\nJudge agreement (A x B over {}; seed {}, {} resamples)",
        r.categories.join(" / "),
        r.seed,
        r.bootstrap_resamples
    );
    let _ = writeln!(
        out,
        "  {:<28} {:>6} {:>7} {:>7} {:<18} {:>8} {:>8} vs check A/B",
        "key", "n", "agree", "kappa", "kappa 95% CI", "disputed", "contra."
    );
    agreement_row(&mut out, "all", &r.agreement.all);
    for (k, a) in &r.agreement.by_genre {
        agreement_row(&mut out, &format!("genre {k}"), a);
    }
    for (k, a) in &r.agreement.by_obligation {
        agreement_row(&mut out, k, a);
    }
    human_block(&mut out, r);
    reliability_block(&mut out, r);
    drift_block(&mut out, r);
    queue_block(&mut out, r);
    runs_block(&mut out, r);
    slots_block(&mut out, r);
    replay_block(&mut out, r);
    let _ = writeln!(out, "\nDaily");
    let _ = writeln!(
        out,
        "  {:<10} {:>5} {:>6} {:>7} {:>8} {:>10}",
        "day", "runs", "n", "kappa", "disputed", "cost RMB"
    );
    for d in &r.daily {
        let _ = writeln!(
            out,
            "  {:<10} {:>5} {:>6} {:>7} {:>8} {:>10.4}",
            d.day,
            d.runs,
            d.n,
            opt(d.kappa),
            pct(d.disputed_rate),
            d.cost_rmb
        );
    }
    out
}

fn human_block(out: &mut String, r: &StatsReport) {
    let h = &r.human;
    let _ = writeln!(
        out,
        "\nPeople vs judges ({} reviewed runs; human x judge A / judge B / consensus over {})",
        h.reviewed_runs,
        h.categories.join(" / ")
    );
    let _ = writeln!(
        out,
        "  {:<28} {:>6} {:>7} {:<18} {:>7} {:<18} {:>7} {:<18}",
        "key", "n", "kappa A", "95% CI", "kappa B", "95% CI", "kappa C", "95% CI"
    );
    let ci = |v: &super::human::HumanVs| {
        v.kappa_ci95
            .map(|[lo, hi]| format!("[{lo:.3}, {hi:.3}]"))
            .unwrap_or_else(|| "-".into())
    };
    let rows = std::iter::once(("all", &h.all))
        .chain(h.by_obligation.iter().map(|(k, v)| (k.as_str(), v)));
    for (k, v) in rows {
        let _ = writeln!(
            out,
            "  {k:<28} {:>6} {:>7} {:<18} {:>7} {:<18} {:>7} {:<18}",
            v.n,
            opt(v.judge_a.kappa),
            ci(&v.judge_a),
            opt(v.judge_b.kappa),
            ci(&v.judge_b),
            opt(v.consensus.kappa),
            ci(&v.consensus)
        );
    }
}

/// Text from judges or the store on one line: a line break inside it is written `\u{a}` (the
/// CLI escapes every other control character, line by line).
fn one_line(s: &str) -> String {
    s.replace('\n', "\\u{a}").replace('\r', "\\u{d}")
}

fn reliability_block(out: &mut String, r: &StatsReport) {
    let rs = &r.reliability;
    let _ = writeln!(
        out,
        "\nReliability against people (per reviewed obligation; figures from {} reviews, 95% CI)",
        rs.min_reviewed
    );
    let _ = writeln!(
        out,
        "  {:<28} {:>6} {:<22} {:<22} {:<22} {:<22} {:<22} {:<22}",
        "key",
        "n",
        "accuracy A",
        "accuracy B",
        "error phi A~B",
        "effective votes",
        "consensus coverage",
        "consensus agreement"
    );
    let rows = std::iter::once(("all", &rs.all))
        .chain(rs.by_obligation.iter().map(|(k, v)| (k.as_str(), v)));
    for (k, v) in rows {
        match &v.figures {
            Some(f) => {
                let _ = writeln!(
                    out,
                    "  {k:<28} {:>6} {:<22} {:<22} {:<22} {:<22} {:<22} {:<22}",
                    v.counts.n,
                    f.accuracy_a.text(),
                    f.accuracy_b.text(),
                    f.error_phi.text(),
                    f.effective_votes.text(),
                    f.consensus_coverage.text(),
                    f.consensus_agreement.text()
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "  {k:<28} {:>6} too few reviews (fewer than {})",
                    v.counts.n, rs.min_reviewed
                );
            }
        }
    }
}

fn drift_block(out: &mut String, r: &StatsReport) {
    let _ = writeln!(
        out,
        "\nServed models (per slot and judging set-up: endpoint host, model requested, prompt)"
    );
    for g in &r.served_models {
        let flag = if g.flags.is_empty() {
            String::new()
        } else {
            format!("  ** {} **", g.flags.join(", "))
        };
        let _ = writeln!(
            out,
            "  slot {} {} {} {}{flag}",
            one_line(&g.slot),
            one_line(&g.endpoint_host),
            one_line(&g.model_requested),
            one_line(&g.prompt)
        );
        for p in &g.periods {
            let _ = writeln!(
                out,
                "    {} ({}) {} runs, {} .. {}; kappa {}; pass rate {}",
                one_line(&p.served_model),
                one_line(p.system_fingerprint.as_deref().unwrap_or("no fingerprint")),
                p.runs,
                one_line(&p.first_decided_at),
                one_line(&p.last_decided_at),
                p.kappa.text(),
                p.pass_rate.text()
            );
        }
    }
}

fn queue_block(out: &mut String, r: &StatsReport) {
    let _ = writeln!(
        out,
        "\nAdjudication queue: {} inconclusive run(s) without a trusted review, oldest first",
        r.review_queue.len()
    );
    for q in &r.review_queue {
        let _ = writeln!(
            out,
            "  {} decided {}: {} (seal explain {} --html)",
            q.run_id, q.decided_at, q.explain, q.run_id
        );
    }
}

fn runs_block(out: &mut String, r: &StatsReport) {
    let o = &r.outcomes;
    let _ = writeln!(out, "\nRuns ({})", o.runs);
    let _ = writeln!(out, "  outcome        {}", counts(&o.outcome));
    let _ = writeln!(out, "  decision       {}", counts(&o.action));
    let _ = writeln!(
        out,
        "  rolls          {} judged, {} blocked, degraded {} ({})",
        o.rolls_judged,
        o.rolls_blocked,
        o.degraded_rolls,
        pct(o.degraded_rate)
    );
    let _ = writeln!(
        out,
        "  roll 2         {} runs ({}); ended {}; settled {} ({})",
        o.roll2_runs,
        pct(o.roll2_rate),
        counts(&o.roll2_outcome),
        o.roll2_settled,
        pct(o.roll2_settled_rate)
    );
    let _ = writeln!(out, "  infra causes   {}", counts(&o.infra_causes));
    let _ = writeln!(
        out,
        "  cost/run RMB   {}",
        dist(&o.cost_per_decided_run_rmb)
    );
}

fn slots_block(out: &mut String, r: &StatsReport) {
    let _ = writeln!(out, "\nJudge slots");
    for s in &r.slots {
        let l = &s.latency_ms;
        let ms = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_else(|| "-".into());
        let _ = writeln!(
            out,
            "  {} {} ({}): {} rolls, {} attempts, {} retries, {} failed; classes {}; latency ms p50 {} p95 {} p99 {}; cost/roll RMB {}",
            s.slot,
            s.model,
            s.prompt,
            s.rolls,
            s.attempts,
            s.retries,
            s.failed_slots,
            counts(&s.failure_classes),
            ms(l.p50),
            ms(l.p95),
            ms(l.p99),
            dist(&s.cost_per_roll_rmb)
        );
    }
}

fn replay_block(out: &mut String, r: &StatsReport) {
    let p = &r.replay;
    let _ = writeln!(
        out,
        "\nReplays: {} ({} compared with their parent, {} flipped, {} parent not in the query); live replays paid their judges {:.4} RMB",
        p.replays, p.compared, p.flipped, p.parent_not_used, p.live_cost_rmb
    );
    for (k, v) in p.by_mode.iter().chain(&p.by_model_pair) {
        let _ = writeln!(out, "  {k}: {} flipped of {}", v.flipped, v.compared);
    }
    if !p.flips.is_empty() {
        let _ = writeln!(out, "  flips: {}", counts(&p.flips));
    }
}
