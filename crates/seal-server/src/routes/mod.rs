//! The API's handlers, by what they touch: each only translates HTTP into a call of the engine
//! and its answer back into a response; [`health`] answers the probes, [`observe`] is the layer
//! that gives every request its id, access line and metrics. The log admission gate finalize
//! waits on is `crate::admission`, the server's metric families `crate::metrics`.

pub(crate) mod blobs;
pub(crate) mod health;

pub(crate) mod observe;
pub(crate) mod reads;
pub(crate) mod reviews;
pub(crate) mod rolls;
pub(crate) mod runs;
