//! What the log's checks find wrong ([`Finding`]): the log's own problem type, so that the log
//! does not depend on the verifier. A finding names its check, the object at fault and why;
//! `seal verify` turns each into one of its problems (the engine's `From<Finding>`), and
//! `seal log verify` reports them as they are.

use serde::Serialize;

use seal_core::tlog::TlogError;
use seal_core::vocab::AuditCheck;
use seal_store::Key;

/// One thing wrong with the log or what it logs, with the object at fault. `expected` is what
/// the log (or a signed checkpoint) says, `actual` what is stored or recomputed now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub check: AuditCheck,
    pub object: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual: Option<String>,
    pub detail: String,
}

impl Finding {
    pub fn new(check: AuditCheck, object: impl Into<String>, detail: impl Into<String>) -> Finding {
        Finding {
            check,
            object: object.into(),
            expected: None,
            actual: None,
            detail: detail.into(),
        }
    }

    /// A finding with the logged or signed (`expected`) and the found (`actual`) value.
    pub fn mismatch(
        check: AuditCheck,
        object: impl Into<String>,
        expected: impl ToString,
        actual: impl ToString,
        detail: impl Into<String>,
    ) -> Finding {
        Finding {
            check,
            object: object.into(),
            expected: Some(expected.to_string()),
            actual: Some(actual.to_string()),
            detail: detail.into(),
        }
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}: {}", self.check, self.object, self.detail)?;
        if let (Some(e), Some(a)) = (&self.expected, &self.actual) {
            write!(f, " (expected {e}, actual {a})")?;
        }
        Ok(())
    }
}

/// The problem of an entry past everything this process trusts that does not authenticate as
/// this log's (docs/DESIGN.md §11): planted by whoever can write the store.
pub(crate) fn planted_entry(key: &Key, why: &TlogError) -> Finding {
    Finding::new(
        AuditCheck::PlantedLogEntry,
        key.as_str(),
        format!(
            "{why}. seal adopts, signs over and serves nothing from here on; `seal log verify` \
             names it and `seal log rebuild` moves it aside, recorded in the log"
        ),
    )
}
