//! Escaping of untrusted text for the page: one function for HTML text, quoted attribute
//! values and inline SVG text. Pure.

/// Escapes text for HTML text and quoted attribute values (and SVG text, which the HTML
/// parser reads the same way). Control characters other than tab and newline are replaced.
pub fn esc(s: &str) -> String {
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
            c => out.push(c),
        }
    }
    out
}
