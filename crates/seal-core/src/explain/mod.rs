//! The pure half of `seal explain`: the evidence-bound decision tree of a sealed run
//! (`seal.decision-tree/1`) and the self-contained page a reviewer reads (docs/DESIGN.md §7).
//! The loader that proves the run and reads its documents is the engine's.
//!
//! - [`tree`]: the tree, built from the documents the sealed evidence binds.
//! - [`html`]: the page; [`svg`]: the tree drawn inline in it.

pub mod html;
pub mod svg;
pub mod tree;
