//! Text from games, models or a store, made safe for a terminal: a leaf, so that errors
//! ([`super::error`]) and output ([`super::output`]) both print through it.

/// Text from games, models or a store, made safe for a terminal: control characters (C0, C1,
/// DEL: an ESC would let a judge's rationale repaint the screen) and bidirectional overrides
/// (U+202A–U+202E, U+2066–U+2069: they reorder what a reviewer reads) are written as `\u{…}`.
pub fn terminal_safe(s: &str) -> std::borrow::Cow<'_, str> {
    let hostile =
        |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !s.chars().any(hostile) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if hostile(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Multi-line text, line by line through [`terminal_safe`]: the line breaks stay, every other
/// control character is escaped. For a verified checkpoint note (its signed body is seal's, but
/// other keys' signature lines ride along unverified, and signed_note lets DEL, C1 controls
/// and bidi overrides through) and for `seal stats`' table (model names and obligation ids
/// come from judges and the store).
pub fn lines_for_terminal(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|line| match line.strip_suffix('\n') {
            Some(l) => format!("{}\n", terminal_safe(l)),
            None => terminal_safe(line).into_owned(),
        })
        .collect()
}

#[cfg(test)]
mod terminal_tests {
    use super::terminal_safe;

    #[test]
    fn escapes_reach_the_terminal_only_as_text() {
        assert_eq!(terminal_safe("plain"), "plain");
        assert_eq!(
            terminal_safe("a\u{1b}[2Jb\u{202e}c\nd"),
            "a\\u{1b}[2Jb\\u{202e}c\\u{a}d"
        );
    }
}
