//! The layers of docs/DESIGN.md §10, read from the table between its `layers:begin` and
//! `layers:end` markers and checked against the code: each crate's `seal-*` dependencies are
//! the ones the table names; every module of a crate is placed by exactly one row and every
//! module a row names exists (no stale entry); inside a crate no module imports a module of a
//! higher level (every `crate::…` / `super::…` path of `src/` is read as text, comments
//! skipped); no two modules (files), and no two top-level folders, import each other in a
//! cycle. Between crates the compiler holds the layers. Two rules the graph cannot say are
//! checked by name: seal-core names no file, clock, process or OS randomness, and only the
//! engine's `postguard` calls `decided::decide` / `decided::seal`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const DESIGN: &str = include_str!("../../docs/DESIGN.md");

/// One row of the layer table.
#[derive(Debug)]
struct Row {
    krate: String,
    deps: BTreeSet<String>,
    level: u8,
    group: String,
    modules: Vec<String>,
}

/// The names in backticks of a table cell.
fn ticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

fn layer_table() -> Vec<Row> {
    let start = DESIGN
        .find("<!-- layers:begin -->")
        .expect("docs/DESIGN.md §10 has a layers:begin marker");
    let end = DESIGN
        .find("<!-- layers:end -->")
        .expect("docs/DESIGN.md §10 has a layers:end marker");
    let mut rows = Vec::new();
    for line in DESIGN[start..end].lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(
            cells.len(),
            4,
            "layer row with {} cells: {line}",
            cells.len()
        );
        let (level, group) = cells[2]
            .split_once(' ')
            .unwrap_or_else(|| panic!("level cell `<n> <name>` expected: {line}"));
        rows.push(Row {
            krate: ticked(cells[0]).concat(),
            deps: ticked(cells[1]).into_iter().collect(),
            level: level
                .parse()
                .unwrap_or_else(|_| panic!("level number: {line}")),
            group: group.to_string(),
            modules: ticked(cells[3]),
        });
    }
    assert!(rows.len() >= 6, "only {} layer rows read", rows.len());
    rows
}

/// The source folder and manifest of a crate named in the table.
fn crate_dir(krate: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if krate == "seal" {
        root.to_path_buf()
    } else {
        root.join("crates").join(krate)
    }
}

/// The `seal-*` crates of a manifest's `[dependencies]` (not dev or build).
fn seal_deps(manifest: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(manifest).unwrap_or_else(|e| panic!("{manifest:?}: {e}"));
    let mut deps = BTreeSet::new();
    let mut in_deps = false;
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            in_deps = l == "[dependencies]";
        } else if in_deps && l.starts_with("seal-") {
            deps.insert(l.split([' ', '=']).next().unwrap_or(l).to_string());
        }
    }
    deps
}

/// (level, group) of each top-level module of a crate, from the table.
fn layers_of(rows: &[Row], krate: &str) -> BTreeMap<String, (u8, String)> {
    let mut map = BTreeMap::new();
    for r in rows.iter().filter(|r| r.krate == krate) {
        for m in &r.modules {
            let before = map.insert(m.clone(), (r.level, r.group.clone()));
            assert!(before.is_none(), "{krate}: {m} is placed by two rows");
        }
    }
    map
}

fn top(module: &str) -> &str {
    module.split("::").next().unwrap_or(module)
}

fn crates(rows: &[Row]) -> BTreeSet<String> {
    rows.iter().map(|r| r.krate.clone()).collect()
}

#[test]
fn each_crate_depends_on_the_seal_crates_the_table_names() {
    let rows = layer_table();
    let mut wrong = Vec::new();
    for krate in crates(&rows) {
        let named: BTreeSet<String> = rows
            .iter()
            .filter(|r| r.krate == krate)
            .flat_map(|r| r.deps.iter().cloned())
            .collect();
        let actual = seal_deps(&crate_dir(&krate).join("Cargo.toml"));
        if named != actual {
            wrong.push(format!("{krate}: table {named:?}, Cargo.toml {actual:?}"));
        }
    }
    // The fuzz crate builds alone, on the pure core and the file edge only.
    let fuzz = seal_deps(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/Cargo.toml"));
    if fuzz != BTreeSet::from(["seal-core".to_string(), "seal-fs".to_string()]) {
        wrong.push(format!("fuzz: {fuzz:?}, allowed are seal-core and seal-fs"));
    }
    assert!(
        wrong.is_empty(),
        "crate graph against docs/DESIGN.md §10:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_module_is_placed_and_every_placed_module_exists() {
    let rows = layer_table();
    let mut wrong = Vec::new();
    for krate in crates(&rows) {
        let layers = layers_of(&rows, &krate);
        let g = graph(&crate_dir(&krate).join("src"));
        let tops: BTreeSet<&str> = g.keys().map(|m| top(m)).collect();
        for m in &tops {
            if !layers.contains_key(*m) {
                wrong.push(format!(
                    "{krate}: module {m} has no row (place it in DESIGN §10)"
                ));
            }
        }
        for m in layers.keys() {
            if !tops.contains(m.as_str()) {
                wrong.push(format!(
                    "{krate}: the table names {m}, which does not exist (stale)"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_lower_level_imports_a_higher_one() {
    let rows = layer_table();
    let mut bad = Vec::new();
    for krate in crates(&rows) {
        let layers = layers_of(&rows, &krate);
        for (from, tos) in graph(&crate_dir(&krate).join("src")) {
            let Some((lf, gf)) = layers.get(top(&from)) else {
                continue;
            };
            for to in tos {
                let Some((lt, gt)) = layers.get(top(&to)) else {
                    continue;
                };
                if lt > lf {
                    bad.push(format!("{krate}: {from} ({lf} {gf}) -> {to} ({lt} {gt})"));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "imports against the layers:\n{}",
        bad.join("\n")
    );
}

#[test]
fn modules_do_not_import_each_other_in_a_cycle() {
    for krate in crates(&layer_table()) {
        no_cycle_in(&krate, &graph(&crate_dir(&krate).join("src")));
    }
}

#[test]
fn top_level_folders_do_not_import_each_other_in_a_cycle() {
    for krate in crates(&layer_table()) {
        let mut folders: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, tos) in graph(&crate_dir(&krate).join("src")) {
            let e = folders.entry(top(&from).to_string()).or_default();
            e.extend(
                tos.iter()
                    .map(|t| top(t).to_string())
                    .filter(|t| t != top(&from)),
            );
        }
        no_cycle_in(&krate, &folders);
    }
}

/// The source lines of `text` before its unit tests, comments dropped.
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .take_while(|l| !l.trim_start().starts_with("#[cfg(test)]"))
        .filter(|l| !l.trim_start().starts_with("//"))
}

/// Files of `dir` whose code (unit tests and comments aside) contains `needle`.
fn files_using(dir: &Path, needle: &str) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    let mut using = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        if code_lines(&text).any(|l| l.contains(needle)) {
            using.push(f.strip_prefix(dir).unwrap_or(f).display().to_string());
        }
    }
    using
}

/// A second line behind crates/seal-core/clippy.toml, which needs no build to read: the core's
/// code (unit tests aside) names none of the edges' powers.
#[test]
fn the_core_names_no_file_clock_process_or_os_randomness() {
    let core = crate_dir("seal-core").join("src");
    let mut found = Vec::new();
    for needle in [
        "std::fs",
        "std::process",
        "std::env::var",
        "SystemTime::now",
        "Instant::now",
        "now_utc(",
        "OsRng",
        "libc::",
    ] {
        for f in files_using(&core, needle) {
            found.push(format!("{f}: {needle}"));
        }
    }
    assert!(found.is_empty(), "seal-core is pure; found {found:?}");
}

#[test]
fn only_the_postguard_decides_a_run() {
    let mut callers = Vec::new();
    for krate in crates(&layer_table()) {
        let src = crate_dir(&krate).join("src");
        for needle in ["decided::decide(", "decided::seal("] {
            callers.extend(
                files_using(&src, needle)
                    .into_iter()
                    .map(|f| format!("{krate}/src/{f}")),
            );
        }
    }
    callers.sort();
    callers.dedup();
    assert!(
        !callers.is_empty(),
        "no caller of decided::decide / decided::seal found: the check reads the wrong text"
    );
    let outside: Vec<&String> = callers
        .iter()
        .filter(|c| !c.starts_with("seal-engine/src/postguard"))
        .collect();
    assert!(
        outside.is_empty(),
        "decided::decide / decided::seal called outside the postguard: {outside:?}"
    );
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "bin") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `src/judge/client.rs` → `judge::client`; `src/judge/mod.rs` → `judge`; lib/main → None.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?.with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        return None;
    }
    Some(parts.join("::"))
}

/// Every path written after `crate::` or `super::` (brace groups expanded), as module paths.
fn paths_in(module: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let code = line.trim_start();
        // Unit tests sit at the end of a file and may reach anything.
        if code.starts_with("#[cfg(test)]") {
            break;
        }
        if code.starts_with("//") {
            continue;
        }
        let code = match code.find("//") {
            Some(i) if !code[..i].contains('"') => &code[..i],
            _ => code,
        };
        for (prefix, base) in [("crate::", String::new()), ("super::", parent(module))] {
            let mut rest = code;
            while let Some(i) = rest.find(prefix) {
                let before = rest[..i].chars().last();
                let after = &rest[i + prefix.len()..];
                rest = after;
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                expand(&base, after, &mut out);
            }
        }
    }
    out
}

fn parent(module: &str) -> String {
    module
        .rsplit_once("::")
        .map(|(p, _)| p.to_string())
        .unwrap_or_default()
}

fn join(base: &str, seg: &str) -> String {
    if base.is_empty() {
        seg.to_string()
    } else {
        format!("{base}::{seg}")
    }
}

/// Expands `a::b::{c, d::e}` after a prefix into `a::b::c`, `a::b::d::e` (one line's worth).
fn expand(base: &str, s: &str, out: &mut Vec<String>) {
    let mut path = base.to_string();
    let mut chars = s;
    loop {
        if let Some(inner) = chars.strip_prefix('{') {
            let mut depth = 1;
            let mut end = inner.len();
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = i;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let group = &inner[..end];
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand(&path, group[start..i].trim(), out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            expand(&path, group[start..].trim(), out);
            return;
        }
        let seg: String = chars
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if seg.is_empty() || seg == "self" {
            out.push(path);
            return;
        }
        path = join(&path, &seg);
        chars = &chars[seg.len()..];
        match chars.strip_prefix("::") {
            Some(r) => chars = r,
            None => {
                out.push(path);
                return;
            }
        }
    }
}

/// The longest known module that prefixes `path`.
fn owner<'a>(modules: &'a BTreeSet<String>, path: &str) -> Option<&'a String> {
    let mut best: Option<&String> = None;
    for m in modules {
        if (path == m || path.starts_with(&format!("{m}::")))
            && best.is_none_or(|b| m.len() > b.len())
        {
            best = Some(m);
        }
    }
    best
}

fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut texts = BTreeMap::new();
    for f in &files {
        if let Some(m) = module_of(src, f) {
            texts.insert(m, std::fs::read_to_string(f).unwrap_or_default());
        }
    }
    let modules: BTreeSet<String> = texts.keys().cloned().collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, text) in &texts {
        let e = edges.entry(m.clone()).or_default();
        for p in paths_in(m, text) {
            if let Some(o) = owner(&modules, &p) {
                // A module may use its own children and be used by them through `super`.
                let own_child = o.starts_with(&format!("{m}::"));
                if o != m && !own_child {
                    e.insert(o.clone());
                }
            }
        }
    }
    edges
}

fn no_cycle_in(krate: &str, g: &BTreeMap<String, BTreeSet<String>>) {
    // Depth-first search with colours; report every back edge's cycle.
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        colour: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
        cycles: &mut Vec<String>,
    ) {
        colour.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            match colour.get(m.as_str()).copied().unwrap_or(0) {
                0 => visit(m, g, colour, stack, cycles),
                1 => {
                    let start = stack.iter().position(|s| s == m).unwrap_or(0);
                    let mut c = stack[start..].to_vec();
                    c.push(m.clone());
                    cycles.push(c.join(" -> "));
                }
                _ => {}
            }
        }
        stack.pop();
        colour.insert(n.to_string(), 2);
    }
    let mut colour = BTreeMap::new();
    let mut cycles = Vec::new();
    for n in g.keys() {
        if colour.get(n.as_str()).copied().unwrap_or(0) == 0 {
            visit(n, g, &mut colour, &mut Vec::new(), &mut cycles);
        }
    }
    assert!(
        cycles.is_empty(),
        "{krate}: import cycles:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_parser_reads_nested_use_groups() {
    let p = paths_in(
        "judge::client",
        "use crate::{doc::*, ids::{RollId, RunId}, store};\nuse super::parse::X;\n// crate::ignored\nlet k = crate::store::Key::cas(&h);",
    );
    for want in [
        "doc",
        "ids::RollId",
        "ids::RunId",
        "store",
        "judge::parse::X",
        "store::Key::cas",
    ] {
        assert!(p.iter().any(|x| x == want), "{want} not in {p:?}");
    }
    assert!(!p.iter().any(|x| x.contains("ignored")));
}
