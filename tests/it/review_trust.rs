//! `seal review` with a reviewer key trusted by `--trust-reviewer` only (issue 49): the review
//! is stored, and a warning on stderr names the key id and `reviewers.trusted`, since every
//! `seal verify` on the configuration (the nightly one) fails the run for it; a key the config
//! trusts gets no warning. Real processes on a copy of the sealed fixture store.

use crate::common;
use crate::review::setup;

use common::*;

#[test]
fn a_reviewer_key_outside_reviewers_trusted_is_warned_about_and_the_review_kept() {
    let s = setup();
    let key_id = {
        let key = seal_fs::keys::load_signing_key(&s.reviewer_key).unwrap();
        key.key_id.clone()
    };

    // Trusted on the command line only: stored, with the warning.
    let out = s.review(&s.reviewer_key, &["progress.score-increased=failed"], "");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(s.review_path(0).exists());
    let warning = stderr
        .lines()
        .find(|l| l.starts_with("seal: warning: reviewer key"))
        .unwrap_or_else(|| panic!("no warning: {stderr}"));
    assert!(
        warning.contains(&key_id) && warning.contains("is not in reviewers.trusted of"),
        "{warning}"
    );

    // The config trusts the key: the next review says nothing on stderr.
    s.daemon_config();
    let out = s.review(&s.reviewer_key, &["brief.theme-visible=missing"], "");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(s.review_path(1).exists());
    assert!(!stderr.contains("warning"), "{stderr}");
}
