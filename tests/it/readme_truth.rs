//! The README tells the truth about the interface: every command and subcommand of the built
//! binary starts its own row of the README's command table and that row names every long flag
//! the command takes; every route of the OpenAPI document is a row of the README's route table
//! (and no row names a route or a command that does not exist); every argument has help text.
//!
//! The commands are read from the built binary's `--help` (walked from `seal --help`
//! down to every leaf), not from clap's `CommandFactory`, so the test sees what a user sees,
//! and a command added anywhere under `src/cli/` is found without listing it here. The routes
//! come from the OpenAPI document the daemon serves (`seal_server::OPENAPI_JSON`, the bundle of
//! docs/openapi.yaml that `tools/openapi_bundle.py --check` keeps equal to it), which
//! `tests/it/api_contract.rs` proves equal to the router.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

const README: &str = include_str!("../../README.md");

/// Flags every command takes, described once in the README's "Common options".
const GLOBAL_FLAGS: &[&str] = &["--config", "--log-format", "--help", "--version"];

/// One argument of a command's help: its spec (`--out <DIR>`, `<FILE>...`) and help text.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HelpArg {
    spec: String,
    help: String,
}

impl HelpArg {
    /// The long flag (`--out`), if the argument is an option.
    fn long(&self) -> Option<&str> {
        self.spec
            .split_whitespace()
            .map(|t| t.trim_end_matches(','))
            .find(|t| t.starts_with("--"))
    }

    /// The help text without clap's own `[default: …]` and `[possible values: …]` notes, which
    /// say nothing of what the argument is for.
    fn own_help(&self) -> String {
        let mut s = self.help.trim().to_string();
        while s.ends_with(']') {
            match s.rfind(" [").or_else(|| s.starts_with('[').then_some(0)) {
                Some(i) => s = s[..i].trim_end().to_string(),
                None => break,
            }
        }
        s
    }
}

/// A command's help, cut into its sections.
#[derive(Debug, Default)]
struct Help {
    subcommands: Vec<String>,
    args: Vec<HelpArg>,
}

/// True for a section header (`Options:`, `Arguments:`, `Commands:`).
fn is_header(line: &str) -> bool {
    !line.starts_with(' ')
        && line.ends_with(':')
        && line[..line.len() - 1]
            .chars()
            .all(|c| c.is_ascii_alphabetic() || c == ' ')
}

/// True for the first line of an argument: indented 2 to 6 spaces, then `-`, `<` or `[`.
fn is_arg_start(line: &str) -> bool {
    let indent = line.len() - line.trim_start().len();
    (2..=6).contains(&indent) && line.trim_start().starts_with(['-', '<', '['])
}

/// Parses clap's help in both of its layouts: one line per argument (spec, two or more spaces,
/// help) and the long layout (spec alone, help on the indented lines below it).
fn parse_help(text: &str) -> Help {
    let mut help = Help::default();
    let mut section = String::new();
    for line in text.lines() {
        if is_header(line) {
            section = line.trim_end_matches(':').to_string();
            continue;
        }
        match section.as_str() {
            "Commands" => {
                let indent = line.len() - line.trim_start().len();
                if indent == 2 {
                    if let Some(name) = line.split_whitespace().next() {
                        help.subcommands.push(name.to_string());
                    }
                }
            }
            "Arguments" | "Options" => {
                if is_arg_start(line) {
                    let body = line.trim_start();
                    let (spec, rest) = body.split_once("  ").unwrap_or((body, ""));
                    help.args.push(HelpArg {
                        spec: spec.trim().to_string(),
                        help: rest.trim().to_string(),
                    });
                } else if let Some(last) = help.args.last_mut() {
                    // A continuation line of the long layout.
                    if !line.trim().is_empty() {
                        last.help = format!("{} {}", last.help, line.trim()).trim().to_string();
                    }
                }
            }
            _ => {}
        }
    }
    help
}

/// `seal <path…> --help` of the built binary.
fn help_of(path: &[String]) -> Help {
    let out = Command::new(env!("CARGO_BIN_EXE_seal"))
        .args(path)
        .arg("--help")
        .env_remove("SEAL_LOG")
        .output()
        .unwrap_or_else(|e| panic!("seal {} --help: {e}", path.join(" ")));
    assert!(
        out.status.success(),
        "seal {} --help exited {:?}",
        path.join(" "),
        out.status
    );
    parse_help(&String::from_utf8_lossy(&out.stdout))
}

/// Every leaf command (`["log", "verify"]`, …) with its arguments, walked from `seal --help`.
fn leaf_commands() -> BTreeMap<Vec<String>, Vec<HelpArg>> {
    let mut leaves = BTreeMap::new();
    let mut todo: Vec<Vec<String>> = vec![vec![]];
    while let Some(path) = todo.pop() {
        let help = help_of(&path);
        let subs: Vec<&String> = help.subcommands.iter().filter(|s| *s != "help").collect();
        if subs.is_empty() {
            leaves.insert(path, help.args);
        } else {
            for s in subs {
                let mut next = path.clone();
                next.push(s.clone());
                todo.push(next);
            }
        }
    }
    leaves
}

/// The rows of the README table whose header row starts with `| <first> |`: each row's cells.
fn table_rows(first: &str) -> Vec<Vec<String>> {
    let header = format!("| {first} |");
    let mut lines = README.lines().skip_while(|l| !l.starts_with(&header));
    assert!(
        lines.next().is_some(),
        "README.md has no table starting {header:?}"
    );
    lines
        .skip(1) // the |---| line
        .take_while(|l| l.starts_with('|'))
        .map(split_row)
        .collect()
}

/// A table row's cells; `\|` inside a cell (as in `--json \| --html`) is not a separator.
fn split_row(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                cells.last_mut().unwrap().push('|');
            }
            '|' => cells.push(String::new()),
            _ => cells.last_mut().unwrap().push(c),
        }
    }
    cells.into_iter().map(|c| c.trim().to_string()).collect()
}

/// The text inside the backticks of a cell.
fn code_spans(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// True when `flag` occurs in `text` as a whole flag (`--witness` is not in `--witness-quorum`).
fn names_flag(text: &str, flag: &str) -> bool {
    text.match_indices(flag).any(|(i, _)| {
        let after = text[i + flag.len()..].chars().next();
        !matches!(after, Some(c) if c.is_ascii_alphanumeric() || c == '-')
    })
}

/// The command a row of the command table describes: the words of its first code span up to
/// the first argument (`seal log verify [--checkpoint OLD] …` → `["log", "verify"]`).
fn row_command(first_cell: &str) -> Option<Vec<String>> {
    let span = code_spans(first_cell).into_iter().next()?;
    let mut words = span.split_whitespace();
    if words.next() != Some("seal") {
        return None;
    }
    Some(
        words
            .take_while(|w| {
                w.chars().all(|c| c.is_ascii_lowercase() || c == '-') && !w.starts_with('-')
            })
            .map(str::to_string)
            .collect(),
    )
}

#[test]
fn readme_names_every_command_and_flag() {
    let leaves = leaf_commands();
    // The walk must have found the commands it exists for; a help layout it cannot read would
    // otherwise pass with nothing checked.
    for expected in [
        "judge",
        "serve",
        "verify",
        "log checkpoint",
        "log prove",
        "log verify",
        "log rebuild",
        "witness serve",
        "adapt verdict",
        "export verdict",
        "keygen",
    ] {
        let path: Vec<String> = expected.split(' ').map(str::to_string).collect();
        assert!(
            leaves.contains_key(&path),
            "the walk missed seal {expected}: {leaves:?}"
        );
    }
    let rows: BTreeMap<Vec<String>, String> = table_rows("command")
        .into_iter()
        .filter_map(|cells| Some((row_command(&cells[0])?, cells[0].clone())))
        .collect();
    let mut problems = Vec::new();
    for (path, args) in &leaves {
        let name = format!("seal {}", path.join(" "));
        let Some(row) = rows.get(path) else {
            problems.push(format!(
                "{name}: no row of its own in the README's command table"
            ));
            continue;
        };
        for flag in args.iter().filter_map(HelpArg::long) {
            if !GLOBAL_FLAGS.contains(&flag) && !names_flag(row, flag) {
                problems.push(format!("{name}: the README's row does not name {flag}"));
            }
        }
    }
    for path in rows.keys() {
        if !leaves.contains_key(path) {
            problems.push(format!(
                "the README's command table has a row for seal {}, which is not a command",
                path.join(" ")
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `(METHOD, /path/{})`: parameters written `{}` whatever their name (`{runId}`, `{run_id}`),
/// the query string dropped.
fn route_key(method: &str, path: &str) -> (String, String) {
    let path = path.split('?').next().unwrap_or(path);
    let mut norm = String::new();
    let mut in_param = false;
    for c in path.chars() {
        match c {
            '{' => {
                in_param = true;
                norm.push_str("{}");
            }
            '}' => in_param = false,
            _ if !in_param => norm.push(c),
            _ => {}
        }
    }
    (method.to_uppercase(), norm)
}

/// The routes the README's route table names: every code span `METHOD /path` of a first cell.
fn readme_routes() -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for cells in table_rows("route") {
        for span in code_spans(&cells[0]) {
            if let Some((m, p)) = span.split_once(' ') {
                if ["GET", "PUT", "POST", "DELETE", "PATCH"].contains(&m) && p.starts_with('/') {
                    out.insert(route_key(m, p));
                }
            }
        }
    }
    out
}

fn document_routes() -> BTreeSet<(String, String)> {
    let doc: Value = serde_json::from_str(seal_server::OPENAPI_JSON).expect("the OpenAPI bundle");
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for m in ["get", "put", "post", "delete", "patch"] {
            if item.get(m).is_some() {
                out.insert(route_key(m, path));
            }
        }
    }
    out
}

#[test]
fn readme_names_every_route_of_the_openapi_document() {
    let documented = document_routes();
    assert!(documented.len() >= 14, "{documented:?}");
    let readme = readme_routes();
    let missing: Vec<_> = documented.difference(&readme).collect();
    let unknown: Vec<_> = readme.difference(&documented).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "routes of docs/openapi.yaml missing from the README's route table: {missing:?}\n\
         rows of the README's route table that are not routes: {unknown:?}"
    );
}

#[test]
fn every_clap_argument_has_help() {
    let leaves = leaf_commands();
    let mut without: Vec<String> = Vec::new();
    for (path, args) in &leaves {
        for a in args {
            if a.own_help().is_empty() {
                without.push(format!("seal {} {}", path.join(" "), a.spec));
            }
        }
    }
    assert!(
        without.is_empty(),
        "arguments without help text: {without:?}"
    );
}

#[test]
fn help_is_read_in_both_of_clap_layouts() {
    let short = "About\n\nUsage: seal x [OPTIONS] <FILE>\n\nArguments:\n  <FILE>  The file\n\n\
                 Options:\n      --out <DIR>                \n      --json   Print JSON [default: false]\n  \
                 -h, --help  Print help\n";
    let h = parse_help(short);
    let specs: Vec<_> = h
        .args
        .iter()
        .map(|a| (a.spec.as_str(), a.own_help()))
        .collect();
    assert_eq!(
        specs,
        [
            ("<FILE>", "The file".to_string()),
            ("--out <DIR>", String::new()),
            ("--json", "Print JSON".to_string()),
            ("-h, --help", "Print help".to_string()),
        ]
    );
    assert_eq!(h.args[3].long(), Some("--help"));
    let long = "About\n\nUsage: seal r\n\nCommands:\n  verify  Check\n  help    Print\n\nOptions:\n      \
                --judges <JUDGES>\n          Where the answers come from\n\n          \
                Possible values:\n          - stored: Re-use\n\n      --again\n\n  -h, --help\n          Print help\n";
    let h = parse_help(long);
    assert_eq!(h.subcommands, ["verify", "help"]);
    assert_eq!(h.args.len(), 3);
    assert!(h.args[0]
        .own_help()
        .starts_with("Where the answers come from"));
    assert_eq!(h.args[1].own_help(), "");
    assert!(names_flag(
        "[--witness PEM] [--witness-quorum N]",
        "--witness"
    ));
    assert!(!names_flag("[--witness-quorum N]", "--witness"));
    assert_eq!(
        route_key("get", "/v1/runs/{runId}/verify?x="),
        route_key("GET", "/v1/runs/{run_id}/verify")
    );
}
