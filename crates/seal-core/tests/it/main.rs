//! The integration tests of seal-core: one binary, a module per rule family.

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
