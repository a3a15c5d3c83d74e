//! The upstream contracts are vendored byte-for-byte (docs/DESIGN.md §3.1).
//!
//! `tests/data/upstream-sha256.txt` is `sha256sum *.json` run in the pipeline's published
//! `upstream-contracts` folder. This test compares it with the files in
//! `crates/seal-core/src/contracts/upstream/` and with the text embedded in the binary
//! (`seal_core::contracts::UPSTREAM`). It reads nothing outside the workspace: regenerate the list
//! from upstream only when upstream publishes a new version.

use seal_core::canonical::Hash;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// file name → sha256, from the checked-in list (`sha256sum` format: `<hex>  <name>`).
fn upstream_list() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(root().join("tests/data/upstream-sha256.txt")).unwrap();
    let mut out = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let (hex, name) = line
            .split_once("  ")
            .unwrap_or_else(|| panic!("bad line {line:?}"));
        Hash::parse(hex).unwrap_or_else(|e| panic!("{line:?}: {e}"));
        assert!(
            out.insert(name.to_string(), hex.to_string()).is_none(),
            "{name} listed twice"
        );
    }
    out
}

#[test]
fn vendored_upstream_files_are_byte_for_byte_upstream() {
    let list = upstream_list();
    assert!(list.len() >= 4, "{list:?}");
    let dir = root().join("src/contracts/upstream");
    let mut on_disk = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            on_disk.insert(name, Hash::of(&std::fs::read(&path).unwrap()).to_string());
        }
    }
    let mut wrong = Vec::new();
    for (name, want) in &list {
        match on_disk.get(name) {
            None => wrong.push(format!("{name}: listed upstream but not vendored")),
            Some(got) if got != want => {
                wrong.push(format!("{name}: sha256 {got}, upstream is {want}"))
            }
            Some(_) => {}
        }
    }
    for name in on_disk.keys().filter(|n| !list.contains_key(*n)) {
        wrong.push(format!(
            "{name}: vendored but not in tests/data/upstream-sha256.txt"
        ));
    }
    assert!(
        wrong.is_empty(),
        "vendored upstream contracts differ:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn embedded_upstream_schemas_are_the_vendored_files() {
    let list = upstream_list();
    let embedded: BTreeMap<&str, &str> = seal_core::contracts::UPSTREAM.iter().copied().collect();
    assert_eq!(
        embedded.keys().copied().collect::<Vec<_>>(),
        list.keys().map(String::as_str).collect::<Vec<_>>(),
        "the binary embeds a different set of upstream schemas"
    );
    for (name, text) in embedded {
        assert_eq!(
            Hash::of(text.as_bytes()).as_str(),
            list[name],
            "{name}: embedded text"
        );
    }
}

#[test]
fn every_embedded_schema_compiles() {
    seal_core::contracts::self_check().unwrap();
}
