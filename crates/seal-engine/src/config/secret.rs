//! The deployment secret (docs/DESIGN.md §4): where it comes from, how its file is read (like
//! a private key) and written (`seal keygen`), and why there is no fallback.

use std::path::{Path, PathBuf};

use zeroize::Zeroizing;

use super::{Config, Secret};

/// The name `seal keygen` gives the deployment secret's file, beside the signing key.
pub const SECRET_FILE: &str = "seal.secret";
/// The shortest deployment secret accepted, in bytes (256 bits: never guessable).
pub const MIN_SECRET_BYTES: usize = 32;
/// Largest secret file read (`keygen` writes 65 bytes).
const MAX_SECRET_FILE: u64 = 4096;

/// Where the deployment secret comes from (docs/DESIGN.md §4): the environment variable named
/// by `policy.seed_salt_env` when it is set, else the file `keys.secret` (default:
/// `seal.secret` beside `keys.signing_key`). Seeds, sessions and attempt MACs are keyed by it.
///
/// There is no fallback: a command that needs the secret and finds none refuses, saying how to
/// make one; read-only commands (verify, explain, stats, log, export, validate) never ask
/// (docs/DECISIONS.md, "No fallback deployment secret").
#[derive(Debug, Clone)]
pub struct SecretSource {
    /// `policy.seed_salt_env`.
    pub env_var: String,
    /// That variable's value when the configuration was loaded (None: unset or empty).
    pub(super) env_value: Option<Secret>,
    /// `keys.secret`: read when the variable is unset.
    pub file: PathBuf,
    /// Whether `keys.secret` was set (else `file` follows the signing key in use).
    pub(super) file_configured: bool,
}

/// Why the deployment secret cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error(
        "{source_name}: the deployment secret is {len} bytes, at least {MIN_SECRET_BYTES} are \
         required (e.g. `openssl rand -hex 32`)"
    )]
    TooShort { source_name: String, len: usize },
    #[error("no deployment secret: {var} is not set and {path} does not exist; {how}")]
    Missing {
        var: String,
        path: String,
        how: String,
    },
    #[error("deployment secret {path}: {reason}")]
    Unusable { path: String, reason: String },
    #[error("deployment secret {0}")]
    File(seal_fs::fsio::FsError),
}

impl seal_core::fault::HasFault for SecretError {
    fn fault(&self) -> seal_core::fault::Fault {
        // The deployment is not set up to judge or seal: its operator sets the variable or
        // the file it names.
        seal_core::fault::Fault::Config
    }
}

impl SecretSource {
    /// The secret: the variable's value, else the file's text (mode 0600, no link, no special
    /// file, one trailing newline ignored); at least [`MIN_SECRET_BYTES`] either way.
    pub fn load(&self) -> Result<Secret, SecretError> {
        if let Some(value) = &self.env_value {
            let len = value.expose().len();
            if len < MIN_SECRET_BYTES {
                return Err(SecretError::TooShort {
                    source_name: self.env_var.clone(),
                    len,
                });
            }
            return Ok(value.clone());
        }
        read_secret_file(&self.file).map_err(|e| match e {
            SecretError::File(seal_fs::fsio::FsError::Missing { .. }) => SecretError::Missing {
                var: self.env_var.clone(),
                path: self.file.display().to_string(),
                how: how_to_make(&self.file, &self.env_var),
            },
            other => other,
        })
    }
}

impl Config {
    /// The deployment secret (see [`SecretSource`]): only the commands that judge, resume or
    /// seal call this.
    pub fn deployment_secret(&self) -> Result<Secret, SecretError> {
        self.secret.load()
    }

    /// This configuration signing with the key at `path` (a `--key` option) when given:
    /// unless `keys.secret` names the secret file, it is then the `seal.secret` beside that
    /// key, where `seal keygen` put it.
    pub fn with_signing_key(mut self, path: Option<&Path>) -> Config {
        if let Some(path) = path {
            if !self.secret.file_configured {
                self.secret.file = default_secret_file(path);
            }
            self.signing_key = path.to_path_buf();
        }
        self
    }
}

/// `seal.secret` in the signing key's folder.
pub(super) fn default_secret_file(signing_key: &Path) -> PathBuf {
    match signing_key.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(SECRET_FILE),
        _ => PathBuf::from(SECRET_FILE),
    }
}

fn how_to_make(file: &Path, var: &str) -> String {
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if file.file_name().and_then(|n| n.to_str()) == Some(SECRET_FILE) {
        format!(
            "make one with `seal keygen --out {} --if-missing`, or set {var} to at least \
             {MIN_SECRET_BYTES} random bytes",
            dir.display()
        )
    } else {
        format!(
            "make one with `(umask 077; openssl rand -hex 32 > {})`, or set {var} to at least \
             {MIN_SECRET_BYTES} random bytes",
            file.display()
        )
    }
}

/// Reads a secret file the way a private key is read: the mode of the file actually opened
/// must deny group and others, and at most [`MAX_SECRET_FILE`] bytes are read.
fn read_secret_file(path: &Path) -> Result<Secret, SecretError> {
    use std::os::unix::fs::PermissionsExt;
    let unusable = |reason: String| SecretError::Unusable {
        path: path.display().to_string(),
        reason,
    };
    let file = seal_fs::fsio::open(path).map_err(SecretError::File)?;
    let mode = file
        .metadata()
        .map_err(|e| unusable(format!("cannot read: {e}")))?
        .permissions()
        .mode()
        & 0o777;
    if mode & 0o077 != 0 {
        return Err(unusable(format!(
            "readable by group or others (mode {mode:o}); run chmod 600 on it"
        )));
    }
    let bytes = Zeroizing::new(
        seal_fs::fsio::read_open(path, file, MAX_SECRET_FILE).map_err(SecretError::File)?,
    );
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| unusable("not text (seal keygen writes 64 hex digits)".into()))?;
    let text = text
        .strip_suffix('\n')
        .map(|t| t.strip_suffix('\r').unwrap_or(t))
        .unwrap_or(text);
    if text.len() < MIN_SECRET_BYTES {
        return Err(SecretError::TooShort {
            source_name: path.display().to_string(),
            len: text.len(),
        });
    }
    Ok(Secret::new(text.to_string()))
}

/// Writes a new deployment secret at `path`: 32 random bytes as 64 lowercase hex digits and a
/// newline, mode 0600, never overwriting and never through a link (`fsio::write_new`). Text,
/// so that the same value can be moved into the environment variable unchanged: the secret is
/// the text's bytes either way.
pub fn write_secret_file(path: &Path) -> Result<(), SecretError> {
    use rand_core::RngCore;
    let mut raw = Zeroizing::new([0u8; 32]);
    rand_core::OsRng.fill_bytes(raw.as_mut());
    let mut text = Zeroizing::new(hex::encode(raw.as_ref()));
    text.push('\n');
    seal_fs::fsio::write_new(path, text.as_bytes(), 0o600).map_err(SecretError::File)
}
