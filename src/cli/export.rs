//! `seal export verdict`: the agent-loop Verdict of a sealed run that verifies.

use super::*;

pub(super) fn cmd_export_verdict(
    cli: &Cli,
    run_id: &str,
    store: Option<&str>,
    out: Option<&Path>,
    trust: &[PathBuf],
) -> u8 {
    let config = match load_config(cli.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let run = match seal_core::ids::RunId::parse(run_id) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let trusted = match trusted_keys(&config, trust) {
        Ok(t) if t.is_empty() => {
            return fail("no trusted public key: give --trust PEM (or keys.trusted in the config)")
        }
        Ok(t) => t,
        Err(code) => return code,
    };
    let rt = match runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    rt.block_on(async {
        let url = store
            .map(str::to_owned)
            .unwrap_or_else(|| config.store.clone());
        // Read-only: a store that does not exist is an error, never created.
        let store = match Store::open_existing(&url).await {
            Ok(s) => s.with_doc_limit(config.max_document_bytes),
            Err(e) => return fail(e),
        };
        let verified = match seal_engine::verify::prove(&store, &run, &trusted).await {
            Ok(Ok(v)) => v,
            Ok(Err(report)) => {
                eprintln!("seal: run {run} does NOT VERIFY; nothing exported");
                for p in &report.problems {
                    eprintln!("    {p}");
                }
                return 1;
            }
            Err(e) => return fail(e),
        };
        let text = match seal_core::adapt::evidence_to_verdict(verified.evidence()).and_then(|v| {
            serde_json::to_string_pretty(&v).map_err(|e| seal_core::adapt::AdaptError::Output {
                path: run.to_string(),
                reason: e.to_string(),
            })
        }) {
            Ok(t) => t + "\n",
            Err(e) => {
                eprintln!("seal: {e}");
                return 1;
            }
        };
        match out {
            Some(p) => match seal_core::fsio::write_new(p, text.as_bytes(), 0o644) {
                Ok(()) => {
                    println!("wrote {}", p.display());
                    0
                }
                Err(e @ seal_core::fsio::FsError::Exists { .. }) => {
                    eprintln!("seal: {e}");
                    1
                }
                Err(e) => fail(e),
            },
            None => {
                print!("{text}");
                0
            }
        }
    })
}
