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
    /// Document `id` was added with this text.
    Insert { id: String, text: String },
    /// Document `id` was removed.
    Remove { id: String },
}

/// The open journal file of an index.
pub(crate) struct Journal {
    path: PathBuf,
    file: File,
    lines: usize,
    bytes: u64,
    /// Whether lines were appended since the last sync.
    unsynced: bool,
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
            })?;
            entries.push(entry);
            whole_bytes += line.len() as u64;
            Ok(())
        })?;
        // Appends go after the last whole line.
        file.set_len(whole_bytes).map_err(|e| Error::io(&path, e))?;
        file.seek(SeekFrom::End(0))
            .map_err(|e| Error::io(&path, e))?;
        let journal = Journal {
            path,
            file,
            lines: entries.len(),
            bytes: whole_bytes,
            unsynced: false,
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

    /// Whether the store should be flushed and the journal emptied now.
    pub(crate) fn checkpoint_due(&self) -> bool {
        self.lines >= CHECKPOINT_LINES || self.bytes >= CHECKPOINT_BYTES
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
        }
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
