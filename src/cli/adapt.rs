//! `seal adapt verdict`: an agent-loop Verdict into a run folder.

use super::*;

pub(super) fn cmd_adapt(file: &Path, out: &Path, genre: &str) -> u8 {
    let genre: seal_core::doc::Genre =
        match serde_json::from_value(serde_json::Value::String(genre.to_string())) {
            Ok(g) => g,
            Err(_) => {
                return fail(format!(
                    "unknown genre {genre:?}: narrative, trpg, heritage, puzzle or sim-business"
                ))
            }
        };
    match seal_core::adapt::verdict_file_to_run_folder(file, genre, out) {
        Ok(run) => {
            println!(
                "wrote run folder {} (run {run}, evidenceMode legacy-adapted)",
                out.display()
            );
            0
        }
        Err(e) => {
            eprintln!("seal: {e}");
            1
        }
    }
}
