//! `seal review`: a person's decision on a sealed run, signed with their own key, logged, then
//! stored beside the run (`runs/<id>/reviews/<n>.dsse.json`); the sealed evidence and seal are
//! never touched (`seal_engine::reviewing`).
//!
//! Exit 0 stored, 1 refused (the run does not verify; the review is untrusted, names an
//! obligation the run lacks, or lost its index), 2 could not run (no such run, no store, a key
//! file, a bad `--set`).

use std::path::PathBuf;

use seal_core::ids::RunId;
use seal_core::review::{ObligationDecision, Status};
use seal_core::sealing::{PublicKey, SigningKey};
use seal_engine::engine::Clock as _;
use seal_engine::reviewing::{SubmitError, Trust};

use super::args::{self, StoreArg};
use super::context::Context;
use super::error::{refused, CliError, ExitStatus};
use super::output::terminal_safe;

#[derive(Debug, clap::Args)]
pub struct ReviewArgs {
    /// The run id.
    #[arg(value_parser = args::run_id)]
    pub run_id: RunId,
    /// The reviewer's own ed25519 private key (PKCS#8 PEM, mode 0600): never the seal key.
    #[arg(long, value_name = "REVIEWER_KEY")]
    pub key: PathBuf,
    /// The reviewer's name (a label; the key is the identity).
    #[arg(long, value_name = "NAME")]
    pub reviewer: String,
    /// A decision, OBLIGATION=satisfied|failed|missing; repeatable, at least one.
    #[arg(long = "set", value_name = "OBLIGATION=STATUS", required = true, value_parser = decision)]
    pub decisions: Vec<ObligationDecision>,
    /// A note (free text; escaped wherever it is shown).
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// Store URL (default: the config's).
    #[arg(long, value_name = "URL", value_parser = args::store)]
    pub store: Option<StoreArg>,
    /// Trusted seal public key (SPKI PEM); repeatable; adds to keys.trusted of the config.
    #[arg(long, value_name = "PEM")]
    pub trust: Vec<PathBuf>,
    /// Trusted reviewer public key (SPKI PEM); repeatable; adds to reviewers.trusted. The
    /// review's key must be one of them.
    #[arg(long, value_name = "PEM")]
    pub trust_reviewer: Vec<PathBuf>,
    /// The key that signs the log's checkpoint (default: keys.signing_key of the config).
    #[arg(long, value_name = "PEM")]
    pub log_key: Option<PathBuf>,
    /// The witnesses the log checkpoint must carry, as `seal verify` takes them.
    #[command(flatten)]
    pub witnesses: args::WitnessArgs,
}

/// `OBLIGATION=STATUS`.
fn decision(s: &str) -> Result<ObligationDecision, super::args::ArgError> {
    let (id, status) = s
        .rsplit_once('=')
        .ok_or(super::args::ArgError::NoDecision)?;
    if id.is_empty() {
        return Err(super::args::ArgError::EmptyObligation);
    }
    Ok(ObligationDecision {
        obligation_id: id.to_string(),
        status: status.parse::<Status>()?,
    })
}

pub fn run(ctx: &Context, args: ReviewArgs) -> Result<ExitStatus, CliError> {
    let trusted = ctx.trusted(&args.trust, None)?;
    let reviewers = ctx.reviewer_keys(&args.trust_reviewer)?;
    let reviewer_key = seal_fs::keys::load_signing_key(&args.key)?;
    // Trusted here by `--trust-reviewer` alone, the review is stored, but every `seal verify`
    // on the configuration (the nightly one, the daemon's /verify) fails the run for it.
    let configured = ctx
        .reviewer_keys(&[])?
        .iter()
        .any(|k| k.key_id == reviewer_key.key_id);
    let signing = ctx.signing(args.log_key.as_deref())?;
    let url = ctx.store_url(args.store.as_ref())?;
    let run = &args.run_id;
    let done = ctx.block_on(async {
        let store = ctx.read_store(&url).await?;
        ctx.named_run(&store, &url, run).await?;
        let envelope =
            match signed_review(ctx, &store, &args, &trusted, &reviewers, &reviewer_key).await? {
                Ok(envelope) => envelope,
                Err(e) => return Ok(Err(e)),
            };
        let trust = Trust {
            seal: &trusted,
            reviewers: &reviewers,
        };
        let log = seal_log::Log::new(store.clone(), &ctx.config().log_origin);
        Ok::<_, CliError>(
            seal_engine::reviewing::submit(&store, &log, signing.key(), trust, run, &envelope)
                .await,
        )
    })?;
    if done.is_ok() && !configured {
        eprintln!(
            "seal: warning: reviewer key {} is not in reviewers.trusted of {}: `seal verify` \
             without --trust-reviewer for it (the nightly verify, the daemon's /verify) will \
             fail run {run} until its public key is added there",
            reviewer_key.key_id,
            terminal_safe(&ctx.config().source)
        );
    }
    report(run, &url, &reviewer_key, done)
}

/// The reviewer's signed statement about what they were shown: the run's decision tree, once
/// the run verifies as `seal verify` would (its log, its witness policy, these reviewer keys),
/// and the chain of reviews as stored.
async fn signed_review(
    ctx: &Context,
    store: &seal_store::Store,
    args: &ReviewArgs,
    trusted: &[PublicKey],
    reviewers: &[PublicKey],
    reviewer_key: &SigningKey,
) -> Result<Result<Vec<u8>, SubmitError>, CliError> {
    let run = &args.run_id;
    let verifier = ctx
        .verifier(
            store,
            trusted.to_vec(),
            &args.witnesses,
            seal_engine::verify::Scope::Runs(std::slice::from_ref(run)),
        )
        .await?
        .with_reviewers(reviewers.to_vec());
    // What the reviewer was shown: the run's decision tree (which also proves the run).
    let shown = match seal_engine::explain_load::explain(store, run, &verifier).await {
        Ok(e) => e.tree_hash,
        Err(seal_engine::explain_load::ExplainError::NotVerified(report)) => {
            return Ok(Err(SubmitError::NotVerified(report)))
        }
        Err(e) => return Err(CliError::failed(e)),
    };
    let proof = match verifier.prove(store, run).await? {
        Ok(p) => p,
        Err(report) => return Ok(Err(SubmitError::NotVerified(Box::new(report)))),
    };
    let mut facts = seal_engine::reviewing::facts(run, &proof, trusted);
    // The chain as stored (each review re-checked by `submit`).
    seal_engine::reviewing::read_checked(store, run, &mut facts, reviewers).await?;
    let now = seal_engine::engine::SystemClock.now_rfc3339();
    let statement = facts.statement(
        &args.reviewer,
        &now,
        args.decisions.clone(),
        args.note.clone(),
        &shown,
    );
    seal_core::review::sign(reviewer_key, &statement)
        .map(Ok)
        .map_err(|e| CliError::Usage(e.to_string()))
}

/// What the command prints and exits with for a submitted review.
fn report(
    run: &RunId,
    url: &StoreArg,
    reviewer_key: &SigningKey,
    done: Result<seal_engine::reviewing::Stored, SubmitError>,
) -> Result<ExitStatus, CliError> {
    match done {
        Ok(stored) => {
            println!(
                "review {} of run {} stored: {} (sha256 {}, log leaf {}, reviewer key {})",
                stored.index,
                run,
                stored.key,
                stored.sha256,
                stored.leaf_index,
                reviewer_key.key_id
            );
            Ok(ExitStatus::Yes)
        }
        Err(SubmitError::NotVerified(report)) => {
            eprintln!("seal: run {run} does not verify; it is not reviewed:");
            for p in &report.problems {
                eprintln!("    {}", terminal_safe(&p.to_string()));
            }
            Ok(ExitStatus::No)
        }
        Err(e @ (SubmitError::Refused { .. } | SubmitError::Stored { .. })) => Ok(refused(&e)),
        Err(SubmitError::NotFound { run }) => Err(CliError::NoRun {
            run,
            store: url.to_string(),
        }),
        Err(e) => Err(CliError::failed(e)),
    }
}
