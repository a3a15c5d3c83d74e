//! `seal keygen`: a signing key pair and the deployment secret, in a private folder.
//!
//! Exit 0 written (or, with `--if-missing`, already there), 2 refused: an existing secret, a
//! folder that is a link or writable by others, a write that failed.

use std::path::{Path, PathBuf};

use seal_fs::fsio::{self, Kind};

use super::error::{CliError, ExitStatus};

#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// Folder to write seal.key.pem, seal.pub.pem and seal.secret into (created 0700; a link
    /// or a folder others may write to is refused).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Write only what DIR lacks (the key pair, the secret); succeed when it holds both.
    #[arg(long)]
    pub if_missing: bool,
}

pub fn run(args: KeygenArgs) -> Result<ExitStatus, CliError> {
    let out = args.out.as_path();
    // The folder first: created 0700 whatever the umask, never a link, never writable by
    // others (see `fsio::private_folder`).
    fsio::private_folder(out).map_err(|e| CliError::Usage(format!("--out {e}")))?;
    let secret = out.join(seal_engine::config::SECRET_FILE);
    let is_file = |p: &Path| matches!(fsio::kind(p), Ok(Some(Kind::File)));
    let have_pair = is_file(&out.join("seal.key.pem")) && is_file(&out.join("seal.pub.pem"));
    let have_secret = is_file(&secret);
    if !args.if_missing && !matches!(fsio::kind(&secret), Ok(None)) {
        // Refused before anything is written: a half-made set is worse than none.
        return Err(CliError::Usage(format!(
            "{}: already exists: refusing to overwrite a secret (--if-missing keeps it)",
            secret.display()
        )));
    }
    if args.if_missing && have_pair {
        println!("key pair already in {}", out.display());
    } else {
        let key = seal_fs::keys::generate_signing_key();
        let (k, p) = seal_fs::keys::write_key_pair(&key, out)?;
        println!(
            "private key {} (mode 0600)\npublic key  {}\nkeyid       {}",
            k.display(),
            p.display(),
            key.key_id
        );
    }
    if args.if_missing && have_secret {
        println!("secret already in {}", secret.display());
    } else {
        seal_engine::config::write_secret_file(&secret).map_err(CliError::failed)?;
        println!("secret      {} (mode 0600)", secret.display());
    }
    Ok(ExitStatus::Yes)
}
