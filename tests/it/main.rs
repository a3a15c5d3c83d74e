//! The integration tests of the `seal` package: one binary (one link of the whole stack),
//! a module per concern. `memory_bounds` and `hostile_clients` stay binaries of their own:
//! they read the process's own peak and resident memory, which other tests would disturb.

#[path = "../common/mod.rs"]
mod common;

mod adapt;
mod api_contract;
mod architecture;
mod blinding_e2e;
mod cli;
mod crash_points;
mod crash_points_attempts;
mod crash_points_cluster;
mod decision_matrix;
mod defects;
mod error_hints;
mod exit_codes;
mod explain;
mod explain_browser;
mod finalize_race;
mod independent_verifier;
mod judge_e2e;
mod judge_faults;
mod judge_health;
mod judge_policy;
mod judge_reliability;
mod judges_check;
mod keys;
mod loads;
mod log_guard;
mod operable;
mod operable_service;
mod planted_json;
mod readme_truth;
mod replay;
mod replay_resume;
mod replicas;
mod rereads;
mod review;
mod review_browser;
mod review_stats;
mod review_trust;
mod review_workbench;
mod secure_defaults;
mod serve;
mod serve_store;
mod served_model;
mod shadow_pure;
mod shadow_report;
mod stats;
mod stats_browser;
mod store_health;
mod store_paths;
mod store_writer;
mod stored_bytes;
mod submit;
mod tamper;
mod tamper_binary;
mod tamper_log;
mod transparency_log;
mod trust_boundaries;
mod validate_cli;
mod witness;
