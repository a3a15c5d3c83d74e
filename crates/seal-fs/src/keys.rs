//! Key files: PKCS#8 PEM private keys (`seal.key.pem`, mode 0600) and SPKI PEM public keys
//! (`seal.pub.pem`). What a key is lives in [`seal_core::sealing`]; this reads and writes the
//! files, through [`crate::fsio`] (no link followed, size-limited, never overwritten).

use std::path::{Path, PathBuf};

use seal_core::sealing::{key_err, KeyError, PublicKey, SigningKey};

use crate::fsio::{self, FsError};

/// A PEM key is a few hundred bytes; anything past this is not a key.
const MAX_KEY_FILE: u64 = 16 * 1024;

fn shown(path: &Path) -> String {
    path.display().to_string()
}

fn read_error(path: &Path, e: FsError) -> KeyError {
    match e {
        FsError::TooLarge { .. } => key_err(&shown(path), "not a key: file is too large"),
        other => key_err(&shown(path), other.to_string()),
    }
}

/// A fresh signing key from the operating system's random source. The core takes its
/// randomness injected ([`SigningKey::generate`]); this edge is where it comes from.
pub fn generate_signing_key() -> SigningKey {
    SigningKey::generate(&mut rand_core::OsRng)
}

/// Loads a PKCS#8 PEM private key, refusing one that group or others can read.
pub fn load_signing_key(path: &Path) -> Result<SigningKey, KeyError> {
    let name = shown(path);
    let file = fsio::open(path).map_err(|e| key_err(&name, e.to_string()))?;
    // The mode of the file actually opened, not of whatever the path names now.
    let meta = file
        .metadata()
        .map_err(|e| key_err(&name, format!("cannot read: {e}")))?;
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(key_err(
                &name,
                format!(
                    "private key is readable by group or others (mode {mode:o}); \
                     run chmod 600 on it"
                ),
            ));
        }
    }
    let bytes = fsio::read_open(path, file, MAX_KEY_FILE).map_err(|e| read_error(path, e))?;
    let pem = String::from_utf8(bytes).map_err(|_| key_err(&name, "not a PEM text file"))?;
    SigningKey::from_pem(&name, &pem)
}

/// Loads an SPKI PEM ed25519 public key (a weak, small-order key is refused).
pub fn load_public_key(path: &Path) -> Result<PublicKey, KeyError> {
    let pem = fsio::read_string(path, MAX_KEY_FILE).map_err(|e| read_error(path, e))?;
    PublicKey::from_pem(&shown(path), &pem)
}

/// Writes `DIR/seal.key.pem` (PKCS#8 v1, mode 0600) and `DIR/seal.pub.pem` (SPKI, 0644) and
/// returns their paths. Refuses to overwrite an existing key.
pub fn write_key_pair(key: &SigningKey, dir: &Path) -> Result<(PathBuf, PathBuf), KeyError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| key_err(&shown(dir), format!("cannot create folder: {e}")))?;
    let key_path = dir.join("seal.key.pem");
    let pub_path = dir.join("seal.pub.pem");
    let private = key.to_pkcs8_v1_pem();
    let public = key.public().to_pem()?;
    // Neither file may exist (or be a link): a half-written pair is worse than none.
    for p in [&key_path, &pub_path] {
        if fsio::kind(p)
            .map_err(|e| key_err(&shown(p), e.to_string()))?
            .is_some()
        {
            return Err(key_err(
                &shown(p),
                "already exists: refusing to overwrite a key",
            ));
        }
    }
    fsio::write_new(&key_path, private.as_bytes(), 0o600)
        .map_err(|e| key_err(&shown(&key_path), format!("cannot create: {e}")))?;
    fsio::write_new(&pub_path, public.as_bytes(), 0o644)
        .map_err(|e| key_err(&shown(&pub_path), format!("cannot create: {e}")))?;
    Ok((key_path, pub_path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn keys_round_trip_and_loose_private_keys_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let key = generate_signing_key();
        let (kp, pp) = write_key_pair(&key, dir.path()).unwrap();
        let loaded = load_signing_key(&kp).unwrap();
        assert_eq!(loaded.key_id, key.key_id);
        assert_eq!(load_public_key(&pp).unwrap().key_id, key.key_id);
        assert!(
            write_key_pair(&key, dir.path()).is_err(),
            "must not overwrite"
        );
        std::fs::set_permissions(&kp, std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = load_signing_key(&kp).unwrap_err().to_string();
        assert!(e.contains("readable by group or others"), "{e}");
        let junk = dir.path().join("junk.pem");
        std::fs::write(
            &junk,
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        )
        .unwrap();
        std::fs::set_permissions(&junk, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = load_signing_key(&junk).unwrap_err().to_string();
        assert!(e.contains("junk.pem") && e.contains("PKCS#8"), "{e}");
        let e = load_public_key(&dir.path().join("missing.pem"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing.pem"), "{e}");
    }
}
