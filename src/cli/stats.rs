//! `seal stats`: judge agreement and costs over proven runs, as a table, JSON or a page.

use super::*;

pub(super) struct StatsArgs<'a> {
    pub(super) store: Option<&'a str>,
    pub(super) trust: &'a [PathBuf],
    pub(super) query: seal_engine::stats::Query,
    pub(super) json: bool,
    pub(super) html: Option<&'a Path>,
}

pub(super) fn cmd_stats(cli: &Cli, args: StatsArgs<'_>) -> u8 {
    use seal_core::fault::HasFault;
    init_logging(cli.log_format, "warn");
    let config = match load_config(cli.config.as_deref()) {
        Ok(c) => c,
        Err(code) => return code,
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
        let store = Store::open_existing(&url)
            .await?
            .with_doc_limit(config.max_document_bytes);
        seal_engine::stats::stats(&store, &trusted, args.query).await
    });
    let stats = match result {
        Ok(s) => s,
        Err(e) => {
            eprintln!("seal: {e}");
            return e.fault().exit_code();
        }
    };
    if stats.report.runs.not_verified > 0 {
        eprintln!(
            "seal: {} decided run(s) do not verify and are not counted (listed in the report)",
            stats.report.runs.not_verified
        );
    }
    if let Some(path) = args.html {
        return write_output(Some(path), stats.html().as_bytes());
    }
    if args.json {
        write_output(None, &stats.bytes)
    } else {
        write_output(None, stats.text().as_bytes())
    }
}
