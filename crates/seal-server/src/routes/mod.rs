//! The API's handlers, by what they touch: each only translates HTTP into a call of the engine
//! and its answer back into a response; [`health`] also holds the log admission gate finalize
//! waits on, [`observe`] the layer that gives every request its id, access line and metrics,
//! [`metrics`] the server's families.

pub(crate) mod blobs;
pub(crate) mod health;
pub(crate) mod metrics;
pub(crate) mod observe;
pub(crate) mod reads;
pub(crate) mod rolls;
pub(crate) mod runs;
