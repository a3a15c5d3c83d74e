//! The pure half of `seal stats`: how well the two judges agree, and what decided runs cost,
//! from facts the engine's loader reads out of proven runs (docs/DESIGN.md §7, §14).
//!
//! - [`facts`]: what one run contributes.
//! - [`aggregate`]: the [`aggregate::Aggregator`] (bounded memory: counters, matrices, exact
//!   histograms), fed one run at a time.
//! - [`human`]: people against the judges, and the adjudication queue.
//! - [`reliability`]: the judges' accuracy, error correlation and effective votes against
//!   people; [`drift`]: served-model periods per judging set-up; [`retest`]: each judge
//!   against itself when asked again (`seal replay --retest`).
//! - [`report`]: the signed reliability report's statement.
//! - [`kappa`]: the agreement statistics; [`text`]: the terminal table; [`html`]: the page.

pub mod aggregate;
pub mod drift;
pub mod facts;
pub mod html;
pub mod human;
pub mod kappa;
pub mod reliability;
pub mod report;
pub mod retest;
pub mod text;
