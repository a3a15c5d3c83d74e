//! `seal validate`: documents checked (kind, schema, invariants) from files.

use super::*;

pub(super) fn cmd_validate(files: &[PathBuf], limit: u64) -> u8 {
    let mut worst = 0u8;
    for file in files {
        let report = validate_file(file, limit);
        match &report {
            Report::Valid(kind) => println!("valid    {} ({})", file.display(), kind.name()),
            Report::Invalid(kind, findings) => {
                println!(
                    "INVALID  {} ({}): {} problem{}",
                    file.display(),
                    kind.name(),
                    findings.len(),
                    if findings.len() == 1 { "" } else { "s" }
                );
                for f in findings {
                    println!("    {f}");
                }
            }
            Report::Unusable(reason) => eprintln!("ERROR    {}: {reason}", file.display()),
        }
        worst = worst.max(report.exit_code());
    }
    worst
}

/// Reads (through [`seal_core::fsio`]: no link, no special file, at most `limit` bytes read) and
/// validates one file.
pub fn validate_file(path: &Path, limit: u64) -> Report {
    match seal_core::fsio::read(path, limit) {
        Ok(bytes) => seal_core::validate::validate_bytes(&bytes, limit),
        Err(e) => Report::Unusable(unusable_file(e)),
    }
}

pub(super) fn unusable_file(e: seal_core::fsio::FsError) -> String {
    use seal_core::fsio::FsError;
    match e {
        FsError::NotRegular { kind, .. } => format!("not a regular file ({kind})"),
        FsError::Symlink { .. } => "not a regular file (a symbolic link)".into(),
        FsError::TooLarge { limit, .. } => format!("over the size limit of {limit} bytes"),
        FsError::Missing { .. } => "cannot read: no such file".into(),
        other => format!("cannot read: {other}"),
    }
}
