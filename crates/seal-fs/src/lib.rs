//! seal-fs: where seal meets the local file system outside the evidence store. Everything seal
//! reads from an operator's files (run folders, Verdicts, keys, trust anchors, config) and every
//! file it creates beside them (keys, exports, adapted run folders) goes through here, so the
//! rules for hostile paths (no links followed, no FIFOs or devices, sizes counted on the bytes
//! read, nothing overwritten) are written once.
//!
//! ```text
//! fsio        read one file under a limit; create a new file; a private folder for keys
//! runfolder   a run folder read and checked whole (RunFolder::read), and written atomically
//! keys        PEM key files: load a signing or public key, write a new pair
//! adapt       a legacy Verdict file adapted into a run folder on disk
//! ```
//!
//! The rules themselves (what a valid header, proof package or key is) are seal-core's pure
//! functions; this crate only moves bytes between them and the disk.

#![forbid(unsafe_code)]

pub mod adapt;
pub mod fsio;
pub mod keys;
pub mod runfolder;
