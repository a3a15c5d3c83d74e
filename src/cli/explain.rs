//! `seal explain`: the decision tree of a sealed run, as JSON or a page.

use super::*;

pub(super) struct ExplainArgs<'a> {
    pub(super) run_id: &'a str,
    pub(super) store: Option<&'a str>,
    pub(super) trust: &'a [PathBuf],
    pub(super) html: bool,
    pub(super) out: Option<&'a Path>,
}

pub(super) fn cmd_explain(cli: &Cli, args: ExplainArgs<'_>) -> u8 {
    use seal_core::fault::HasFault;
    init_logging(cli.log_format, "warn");
    let config = match load_config(cli.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let run = match seal_core::ids::RunId::parse(args.run_id) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let trusted = match trusted_keys(&config, args.trust) {
        Ok(t) => t,
        Err(code) => return code,
    };
    let rt = match runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    let url = args
        .store
        .map(str::to_owned)
        .unwrap_or_else(|| config.store.clone());
    let result = rt.block_on(async {
        // Read-only: a mistyped store is an error, never a new folder.
        let store = Store::open_existing(&url)
            .await?
            .with_doc_limit(config.max_document_bytes);
        seal_engine::explain::explain(&store, &run, &trusted).await
    });
    let explained = match result {
        Ok(e) => e,
        Err(seal_engine::explain::ExplainError::NotVerified(report)) => {
            eprintln!("seal: run {run} does not verify; it is not explained:");
            for p in &report.problems {
                eprintln!("    {p}");
            }
            return 1;
        }
        Err(e @ seal_engine::explain::ExplainError::NotFound { .. }) => return fail(e),
        Err(e) => {
            eprintln!("seal: {e}");
            return e.fault().exit_code();
        }
    };
    let bytes = if args.html {
        let mut cmd = format!(
            "seal verify {} --store {}",
            shell_word(run.as_str()),
            shell_word(&url)
        );
        for p in config.trusted_keys.iter().chain(args.trust) {
            cmd.push_str(&format!(
                " --trust {}",
                shell_word(&p.display().to_string())
            ));
        }
        explained.html(&cmd).into_bytes()
    } else {
        let mut b = explained.tree_bytes.clone();
        b.push(b'\n');
        b
    };
    write_output(args.out, &bytes)
}
