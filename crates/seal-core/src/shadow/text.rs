//! The terminal table of `seal shadow-report`. Pure: the same report gives the same text.
//!
//! Ledger text (reasons, finding issues) and run ids come from other systems and
//! generated games, so every such field is written through [`shown`]: a control character or a
//! bidirectional override in a finding must not repaint the terminal or reorder what a reviewer
//! reads.

use std::fmt::Write;

use super::report::{
    Agreement, Disagreement, Section, ShadowReport, LEGACY_DECISIONS, V3_OUTCOMES,
};

/// Disagreements listed in the table; `--json` has them all.
pub const DISAGREEMENTS_SHOWN: usize = 20;

/// Text from another system, safe for a terminal: control characters and bidirectional
/// controls are written as `\u{…}`.
pub fn shown(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() || crate::html::is_bidi_control(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

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

fn agreement_row(out: &mut String, name: &str, s: &Section) {
    let (a, d) = (&s.accept_vs_not, &s.decided);
    let _ = writeln!(
        out,
        "  {:<30} {:>5} {:>7} {:>7} {:<18} {:>5} {:>7} {:>7} {}",
        shown(name),
        a.n,
        pct(a.agreement),
        opt(a.kappa),
        ci(a),
        d.n,
        pct(d.agreement),
        opt(d.kappa),
        ci(d),
    );
}

fn matrix(out: &mut String, s: &Section) {
    let _ = write!(out, "  {:<8}", "legacy");
    for o in V3_OUTCOMES {
        let _ = write!(out, " {o:>12}");
    }
    out.push('\n');
    for (i, row) in s.confusion.iter().enumerate() {
        let _ = write!(out, "  {:<8}", LEGACY_DECISIONS[i]);
        for n in row {
            let _ = write!(out, " {n:>12}");
        }
        out.push('\n');
    }
}

fn disagreement(out: &mut String, d: &Disagreement) {
    let _ = writeln!(
        out,
        "  {} {} {}: legacy {} ({}) vs v3 {} ({}){}",
        shown(&d.genre),
        shown(&d.run_id),
        d.evidence_mode,
        shown(&d.legacy.decision),
        shown(&d.legacy.reasons.join(", ")),
        shown(&d.v3.outcome),
        shown(&d.v3.reasons.join(", ")),
        if d.verdict_changed {
            " [verdict changed]"
        } else {
            ""
        },
    );
    for f in &d.legacy.findings {
        let _ = writeln!(out, "      {} {}", shown(&f.severity), shown(&f.issue));
    }
    let _ = writeln!(out, "      {}", shown(&d.explain.command));
}

fn counts(out: &mut String, r: &ShadowReport) {
    let (l, runs, u) = (&r.ledger, &r.runs, &r.unmatched);
    let _ = writeln!(
        out,
        "ledger: {} lines, {} verdict rows, {} designs ({} superseded, {} rejected, {} other rows)",
        l.lines,
        l.verdict_rows,
        l.designs,
        l.superseded,
        l.rejected_count,
        l.skipped_by_type.values().sum::<u64>(),
    );
    let _ = writeln!(
        out,
        "runs: {} decided listed, {} v3_shadow verified, {} not verified, {} superseded, {} without ids",
        runs.listed,
        runs.v3_shadow,
        runs.not_verified.len(),
        runs.superseded.len(),
        runs.without_ids.len(),
    );
    let _ = writeln!(
        out,
        "pairs: {} ({} with a changed verdict); unmatched: {} runs without a verdict, {} verdicts without a run, {} taskId mismatches",
        runs.paired,
        runs.verdict_changed,
        u.runs_without_verdict.len(),
        u.verdicts_without_run.len(),
        u.task_mismatch.len(),
    );
}

/// Renders the report as a plain-text table.
pub fn render(r: &ShadowReport) -> String {
    let mut out = String::new();
    counts(&mut out, r);
    out.push_str("\nlegacy decision × v3 outcome (all pairs)\n");
    matrix(&mut out, &r.all);
    let _ = writeln!(
        out,
        "\naccept vs not: legacy accept against v3 pass (\"decided\": v3 pass or fail only)\n  {:<30} {:>5} {:>7} {:>7} {:<18} {:>5} {:>7} {:>7} decided κ 95% CI",
        "", "n", "agree", "κ", "κ 95% CI", "n", "agree", "κ"
    );
    agreement_row(&mut out, "all", &r.all);
    for (g, s) in &r.by_genre {
        agreement_row(&mut out, &format!("genre {g}"), s);
    }
    for (m, s) in &r.by_evidence_mode {
        agreement_row(&mut out, &format!("mode {m}"), s);
    }
    for n in &r.runs.not_verified {
        let _ = writeln!(
            out,
            "not verified: {}: {}",
            shown(&n.run_id),
            shown(&n.first_problem)
        );
    }
    let _ = writeln!(out, "\ndisagreements: {}", r.disagreements.len());
    for d in r.disagreements.iter().take(DISAGREEMENTS_SHOWN) {
        disagreement(&mut out, d);
    }
    if r.disagreements.len() > DISAGREEMENTS_SHOWN {
        let _ = writeln!(out, "  … --json has all {}", r.disagreements.len());
    }
    out
}
