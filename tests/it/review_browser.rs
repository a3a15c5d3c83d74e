//! Reviews of sealed runs, continued: the reviewed run's page in headless Chromium, rebuilt logs with reviews in them.

use super::review::*;
use crate::common;
use common::*;
use seal_core::canonical::Hash;

/// The page of a reviewed run in headless Chromium: the reviewer's decision is in the rendered
/// DOM, the hostile note is text (no script element, the title unchanged, nothing on the
/// console), every anchor resolves.
#[test]
fn the_review_shows_in_chromium_and_its_note_is_text() {
    let Some(bin) = chromium("the_review_shows_in_chromium_and_its_note_is_text") else {
        return;
    };
    let s = setup();
    let out = s.review(
        &s.reviewer_key,
        &["core.loop-reached=satisfied", "ui.text-readable=failed"],
        HOSTILE_NOTE,
    );
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let page = s.dir.path().join("page.html");
    let out = s.seal(&[
        "explain",
        RUN,
        "--store",
        &s.url,
        "--trust",
        &fixture_trust_pem().display().to_string(),
        "--trust-reviewer",
        &s.reviewer_pub.display().to_string(),
        "--html",
        "--out",
        &page.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let (dom, stderr) = run_chromium(
        &bin,
        s.dir.path(),
        &["--dump-dom".into(), format!("file://{}", page.display())],
    );
    assert!(dom.contains("</html>"), "no DOM dumped: {stderr}");
    assert!(
        dom.contains(&format!("<title>seal explain {RUN}</title>")),
        "title changed"
    );
    assert!(!dom.to_lowercase().contains("<script"), "a script element");
    assert!(!dom.contains("<img src=\"x\""), "an element from the note");
    let console = console_lines(&stderr);
    assert!(console.is_empty(), "console output {console:#?}");
    // The reviewer's decision and the note, as text, in the review's block.
    let at = dom.find("<div id=\"review-0\"").expect("the review block");
    let block = &dom[at..];
    let block = &block[..block.find("</table>").map(|i| i + 8).unwrap_or(block.len())];
    assert!(block.contains("Ada &lt;b&gt;Lovelace&lt;/b&gt;"), "{block}");
    assert!(
        block.contains(
            "<code>ui.text-readable</code></td><td><span class=\"st failed\">failed</span>"
        ),
        "{block}"
    );
    assert!(
        dom.contains("&lt;script&gt;document.title='pwned'&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt; &amp; done"),
        "the note as text"
    );
    // The human node is drawn and links to the review.
    assert!(dom.contains("id=\"node-review-0\""), "no human node drawn");
    assert!(dom.contains("href=\"#review-0\""));
    let ids: std::collections::BTreeSet<&str> = dom
        .match_indices(" id=\"")
        .filter_map(|(i, m)| {
            let rest = &dom[i + m.len()..];
            rest.find('"').map(|e| &rest[..e])
        })
        .collect();
    for (i, m) in dom.match_indices("href=\"#") {
        let rest = &dom[i + m.len()..];
        let link = &rest[..rest.find('"').unwrap()];
        assert!(ids.contains(link), "link to missing #{link}");
    }
}

/// `seal log rebuild` of a store whose log is gone re-appends the leaf of every stored review
/// after the runs: the rebuilt log verifies with the review in it, and `seal verify` passes
/// with the reviewer trusted. Without the reviewer's key the review cannot be re-checked: the
/// rebuild refuses, naming it, and writes nothing.
#[test]
fn a_rebuilt_log_verifies_with_the_reviews_in_it() {
    let s = setup();
    let out = s.review(&s.reviewer_key, &["core.loop-reached=failed"], "rebuild me");
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let review_sha = Hash::of(&std::fs::read(s.review_path(0)).unwrap()).to_string();
    std::fs::remove_dir_all(s.root.join("log")).unwrap();
    let no = s.verify(true);
    assert_eq!(no.status.code(), Some(1), "{}", both(&no));

    let trust = fixture_trust_pem().display().to_string();
    let rpub = s.reviewer_pub.display().to_string();
    let log_key = s.log_key.display().to_string();
    let rebuild = |with_reviewer: bool| {
        let mut args = vec![
            "log", "rebuild", "--store", &s.url, "--key", &log_key, "--trust", &trust,
        ];
        if with_reviewer {
            args.extend(["--trust-reviewer", &rpub]);
        }
        s.seal(&args)
    };
    let out = rebuild(false);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    assert!(
        both(&out).contains(&format!("runs/{RUN}/reviews/0.dsse.json")),
        "{}",
        both(&out)
    );
    assert!(!s.root.join("log/entries").exists(), "nothing written");

    let out = rebuild(true);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert!(
        text(&out.stdout).contains(&format!("relogged review runs/{RUN}/reviews/0.dsse.json")),
        "{}",
        both(&out)
    );
    // The review's leaf is the last one, naming the stored bytes.
    let last = s.log_entries() - 1;
    s.assert_review_leaf(last, &review_sha);
    let ok = s.verify(true);
    assert_eq!(ok.status.code(), Some(0), "{}", both(&ok));
    // A second rebuild has nothing to do.
    let again = rebuild(true);
    assert_eq!(again.status.code(), Some(0), "{}", both(&again));
    assert!(
        text(&again.stdout).contains("nothing to rebuild"),
        "{}",
        both(&again)
    );
}
