//! Plain text, one document a line: the layout of many training corpora (a sentence or a
//! paragraph a line). A document's id is its line number, from 1. A blank line is no document
//! and keeps its number, so that an id always names the line it came from.

use std::path::Path;

use super::lines::line_records;
use super::{Body, ByteRange, FieldSpec, Format, RawRecords};
use crate::error::Result;

/// Plain text, one document a line.
pub(super) struct TextLines;

impl Format for TextLines {
    fn name(&self) -> &'static str {
        "lines"
    }

    fn about(&self) -> &'static str {
        "Plain text, one document a line (its id: the line number, from 1)"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["txt"]
    }

    fn open(&self, path: &Path, _: &FieldSpec, max_record_bytes: u64) -> Result<RawRecords> {
        line_records(path, max_record_bytes, ByteRange::ALL, numbered_line)
    }

    fn written_as(&self) -> &'static str {
        "jsonl"
    }
}

/// A line's record, its id the line's number: a line ended by CRLF loses the CR too.
fn numbered_line(line: u64, mut text: Vec<u8>) -> Body {
    if text.last() == Some(&b'\r') {
        text.pop();
    }
    Body::File {
        id: line.to_string(),
        bytes: text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{DEFAULT_MAX_DOC_BYTES, FieldSpec, Input, InputFormat};

    #[test]
    fn each_line_is_a_document_named_by_its_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sentences.txt");
        let long = "x".repeat(120);
        let text =
            format!("\u{feff}the first line\r\n\n  \nthe fourth, after blanks\n{long}\nnot ended");
        std::fs::write(&path, text).unwrap();
        let input = Input::new(&path, None).unwrap();
        assert_eq!(input.format, InputFormat::named("lines").unwrap());
        let fields = FieldSpec::default();
        let read: Vec<(String, Result<String, String>)> = input
            .open(&fields, 100)
            .unwrap()
            .map(|raw| {
                let raw = raw.unwrap();
                let record = raw.parse(&fields);
                let place = raw.location.to_string();
                (
                    place,
                    record
                        .map(|r| format!("{}={}", r.id, r.text))
                        .map_err(|e| e.problem),
                )
            })
            .collect();
        let name = path.display();
        assert_eq!(
            read[0],
            (format!("{name}:1"), Ok("1=the first line".into()))
        );
        assert_eq!(
            read[1],
            (format!("{name}:4"), Ok("4=the fourth, after blanks".into()))
        );
        assert_eq!(read[2].0, format!("{name}:5"));
        assert!(
            read[2].1.as_ref().unwrap_err().contains("100 bytes"),
            "{:?}",
            read[2]
        );
        assert_eq!(read[3], (format!("{name}:6"), Ok("6=not ended".into())));
        assert_eq!(read.len(), 4);

        let all = input.open(&fields, DEFAULT_MAX_DOC_BYTES as u64).unwrap();
        assert_eq!(
            all.filter(|raw| raw.as_ref().unwrap().parse(&fields).is_ok())
                .count(),
            4
        );
    }
}
