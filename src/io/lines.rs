//! Files neardup reads back line by line: a run's JSONL files, an index's journal, another
//! tool's groups.

use std::io::BufRead;
use std::path::Path;

use crate::error::{Error, Result};

/// Drops the UTF-8 byte-order mark that editors on Windows start a file with from `first`, the
/// file's first line: it is no part of the first record (`unique.jsonl` copies the record
/// without it).
pub(super) fn strip_utf8_bom(first: &mut Vec<u8>) {
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
