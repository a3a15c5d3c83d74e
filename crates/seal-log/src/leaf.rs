//! A seal leaf as the log's readers hold it ([`SealLeaf`]): its index and the digests it names,
//! not its bytes (docs/DECISIONS.md, "The log in memory is hashes, not entries").

use seal_core::canonical::Hash;
use seal_core::tlog::{self, LogEntry, NodeHash};

/// A seal leaf as this process holds it: where it is and the digests it names (`None` for a
/// digest that is not 64 lowercase hex digits, which no hash of seal's equals).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SealLeaf {
    pub index: u64,
    pub(crate) evidence: Option<[u8; 32]>,
    pub(crate) seal: Option<[u8; 32]>,
    /// The leaf hash of the entry without its `auth` (`tlog::ReadLeaf::content`): the same
    /// entry whatever index it was signed for.
    pub(crate) content: NodeHash,
}

impl SealLeaf {
    pub(crate) fn of(index: u64, entry: &LogEntry, content: NodeHash) -> SealLeaf {
        let digest = |hex: &str| Hash::parse(hex).ok().map(|h| h.to_bytes());
        SealLeaf {
            index,
            evidence: digest(&entry.evidence_sha256),
            seal: digest(&entry.seal_sha256),
            content,
        }
    }

    /// Whether the logged seal is over these evidence bytes.
    pub fn is_over(&self, evidence_sha256: &Hash) -> bool {
        self.evidence == Some(evidence_sha256.to_bytes())
    }

    /// Whether the logged seal is these seal bytes.
    pub fn names_seal(&self, seal_sha256: &Hash) -> bool {
        self.seal == Some(seal_sha256.to_bytes())
    }

    /// The logged seal's sha256 as hex (empty when the entry's was not a sha256).
    pub(crate) fn seal_hex(&self) -> String {
        self.seal.map(|d| tlog::hex(&d)).unwrap_or_default()
    }
}
