//! What commands write: progress bars, shell words, output files, and text made safe for a terminal.
//!
//! An output file (`--out`, `--html FILE`) is always a new file, never written through a link
//! ([`seal_fs::fsio::write_new`]; docs/DECISIONS.md, "Output files are never overwritten").

use std::path::Path;

use super::error::CliError;
pub use super::terminal::terminal_safe;

pub(super) fn progress(len: u64, wanted: bool) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if wanted && std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(len);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} runs {per_sec} ETA {eta} elapsed {elapsed} {msg}",
        ) {
            bar.set_style(style);
        }
        bar
    } else {
        indicatif::ProgressBar::hidden()
    }
}

/// Quotes a word for a POSIX shell when it needs quoting.
pub(super) fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Writes `bytes` to a new file `out` (mode 0644), or to stdout.
pub(super) fn write_output(out: Option<&Path>, bytes: &[u8]) -> Result<(), CliError> {
    use std::io::Write;
    match out {
        Some(p) => {
            seal_fs::fsio::write_new(p, bytes, 0o644)?;
            eprintln!("wrote {}", p.display());
            Ok(())
        }
        None => {
            let mut stdout = std::io::stdout();
            stdout
                .write_all(bytes)
                .and_then(|()| stdout.flush())
                .map_err(CliError::io("stdout"))
        }
    }
}
