//! Arguments converted once into checked types, by clap value parsers: run ids, store URLs,
//! genres, RFC 3339 times, the consensus strategy, where replayed judge answers come from, and
//! the witnesses a verification requires.
//!
//! A value is checked where clap reads it, so a bad value is a usage error (exit 2) in every
//! command (docs/DECISIONS.md, "Arguments are checked where clap reads them").

use std::fmt;
use std::path::PathBuf;

use seal_core::doc::Genre;
use seal_core::ids::{IdError, RunId};
use seal_engine::config::Config;
use seal_engine::replay::JudgesFrom;
use seal_log::cosign::check::Policy;
use seal_store::{StoreError, StoreUrl};

use super::error::CliError;

/// `RUN_ID` arguments: a run id per docs/DESIGN.md §2.
pub fn run_id(s: &str) -> Result<RunId, IdError> {
    RunId::parse(s)
}

/// A `--store` (or `--from`) URL that parses: the text as given, for messages and for the
/// `seal verify` command a page prints, and the URL it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreArg {
    text: String,
    url: StoreUrl,
}

impl StoreArg {
    /// Checks a store URL (`file://`, `memory://`, `s3://`), as `--store` and the config's
    /// `store` are checked.
    pub fn parse(s: &str) -> Result<StoreArg, StoreError> {
        Ok(StoreArg {
            text: s.to_string(),
            url: StoreUrl::parse(s)?,
        })
    }

    /// The URL as given (what `Store::open` takes).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn url(&self) -> &StoreUrl {
        &self.url
    }
}

impl fmt::Display for StoreArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// `--store URL` and `--from URL`.
pub fn store(s: &str) -> Result<StoreArg, StoreError> {
    StoreArg::parse(s)
}

/// Why a flag's value is refused (clap prints it after the flag's name).
#[derive(Debug, thiserror::Error)]
pub enum ArgError {
    #[error("unknown genre {0:?}: narrative, trpg, heritage, puzzle or sim-business")]
    Genre(String),
    #[error("not an RFC 3339 time (e.g. 2025-01-31T00:00:00Z): {0:?}")]
    Time(String),
    #[error("unknown consensus strategy {0:?}: this build implements {implemented}", implemented = seal_core::consensus::STRATEGY)]
    Strategy(String),
    #[error("must be an http:// or https:// URL with a host (e.g. https://seal.internal)")]
    Url,
    #[error("expected OBLIGATION=satisfied|failed|missing")]
    NoDecision,
    #[error("the obligation id is empty")]
    EmptyObligation,
    #[error(transparent)]
    Status(#[from] seal_core::review::UnknownStatus),
    #[error("{0:?}: a sha256 is 64 lowercase hex digits")]
    Sha256(String),
    #[error("{0:?} is not an amount of RMB (a finite number, 0 or more)")]
    Rmb(String),
}

/// A sha256 (`seal policy show SHA256`, `--policy`): 64 lowercase hex digits.
pub fn sha256(s: &str) -> Result<seal_core::canonical::Hash, ArgError> {
    seal_core::canonical::Hash::parse(s).map_err(|_| ArgError::Sha256(s.chars().take(80).collect()))
}

/// An amount of RMB (`--max-cost`): a finite number, 0 or more.
pub fn rmb(s: &str) -> Result<f64, ArgError> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(ArgError::Rmb(s.chars().take(80).collect())),
    }
}

/// `--genre G`: one of the genres a header may name.
pub fn genre(s: &str) -> Result<Genre, ArgError> {
    serde_json::from_value(serde_json::Value::String(s.to_string()))
        .map_err(|_| ArgError::Genre(s.to_string()))
}

/// A genre's name as documents spell it (`sim-business`).
pub fn genre_name(g: Genre) -> String {
    serde_json::to_value(g)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// An RFC 3339 time (`--since`, `--until`), and its text as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Time {
    text: String,
    at: time::OffsetDateTime,
}

impl Time {
    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn at(&self) -> time::OffsetDateTime {
        self.at
    }
}

/// `--since T` and `--until T`.
pub fn time(s: &str) -> Result<Time, ArgError> {
    let at = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .map_err(|_| ArgError::Time(s.to_string()))?;
    Ok(Time {
        text: s.to_string(),
        at,
    })
}

/// A consensus strategy this build implements (`--strategy`): only `dual-strict/1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    DualStrict,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::DualStrict => seal_core::consensus::STRATEGY,
        }
    }
}

/// `--strategy V`.
pub fn strategy(s: &str) -> Result<Strategy, ArgError> {
    if s == seal_core::consensus::STRATEGY {
        Ok(Strategy::DualStrict)
    } else {
        Err(ArgError::Strategy(s.to_string()))
    }
}

/// `--judges` of `seal replay`: where replayed judge answers come from.
#[derive(Debug, Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum JudgesArg {
    /// Re-use the stored raw answers (no model call, no cost).
    Stored,
    /// Ask both judges again.
    Live,
}

impl From<JudgesArg> for JudgesFrom {
    fn from(a: JudgesArg) -> JudgesFrom {
        match a {
            JudgesArg::Stored => JudgesFrom::Stored,
            JudgesArg::Live => JudgesFrom::Live,
        }
    }
}

/// Which decided runs a report covers (`seal stats`, `seal export labels`): one window, parsed
/// once, turned into the engine's query here.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WindowArgs {
    /// Only runs decided at or after this time (RFC 3339).
    #[arg(long, value_name = "RFC3339", value_parser = time)]
    pub since: Option<Time>,
    /// Only runs decided before this time (RFC 3339).
    #[arg(long, value_name = "RFC3339", value_parser = time)]
    pub until: Option<Time>,
    /// Only runs of this genre.
    #[arg(long, value_name = "G", value_parser = genre)]
    pub genre: Option<Genre>,
    /// Only runs whose every judge call was made under this judge policy (its sha256, as
    /// `seal policy log` lists them).
    #[arg(long, value_name = "SHA256", value_parser = sha256)]
    pub policy: Option<seal_core::canonical::Hash>,
}

impl WindowArgs {
    /// The engine's query, from values clap has checked already.
    pub fn query(&self) -> seal_engine::stats_load::Query {
        seal_engine::stats_load::Query {
            since: self.since.as_ref().map(|t| t.as_str().to_string()),
            until: self.until.as_ref().map(|t| t.as_str().to_string()),
            genre: self.genre.map(genre_name),
            policy: self.policy.as_ref().map(ToString::to_string),
        }
    }
}

/// The witnesses a verification requires (adds to `[[witnesses]]` of the config).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WitnessArgs {
    /// A witness public key (SPKI PEM) whose cosignature the checkpoint relied on must carry;
    /// repeatable.
    #[arg(long = "witness", value_name = "PEM")]
    pub keys: Vec<PathBuf>,
    /// How many of the witnesses must have cosigned (default: witness_quorum of the config,
    /// else all of them).
    #[arg(long = "witness-quorum", value_name = "N")]
    pub quorum: Option<usize>,
}

impl WitnessArgs {
    /// The checked policy: these flags over the config's witnesses.
    pub fn policy(&self, config: &Config) -> Result<Policy, CliError> {
        Policy::load(
            &config.witnesses,
            config.witness_quorum,
            &self.keys,
            self.quorum,
        )
        .map_err(|e| CliError::Usage(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_values_keep_their_text_and_refuse_bad_ones() {
        let s = store("s3://bucket/p?endpoint=http://127.0.0.1:9000").unwrap();
        // The text as given, not the URL's display (which is not a URL for S3 endpoints).
        assert_eq!(s.as_str(), "s3://bucket/p?endpoint=http://127.0.0.1:9000");
        assert!(store("ftp://x").is_err());
        assert_eq!(genre_name(genre("sim-business").unwrap()), "sim-business");
        assert!(genre("chess").is_err());
        assert_eq!(
            time("2025-01-31T00:00:00Z").unwrap().as_str(),
            "2025-01-31T00:00:00Z"
        );
        assert!(time("last tuesday").is_err());
        assert_eq!(strategy("dual-strict/1").unwrap().as_str(), "dual-strict/1");
        assert!(strategy("dual-strict/2").unwrap_err().to_string().contains(
            "unknown consensus strategy \"dual-strict/2\": this build implements dual-strict/1"
        ));
        assert!(run_id("../x").is_err());
    }
}
