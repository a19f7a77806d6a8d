//! JSONL: each record as one JSON object a line. A JSONL input's line is copied byte for byte;
//! an annotated line gains the three keys at the end of its object, the rest untouched.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{ANNOTATION_COLUMNS, DUPLICATE_OF_COLUMN, Fate, GROUP_COLUMN, KEEP_COLUMN, RecordSink};
use crate::error::{Error, Result};
use crate::io::{FieldSpec, RawRecord};

/// Writes records as JSON lines.
pub struct JsonlSink<W: Write> {
    out: W,
    path: PathBuf,
    fields: FieldSpec,
}

impl<W: Write> JsonlSink<W> {
    /// A sink writing into `out`, named `path` in errors; `fields` names a text file's id and
    /// text (folders and zips).
    pub fn new(out: W, path: &Path, fields: &FieldSpec) -> Self {
        JsonlSink {
            out,
            path: path.to_owned(),
            fields: fields.clone(),
        }
    }
}

impl<W: Write> RecordSink for JsonlSink<W> {
    fn write(&mut self, raw: &RawRecord, fate: Option<&Fate>) -> Result<()> {
        let line = raw.original_json(&self.fields)?;
        let written = match fate {
            None => self.out.write_all(&line),
            Some(fate) => {
                let annotated = annotate(&line, fate).ok_or_else(|| {
                    Error::input(
                        raw.location.clone(),
                        Some(GROUP_COLUMN),
                        "the record already has a neardup_* key (is it an annotated copy?)",
                        "deduplicate the original input, or rename its neardup_* keys",
                    )
                })?;
                self.out.write_all(&annotated)
            }
        };
        written
            .and_then(|()| self.out.write_all(b"\n"))
            .map_err(|e| Error::io(&self.path, e))
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        self.out.flush().map_err(|e| Error::io(&self.path, e))
    }
}

/// `object` (one JSON object, as read) with the annotation's keys added before its closing
/// brace; `None` if it holds one of them already.
fn annotate(object: &[u8], fate: &Fate) -> Option<Vec<u8>> {
    if memchr::memmem::find(object, b"\"neardup_").is_some() {
        let map: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(object).ok()?;
        if ANNOTATION_COLUMNS.iter().any(|k| map.contains_key(*k)) {
            return None;
        }
    }
    let end = object.iter().rposition(|&b| b == b'}')?;
    let body = &object[..end];
    let empty = body
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_whitespace() || **b == b'{')
        .any(|&b| b == b'{');
    let mut line = Vec::with_capacity(object.len() + 80);
    line.extend_from_slice(body);
    if !empty {
        line.push(b',');
    }
    // Into a Vec, JSON of these values cannot fail.
    let _ = write!(line, "\"{GROUP_COLUMN}\":");
    let _ = serde_json::to_writer(&mut line, &fate.group);
    let _ = write!(
        line,
        ",\"{KEEP_COLUMN}\":{},\"{DUPLICATE_OF_COLUMN}\":",
        fate.kept
    );
    let _ = serde_json::to_writer(&mut line, &fate.duplicate_of);
    line.push(b'}');
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fate(group: Option<usize>, kept: bool, of: Option<&str>) -> Fate<'_> {
        Fate {
            group,
            kept,
            duplicate_of: of,
        }
    }

    #[test]
    fn the_annotation_closes_the_object_and_keeps_the_rest_as_read() {
        let line = br#"{"id":"b", "n": 1.50 , "t":"x}"}  "#;
        let out = annotate(line, &fate(Some(3), false, Some("a"))).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"id":"b", "n": 1.50 , "t":"x}","neardup_group":3,"neardup_keep":false,"neardup_duplicate_of":"a"}"#
        );
        let out = annotate(br#"{"id":"c"}"#, &fate(Some(0), false, Some("a \"b\"\n"))).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            value["neardup_duplicate_of"], "a \"b\"\n",
            "an id is escaped"
        );
        let out = annotate(b"{ }", &fate(None, true, None)).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"neardup_group": null, "neardup_keep": true, "neardup_duplicate_of": null})
        );
    }

    #[test]
    fn a_record_holding_an_annotation_key_is_refused() {
        let line = br#"{"id":"b","neardup_keep":true}"#;
        assert!(annotate(line, &fate(None, true, None)).is_none());
        // The text may mention the word: only a key counts.
        let line = br#"{"id":"b","t":"\"neardup_keep\" is a key"}"#;
        assert!(annotate(line, &fate(None, true, None)).is_some());
    }
}
