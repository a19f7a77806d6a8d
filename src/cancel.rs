//! Stopping long work when its caller asks: the Python package asks on Ctrl-C, where ending
//! the process (as the command line does, see [`crate::io::ScratchDir`]) would end the
//! caller's interpreter too.
//!
//! A request is one flag. The loops that take most of a run look at it between chunks of
//! their work: reading, signing, embedding and writing (each chunk of records), the search
//! within cells (each few dozen cells), and a run file's lines (each few blocks: the
//! candidates of a large run). A loop that can fail stops with
//! [`Error::Interrupted`](crate::error::Error::Interrupted); one that cannot stops early and
//! leaves its caller to look. Setting the flag is safe in a signal handler.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Asks the work under way to stop at its next look.
pub fn request() {
    REQUESTED.store(true, Ordering::Relaxed);
}

/// Whether the work under way was asked to stop.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// Forgets a request: done before new work begins.
pub fn clear() {
    REQUESTED.store(false, Ordering::Relaxed);
}
