//! How a judge is authenticated: `judges.<s>.auth` (`bearer`, the default, or `none`) and
//! `judges.<s>.headers` (header name → env var of its value), and the start-up check that every
//! variable they name is set ([`Config::judge_credentials`]).
//!
//! A missing key is refused before any call or stored byte, never sent as a request without
//! `Authorization` (docs/DECISIONS.md, "Credentials are checked before any store is opened"). A
//! judge that really takes no key says so with `auth = "none"`.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{invalid, Config, ConfigError, Secret, SlotConfig};
use seal_core::ids::Slot;

/// `judges.<s>.auth` as written.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum RawAuth {
    #[default]
    Bearer,
    None,
}

/// Whether a judge takes a bearer key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JudgeAuth {
    /// `Authorization: Bearer <key>`; the key's variable must be set.
    Bearer,
    /// No `Authorization` header at all.
    None,
}

impl From<RawAuth> for JudgeAuth {
    fn from(raw: RawAuth) -> JudgeAuth {
        match raw {
            RawAuth::Bearer => JudgeAuth::Bearer,
            RawAuth::None => JudgeAuth::None,
        }
    }
}

impl JudgeAuth {
    pub fn as_str(self) -> &'static str {
        match self {
            JudgeAuth::Bearer => "bearer",
            JudgeAuth::None => "none",
        }
    }
}

/// One extra header of a judge's requests. The value is a secret (gateways put keys there):
/// never logged, and scrubbed from stored answers like the API keys.
#[derive(Debug, Clone)]
pub struct JudgeHeader {
    /// The header name, lower-case.
    pub name: String,
    /// The environment variable its value comes from.
    pub var: String,
    /// That variable's value (None: unset or empty).
    pub value: Option<Secret>,
}

/// Header names seal sets itself, which a configuration may not override.
const RESERVED: [&str; 5] = [
    "authorization",
    "content-type",
    "content-length",
    "host",
    "x-session-id",
];

/// `judges.<s>.headers`, checked: RFC 9110 token names, not one seal sets itself, a variable
/// name each.
pub(super) fn headers(
    source: &str,
    field: &str,
    raw: &BTreeMap<String, String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<JudgeHeader>, ConfigError> {
    let mut out = Vec::new();
    for (name, var) in raw {
        let lower = name.to_ascii_lowercase();
        let token = !lower.is_empty()
            && lower
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token || RESERVED.contains(&lower.as_str()) {
            let shown: String = name
                .chars()
                .take(40)
                .flat_map(char::escape_default)
                .collect();
            return Err(invalid(
                source,
                format!(
                    "{field}: {shown:?} is not a header name seal may send (a token, and not one \
                     of {})",
                    RESERVED.join(", ")
                ),
            ));
        }
        if var.is_empty() {
            return Err(invalid(
                source,
                format!("{field}.{lower}: the name of an environment variable is required"),
            ));
        }
        out.push(JudgeHeader {
            name: lower,
            var: var.clone(),
            value: env(var).filter(|v| !v.is_empty()).map(Secret::new),
        });
    }
    Ok(out)
}

/// Every judge credential the configuration names but the environment lacks.
#[derive(Debug, thiserror::Error)]
#[error("{}", .missing.join("; "))]
pub struct MissingCredentials {
    /// One sentence per missing variable, naming the slot and the setting to change.
    pub missing: Vec<String>,
}

impl seal_core::fault::HasFault for MissingCredentials {
    fn fault(&self) -> seal_core::fault::Fault {
        // The deployment is not set up to judge: its operator sets the variable it names.
        seal_core::fault::Fault::Config
    }
}

impl Config {
    /// Refuses when a judge's key or header variable is unset, naming every one of them.
    /// Called by the commands that call judges (serve, judge, replay with live judges, judges
    /// check) before they open a store.
    pub fn judge_credentials(&self) -> Result<(), MissingCredentials> {
        self.slot_credentials(&[Slot::A, Slot::B])
    }

    /// [`Config::judge_credentials`] for `slots` only: `seal judges check --slot a` calls one
    /// judge, so judge B's key is not its business.
    pub fn slot_credentials(&self, slots: &[Slot]) -> Result<(), MissingCredentials> {
        let missing: Vec<String> = slots
            .iter()
            .flat_map(|s| slot_missing(self.slot(*s)))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(MissingCredentials { missing })
        }
    }
}

/// The sentences of one slot's missing variables.
fn slot_missing(c: &SlotConfig) -> Vec<String> {
    let s = c.slot.as_str();
    let mut out = Vec::new();
    if c.auth == JudgeAuth::Bearer && c.api_key.is_none() {
        out.push(format!(
            "judge {s}: {} (or SEAL_JUDGE_{}_KEY) is not set; set it, or set judges.{s}.auth = \
             \"none\" for an endpoint that takes no key",
            c.api_key_source,
            c.slot.upper()
        ));
    }
    for h in c.headers.iter().filter(|h| h.value.is_none()) {
        out.push(format!(
            "judge {s}: {} (the value of header {}) is not set",
            h.var, h.name
        ));
    }
    out
}
