//! What the handlers share ([`AppState`]): the index, the write lock and group commit, and
//! the limits a request is held to.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::commit;
use crate::index::DocumentIndex;

/// What the handlers share.
pub(crate) struct AppState {
    pub(crate) index: DocumentIndex,
    /// Serialises writes (the embedded engine's flush must not overlap another write).
    pub(crate) writes: Mutex<()>,
    /// Which writes are durable; flushes them in groups.
    pub(crate) commits: commit::GroupCommit,
    pub(crate) token: Option<String>,
    pub(crate) top_k: usize,
    pub(crate) max_text_bytes: usize,
    /// Largest request body in bytes.
    pub(crate) max_body: usize,
    /// Permits for requests that embed and search: each holds a text's tokens and vectors,
    /// so their number, not the request rate, bounds the memory a burst can take.
    pub(crate) heavy: Arc<tokio::sync::Semaphore>,
    pub(crate) started: Instant,
}
