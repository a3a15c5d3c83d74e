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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::shadow_report::Agreement;

    fn agreement(n: u64, matrix: [[u64; 2]; 2]) -> Agreement {
        Agreement {
            n,
            matrix,
            agreement: None,
            kappa: None,
            kappa_ci95: None,
        }
    }

    /// A section whose counts add up: rows accept / reject / other legacy decisions, columns
    /// pass / fail / inconclusive / infra_error; 14 pairs, accept row 8, pass column 6, 11
    /// decided by v3.
    fn section() -> Section {
        Section {
            pairs: 14,
            confusion: [[5, 1, 2, 0], [1, 3, 0, 1], [0, 1, 0, 0]],
            accept_vs_not: agreement(14, [[5, 3], [1, 5]]),
            decided: agreement(11, [[5, 1], [1, 4]]),
        }
    }

    fn broken(edit: impl Fn(&mut Section)) -> Vec<String> {
        let mut s = section();
        edit(&mut s);
        let mut out = Vec::new();
        section_rules("/all", &s, &mut out);
        out.into_iter().map(|f| f.rule).collect()
    }

    #[test]
    fn a_section_whose_counts_add_up_breaks_no_rule() {
        assert_eq!(broken(|_| {}), Vec::<String>::new());
    }

    /// `pairs` = the confusion's sum = acceptVsNot's sum = acceptVsNot's n: each one alone off
    /// is named.
    #[test]
    fn a_sections_pairs_agree_with_its_confusion_and_accept_vs_not_each_alone() {
        let edits: [fn(&mut Section); 4] = [
            |s| s.pairs += 1,
            |s| s.confusion[1][2] += 1,
            |s| s.accept_vs_not.matrix[1][1] += 1,
            |s| s.accept_vs_not.n += 1,
        ];
        for (i, edit) in edits.into_iter().enumerate() {
            let rules = broken(edit);
            assert!(
                rules.contains(&"invariant.shadow.pairs".into()),
                "edit {i}: {rules:?}"
            );
        }
    }

    /// acceptVsNot's accept row and pass column are the confusion's: each alone off is named.
    #[test]
    fn accept_vs_not_has_the_confusions_accept_row_and_pass_column_each_alone() {
        let edits: [fn(&mut Section); 4] = [
            |s| s.confusion[0][2] += 1,
            |s| s.confusion[1][0] += 1,
            |s| s.accept_vs_not.matrix[0][1] += 1,
            |s| s.accept_vs_not.matrix[1][0] += 1,
        ];
        for (i, edit) in edits.into_iter().enumerate() {
            let rules = broken(edit);
            assert!(
                rules.contains(&"invariant.shadow.accept_vs_not".into()),
                "edit {i}: {rules:?}"
            );
        }
        // Off the row and column, acceptVsNot's fourth cell is only the pairs rule's.
        assert_eq!(
            broken(|s| s.accept_vs_not.matrix[1][1] += 1),
            vec!["invariant.shadow.pairs".to_string()]
        );
    }

    /// `decided` counts exactly the confusion's pass and fail columns, in n and in its matrix.
    #[test]
    fn decided_counts_the_pass_and_fail_columns_in_n_and_matrix_each_alone() {
        let edits: [fn(&mut Section); 3] = [
            |s| s.decided.n += 1,
            |s| s.decided.matrix[1][1] += 1,
            |s| s.confusion[2][1] += 1,
        ];
        for (i, edit) in edits.into_iter().enumerate() {
            let rules = broken(edit);
            assert!(
                rules.contains(&"invariant.shadow.decided".into()),
                "edit {i}: {rules:?}"
            );
        }
        // Inconclusive and infra_error columns are not decided.
        assert!(!broken(|s| s.confusion[2][2] += 1).contains(&"invariant.shadow.decided".into()));
    }

    fn report() -> ShadowReport {
        let bytes = include_bytes!("../../../../tests/data/shadow/report.json");
        serde_json::from_slice(bytes).expect("the committed shadow report")
    }

    fn report_rules(edit: impl Fn(&mut ShadowReport)) -> Vec<String> {
        let mut r = report();
        edit(&mut r);
        invariants(&r).into_iter().map(|f| f.rule).collect()
    }

    /// The genre and evidence-mode sections and `runs.paired` each sum to all.pairs, and the
    /// disagreements listed are all.acceptVsNot's off-diagonal: each alone off is named.
    #[test]
    fn a_reports_sections_and_disagreements_add_up_to_all_each_alone() {
        assert_eq!(report_rules(|_| {}), Vec::<String>::new());
        let sections: [fn(&mut ShadowReport); 3] = [
            |r| r.runs.paired += 1,
            |r| {
                let s = r.by_genre.values_mut().next().unwrap();
                s.pairs += 1;
            },
            |r| {
                let s = r.by_evidence_mode.values_mut().next().unwrap();
                s.pairs += 1;
            },
        ];
        for (i, edit) in sections.into_iter().enumerate() {
            let rules = report_rules(edit);
            assert!(
                rules.contains(&"invariant.shadow.sections".into()),
                "edit {i}: {rules:?}"
            );
        }
        assert_eq!(
            report_rules(|r| {
                r.disagreements.pop();
            }),
            vec!["invariant.shadow.disagreements".to_string()]
        );
        // Every section is checked, not only `all`.
        for edit in [
            (|r: &mut ShadowReport| r.by_genre.values_mut().next().unwrap().decided.n += 1)
                as fn(&mut ShadowReport),
            |r| r.by_evidence_mode.values_mut().next().unwrap().decided.n += 1,
        ] {
            assert!(report_rules(edit).contains(&"invariant.shadow.decided".into()));
        }
    }
}
