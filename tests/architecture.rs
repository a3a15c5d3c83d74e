//! The layers of docs/DESIGN.md §10, enforced inside each crate: reads every `crate::…` /
//! `super::…` path of a crate's `src/` (as text, comments skipped), maps it to the module that
//! defines it, and fails when a lower layer imports a higher one, when the pure rules and the
//! store import each other, or when modules import each other in a cycle. Between crates the
//! compiler holds the layers (seal-core depends on no other seal crate).
//!
//! A new module must be given a layer below: an unplaced module fails the test, so the map
//! stays the one place where the architecture is written down.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// (level, group) of a module of seal-core (`crates/seal-core/src`): the words at the bottom,
/// the pure rules above them.
fn core_layer(module: &str) -> Option<(u8, &'static str)> {
    let bottom = (0, "documents");
    let pure = (1, "pure");
    let top = module.split("::").next().unwrap_or(module);
    Some(match top {
        "ids" | "canonical" | "json" | "contracts" | "doc" | "refs" | "key" | "vocab" | "fault"
        | "prompts" | "fsio" | "limits" | "html" | "net" => bottom,
        "blinding" | "assertions" | "consensus" | "independence" | "invariants" | "merge"
        | "derive" | "validate" | "judge" | "explain" | "tlog" | "stats" | "witness" | "admit"
        | "decided" | "lease" | "receipt" | "runfolder" | "adapt" | "sealing" => pure,
        _ => return None,
    })
}

/// (level, group) of a module of seal-store (`crates/seal-store/src`): one layer.
fn store_layer(module: &str) -> Option<(u8, &'static str)> {
    match module {
        "backend" | "blob" | "error" | "file" | "file::durable" | "file::read" | "object"
        | "reads" | "staging" | "store" | "url" | "write_set" => Some((1, "store")),
        _ => None,
    }
}

/// (level, group) of a module of seal-engine (`crates/seal-engine/src`): the use cases, one
/// level, over a runtime counter.
fn engine_layer(module: &str) -> Option<(u8, &'static str)> {
    let bottom = (0, "documents");
    let work = (2, "work");
    let top = module.split("::").next().unwrap_or(module);
    Some(match top {
        "metrics" => bottom,
        "config" | "engine" | "run_state" | "judge" | "roll" | "audit" | "postguard" | "verify"
        | "replay" | "intake" | "judge_run" | "import" | "resume" | "explain" | "transparency"
        | "stats" | "lease" | "receipt" | "witness" | "summary" => work,
        _ => return None,
    })
}

/// (level, group) of a module of seal-server (`crates/seal-server/src`) and of the root
/// package's CLI (`src/`): the edges, which translate HTTP and arguments into use cases.
fn edge_layer(module: &str) -> Option<(u8, &'static str)> {
    let top = module.split("::").next().unwrap_or(module);
    match top {
        "access" | "error" | "listen" | "routes" | "state" | "uniform" | "witness" | "cli" => {
            Some((3, "edge"))
        }
        _ => None,
    }
}

/// The crates whose modules are checked: (name, source folder, layer map).
type LayerOf = fn(&str) -> Option<(u8, &'static str)>;
const CRATES: [(&str, &str, LayerOf); 5] = [
    ("seal-core", "crates/seal-core/src", core_layer),
    ("seal-store", "crates/seal-store/src", store_layer),
    ("seal-engine", "crates/seal-engine/src", engine_layer),
    ("seal-server", "crates/seal-server/src", edge_layer),
    ("seal", "src", edge_layer),
];

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

fn graph(src: &str) -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(src);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut texts = BTreeMap::new();
    for f in &files {
        if let Some(m) = module_of(&src, f) {
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

#[test]
fn every_module_has_a_layer() {
    let mut unplaced = Vec::new();
    for (name, src, layer) in CRATES {
        let g = graph(src);
        assert!(
            g.len() >= 5,
            "{name}: only {} modules read from {src}",
            g.len()
        );
        unplaced.extend(
            g.keys()
                .filter(|m| layer(m).is_none())
                .map(|m| format!("{name}: {m}")),
        );
    }
    assert!(
        unplaced.is_empty(),
        "modules without a layer (place them in tests/architecture.rs and docs/DESIGN.md §10): {unplaced:?}"
    );
}

#[test]
fn no_lower_layer_imports_a_higher_one() {
    let mut bad = Vec::new();
    for (name, src, layer) in CRATES {
        for (from, tos) in graph(src) {
            let Some((lf, gf)) = layer(&from) else {
                continue;
            };
            for to in tos {
                let Some((lt, gt)) = layer(&to) else { continue };
                if lt > lf || (lt == lf && gt != gf && lf == 1) {
                    bad.push(format!("{name}: {from} ({lf} {gf}) -> {to} ({lt} {gt})"));
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
    for (_, src, _) in CRATES {
        no_cycle_in(&graph(src));
    }
}

fn no_cycle_in(g: &BTreeMap<String, BTreeSet<String>>) {
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
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
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
