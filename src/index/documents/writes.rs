//! Writes to an open index one document at a time (`serve`): each is journalled before it is
//! acknowledged, so that a crash loses nothing acknowledged; a batch counts only whole; the
//! journal is redone when the index next opens.

use std::sync::MutexGuard;

use super::{DocumentIndex, Match, NewDocument};
use crate::error::{Error, Result};
use crate::index::journal::{self, Entry, Journal};
use crate::io::Record;
use crate::store::point_key;

impl DocumentIndex {
    /// Redoes the writes a journal left by a process that did not end cleanly, flushes them
    /// into the store and empties the journal. Returns whether there were any.
    pub(super) fn redo_journal(&self) -> Result<bool> {
        if !self.dir.join(journal::JOURNAL).exists() {
            return Ok(false);
        }
        let (mut journal, pending) = Journal::open(&self.dir)?;
        // A batch cut short was never acknowledged: its inserts are undone, not redone (the
        // store's own log may hold some of them).
        let unfinished = journal::unfinished(&pending);
        let mut undone = Vec::new();
        for entry in &pending {
            match entry {
                Entry::Insert {
                    id,
                    batch: Some(batch),
                    ..
                } if unfinished.contains(batch) => undone.push(point_key(id)),
                Entry::Insert {
                    id,
                    text,
                    title_len,
                    ..
                } => {
                    let record = Record {
                        id: id.clone(),
                        text: text.clone(),
                        title_len: *title_len,
                    };
                    for (id, new) in self.prepare_records(vec![record])? {
                        self.add(&[new.point(&id)])?;
                    }
                }
                Entry::Remove { id } => {
                    self.forget_snapshot()?;
                    self.store.delete(&[point_key(id)])?
                }
                Entry::Begin { .. } | Entry::End { .. } => {}
            }
        }
        if !undone.is_empty() {
            self.forget_snapshot()?;
            self.store.delete(&undone)?;
            tracing::warn!(
                documents = undone.len(),
                "undid the documents of a batch a process did not finish adding"
            );
        }
        if !pending.is_empty() {
            self.store.flush()?;
            journal.clear()?;
            tracing::info!(
                writes = pending.len(),
                "redid the writes the index's journal held"
            );
        }
        *self.journal_guard() = Some(journal);
        Ok(!pending.is_empty())
    }

    /// Adds a [`prepare`](DocumentIndex::prepare)d document as `id`; returns the neighbours
    /// found when it was prepared. The caller serialises writes, and calls
    /// [`DocumentIndex::flush`] before it says the document is stored.
    pub fn insert(&self, id: &str, new: NewDocument) -> Result<Vec<Match>> {
        self.insert_in(id, new, None)
    }

    /// Starts a batch of inserts that counts only whole: until [`DocumentIndex::end_batch`],
    /// a crash undoes what [`DocumentIndex::insert_in`] added in it when the index next opens.
    pub fn begin_batch(&self) -> Result<u64> {
        self.with_journal(Journal::begin)
    }

    /// Ends a batch: its inserts stand (undo the ones that should not, with
    /// [`DocumentIndex::remove`], first).
    pub fn end_batch(&self, batch: u64) -> Result<()> {
        self.with_journal(|journal| journal.end(batch))
    }

    /// [`DocumentIndex::insert`] as part of `batch`.
    pub fn insert_in(&self, id: &str, new: NewDocument, batch: Option<u64>) -> Result<Vec<Match>> {
        if let Some(stored) = self.store.fetch(&[point_key(id)])?.remove(0)
            && stored.payload.id != id
        {
            return Err(Error::IdCollision {
                first: stored.payload.id,
                second: id.to_owned(),
            });
        }
        self.add(&[new.point(id)])?;
        self.journal(&Entry::Insert {
            id: id.to_owned(),
            text: new.text,
            title_len: new.title_len,
            batch,
        })?;
        Ok(new.found)
    }

    /// Removes document `id`; returns whether it was there. As with
    /// [`DocumentIndex::insert`], the caller serialises writes and flushes.
    pub fn remove(&self, id: &str) -> Result<bool> {
        if !self.contains(id)? {
            return Ok(false);
        }
        self.forget_snapshot()?;
        self.store.delete(&[point_key(id)])?;
        self.journal(&Entry::Remove { id: id.to_owned() })?;
        Ok(true)
    }

    /// Makes every write so far durable: syncs the journal, or, when it has grown long enough,
    /// flushes the store and empties it. Must not overlap a write.
    pub fn flush(&self) -> Result<()> {
        match self.journal_guard().as_mut() {
            Some(journal) if journal.checkpoint_due() => self.checkpoint(journal),
            Some(journal) => journal.sync(),
            None => self.store.flush(),
        }
    }

    /// Flushes the store and empties the journal, so that the next open has nothing to redo.
    /// For a clean shutdown; must not overlap a write.
    pub fn close(&self) -> Result<()> {
        match self.journal_guard().as_mut() {
            Some(journal) => self.checkpoint(journal),
            None => self.store.flush(),
        }
    }

    /// Flushes the store, records its document count in the manifest (documents added or
    /// deleted one at a time change it) and empties the journal. A crash before the journal
    /// is emptied leaves it to be redone, which records the count again.
    pub(super) fn checkpoint(&self, journal: &mut Journal) -> Result<()> {
        self.store.flush()?;
        self.write_manifest(self.store.len()?)?;
        if journal.batches_open() {
            // Kept, so that the next open undoes the batches' inserts the store now holds.
            return journal.sync();
        }
        journal.clear()
    }

    /// Appends a write just applied to the journal, opening it on the first.
    pub(super) fn journal(&self, entry: &Entry) -> Result<()> {
        self.with_journal(|journal| journal.append(entry))
    }

    /// Runs `work` on the journal, opening it on the first write.
    pub(super) fn with_journal<T>(
        &self,
        work: impl FnOnce(&mut Journal) -> Result<T>,
    ) -> Result<T> {
        let mut guard = self.journal_guard();
        let journal = match guard.as_mut() {
            Some(journal) => journal,
            // `open` found no journal to redo, so this one starts empty.
            None => guard.insert(Journal::open(&self.dir)?.0),
        };
        work(journal)
    }

    pub(super) fn journal_guard(&self) -> MutexGuard<'_, Option<Journal>> {
        self.journal.lock().unwrap_or_else(|e| e.into_inner())
    }
}
