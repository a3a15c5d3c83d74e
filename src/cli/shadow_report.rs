//! `seal shadow-report`: the legacy agent-loop Verdicts of a ledger against the verified
//! `v3_shadow` runs of a store, as a table, `seal.shadow-report/1` JSON or a page.
//!
//! Exit 0 the report was made (runs that do not verify and ledger lines that are not Verdicts
//! are listed in it, not an answer of no), 2 could not run: the ledger unreadable (a link, a
//! folder, absent), no store, no trusted key, an existing `--html` file, a bad option value.

use std::path::PathBuf;

use seal_core::shadow::ledger::read_ledger;

use super::args::{self, StoreArg};
use super::context::Context;
use super::error::{CliError, ExitStatus};
use super::output::write_output;

#[derive(Debug, clap::Args)]
pub struct ShadowReportArgs {
    /// The agent-loop ledger (JSONL): rows with "type": "verdict" are Verdicts, other rows are
    /// skipped, the latest Verdict of a design wins.
    #[arg(long, value_name = "LEDGER.jsonl")]
    pub verdicts: PathBuf,
    /// Store URL (default: the config's).
    #[arg(long, value_name = "URL", value_parser = args::store)]
    pub store: Option<StoreArg>,
    /// Trusted public key (SPKI PEM); repeatable; adds to keys.trusted of the config.
    #[arg(long, value_name = "PEM")]
    pub trust: Vec<PathBuf>,
    /// Base URL of a seal daemon (http or https): the page links each disagreement to
    /// URL/v1/runs/<id>/explain instead of showing the seal explain command.
    #[arg(long, value_name = "URL", value_parser = explain_base, requires = "html")]
    pub explain_base: Option<String>,
    /// Print the report as canonical JSON (seal.shadow-report/1).
    #[arg(long, conflicts_with = "html")]
    pub json: bool,
    /// Write the page (self-contained HTML, no script) to FILE, a new file (never overwritten,
    /// never through a link).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// `--explain-base URL`: an absolute http(s) URL with a host, at most 2048 characters; it is
/// escaped where the page shows it, and checked here so a `javascript:` link never reaches it.
fn explain_base(s: &str) -> Result<String, super::args::ArgError> {
    let ok_scheme = s.starts_with("http://") || s.starts_with("https://");
    let host = s.split("://").nth(1).unwrap_or("");
    let ok = ok_scheme
        && s.len() <= 2048
        && !host.is_empty()
        && !host.starts_with('/')
        && !s.chars().any(|c| c.is_control() || c.is_whitespace());
    if ok {
        Ok(s.to_string())
    } else {
        Err(super::args::ArgError::Url)
    }
}

pub fn run(ctx: &Context, args: ShadowReportArgs) -> Result<ExitStatus, CliError> {
    let trusted = ctx.trusted(&args.trust, None)?;
    let url = ctx.store_url(args.store.as_ref())?;
    let limit = ctx.config().max_document_bytes;
    let file = seal_fs::fsio::open(&args.verdicts)?;
    let (ledger, sha) =
        read_ledger(std::io::BufReader::new(file), limit).map_err(|e| CliError::Io {
            what: format!("reading {}", args.verdicts.display()),
            source: e,
        })?;
    if ledger.verdict_rows == 0 {
        eprintln!(
            "seal: {} has no valid verdict row (\"type\": \"verdict\"): every run is unmatched",
            args.verdicts.display()
        );
    }
    let shadow = ctx.block_on(async {
        let store = ctx.read_store(&url).await?;
        seal_engine::shadow_load::report(&store, &trusted, &ledger, &sha)
            .await
            .map_err(CliError::failed)
    })?;
    let not_verified = shadow.report.runs.not_verified.len();
    if not_verified > 0 {
        eprintln!(
            "seal: {not_verified} decided run(s) do not verify and are not paired (listed in the report)"
        );
    }
    if let Some(path) = &args.html {
        let page = seal_core::shadow::html::render(&shadow.report, args.explain_base.as_deref());
        write_output(Some(path), page.as_bytes())?;
    } else if args.json {
        write_output(None, &shadow.bytes)?;
    } else {
        write_output(
            None,
            seal_core::shadow::text::render(&shadow.report).as_bytes(),
        )?;
    }
    Ok(ExitStatus::Yes)
}

#[cfg(test)]
mod tests {
    use super::explain_base;

    #[test]
    fn explain_base_takes_only_http_urls_with_a_host() {
        assert!(explain_base("https://seal.internal").is_ok());
        assert!(explain_base("http://127.0.0.1:8080/").is_ok());
        for bad in [
            "javascript:alert(1)",
            "https://",
            "https:///x",
            "ftp://x",
            "https://a b",
            "seal.internal",
        ] {
            assert!(explain_base(bad).is_err(), "{bad}");
        }
    }
}
