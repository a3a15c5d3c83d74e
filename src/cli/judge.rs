//! `seal judge`: a run folder judged and sealed, and the one-screen summary of the result.

use super::*;

pub(super) fn cmd_judge(
    cli: &Cli,
    run_dir: &Path,
    store: Option<&str>,
    key: Option<&Path>,
    json: bool,
    allow_ephemeral_store: bool,
) -> u8 {
    init_logging(cli.log_format, "warn");
    let config = match load_config(cli.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let url = store.unwrap_or(&config.store);
    if !allow_ephemeral_store
        && matches!(
            seal_store::StoreUrl::parse(url),
            Ok(seal_store::StoreUrl::Memory)
        )
    {
        return fail(
            "refusing to judge into memory://: the sealed evidence would vanish at exit \
             while the judges are paid; pass --allow-ephemeral-store if that is meant",
        );
    }
    // `--key`, when given, is the key; the default secret file is the one beside it.
    let config = config.with_signing_key(key);
    let key = match load_key(&config.signing_key) {
        Ok(k) => k,
        Err(code) => return code,
    };
    let rt = match runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    rt.block_on(async {
        let folder = match seal_core::runfolder::RunFolder::read(run_dir, config.max_document_bytes)
        {
            Ok(f) => f,
            Err(e) => {
                eprintln!("seal: {e}");
                return 1;
            }
        };
        let engine = match engine(config, store, Some(key)).await {
            Ok(e) => e,
            Err(code) => return code,
        };
        // The log must account for the store before any judge is paid (G2, §13).
        if let Some(key) = engine.key() {
            if let Err(e) = engine.log().admit(key, &[]).await {
                return fail_by_fault(e);
            }
        }
        let judged = seal_engine::judge_run::judge(&engine, &folder).await;
        // The checkpoint this process published reaches the witnesses before it exits.
        engine.witnesses().settle().await;
        match judged {
            Ok(done) => {
                let summary = match summary::summarize(engine.store(), &done).await {
                    Ok(s) => s,
                    Err(e) => return fail(e),
                };
                if json {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&summary).unwrap_or_default()
                    );
                } else {
                    print!("{}", render(&summary));
                }
                0
            }
            Err(e) => fail_by_fault(e),
        }
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
