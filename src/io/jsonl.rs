//! JSON Lines: one JSON object a line.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Body, FieldSpec, RawRecord, RawRecords, Record};
use crate::error::{Error, InputError, Location, Result};

const SKIP_HINT: &str = "fix the record, or pass --skip-invalid to skip bad records";

pub(super) fn open(path: &Path) -> Result<RawRecords> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    Ok(Box::new(Lines {
        path: path.to_owned(),
        reader: BufReader::with_capacity(1 << 20, file),
        line: 0,
    }))
}

struct Lines {
    path: PathBuf,
    reader: BufReader<File>,
    line: u64,
}

impl Iterator for Lines {
    type Item = Result<RawRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let mut buf = Vec::new();
            let read = match self.reader.read_until(b'\n', &mut buf) {
                Ok(n) => n as u64,
                Err(e) => return Some(Err(Error::io(&self.path, e))),
            };
            if read == 0 {
                return None;
            }
            self.line += 1;
            if buf.last() == Some(&b'\n') {
                buf.pop();
            }
            if buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(Ok(RawRecord {
                location: Location::line(&self.path, self.line),
                input_bytes: read,
                body: Body::Json(buf),
            }));
        }
    }
}

pub(super) fn parse(
    line: &[u8],
    fields: &FieldSpec,
    location: &Location,
) -> Result<Record, InputError> {
    let bad = |field: Option<&str>, problem: String| InputError {
        location: location.clone(),
        field: field.map(str::to_owned),
        problem,
        hint: SKIP_HINT.into(),
    };
    let text = std::str::from_utf8(line).map_err(|e| {
        bad(
            None,
            format!("not valid UTF-8 (byte {} of the line)", e.valid_up_to() + 1),
        )
    })?;
    let value: Value =
        serde_json::from_str(text).map_err(|e| bad(None, format!("not valid JSON: {e}")))?;
    let Value::Object(object) = value else {
        return Err(bad(
            None,
            format!("expected a JSON object, found {}", kind(&value)),
        ));
    };
    let id = match object.get(&fields.id) {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
        Some(Value::String(_)) => return Err(bad(Some(&fields.id), "the id is empty".into())),
        Some(other) => {
            return Err(bad(
                Some(&fields.id),
                format!("expected a string id, found {}", kind(other)),
            ));
        }
        None => {
            return Err(bad(
                Some(&fields.id),
                "missing (choose the id field with --id-field)".into(),
            ));
        }
    };
    let mut joined = String::new();
    for (i, name) in fields.text.iter().enumerate() {
        let part = match object.get(name) {
            Some(Value::String(s)) => s.as_str(),
            Some(Value::Null) => "",
            Some(other) => {
                return Err(bad(
                    Some(name),
                    format!("expected a string, found {}", kind(other)),
                ));
            }
            None => {
                return Err(bad(
                    Some(name),
                    "missing (choose the text fields with --text-field)".into(),
                ));
            }
        };
        if i > 0 {
            joined.push(' ');
        }
        joined.push_str(part);
    }
    Ok(Record { id, text: joined })
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
                text: "a title an abstract".into()
            }
        );
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
    fn lines_are_numbered_and_blank_lines_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.jsonl");
        std::fs::write(&path, "{\"a\":1}\n\n  \n{\"a\":2}\r\n{\"a\":3}").unwrap();
        let input = Input::new(&path, Some(InputFormat::Jsonl)).unwrap();
        let lines: Vec<u64> = input
            .open(&FieldSpec::default())
            .unwrap()
            .map(|r| r.unwrap().location.line.unwrap())
            .collect();
        assert_eq!(lines, vec![1, 4, 5]);
    }
}
