//! An index's write-ahead journal: how single writes (`neardup serve`) become durable without
//! a flush of the vector store each.
//!
//! Flushing the embedded store writes out its segments and syncs them: tens of milliseconds,
//! however few writes it covers. Appending a line to a file is cheap, and one `fdatasync`
//! makes every line before it durable. So each write is applied to the store and appended
//! here, and it is durable once the journal is synced. The store itself is flushed (a
//! checkpoint) only when the journal has grown past [`CHECKPOINT_LINES`] or
//! [`CHECKPOINT_BYTES`], and the journal is emptied after it. Opening an index redoes what its
//! journal holds, in order (an insert as an upsert, a removal as a deletion: both may be
//! repeated safely), so the index ends where the last acknowledged write left it, whatever its
//! store had flushed when the process died.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::io::for_each_line;

/// The journal's file name inside an index folder.
pub(crate) const JOURNAL: &str = "journal.jsonl";
/// Lines after which the store is flushed and the journal emptied: bounds the replay at the
/// next open (a few seconds of embedding) and the journal's size.
const CHECKPOINT_LINES: usize = 16_384;
/// The same bound in bytes, for long texts.
const CHECKPOINT_BYTES: u64 = 64 << 20;

/// One write, as the journal keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Entry {
    /// Document `id` was added with this text (its first `title_len` bytes a title, where
    /// the record had one), alone or as part of `batch`.
    Insert {
        id: String,
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title_len: Option<usize>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        batch: Option<u64>,
    },
    /// Document `id` was removed.
    Remove { id: String },
    /// A batch of inserts that counts only whole starts; its inserts follow, among others.
    Begin { batch: u64 },
    /// The batch is over: its inserts stand (those it undid were removed before).
    End { batch: u64 },
}

/// The batches `entries` began and did not end: a process died inside them, before they were
/// acknowledged, so their inserts are to be undone.
pub(crate) fn unfinished(entries: &[Entry]) -> std::collections::HashSet<u64> {
    let mut open = std::collections::HashSet::new();
    for entry in entries {
        match entry {
            Entry::Begin { batch } => open.insert(*batch),
            Entry::End { batch } => open.remove(batch),
            _ => false,
        };
    }
    open
}

/// The open journal file of an index.
pub(crate) struct Journal {
    path: PathBuf,
    file: File,
    lines: usize,
    bytes: u64,
    /// Whether lines were appended since the last sync.
    unsynced: bool,
    /// Batches begun and not ended: the journal is not emptied while one is open, or a crash
    /// would leave half of it in the store with no word of the rest.
    open_batches: std::collections::HashSet<u64>,
    /// The number the next batch gets.
    next_batch: u64,
}

impl Journal {
    /// Opens (or creates) the journal in `dir` and returns it with the writes it holds, which
    /// the caller must redo before anything else. A last line cut short is a write that was
    /// never acknowledged (it was not synced whole) and is dropped; any other line that does
    /// not parse means the file was damaged.
    pub(crate) fn open(dir: &Path) -> Result<(Journal, Vec<Entry>)> {
        let path = dir.join(JOURNAL);
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        let mut entries = Vec::new();
        let mut whole_bytes = 0u64;
        for_each_line(BufReader::new(&mut file), &path, |number, line| {
            // Only the last line can be torn: a write is acknowledged after its newline.
            if line.last() != Some(&b'\n') {
                tracing::warn!(
                    path = %path.display(),
                    line = number,
                    "dropping a journal line cut short (a write that was never acknowledged)"
                );
                return Ok(());
            }
            let entry = serde_json::from_slice::<Entry>(line).map_err(|e| Error::Damaged {
                path: path.clone(),
                problem: format!("line {number} of the journal does not parse: {e}"),
                fix: None,
            })?;
            entries.push(entry);
            whole_bytes += line.len() as u64;
            Ok(())
        })?;
        // Appends go after the last whole line.
        file.set_len(whole_bytes).map_err(|e| Error::io(&path, e))?;
        file.seek(SeekFrom::End(0))
            .map_err(|e| Error::io(&path, e))?;
        let next_batch = entries
            .iter()
            .filter_map(|e| match e {
                Entry::Begin { batch } => Some(batch + 1),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let journal = Journal {
            path,
            file,
            lines: entries.len(),
            bytes: whole_bytes,
            unsynced: false,
            open_batches: Default::default(),
            next_batch,
        };
        Ok((journal, entries))
    }

    /// Appends one write (not yet durable: see [`Journal::sync`]).
    pub(crate) fn append(&mut self, entry: &Entry) -> Result<()> {
        let mut line = serde_json::to_vec(entry).expect("a journal entry serializes");
        line.push(b'\n');
        self.file
            .write_all(&line)
            .map_err(|e| Error::io(&self.path, e))?;
        self.lines += 1;
        self.bytes += line.len() as u64;
        self.unsynced = true;
        Ok(())
    }

    /// Makes every line appended so far durable.
    pub(crate) fn sync(&mut self) -> Result<()> {
        if self.unsynced {
            self.file
                .sync_data()
                .map_err(|e| Error::io(&self.path, e))?;
            self.unsynced = false;
        }
        Ok(())
    }

    /// Begins a batch, durably: once any of its inserts may be in the store, a crash must
    /// find the word that they are to be undone.
    pub(crate) fn begin(&mut self) -> Result<u64> {
        let batch = self.next_batch;
        self.append(&Entry::Begin { batch })?;
        self.sync()?;
        self.next_batch += 1;
        self.open_batches.insert(batch);
        Ok(batch)
    }

    /// Ends a batch (made durable with the next sync).
    pub(crate) fn end(&mut self, batch: u64) -> Result<()> {
        self.append(&Entry::End { batch })?;
        self.open_batches.remove(&batch);
        Ok(())
    }

    /// Whether a batch is open: then the journal must not be emptied.
    pub(crate) fn batches_open(&self) -> bool {
        !self.open_batches.is_empty()
    }

    /// Whether the store should be flushed and the journal emptied now.
    pub(crate) fn checkpoint_due(&self) -> bool {
        (self.lines >= CHECKPOINT_LINES || self.bytes >= CHECKPOINT_BYTES) && !self.batches_open()
    }

    /// Empties the journal. Only after the store has flushed every write it holds.
    pub(crate) fn clear(&mut self) -> Result<()> {
        self.file.set_len(0).map_err(|e| Error::io(&self.path, e))?;
        self.file.sync_all().map_err(|e| Error::io(&self.path, e))?;
        self.lines = 0;
        self.bytes = 0;
        self.unsynced = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insert(id: &str, text: &str) -> Entry {
        Entry::Insert {
            id: id.into(),
            text: text.into(),
            title_len: None,
            batch: None,
        }
    }

    #[test]
    fn a_batch_begun_and_not_ended_is_unfinished_and_holds_off_the_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let (mut journal, _) = Journal::open(dir.path()).unwrap();
        let first = journal.begin().unwrap();
        let second = journal.begin().unwrap();
        journal.lines = CHECKPOINT_LINES;
        assert!(!journal.checkpoint_due(), "two batches open");
        journal.end(first).unwrap();
        assert!(!journal.checkpoint_due(), "one batch open");
        drop(journal);
        let (mut journal, pending) = Journal::open(dir.path()).unwrap();
        assert_eq!(unfinished(&pending), [second].into());
        assert_eq!(
            journal.begin().unwrap(),
            second + 1,
            "numbers are not reused"
        );
    }

    #[test]
    fn entries_come_back_in_order_after_reopening_and_clear_empties_it() {
        let dir = tempfile::tempdir().unwrap();
        let (mut journal, pending) = Journal::open(dir.path()).unwrap();
        assert!(pending.is_empty());
        let written = [
            insert("a", "first text"),
            Entry::Remove { id: "a".into() },
            insert("a", "line\nbreaks \"quoted\" ü"),
        ];
        for entry in &written {
            journal.append(entry).unwrap();
        }
        journal.sync().unwrap();
        drop(journal);

        let (mut journal, pending) = Journal::open(dir.path()).unwrap();
        assert_eq!(pending, written);
        journal.clear().unwrap();
        drop(journal);
        let (_, pending) = Journal::open(dir.path()).unwrap();
        assert!(pending.is_empty());
        assert_eq!(
            std::fs::metadata(dir.path().join(JOURNAL)).unwrap().len(),
            0
        );
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_later_appends_follow_the_last_whole_line() {
        let dir = tempfile::tempdir().unwrap();
        let (mut journal, _) = Journal::open(dir.path()).unwrap();
        journal.append(&insert("a", "kept")).unwrap();
        drop(journal);
        let path = dir.path().join(JOURNAL);
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        // Cut inside a two-byte character.
        file.write_all(b"{\"op\":\"insert\",\"id\":\"b\",\"text\":\"\xc3")
            .unwrap();
        drop(file);

        let (mut journal, pending) = Journal::open(dir.path()).unwrap();
        assert_eq!(pending, [insert("a", "kept")]);
        journal.append(&insert("c", "after")).unwrap();
        drop(journal);
        let (_, pending) = Journal::open(dir.path()).unwrap();
        assert_eq!(pending, [insert("a", "kept"), insert("c", "after")]);
    }

    #[test]
    fn a_damaged_line_before_the_last_is_an_error_naming_the_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(JOURNAL),
            "{\"op\":\"remove\",\"id\":\"a\"}\nnot json\n{\"op\":\"remove\",\"id\":\"b\"}\n",
        )
        .unwrap();
        let error = Journal::open(dir.path()).err().unwrap().to_string();
        assert!(error.contains("line 2 of the journal"), "{error}");
    }
}
