//! JSON Lines: one JSON object a line.

use std::path::Path;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::lines::line_records;
use super::{Body, ByteRange, FieldSpec, Format, RawRecords, Record};
use crate::error::{InputError, Location, Result};

const SKIP_HINT: &str = "fix the record, or pass --skip-invalid to skip bad records";

pub(super) fn parse(
    line: &[u8],
    fields: &FieldSpec,
    location: &Location,
) -> Result<Record, InputError> {
    let text = std::str::from_utf8(line).map_err(|e| not_utf8(location, e))?;
    let (id, texts) = wanted(text, fields, location)?;
    finish(id, texts, fields, location)
}

/// [`parse`], taking the line: it is let go of once its fields are read, before they are
/// joined into the text, so that a long record is held at most twice (its fields, then its
/// text) rather than three times.
pub(super) fn parse_owned(
    line: Vec<u8>,
    fields: &FieldSpec,
    location: &Location,
) -> Result<Record, InputError> {
    let text = String::from_utf8(line).map_err(|e| not_utf8(location, e.utf8_error()))?;
    let (id, texts) = wanted(&text, fields, location)?;
    drop(text);
    finish(id, texts, fields, location)
}

/// A line's bytes that are not UTF-8, as a bad record.
fn not_utf8(location: &Location, e: std::str::Utf8Error) -> InputError {
    InputError {
        location: location.clone(),
        field: None,
        problem: format!("not valid UTF-8 (byte {} of the line)", e.valid_up_to() + 1),
        hint: SKIP_HINT.into(),
    }
}

/// The id and text fields of the JSON object `text` (with `fields`' names).
fn wanted(
    text: &str,
    fields: &FieldSpec,
    location: &Location,
) -> Result<(Option<Value>, Vec<Option<Value>>), InputError> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let wanted = Wanted(fields)
        .deserialize(&mut deserializer)
        .and_then(|w| deserializer.end().map(|()| w));
    wanted.map_err(|_| {
        // The fast path only says that something is wrong; a full parse says what.
        let problem = match serde_json::from_str::<Value>(text) {
            Ok(value) => format!("expected a JSON object, found {}", kind(&value)),
            Err(e) => format!("not valid JSON: {e}"),
        };
        InputError {
            location: location.clone(),
            field: None,
            problem,
            hint: SKIP_HINT.into(),
        }
    })
}

/// The record of the id and text fields read from a line.
fn finish(
    id: Option<Value>,
    texts: Vec<Option<Value>>,
    fields: &FieldSpec,
    location: &Location,
) -> Result<Record, InputError> {
    let bad = |field: &str, problem: String| InputError {
        location: location.clone(),
        field: Some(field.to_owned()),
        problem,
        hint: SKIP_HINT.into(),
    };
    let id = match id {
        Some(Value::String(s)) if !s.is_empty() => s,
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
        Some(Value::String(_)) => return Err(bad(&fields.id, "the id is empty".into())),
        Some(other) => {
            return Err(bad(
                &fields.id,
                format!("expected a string id, found {}", kind(&other)),
            ));
        }
        None => {
            return Err(bad(
                &fields.id,
                "missing (choose the id field with --id-field)".into(),
            ));
        }
    };
    let mut parts = Vec::with_capacity(fields.text.len());
    for (name, part) in fields.text.iter().zip(texts) {
        let part = match part {
            Some(Value::String(s)) => s,
            Some(Value::Null) => String::new(),
            Some(other) => {
                return Err(bad(
                    name,
                    format!("expected a string, found {}", kind(&other)),
                ));
            }
            None => {
                return Err(bad(
                    name,
                    "missing (choose the text fields with --text-field)".into(),
                ));
            }
        };
        parts.push(part);
    }
    Ok(Record::from_owned_fields(id, parts))
}

/// Extracts the id and text fields of one JSON object and skips the rest without building it:
/// most of a CORE record (original title and abstract, labels) is never needed for sketching.
struct Wanted<'a>(&'a FieldSpec);

/// Which wanted field a key names.
enum Slot {
    Id,
    Text(usize),
    Other,
}

impl<'de> DeserializeSeed<'de> for Wanted<'_> {
    type Value = (Option<Value>, Vec<Option<Value>>);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Wanted<'_> {
    type Value = (Option<Value>, Vec<Option<Value>>);

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut id = None;
        let mut texts = vec![None; self.0.text.len()];
        while let Some(slot) = map.next_key_seed(KeySlot(self.0))? {
            match slot {
                Slot::Id => id = Some(map.next_value()?),
                Slot::Text(i) => texts[i] = Some(map.next_value()?),
                Slot::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok((id, texts))
    }
}

/// Matches a key against the wanted fields without allocating it.
struct KeySlot<'a>(&'a FieldSpec);

impl<'de> DeserializeSeed<'de> for KeySlot<'_> {
    type Value = Slot;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Slot, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySlot<'_> {
    type Value = Slot;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Slot, E> {
        Ok(if key == self.0.id {
            Slot::Id
        } else if let Some(i) = self.0.text.iter().position(|t| t == key) {
            Slot::Text(i)
        } else {
            Slot::Other
        })
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// JSON Lines, the one format a part enters mid-file (at the first line that starts in its
/// range).
pub(super) struct Jsonl;

/// A line's record: its JSON, parsed when the record is.
fn json_line(_: u64, line: Vec<u8>) -> Body {
    Body::Json(line)
}

impl Format for Jsonl {
    fn name(&self) -> &'static str {
        "jsonl"
    }

    fn about(&self) -> &'static str {
        "One JSON object a line"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["jsonl", "ndjson", "json"]
    }

    fn open(&self, path: &Path, _: &FieldSpec, max_record_bytes: u64) -> Result<RawRecords> {
        line_records(path, max_record_bytes, ByteRange::ALL, json_line)
    }

    fn open_range(
        &self,
        path: &Path,
        _: &FieldSpec,
        max_record_bytes: u64,
        range: ByteRange,
    ) -> Result<RawRecords> {
        line_records(path, max_record_bytes, range, json_line)
    }

    fn written_as(&self) -> &'static str {
        "jsonl"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{Input, InputFormat};

    fn parse_line(line: &str) -> Result<Record, InputError> {
        let fields = FieldSpec::default();
        parse(
            line.as_bytes(),
            &fields,
            &Location::line(Path::new("c.jsonl"), 7),
        )
    }

    #[test]
    fn core_record_joins_title_and_abstract() {
        let r = parse_line(
            r#"{"core_id":"12","processed_title":"a title","processed_abstract":"an abstract"}"#,
        )
        .unwrap();
        assert_eq!(
            r,
            Record {
                id: "12".into(),
                text: "a title an abstract".into(),
                title_len: Some(7),
            }
        );
        assert_eq!((r.title(), r.body()), (Some("a title"), "an abstract"));
        let r = parse_line(r#"{"core_id":12,"processed_title":"t","processed_abstract":null}"#)
            .unwrap();
        assert_eq!((r.id.as_str(), r.text.as_str()), ("12", "t "));
    }

    #[test]
    fn errors_name_line_field_and_fix() {
        let err = parse_line(r#"{"core_id":"1","processed_title":5,"processed_abstract":""}"#)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(
                "c.jsonl:7: field `processed_title`: expected a string, found a number"
            ),
            "{err}"
        );
        assert!(err.contains("--skip-invalid"), "{err}");
        let err = parse_line(r#"{"processed_title":"","processed_abstract":""}"#).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("core_id"));
        let err = parse_line(r#"{"core_id":"1", oops}"#).unwrap_err();
        assert!(err.problem.starts_with("not valid JSON"), "{}", err.problem);
        let location = Location::line(Path::new("c.jsonl"), 2);
        let err = parse(b"{\"core_id\":\"\xff\"}", &FieldSpec::default(), &location).unwrap_err();
        assert!(err.problem.contains("UTF-8"), "{}", err.problem);
        let err = parse_line("[1, 2]").unwrap_err();
        assert!(err.problem.contains("an array"));
    }

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_first_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bom.jsonl");
        std::fs::write(
            &path,
            b"\xEF\xBB\xBF{\"core_id\":\"1\",\"processed_title\":\"t\",\"processed_abstract\":\"\"}\n",
        )
        .unwrap();
        let raw = line_records(&path, u64::MAX, ByteRange::ALL, json_line)
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        let record = raw.parse(&FieldSpec::default()).unwrap();
        assert_eq!((record.id.as_str(), record.text.trim()), ("1", "t"));
    }

    #[test]
    fn lines_are_numbered_and_blank_lines_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.jsonl");
        std::fs::write(&path, "{\"a\":1}\n\n  \n{\"a\":2}\r\n{\"a\":3}").unwrap();
        let input = Input::new(&path, Some(InputFormat::JSONL)).unwrap();
        let lines: Vec<u64> = input
            .open(&FieldSpec::default(), u64::MAX)
            .unwrap()
            .map(|r| r.unwrap().location.line.unwrap())
            .collect();
        assert_eq!(lines, vec![1, 4, 5]);
    }
}
