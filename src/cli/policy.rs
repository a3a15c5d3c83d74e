//! `seal policy …`: the judge policy (`seal.judge-policy/1`, docs/DESIGN.md §4) on the command
//! line: `show` prints one (the configuration's, or a stored one by digest), `diff` what changed
//! between two, `log` every registration in the transparency log.
//!
//! Exit codes: 0 shown; 1 a named policy is not stored, or does not read as one; 2 could not
//! run (config, store, no trusted key). Text from the store is made safe for a terminal.

use std::path::PathBuf;

use clap::Subcommand;

use super::args::{self, StoreArg};
use super::context::Context;
use super::error::{CliError, ExitStatus};
use super::terminal::terminal_safe;
use seal_core::canonical::Hash;
use seal_core::policy::{self, Canonical};
use seal_log::LogView;
use seal_store::Store;

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Print a judge policy as canonical JSON with its sha256: the configuration's, or the
    /// stored one of digest SHA256 (checked: its bytes hash to it and parse strictly).
    Show {
        /// The policy's sha256 (default: the policy of the configuration).
        #[arg(value_name = "SHA256", value_parser = args::sha256)]
        policy: Option<Hash>,
        /// Store URL (default: the config's).
        #[arg(long, value_name = "URL", value_parser = args::store)]
        store: Option<StoreArg>,
    },
    /// Print what changed between two judge policies, field by field: each is a stored
    /// policy's sha256, or `config` for the configuration's. Exit 0 the same, 1 changed.
    Diff {
        /// The earlier policy: a sha256, or `config`.
        before: String,
        /// The later policy: a sha256, or `config`.
        after: String,
        /// Store URL (default: the config's).
        #[arg(long, value_name = "URL", value_parser = args::store)]
        store: Option<StoreArg>,
    },
    /// List every judge policy registered in the transparency log (leaf index, time, sha256,
    /// whether its bytes are stored), oldest first; the log is read whole and every leaf
    /// authenticated under the trusted keys.
    Log {
        /// Store URL (default: the config's).
        #[arg(long, value_name = "URL", value_parser = args::store)]
        store: Option<StoreArg>,
        /// Public key trusted to sign checkpoints (SPKI PEM); repeatable; adds to keys.trusted
        /// and the public half of keys.signing_key when readable.
        #[arg(long, value_name = "PEM")]
        trust: Vec<PathBuf>,
        /// One JSON object per registration.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(ctx: &Context, cmd: PolicyCommand) -> Result<ExitStatus, CliError> {
    ctx.block_on(async {
        match cmd {
            PolicyCommand::Show { policy, store } => show(ctx, policy, store.as_ref()).await,
            PolicyCommand::Diff {
                before,
                after,
                store,
            } => diff(ctx, [&before, &after], store.as_ref()).await,
            PolicyCommand::Log { store, trust, json } => {
                log(ctx, store.as_ref(), &trust, json).await
            }
        }
    })
}

/// A policy named on the command line: `config` (or no name) for the configuration's, else a
/// stored one by its sha256, checked.
async fn named(
    ctx: &Context,
    name: Option<&str>,
    store: Option<&StoreArg>,
) -> Result<Result<Canonical, NotShown>, CliError> {
    match name {
        None | Some("config") => own(ctx).map(Ok),
        Some(name) => {
            let h = args::sha256(name).map_err(|e| CliError::Usage(e.to_string()))?;
            stored(ctx, store, &h).await
        }
    }
}

async fn show(
    ctx: &Context,
    policy: Option<Hash>,
    store: Option<&StoreArg>,
) -> Result<ExitStatus, CliError> {
    let name = policy.map(|h| h.to_string());
    let shown = match named(ctx, name.as_deref(), store).await? {
        Ok(c) => c,
        Err(e) => return Ok(refused(&e)),
    };
    println!("sha256 {}", shown.sha256);
    println!("{}", terminal_safe(&String::from_utf8_lossy(&shown.bytes)));
    Ok(ExitStatus::Yes)
}

async fn diff(
    ctx: &Context,
    names: [&String; 2],
    store: Option<&StoreArg>,
) -> Result<ExitStatus, CliError> {
    let mut pair = Vec::with_capacity(2);
    for name in names {
        match named(ctx, Some(name), store).await? {
            Ok(c) => pair.push(c),
            Err(e) => return Ok(refused(&e)),
        }
    }
    let changes = policy::diff(&pair[0].policy, &pair[1].policy);
    println!("--- {}\n+++ {}", pair[0].sha256, pair[1].sha256);
    let show = |v: &Option<String>| terminal_safe(v.as_deref().unwrap_or("(absent)")).into_owned();
    for c in &changes {
        println!("{}: {} -> {}", c.path, show(&c.before), show(&c.after));
    }
    if changes.is_empty() {
        println!("the same policy");
    }
    Ok(ExitStatus::yes_if(changes.is_empty()))
}

async fn log(
    ctx: &Context,
    store: Option<&StoreArg>,
    trust: &[PathBuf],
    json: bool,
) -> Result<ExitStatus, CliError> {
    let keys = ctx.trusted(trust, ctx.own_public_key())?;
    let url = ctx.store_url(store)?;
    let store = ctx.read_store(&url).await?;
    let trust = seal_log::trust(&ctx.config().log_origin, &keys);
    let view = LogView::load(&store, &trust).await?;
    for (index, p) in &view.policies {
        let stored = match p.sha256() {
            Some(h) => matches!(seal_engine::policy::stored(&store, &h).await?, Some(Ok(_))),
            None => false,
        };
        if json {
            let line = serde_json::json!({
                "leafIndex": index,
                "registeredAt": p.registered_at,
                "policySha256": p.policy_sha256,
                "stored": stored,
            });
            println!("{line}");
        } else {
            println!(
                "{index:>8}  {}  {}  {}",
                terminal_safe(&p.registered_at),
                terminal_safe(&p.policy_sha256),
                if stored { "stored" } else { "NOT STORED" }
            );
        }
    }
    Ok(ExitStatus::Yes)
}

/// The configuration's policy.
fn own(ctx: &Context) -> Result<Canonical, CliError> {
    seal_engine::policy::canonical(ctx.config()).map_err(CliError::failed)
}

/// Why a named policy cannot be shown.
#[derive(Debug, thiserror::Error)]
enum NotShown {
    #[error("policies/{0}.json: no such policy is stored")]
    Missing(Hash),
    #[error("policies/{0}.json: {1}")]
    Unreadable(Hash, seal_core::policy::PolicyError),
}

async fn stored(
    ctx: &Context,
    store: Option<&StoreArg>,
    sha256: &Hash,
) -> Result<Result<Canonical, NotShown>, CliError> {
    let url = ctx.store_url(store)?;
    let store: Store = ctx.read_store(&url).await?;
    Ok(match seal_engine::policy::stored(&store, sha256).await? {
        Some(Ok(c)) => Ok(c),
        Some(Err(e)) => Err(NotShown::Unreadable(sha256.clone(), e)),
        None => Err(NotShown::Missing(sha256.clone())),
    })
}

fn refused(e: &NotShown) -> ExitStatus {
    eprintln!("seal: {}", terminal_safe(&e.to_string()));
    ExitStatus::No
}
