//! Group commit: writes that arrive while one flush runs share the next one.
//!
//! A write is answered only once it is durable. Making writes durable one at a time caps the
//! write rate at one flush per write (161 writes/s when each flushed the embedded store); here
//! each write takes a sequence number while it holds the write lock, and then waits until a
//! flush covers it. A flush is [`crate::index::DocumentIndex::flush`]: a sync of the index's
//! journal, and now and then a flush of the store. Whoever finds no flush running flushes
//! everything written so far, under the write lock (the embedded engine's flush must not
//! overlap a write), and wakes the writers it covered. Since no write can be applied while a
//! flush runs, the writes that queued up during one are let in before the next starts (for at
//! most [`GATHER`]), so that they share it.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::Result;

/// Sequence numbers of the writes applied and of the writes made durable.
#[derive(Default)]
pub(crate) struct GroupCommit {
    state: Mutex<Progress>,
    flushed: Condvar,
}

#[derive(Default)]
struct Progress {
    /// Writes applied to the store (the last sequence number handed out).
    written: u64,
    /// Every write up to this one is durable.
    durable: u64,
    /// Whether a writer is flushing now (or letting arriving writes in first).
    flushing: bool,
    /// Writes on their way to the write lock.
    arriving: usize,
}

/// The longest a flush waits for arriving writes.
const GATHER: Duration = Duration::from_millis(5);

/// A write on its way: from before it takes the write lock until it is applied or given up.
pub(crate) struct Arrival<'a> {
    commit: &'a GroupCommit,
}

impl Arrival<'_> {
    /// Numbers the write just applied. Call it while holding the write lock, so that the
    /// numbers follow the order of the writes.
    pub(crate) fn applied(self) -> u64 {
        let mut progress = self.commit.progress();
        progress.written += 1;
        progress.written
    }
}

impl Drop for Arrival<'_> {
    fn drop(&mut self) {
        self.commit.progress().arriving -= 1;
        self.commit.flushed.notify_all();
    }
}

impl GroupCommit {
    /// Announces a write, before it takes the write lock.
    pub(crate) fn arrive(&self) -> Arrival<'_> {
        self.progress().arriving += 1;
        Arrival { commit: self }
    }

    /// Returns once write `seq` is durable: after a flush that started after it, run by this
    /// thread (`flush`, under `writes`) or by another. A failed flush is this caller's error;
    /// the writers it would have covered try again.
    pub(crate) fn durable(
        &self,
        seq: u64,
        writes: &Mutex<()>,
        flush: impl Fn() -> Result<()>,
    ) -> Result<()> {
        let mut progress = self.progress();
        loop {
            if progress.durable >= seq {
                return Ok(());
            }
            if progress.flushing {
                progress = self
                    .flushed
                    .wait(progress)
                    .unwrap_or_else(|e| e.into_inner());
                continue;
            }
            progress.flushing = true;
            let deadline = Instant::now() + GATHER;
            while progress.arriving > 0 {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                progress = self
                    .flushed
                    .wait_timeout(progress, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            drop(progress);
            let (target, outcome) = {
                let _write = writes.lock().unwrap_or_else(|e| e.into_inner());
                // No write is half done while the lock is held: all up to `target` are applied.
                let target = self.progress().written;
                (target, flush())
            };
            progress = self.progress();
            progress.flushing = false;
            if outcome.is_ok() {
                progress.durable = progress.durable.max(target);
            }
            self.flushed.notify_all();
            outcome?;
        }
    }

    fn progress(&self) -> MutexGuard<'_, Progress> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    use super::*;

    /// Eight writers, 200 writes each, against a flush that takes a millisecond and records
    /// how far the writes had got: every write returns only after a flush that saw it, and the
    /// writers share flushes (far fewer than writes).
    #[test]
    fn each_write_returns_after_a_flush_that_covers_it_and_flushes_are_shared() {
        let commit = GroupCommit::default();
        let writes = Mutex::new(());
        let applied = AtomicU64::new(0);
        let flushed_up_to = AtomicU64::new(0);
        let flushes = AtomicUsize::new(0);
        let flush = || {
            std::thread::sleep(std::time::Duration::from_millis(1));
            flushed_up_to.store(applied.load(Ordering::SeqCst), Ordering::SeqCst);
            flushes.fetch_add(1, Ordering::SeqCst);
            Ok(())
        };
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    for _ in 0..200 {
                        let arrival = commit.arrive();
                        let seq = {
                            let _write = writes.lock().unwrap();
                            applied.fetch_add(1, Ordering::SeqCst);
                            arrival.applied()
                        };
                        commit.durable(seq, &writes, flush).unwrap();
                        assert!(flushed_up_to.load(Ordering::SeqCst) >= seq);
                    }
                });
            }
        });
        let flushes = flushes.load(Ordering::SeqCst);
        assert!(flushes < 1600, "{flushes} flushes for 1600 writes");
        assert_eq!(commit.progress().durable, 1600);
        assert_eq!(commit.progress().arriving, 0);
    }

    #[test]
    fn a_failed_flush_is_the_flushers_error_and_the_next_writer_flushes_again() {
        let commit = GroupCommit::default();
        let writes = Mutex::new(());
        let seq = commit.arrive().applied();
        let failing = || Err(crate::error::Error::store("disk full"));
        assert!(commit.durable(seq, &writes, failing).is_err());
        assert_eq!(commit.progress().durable, 0);
        commit.durable(seq, &writes, || Ok(())).unwrap();
        assert_eq!(commit.progress().durable, 1);
    }
}
