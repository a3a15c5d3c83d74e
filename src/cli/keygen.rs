//! `seal keygen`: a signing key pair and the deployment secret, in a private folder.

use super::*;

pub(super) fn cmd_keygen(out: &Path, if_missing: bool) -> u8 {
    // The folder first: created 0700 whatever the umask, never a link, never writable by
    // others (see `fsio::private_folder`).
    if let Err(e) = seal_core::fsio::private_folder(out) {
        return fail(format!("--out {e}"));
    }
    let secret = out.join(seal_engine::config::SECRET_FILE);
    let is_file = |p: &Path| {
        matches!(
            seal_core::fsio::kind(p),
            Ok(Some(seal_core::fsio::Kind::File))
        )
    };
    let have_pair = is_file(&out.join("seal.key.pem")) && is_file(&out.join("seal.pub.pem"));
    let have_secret = is_file(&secret);
    if !if_missing && !matches!(seal_core::fsio::kind(&secret), Ok(None)) {
        // Refused before anything is written: a half-made set is worse than none.
        return fail(format!(
            "{}: already exists: refusing to overwrite a secret (--if-missing keeps it)",
            secret.display()
        ));
    }
    if if_missing && have_pair {
        println!("key pair already in {}", out.display());
    } else {
        let key = SigningKey::generate();
        match key.write_pair(out) {
            Ok((k, p)) => println!(
                "private key {} (mode 0600)\npublic key  {}\nkeyid       {}",
                k.display(),
                p.display(),
                key.key_id
            ),
            Err(e) => return fail(e),
        }
    }
    if if_missing && have_secret {
        println!("secret already in {}", secret.display());
    } else {
        if let Err(e) = seal_engine::config::write_secret_file(&secret) {
            return fail(e);
        }
        println!("secret      {} (mode 0600)", secret.display());
    }
    0
}
