//! The `seal explain` page in a real browser: headless Chromium loads the page of sealed runs
//! of every kind (pass, roll-2 pass, fail, inconclusive, infra_error, contradicted, and a run
//! full of hostile text), and the rendered DOM must hold the selected path, resolve every
//! anchor, show no sign of a script having run, log nothing to the console, and a screenshot
//! must not be blank.
//!
//! Needs `chromium` (Debian package; `.ci/run` installs it). Without it the test is skipped
//! with a message, unless `SEAL_REQUIRE_CHROMIUM=1` (CI), where a missing browser fails.
//! `SEAL_EXPLAIN_SCREENSHOTS=DIR` also writes one screenshot per kind into DIR (docs/explain/).

use crate::common;

use common::*;
use seal_core::ids::RunId;
use seal_engine::explain_load::{explain, Explanation};
use seal_store::Store;
use std::collections::BTreeSet;
use std::path::Path;

fn attr_values(dom: &str, marker: &str) -> BTreeSet<String> {
    dom.match_indices(marker)
        .filter_map(|(i, _)| {
            let rest = &dom[i + marker.len()..];
            rest.find('"').map(|end| rest[..end].to_string())
        })
        .collect()
}

fn url_of(p: &Path) -> String {
    format!("file://{}", p.display())
}

async fn explained(root: &Path, run: &str, pem: &Path) -> Explanation {
    let store = Store::open(&file_url(root)).await.unwrap();
    let key = seal_fs::keys::load_public_key(pem).unwrap();
    explain(
        &store,
        &RunId::parse(run).unwrap(),
        &verifier(&store, key).await,
    )
    .await
    .unwrap_or_else(|e| panic!("{run}: {e}"))
}

/// Loads one page: checks the DOM and the console, takes a screenshot; returns its size.
fn check_page(bin: &Path, work: &Path, kind: &str, run: &str, e: &Explanation) -> u64 {
    let page = work.join(format!("{kind}.html"));
    std::fs::write(&page, e.html(&format!("seal verify {run}"))).unwrap();
    let (dom, stderr) = run_chromium(bin, work, &["--dump-dom".into(), url_of(&page)]);
    assert!(dom.contains("</html>"), "{kind}: no DOM dumped: {stderr}");
    // No script ran: the title is ours, no script element exists, nothing was logged.
    let want_title = format!("<title>seal explain {run}</title>");
    assert!(dom.contains(&want_title), "{kind}: title changed");
    assert!(
        !dom.to_lowercase().contains("<script"),
        "{kind}: a script element"
    );
    assert!(!dom.contains("pwned</title>"), "{kind}");
    let console = console_lines(&stderr);
    assert!(console.is_empty(), "{kind}: console output {console:#?}");
    // The selected path is drawn, edge by edge.
    let selected: Vec<_> = e.tree.edges.iter().filter(|x| x.selected).collect();
    assert_eq!(
        dom.matches("data-selected=\"true\"").count(),
        selected.len(),
        "{kind}"
    );
    for s in selected {
        let needle = format!(
            "data-from=\"{}\" data-to=\"{}\" data-selected=\"true\"",
            s.from, s.to
        );
        assert!(dom.contains(&needle), "{kind}: {needle}");
    }
    // Every anchor resolves; every node links to its evidence.
    let ids = attr_values(&dom, " id=\"");
    for link in attr_values(&dom, "href=\"#") {
        assert!(ids.contains(&link), "{kind}: link to missing #{link}");
    }
    for n in &e.tree.nodes {
        assert!(
            ids.contains(&format!("node-{}", n.id)),
            "{kind}: node {}",
            n.id
        );
        assert!(ids.contains(n.evidence_ref.id()), "{kind}");
    }
    let shot = work.join(format!("{kind}.png"));
    let (_, stderr) = run_chromium(
        bin,
        work,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1200,1800".into(),
            url_of(&page),
        ],
    );
    let size = std::fs::metadata(&shot)
        .unwrap_or_else(|e| panic!("{kind}: no screenshot ({e}): {stderr}"))
        .len();
    if let Some(dir) = std::env::var_os("SEAL_EXPLAIN_SCREENSHOTS") {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&shot, Path::new(&dir).join(format!("{kind}.png"))).unwrap();
    }
    size
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_pages_render_in_chromium_without_scripts_or_console_errors() {
    let Some(bin) = chromium("explain browser test") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    // The detector works: a page whose script CSP blocks is logged, and its script never ran.
    let control = work.path().join("control.html");
    std::fs::write(
        &control,
        format!(
            "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" content=\"{}\"><title>control</title></head><body><script>document.title='pwned'</script></body></html>",
            seal_engine::explain_load::html::CSP
        ),
    )
    .unwrap();
    let (dom, stderr) = run_chromium(&bin, work.path(), &["--dump-dom".into(), url_of(&control)]);
    assert!(dom.contains("<title>control</title>"), "{dom}");
    assert!(
        !console_lines(&stderr).is_empty(),
        "a blocked script is logged: {stderr}"
    );
    // A blank page's screenshot, to tell a blank one from a real one.
    let blank = work.path().join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><title>blank</title>").unwrap();
    let blank_png = work.path().join("blank.png");
    run_chromium(
        &bin,
        work.path(),
        &[
            format!("--screenshot={}", blank_png.display()),
            "--window-size=1200,1800".into(),
            url_of(&blank),
        ],
    );
    let blank_size = std::fs::metadata(&blank_png).unwrap().len();

    let root = fixture_store_dir();
    let pem = fixture_trust_pem();
    for (kind, run) in [
        ("pass", "run-narrative-0010-pass"),
        ("roll2-pass", "run-heritage-0017-disputed-font"),
        ("fail", "run-puzzle-0013-fail-end"),
        ("inconclusive", "run-narrative-0011-inconclusive"),
        ("infra-error", "run-sim-business-0032-over-budget"),
        ("contradicted", "run-puzzle-0041-contradicted"),
    ] {
        let e = explained(&root, run, &pem).await;
        let size = check_page(&bin, work.path(), kind, run, &e);
        assert!(
            size > blank_size * 5,
            "{kind}: screenshot looks blank ({size} bytes, blank {blank_size})"
        );
    }
    let (dir, _url, pem, run) = hostile_sealed_run().await;
    let e = explained(&dir.path().join("store"), &run, &pem).await;
    let size = check_page(&bin, work.path(), "hostile", &run, &e);
    assert!(size > blank_size * 5, "hostile: screenshot looks blank");
}
