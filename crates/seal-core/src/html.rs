//! What every page seal renders shares (`seal explain` and `seal stats --html`): one escaping
//! function for HTML text, quoted attribute values and inline SVG text, and the pages'
//! Content-Security-Policy. Pure.
//!
//! Bidirectional controls (embeddings and overrides U+202A–U+202E, isolates U+2066–U+2069, marks
//! U+200E, U+200F and U+061C) are shown as visible markers `[U+202E]`, neither kept nor dropped
//! (docs/DECISIONS.md, "The page").

/// The pages' Content-Security-Policy (also sent as a header by `seal serve`).
pub const CSP: &str =
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

/// Whether `c` is a bidirectional formatting character: embeddings and overrides, isolates,
/// and the implicit marks (LRM, RLM, ALM).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// Escapes text for HTML text and quoted attribute values (and SVG text, which the HTML
/// parser reads the same way). Control characters other than tab and newline are replaced;
/// bidirectional controls are shown as `[U+XXXX]`.
pub fn esc(s: &str) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' => out.push(c),
            c if c.is_control() => out.push('\u{fffd}'),
            c if is_bidi_control(c) => {
                let _ = write!(out, "[U+{:04X}]", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_controls_are_shown_as_visible_markers() {
        let all = "\u{202A}\u{202B}\u{202C}\u{202D}\u{202E}\u{2066}\u{2067}\u{2068}\u{2069}\u{200E}\u{200F}\u{061C}";
        let shown = esc(&format!("pass{all}liaf"));
        assert_eq!(
            shown,
            "pass[U+202A][U+202B][U+202C][U+202D][U+202E][U+2066][U+2067][U+2068][U+2069]\
             [U+200E][U+200F][U+061C]liaf"
        );
        assert!(!shown.chars().any(is_bidi_control));
        // Neighbours that are not bidi controls are left alone (zero-width joiner, Arabic).
        assert_eq!(esc("a\u{200D}b \u{0627}"), "a\u{200D}b \u{0627}");
    }
}
