//! The reviewers' read tokens (`reviewers.tokens_env`, default `SEAL_REVIEWER_TOKENS`): what a
//! person types at the review workbench's login page (`/review/login`) to get a session.
//!
//! Read from the environment only, never from the TOML (a config file is committed and
//! rendered into manifests; a token is a secret). The value is `name:token` pairs separated by
//! commas or whitespace. The name is the label the workbench puts on a person's reviews (the
//! key is the identity); the token opens the workbench's reads and its review form, nothing
//! under `/v1/` (the pipeline's bearer token stays the pipeline's).

use super::{env_error, ConfigError, Secret};

/// Shortest token accepted (characters): a guessable token would open every sealed run's
/// evidence to whoever guesses it.
pub const MIN_TOKEN_CHARS: usize = 16;
/// Longest reviewer name.
pub const MAX_NAME_CHARS: usize = 64;

/// One reviewer's read token.
#[derive(Debug, Clone)]
pub struct ReviewerToken {
    /// `[A-Za-z0-9._@-]`, at most [`MAX_NAME_CHARS`].
    pub name: String,
    pub token: Secret,
}

/// Parses the value of `var` (see the module doc); an empty or unset value is no token.
pub fn parse(var: &str, value: Option<&str>) -> Result<Vec<ReviewerToken>, ConfigError> {
    let bad = |reason: String| env_error(var, None, reason);
    let mut out: Vec<ReviewerToken> = Vec::new();
    let pairs = value
        .unwrap_or("")
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|p| !p.is_empty());
    for (i, pair) in pairs.enumerate() {
        let Some((name, token)) = pair.split_once(':') else {
            return Err(bad(format!("entry {} is not name:token", i + 1)));
        };
        let name_ok = !name.is_empty()
            && name.chars().count() <= MAX_NAME_CHARS
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._@-".contains(c));
        if !name_ok {
            return Err(bad(format!(
                "entry {}: a reviewer name is 1-{MAX_NAME_CHARS} of A-Z a-z 0-9 . _ @ -",
                i + 1
            )));
        }
        if token.chars().count() < MIN_TOKEN_CHARS || token.chars().any(|c| c.is_control()) {
            return Err(bad(format!(
                "entry {} ({name}): a token is at least {MIN_TOKEN_CHARS} printable characters",
                i + 1
            )));
        }
        if out.iter().any(|t| t.name == name) {
            return Err(bad(format!("reviewer {name} is named twice")));
        }
        out.push(ReviewerToken {
            name: name.to_string(),
            token: Secret::new(token.to_string()),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_parse_and_bad_ones_are_named() {
        let t = parse("V", Some("ada:0123456789abcdef, grace:fedcba9876543210\n")).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[1].name, "grace");
        assert_eq!(t[1].token.expose(), "fedcba9876543210");
        assert!(parse("V", None).unwrap().is_empty());
        for (value, needle) in [
            ("ada", "not name:token"),
            ("ada:short", "at least 16"),
            ("a<b>:0123456789abcdef", "reviewer name"),
            ("ada:0123456789abcdef ada:0123456789abcdeg", "named twice"),
        ] {
            let e = parse("V", Some(value)).unwrap_err().to_string();
            assert!(e.contains(needle) && e.contains('V'), "{value}: {e}");
            assert!(!e.contains("0123456789abcdef"), "a token in an error: {e}");
        }
    }
}
