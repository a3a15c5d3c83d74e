//! The cross-field rules of a `seal.shadow-report/1` (`seal validate`): the counts add up.

use crate::contracts::Finding;
use crate::doc::shadow_report::{Section, ShadowReport};

fn finding(pointer: String, rule: &str, message: String) -> Finding {
    Finding {
        pointer,
        rule: format!("invariant.shadow.{rule}"),
        message,
    }
}

/// The rules of one section: its counts add up three ways.
fn section_rules(at: &str, s: &Section, out: &mut Vec<Finding>) {
    let total: u64 = s.confusion.iter().flatten().sum();
    let avn = &s.accept_vs_not.matrix;
    let avn_total: u64 = avn.iter().flatten().sum();
    if total != s.pairs || avn_total != s.pairs || s.accept_vs_not.n != s.pairs {
        out.push(finding(
            format!("{at}/pairs"),
            "pairs",
            format!(
                "pairs {} but the confusion sums to {total} and acceptVsNot to {avn_total} (n {})",
                s.pairs, s.accept_vs_not.n
            ),
        ));
    }
    let accept_row: u64 = s.confusion[0].iter().sum();
    let pass_col: u64 = s.confusion.iter().map(|r| r[0]).sum();
    if avn[0][0] + avn[0][1] != accept_row || avn[0][0] + avn[1][0] != pass_col {
        out.push(finding(
            format!("{at}/acceptVsNot/matrix"),
            "accept_vs_not",
            format!(
                "the accept row ({accept_row}) or the pass column ({pass_col}) of the confusion is not that of acceptVsNot"
            ),
        ));
    }
    let decided: u64 = s.confusion.iter().map(|r| r[0] + r[1]).sum();
    let d_total: u64 = s.decided.matrix.iter().flatten().sum();
    if s.decided.n != decided || d_total != decided {
        out.push(finding(
            format!("{at}/decided/n"),
            "decided",
            format!(
                "decided n {} (matrix {d_total}) but the confusion's pass and fail columns hold {decided}",
                s.decided.n
            ),
        ));
    }
}

/// The cross-field rules of a `seal.shadow-report/1` that passed its schema.
pub fn invariants(r: &ShadowReport) -> Vec<Finding> {
    let mut out = Vec::new();
    section_rules("/all", &r.all, &mut out);
    for (g, s) in &r.by_genre {
        section_rules(&format!("/byGenre/{g}"), s, &mut out);
    }
    for (m, s) in &r.by_evidence_mode {
        section_rules(&format!("/byEvidenceMode/{m}"), s, &mut out);
    }
    let genres: u64 = r.by_genre.values().map(|s| s.pairs).sum();
    let modes: u64 = r.by_evidence_mode.values().map(|s| s.pairs).sum();
    if genres != r.all.pairs || modes != r.all.pairs || r.runs.paired != r.all.pairs {
        out.push(finding(
            "/all/pairs".into(),
            "sections",
            format!(
                "all.pairs {} but byGenre sums to {genres}, byEvidenceMode to {modes}, runs.paired is {}",
                r.all.pairs, r.runs.paired
            ),
        ));
    }
    let m = &r.all.accept_vs_not.matrix;
    let off = m[0][1] + m[1][0];
    if r.disagreements.len() as u64 != off {
        out.push(finding(
            "/disagreements".into(),
            "disagreements",
            format!(
                "{} disagreements listed but all.acceptVsNot has {off} off the diagonal",
                r.disagreements.len()
            ),
        ));
    }
    out
}
