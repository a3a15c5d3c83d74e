//! The integration tests of seal-core: one binary, a module per rule family.

// The core's integration tests read fixtures and make temporary folders: the purity rules of
// clippy.toml are for the library.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod blinding_props;
mod consensus_builders;
mod consensus_decisions;
mod consensus_golden;
mod consensus_props;
mod decision_rules;
mod derive_golden;
mod invariant_rules;
mod invariant_rules_documents;
mod jcs_vectors;
mod judge_golden;
mod tlog_rules;
mod tlog_tiles;
mod typed_parsing;
mod vendored_contracts;
