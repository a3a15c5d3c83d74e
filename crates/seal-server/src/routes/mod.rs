//! The API's handlers, by what they touch: each only translates HTTP into a call of the engine
//! and its answer back into a response.

pub(crate) mod blobs;
pub(crate) mod reads;
pub(crate) mod rolls;
pub(crate) mod runs;
