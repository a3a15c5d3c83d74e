//! The inline SVG of a decision tree. Pure.
//!
//! Layout: nodes in tree order, grouped into stages (the run, a roll's play, its guard
//! checks, blinding and judges, its obligations, its outcome, the merge, the postguard, the
//! decision, the outcomes); each stage starts a row and wraps after [`COLS`] boxes. An edge
//! to the next row is a curve; an edge that skips rows runs down a lane at the right. Edges
//! of the selected path are thick and drawn last; nodes off the path are dashed and grey.
//! Every box links to its evidence on the page. All text is escaped.

use std::collections::BTreeMap;

use crate::doc::{DecisionTree, EdgeTone, NodeOwner, NodeStatus, TreeEdge};
use crate::html::esc;

const COLS: usize = 5;
const W: i64 = 216;
const H: i64 = 62;
const GAP_X: i64 = 16;
const GAP_Y: i64 = 46;
const MARGIN: i64 = 14;
const LANE: i64 = 70;

/// The stage of a node, from its id.
fn stage(id: &str) -> String {
    let parts: Vec<&str> = id.split('-').collect();
    match parts.as_slice() {
        ["pg", ..] => "pg".into(),
        ["outcome", ..] => "outcome".into(),
        ["review", ..] => "review".into(),
        [r, "start"] | [r, "floor"] => format!("{r}-play"),
        [r, "guard", ..] => format!("{r}-guard"),
        [r, "blinding"] | [r, "judge", ..] | [r, "independence"] => format!("{r}-dispatch"),
        [r, "ob", ..] | [r, "conflicts"] => format!("{r}-ob"),
        _ => id.to_string(),
    }
}

#[derive(Clone, Copy)]
struct Cell {
    x: i64,
    y: i64,
    row: i64,
}

fn layout(t: &DecisionTree) -> (BTreeMap<&str, Cell>, i64) {
    let mut cells = BTreeMap::new();
    let mut row: i64 = -1;
    let mut col = COLS;
    let mut last_stage = String::new();
    for n in &t.nodes {
        let s = stage(&n.id);
        if s != last_stage || col >= COLS {
            row += 1;
            col = 0;
            last_stage = s;
        }
        let x = MARGIN + col as i64 * (W + GAP_X);
        let y = MARGIN + row * (H + GAP_Y);
        cells.insert(n.id.as_str(), Cell { x, y, row });
        col += 1;
    }
    (cells, row + 1)
}

fn fmt_status(s: NodeStatus) -> &'static str {
    match s {
        NodeStatus::Pass => "✓",
        NodeStatus::Guard => "!",
        NodeStatus::Blocked => "✕",
        NodeStatus::Neutral => "·",
    }
}

/// Renders the tree as an `<svg>` element.
pub fn render(t: &DecisionTree) -> String {
    let (cells, rows) = layout(t);
    let width = MARGIN * 2 + COLS as i64 * W + (COLS as i64 - 1) * GAP_X + LANE;
    let height = MARGIN * 2 + rows * (H + GAP_Y) - GAP_Y;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" role=\"img\" aria-label=\"decision tree\">"
    );
    s.push_str(DEFS);
    let on_path: std::collections::BTreeSet<&str> = t
        .edges
        .iter()
        .filter(|e| e.selected)
        .flat_map(|e| [e.from.as_str(), e.to.as_str()])
        .chain(std::iter::once(t.root_node_id.as_str()))
        .collect();
    let mut out_degree: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &t.edges {
        *out_degree.entry(e.from.as_str()).or_default() += 1;
    }
    let mut lane = 0;
    for selected in [false, true] {
        for e in t.edges.iter().filter(|e| e.selected == selected) {
            let (Some(a), Some(b)) = (cells.get(e.from.as_str()), cells.get(e.to.as_str())) else {
                continue;
            };
            let branch = out_degree.get(e.from.as_str()).copied().unwrap_or(0) > 1;
            s.push_str(&edge(e, *a, *b, branch, width, &mut lane));
        }
    }
    for n in &t.nodes {
        let Some(c) = cells.get(n.id.as_str()) else {
            continue;
        };
        // A person's review is off the sealed path but was made: drawn in its status colour.
        let human = n.owner == NodeOwner::Human;
        let on = on_path.contains(n.id.as_str()) || human;
        let detail = two_lines(&n.detail, DETAIL_CHARS);
        s.push_str(&format!(
            "<a href=\"{}\" id=\"node-{}\" class=\"node {} {}{}\"><title>{}: {}</title><rect x=\"{}\" y=\"{}\" width=\"{W}\" height=\"{H}\" rx=\"7\" class=\"box\"/><text x=\"{}\" y=\"{}\" class=\"glyph\">{}</text><text x=\"{}\" y=\"{}\" class=\"t1\">{}</text><text x=\"{}\" y=\"{}\" class=\"t2\">{}</text><text x=\"{}\" y=\"{}\" class=\"t2\">{}</text></a>",
            esc(n.evidence_ref.as_str()),
            esc(&n.id),
            if on { "on" } else { "off" },
            n.status.as_str(),
            if human { " human" } else { "" },
            esc(&n.title),
            esc(&n.detail),
            c.x,
            c.y,
            c.x + 9,
            c.y + 22,
            fmt_status(n.status),
            c.x + 26,
            c.y + 22,
            esc(&crate::contracts::shorten(&n.title, 22)),
            c.x + 26,
            c.y + 39,
            esc(&detail[0]),
            c.x + 26,
            c.y + 53,
            esc(&detail[1]),
        ));
    }
    s.push_str("</svg>");
    s
}

/// Characters of a box's detail line (10.5px text in a box of [`W`]).
const DETAIL_CHARS: usize = 28;

/// `text` on two lines of at most `max` characters, broken between words where it can; the
/// second ends in an ellipsis when the text is longer.
fn two_lines(text: &str, max: usize) -> [String; 2] {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= max {
        return [text.to_string(), String::new()];
    }
    let cut = chars[..=max]
        .iter()
        .rposition(|c| c.is_whitespace())
        .filter(|&i| i > max / 2)
        .unwrap_or(max);
    let first: String = chars[..cut].iter().collect();
    let rest: String = chars[cut..].iter().collect();
    [
        first.trim_end().to_string(),
        crate::contracts::shorten(rest.trim_start(), max),
    ]
}

fn edge(e: &TreeEdge, a: Cell, b: Cell, branch: bool, width: i64, lane: &mut i64) -> String {
    let class = format!(
        "edge {} {}",
        if e.selected { "sel" } else { "alt" },
        match e.tone {
            EdgeTone::Continue => "continue",
            EdgeTone::Guard => "guard",
            EdgeTone::Success => "success",
        }
    );
    let marker = if e.selected {
        "url(#ah-sel)"
    } else {
        "url(#ah-alt)"
    };
    let (d, lx, ly, anchor) = if a.row == b.row && b.x > a.x {
        let y = a.y + H / 2;
        (
            format!("M{} {y} H{}", a.x + W, b.x - 2),
            (a.x + W + b.x) / 2,
            y - 5,
            "middle",
        )
    } else if b.row == a.row + 1 {
        let (x1, y1, x2, y2) = (a.x + W / 2, a.y + H, b.x + W / 2, b.y - 2);
        let my = (y1 + y2) / 2;
        // The label sits above the target box, where no other edge's label goes.
        (
            format!("M{x1} {y1} C{x1} {my} {x2} {my} {x2} {y2}"),
            b.x + 4,
            b.y - 7,
            "start",
        )
    } else {
        *lane += 1;
        let lx = width - LANE + 10 + (*lane % 6) * 9;
        let (y1, y2) = (a.y + H / 2, b.y + H / 2);
        (
            format!("M{} {y1} H{lx} V{y2} H{}", a.x + W, b.x + W + 2),
            lx - 6,
            y2 - 6,
            "end",
        )
    };
    let label = if branch || e.selected && a.row + 1 < b.row {
        format!(
            "<text x=\"{lx}\" y=\"{ly}\" text-anchor=\"{anchor}\" class=\"lbl\">{}</text>",
            esc(&crate::contracts::shorten(&e.label, 30))
        )
    } else {
        String::new()
    };
    format!(
        "<g class=\"{class}\" data-from=\"{}\" data-to=\"{}\" data-selected=\"{}\"><title>{}</title><path d=\"{d}\" marker-end=\"{marker}\"/>{label}</g>",
        esc(&e.from),
        esc(&e.to),
        e.selected,
        esc(&e.label)
    )
}

const DEFS: &str = r##"<defs><marker id="ah-sel" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 z" fill="#0969da"/></marker><marker id="ah-alt" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 z" fill="#afb8c1"/></marker></defs>"##;
