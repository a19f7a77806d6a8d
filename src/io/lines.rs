//! Files read line by line: input formats of a record a line (JSON Lines, plain text), and
//! what neardup reads back (a run's JSONL files, an index's journal, another tool's groups).

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::{Body, ByteRange, RawRecord, RawRecords, too_long};
use crate::error::{Error, Location, Result};

/// The records of `path`, one a line, of the lines that start within `range` (its own bytes):
/// each line, its newline and a first line's byte-order mark dropped, made a record's body by
/// `body` (with the line's number); blank lines are none, and a line longer than
/// `max_record_bytes` is a bad record. A range that starts mid-file is entered at the first
/// line that starts in it; its lines are then named by the byte they start at, since the lines
/// before are not counted.
pub(super) fn line_records(
    path: &Path,
    max_record_bytes: u64,
    range: ByteRange,
    body: fn(u64, Vec<u8>) -> Body,
) -> Result<RawRecords> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut at = 0;
    if range.start > 0 {
        // The line that holds the byte before the range ends where the next one starts.
        reader
            .seek(SeekFrom::Start(range.start - 1))
            .and_then(|_| read_line_capped(&mut reader, &mut Vec::new(), 0))
            .map(|(read, _)| at = range.start - 1 + read)
            .map_err(|e| Error::io(path, e))?;
    }
    Ok(Box::new(LineRecords {
        path: path.to_owned(),
        reader,
        line: 0,
        counting: range.start == 0,
        at,
        end: range.end,
        limit: max_record_bytes,
        body,
    }))
}

struct LineRecords {
    path: PathBuf,
    reader: BufReader<File>,
    /// Lines read, blank ones included.
    line: u64,
    /// Whether reading began at the file's start, so that `line` numbers the lines.
    counting: bool,
    /// The byte the next line starts at.
    at: u64,
    /// No line that starts here or later is read.
    end: u64,
    /// The longest line kept in memory.
    limit: u64,
    /// A line's body, from its number and bytes.
    body: fn(u64, Vec<u8>) -> Body,
}

impl Iterator for LineRecords {
    type Item = Result<RawRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.at >= self.end {
                return None;
            }
            let mut buf = Vec::new();
            let (read, over) = match read_line_capped(&mut self.reader, &mut buf, self.limit) {
                Ok(read) => read,
                Err(e) => return Some(Err(Error::io(&self.path, e))),
            };
            if read == 0 {
                return None;
            }
            self.line += 1;
            let start = self.at;
            self.at += read;
            let location = match self.counting {
                true => Location::line(&self.path, self.line),
                false => Location::line_at_byte(&self.path, start),
            };
            if over {
                return Some(Ok(RawRecord {
                    body: Body::Invalid(too_long(location.clone(), self.limit)),
                    location,
                    input_bytes: read,
                }));
            }
            if buf.last() == Some(&b'\n') {
                buf.pop();
            }
            if start == 0 {
                strip_utf8_bom(&mut buf);
            }
            if buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(Ok(RawRecord {
                location,
                input_bytes: read,
                body: (self.body)(self.line, buf),
            }));
        }
    }
}

/// Drops the UTF-8 byte-order mark that editors on Windows start a file with from `first`, the
/// file's first line: it is no part of the first record (`unique.jsonl` copies the record
/// without it).
fn strip_utf8_bom(first: &mut Vec<u8>) {
    const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";
    if first.starts_with(UTF8_BOM) {
        first.drain(..UTF8_BOM.len());
    }
}

/// Reads one line (with its newline) into `buf`, keeping at most `limit` bytes of it: the rest
/// of a longer line is read past and dropped, so that memory stays within `limit` whatever the
/// line. Returns the bytes read (0 at the end of the input) and whether the line was longer
/// (`buf` is then empty).
pub fn read_line_capped(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    limit: u64,
) -> std::io::Result<(u64, bool)> {
    let mut read = 0u64;
    let mut over = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok((read, over));
        }
        let (take, ends) = match memchr::memchr(b'\n', available) {
            Some(newline) => (newline + 1, true),
            None => (available.len(), false),
        };
        if !over && !super::push_capped(buf, &available[..take], limit) {
            over = true;
            *buf = Vec::new();
        }
        reader.consume(take);
        read += take as u64;
        if ends {
            return Ok((read, over));
        }
    }
}

/// Calls `each` with every line of `reader` and its number, from 1, until the end or the first
/// error. A line keeps its newline, so that the last one shows whether it was cut short; I/O
/// errors name `path`.
pub fn for_each_line(
    mut reader: impl BufRead,
    path: &Path,
    mut each: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<()> {
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::io(path, e))?;
        if read == 0 {
            break;
        }
        each(number, &line)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capped_line_is_read_past_without_keeping_it() {
        let mut reader = std::io::BufReader::with_capacity(4, &b"abc\nlong line\nxy"[..]);
        let mut lines = Vec::new();
        loop {
            let mut buf = Vec::new();
            let (read, over) = read_line_capped(&mut reader, &mut buf, 5).unwrap();
            if read == 0 {
                break;
            }
            lines.push((read, over, buf));
        }
        assert_eq!(
            lines,
            [
                (4, false, b"abc\n".to_vec()),
                (10, true, Vec::new()),
                (2, false, b"xy".to_vec())
            ]
        );
    }

    #[test]
    fn lines_are_numbered_from_one_keep_their_newline_and_stop_at_an_error() {
        let mut seen = Vec::new();
        for_each_line(&b"a\n\nb"[..], Path::new("f"), |number, line| {
            seen.push((number, line.to_vec()));
            Ok(())
        })
        .unwrap();
        assert_eq!(
            seen,
            [
                (1, b"a\n".to_vec()),
                (2, b"\n".to_vec()),
                (3, b"b".to_vec())
            ]
        );
        let mut calls = 0;
        let stopped = for_each_line(&b"a\nb\n"[..], Path::new("f"), |_, _| {
            calls += 1;
            Err(Error::Usage("stop".into()))
        });
        assert!(stopped.is_err());
        assert_eq!(calls, 1);
    }
}
