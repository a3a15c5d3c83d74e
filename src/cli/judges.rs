//! `seal judges check`: one tiny request per configured judge slot (about 40 tokens each),
//! through the same HTTP path as the attempts, printed as a table (or JSON lines).
//!
//! Exit 0 every check passed; 1 some check failed (the table says which and why); 2 could not
//! run (config, a judge key or header variable unset).

use seal_core::ids::Slot;
use seal_engine::judge_http::check::{self, SlotCheck};

use super::context::Context;
use super::error::{CliError, ExitStatus};
use super::terminal::terminal_safe;

#[derive(Debug, clap::Subcommand)]
pub enum JudgesCommand {
    /// Send one minimal request (about 40 tokens) to each judge slot: reachability, auth, model,
    /// structured output, latency. Stores nothing. Exit 0 all ok, 1 some check failed, 2 could
    /// not run.
    Check(CheckArgs),
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Check this slot only (a or b).
    #[arg(long, value_name = "SLOT", value_parser = ["a", "b"])]
    pub slot: Option<String>,
    /// One JSON object per slot instead of the table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(ctx: &Context, cmd: JudgesCommand) -> Result<ExitStatus, CliError> {
    let JudgesCommand::Check(args) = cmd;
    let slots: Vec<Slot> = match args.slot.as_deref() {
        Some("a") => vec![Slot::A],
        Some(_) => vec![Slot::B],
        None => vec![Slot::A, Slot::B],
    };
    // Like serve and judge: a key that is not set is refused, never sent as no key; only the
    // slots checked need theirs (checking A on a host that has only A's key is the point).
    ctx.config()
        .slot_credentials(&slots)
        .map_err(CliError::failed)?;
    // One slot after the other: two requests, and a table in slot order.
    let rows: Vec<SlotCheck> = ctx.block_on(async {
        let mut rows = Vec::new();
        for s in &slots {
            rows.push(check::check_slot(ctx.config(), ctx.config().slot(*s)).await);
        }
        rows
    });
    let text = if args.json {
        rows.iter()
            .map(|r| serde_json::to_string(r).unwrap_or_default() + "\n")
            .collect()
    } else {
        table(&rows)
    };
    print!("{text}");
    Ok(ExitStatus::yes_if(rows.iter().all(SlotCheck::passed)))
}

/// The table: one row per slot, every value made safe for a terminal. Under a failed row, the
/// URL posted to and (structured output) what the judge answered; under any row, the note of a
/// base URL seal changed.
pub fn table(rows: &[SlotCheck]) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<4} {:<28} {:<24} {:<5} {:<5} {:<5} {:<10} {:>8}  detail",
        "slot", "host", "model", "reach", "auth", "model", "structured", "latency"
    );
    for r in rows {
        let latency = r
            .latency_ms
            .map(|ms| format!("{ms} ms"))
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            o,
            "{:<4} {:<28} {:<24} {:<5} {:<5} {:<5} {:<10} {:>8}  {}",
            r.slot,
            terminal_safe(&r.host),
            terminal_safe(&r.model),
            r.reach.as_str(),
            r.auth.as_str(),
            r.model_known.as_str(),
            r.structured.as_str(),
            latency,
            terminal_safe(&r.detail)
        );
        if !r.passed() {
            let _ = writeln!(o, "     posted to {}", terminal_safe(&r.url));
        }
        if let Some(answer) = &r.answer {
            let _ = writeln!(o, "     judge answered: {}", terminal_safe(answer));
        }
        if let Some(note) = &r.note {
            let _ = writeln!(o, "     note: {}", terminal_safe(note));
        }
    }
    o
}
