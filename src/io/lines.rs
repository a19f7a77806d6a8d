//! Files neardup reads back line by line: a run's JSONL files, an index's journal, another
//! tool's groups.

use std::io::BufRead;
use std::path::Path;

use crate::error::{Error, Result};

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
