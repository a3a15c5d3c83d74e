//! `seal judge`: a run folder judged and sealed, and the one-screen summary of the result.
//!
//! Exit 0 sealed (or already sealed from the same folder); 1 the folder refused (a document
//! invalid, a hash that does not match, a decided run the folder would change: the caller's
//! fault, judged); 2 could not run (the folder missing or not a folder, a refused
//! `memory://` store, key, config, store, judges or log unusable).

use std::path::PathBuf;

use seal_core::fault::{Fault, HasFault};
use seal_engine::summary;
use seal_store::StoreUrl;

use super::args::{self, StoreArg};
use super::context::{Context, Opening};
use super::error::{refused, CliError, ExitStatus};

#[derive(Debug, clap::Args)]
pub struct JudgeArgs {
    /// The run folder (header.json, brief.md, roll-1/…, blobs/…).
    pub run_dir: PathBuf,
    /// Store URL (default: the config's, file://./var/store).
    #[arg(long, value_name = "URL", value_parser = args::store)]
    pub store: Option<StoreArg>,
    /// Signing key (default: keys.signing_key of the config).
    #[arg(long, value_name = "PEM")]
    pub key: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// Allow a `memory://` store: the evidence vanishes when seal exits, although the
    /// judges are called (and paid) for real.
    #[arg(long)]
    pub allow_ephemeral_store: bool,
}

pub fn run(ctx: &Context, args: JudgeArgs) -> Result<ExitStatus, CliError> {
    let url = ctx.store_url(args.store.as_ref())?;
    if !args.allow_ephemeral_store && *url.url() == StoreUrl::Memory {
        return Err(CliError::Usage(
            "refusing to judge into memory://: the sealed evidence would vanish at exit \
             while the judges are paid; pass --allow-ephemeral-store if that is meant"
                .into(),
        ));
    }
    let signing = ctx.signing(args.key.as_deref())?;
    // A folder that is not there is no input to judge (exit 2); what it holds is judged.
    seal_fs::fsio::require_folder(&args.run_dir)?;
    let limit = ctx.config().max_document_bytes;
    let folder = match seal_fs::runfolder::RunFolder::read(&args.run_dir, limit) {
        Ok(f) => f,
        Err(e) => return Ok(refused(&e)),
    };
    ctx.judge_keys(&signing)?;
    ctx.block_on(async {
        let store = ctx
            .write_store(&signing, &url, Opening::CreateIfMissing)
            .await?;
        let engine = ctx.engine(signing, store)?;
        // The log must account for the store before any judge is paid (G2, §13).
        if let Some(key) = engine.key() {
            engine
                .log()
                .admit(key, &[])
                .await
                .map_err(CliError::failed)?;
        }
        let judged = seal_engine::judge_run::judge(&engine, &folder).await;
        // The checkpoint this process published reaches the witnesses before it exits.
        engine.witnesses().settle().await;
        let done = match judged {
            Ok(done) => done,
            Err(e) if e.fault() == Fault::Caller => return Ok(refused(&e)),
            Err(e) => return Err(CliError::failed(e)),
        };
        let summary = summary::summarize(engine.store(), &done).await?;
        if args.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&summary).unwrap_or_default()
            );
        } else {
            print!("{}", render(&summary));
        }
        Ok(ExitStatus::Yes)
    })
}

/// The one-screen text form.
pub fn render(s: &summary::Summary) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "run {}: {} -> {} ({})",
        s.run_id,
        s.outcome.to_uppercase(),
        s.decision,
        seal_core::vocab::join(&s.reasons, ", ")
    );
    let rolls: Vec<String> = s
        .rolls
        .iter()
        .map(|r| format!("{} {}", r.roll_id, r.outcome))
        .collect();
    let _ = writeln!(
        o,
        "rolls: {}; source roll: {}; postguard: {}",
        rolls.join(", "),
        s.source_roll_id.as_deref().unwrap_or("none"),
        if s.postguard_passed {
            "passed"
        } else {
            "FAILED"
        }
    );
    let w = s
        .obligations
        .iter()
        .map(|r| r.id.len())
        .max()
        .unwrap_or(10)
        .max(10);
    let _ = writeln!(
        o,
        "\n  {:<w$}  {:<8}  {:<12}  {:<12}  consensus",
        "obligation", "required", "judge A", "judge B"
    );
    for r in &s.obligations {
        let _ = writeln!(
            o,
            "  {:<w$}  {:<8}  {:<12}  {:<12}  {}",
            r.id,
            if r.required { "yes" } else { "no" },
            r.a,
            r.b,
            r.consensus
        );
    }
    for c in &s.conflicts {
        let _ = writeln!(o, "  conflict: {c}");
    }
    let _ = writeln!(o, "\ncost: {:.4} RMB", s.cost_rmb);
    let _ = writeln!(
        o,
        "evidence: {} {} sha256:{}",
        s.store, s.evidence_ref, s.evidence_sha256
    );
    let _ = writeln!(
        o,
        "seal:     {} sha256:{} keyid {}{}",
        s.seal_ref,
        s.seal_sha256,
        s.key_id,
        if s.wrote { "" } else { " (already sealed)" }
    );
    o
}
