//! The write-once, content-addressed evidence store: one facade over `object_store`.
//!
//! Backends: `file://PATH` (the embedded default, `file://./var/store`; every write is durable
//! before the put returns, through seal's own write path (`file::durable`): staging file, a
//! `syncfs` shared by every writer in flight, `renameat2(RENAME_NOREPLACE)`, a second shared
//! `syncfs`; or, with `?flush=per-object`, an `fdatasync` and a folder fsync per object),
//! `memory://` (tests) and `s3://BUCKET[/PREFIX]` (production and replicas; endpoint and region
//! from the URL query or the standard AWS env vars, credentials from the AWS env vars, plain
//! http only for a loopback endpoint).
//!
//! Guarantees, the same on every backend (one conformance suite in `tests/store_conformance.rs`
//! runs on all three):
//! - **create-only**: every put is `PutMode::Create`. The same bytes again is `Ok` (idempotent
//!   retries, racing replicas); other bytes at an existing key is [`StoreError::Conflict`],
//!   naming the key and both hashes. Nothing is ever overwritten or deleted, but for the one
//!   operator command that moves a damaged transparency log aside ([`Store::copy_aside`],
//!   then [`Store::remove_copied`], which removes only what was copied).
//! - **verified reads**: [`Store::get_verified`] and [`Store::verify`] re-hash what they read;
//!   a missing object or a wrong hash is an error naming the key (and both hashes), never
//!   repaired.
//! - **keys checked first**: a [`Key`] is validated at construction, before any I/O.
//! - **reserved keys**: `runs/<id>/evidence.json` and `runs/<id>/seal.dsse.json` can only be
//!   written through [`Store::put_decided`] and [`Store::put_seal`], which take types only the
//!   postguard can construct, or copied from a verified [`Staging`] area by an import.
//!
//! The surface: open ([`Store::open`], [`Store::open_existing`]), one create-only put
//! ([`Store::put`], its JSON form, blobs, the two reserved writers, [`Store::import_from`]),
//! reads verified or not, [`Store::list`] and [`Store::runs`]. Each backend (`file`, `object`)
//! sits behind the facade; what is file-only (durable writes, direct reads, the walk that
//! names what seal could not have written) is the file backend's.

#![forbid(unsafe_code)]

mod backend;
mod blob;
mod cas_seen;
mod error;
mod file;
mod object;
mod staging;
mod store;
mod tally;
mod url;

pub use error::StoreError;
pub use file::durable::{flush_counts, Flush, FlushCounts};
pub use seal_core::key::{Key, Stored};
pub use staging::Staging;
pub use store::crash;
pub use store::{
    parse_stored, Bounded, CopiedAside, Listing, Put, RunListing, Store, DEFAULT_DOC_LIMIT,
};
pub use tally::kind as read_kind;
pub use url::{is_loopback_host, StoreUrl};
