//! The `seal stats` page in a real browser: headless Chromium loads the page of the sealed
//! fixtures and of a store holding a run full of hostile text; the DOM must show no sign of a
//! script having run, hold every chart, log nothing to the console, and a screenshot must not
//! be blank. Skipped without `chromium` unless `SEAL_REQUIRE_CHROMIUM=1` (as the explain test).

use crate::common;

use common::*;
use seal_engine::stats_load::{stats, Query};
use seal_store::Store;
use std::path::Path;

fn url_of(p: &Path) -> String {
    format!("file://{}", p.display())
}

async fn page_of(root: &Path, pem: &Path) -> String {
    let store = Store::open_existing(&file_url(root)).await.unwrap();
    let key = seal_fs::keys::load_public_key(pem).unwrap();
    stats(&store, &verifier(&store, key).await, Query::default())
        .await
        .unwrap()
        .html()
}

fn check_page(bin: &Path, work: &Path, kind: &str, html: &str) -> u64 {
    let page = work.join(format!("{kind}.html"));
    std::fs::write(&page, html).unwrap();
    let (dom, stderr) = run_chromium(bin, work, &["--dump-dom".into(), url_of(&page)]);
    assert!(dom.contains("</html>"), "{kind}: no DOM dumped: {stderr}");
    assert!(
        dom.contains("<title>seal stats</title>"),
        "{kind}: title changed"
    );
    assert!(
        !dom.to_lowercase().contains("<script"),
        "{kind}: a script element"
    );
    let console = console_lines(&stderr);
    assert!(console.is_empty(), "{kind}: console output {console:#?}");
    for label in [
        "confusion matrix all",
        "kappa per obligation",
        "kappa per day",
    ] {
        assert!(dom.contains(label), "{kind}: no chart {label}");
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
    std::fs::metadata(&shot)
        .unwrap_or_else(|e| panic!("{kind}: no screenshot ({e}): {stderr}"))
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_pages_render_in_chromium_without_scripts_or_console_errors() {
    let Some(bin) = chromium("stats browser test") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
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
    let html = page_of(&fixture_store_dir(), &fixture_trust_pem()).await;
    let size = check_page(&bin, work.path(), "fixtures", &html);
    assert!(size > blank_size * 5, "fixtures: screenshot looks blank");
    let (dir, _url, pem, _run) = hostile_sealed_run().await;
    let html = page_of(&dir.path().join("store"), &pem).await;
    let size = check_page(&bin, work.path(), "hostile", &html);
    assert!(size > blank_size * 5, "hostile: screenshot looks blank");
}
