//! Reading a command's arguments: numbers that must be finite, and a text given as a file or
//! standard input.

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Location, Result};

/// Parses a number that must be finite: `NaN` and `inf` parse as floats, and would otherwise
/// reach the settings as JSON's `null`, which reads as "not given".
pub fn finite<T: std::str::FromStr + Into<f64> + Copy>(
    value: &str,
) -> std::result::Result<T, String> {
    match value.parse::<T>() {
        Ok(number) if number.into().is_finite() => Ok(number),
        Ok(_) => Err(format!("{value} is not a finite number")),
        Err(_) => Err(format!("{value} is not a number")),
    }
}

/// The text of a file, or of standard input for `-`, of at most `limit` bytes: a longer one
/// is refused once `limit` bytes are read, so that no more is held. `flag`, where the command
/// has one, raises the limit.
pub(super) fn read_text_arg(path: &Path, limit: usize, flag: Option<&str>) -> Result<String> {
    let mut bytes = Vec::new();
    let read = |source: &mut dyn Read, bytes: &mut Vec<u8>| {
        source
            .take(limit as u64 + 1)
            .read_to_end(bytes)
            .map_err(|e| Error::io(path, e))
    };
    if path == Path::new("-") {
        read(&mut std::io::stdin(), &mut bytes)?;
    } else {
        let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        read(&mut file, &mut bytes)?;
    }
    if bytes.len() > limit {
        return Err(Error::input(
            Location::file(path),
            None,
            format!("the text is longer than {limit} bytes, the most read"),
            match flag {
                Some(flag) => format!("give a larger {flag}, or a shorter text"),
                None => "give a shorter text".to_owned(),
            },
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::input(
            Location::file(path),
            None,
            format!(
                "not valid UTF-8 (byte {})",
                e.utf8_error().valid_up_to() + 1
            ),
            "convert the file to UTF-8",
        )
    })
}

/// The longest text read from a file by the commands that compare two or a few
/// (`jaccard`, `diff`, `overlap`).
pub(super) const COMPARED_TEXT_BYTES: usize = crate::io::DEFAULT_MAX_DOC_BYTES;
