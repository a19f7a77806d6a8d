//! CSV and TSV with a header row, read record by record with the `csv` crate (so memory stays
//! per record, whatever the file size).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Body, FieldSpec, RawRecord, RawRecords, Record};
use crate::error::{Error, InputError, Location, Result};

/// The header and the positions of the id and text columns.
#[derive(Debug)]
pub(super) struct Columns {
    headers: Vec<String>,
    id: usize,
    text: Vec<usize>,
}

pub(super) fn open(
    path: &Path,
    delimiter: u8,
    fields: &FieldSpec,
    max_record_bytes: u64,
) -> Result<RawRecords> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .from_reader(RowCap {
            inner: std::io::BufReader::with_capacity(1 << 20, file),
            read: 0,
            limit: max_record_bytes,
        });
    let header_error = |problem: String| {
        Error::input(
            Location::line(path, 1),
            None,
            problem,
            "the first row must name the columns",
        )
    };
    let headers: Vec<String> = reader
        .headers()
        .map_err(|e| header_error(format!("cannot read the header row: {e}")))?
        .iter()
        .map(str::to_owned)
        .collect();
    // With two columns of one name, which one a field means would be a guess.
    if let Some((second, name)) = headers
        .iter()
        .enumerate()
        .find(|(i, name)| headers[..*i].contains(name))
    {
        return Err(Error::input(
            Location::line(path, 1),
            Some(name),
            format!(
                "the header names column {name:?} twice (columns {} and {})",
                headers.iter().position(|h| h == name).unwrap_or_default() + 1,
                second + 1
            ),
            "give every column its own name in the first row",
        ));
    }
    let position = |name: &str| {
        headers.iter().position(|h| h == name).ok_or_else(|| {
            Error::input(
                Location::line(path, 1),
                Some(name),
                format!("no such column; the header has: {}", headers.join(", ")),
                "choose the columns with --id-field and --text-field",
            )
        })
    };
    let id = position(&fields.id)?;
    let text = fields
        .text
        .iter()
        .map(|name| position(name))
        .collect::<Result<Vec<_>>>()?;
    let columns = Arc::new(Columns { headers, id, text });
    let start = reader.position().byte();
    Ok(Box::new(Rows {
        path: path.to_owned(),
        reader,
        columns,
        last_byte: start,
    }))
}

struct Rows {
    path: PathBuf,
    reader: csv::Reader<RowCap>,
    columns: Arc<Columns>,
    last_byte: u64,
}

/// The file under the CSV reader, failing a read once one row has taken more than `limit`
/// bytes (give or take the reader's own small buffer): the `csv` crate keeps a whole row in
/// memory, however long.
struct RowCap {
    inner: std::io::BufReader<File>,
    /// Bytes read since the current row began.
    read: u64,
    limit: u64,
}

impl RowCap {
    fn over(&self) -> bool {
        self.read > self.limit
    }
}

impl std::io::Read for RowCap {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.over() {
            return Err(std::io::Error::other("row over the limit"));
        }
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

impl Iterator for Rows {
    type Item = Result<RawRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut row = csv::ByteRecord::new();
        let line = self.reader.position().line() + 1;
        let body = match self.reader.read_byte_record(&mut row) {
            Ok(false) => return None,
            Ok(true) => Body::Csv(self.columns.clone(), row.clone()),
            Err(_) if self.reader.get_ref().over() => {
                let limit = self.reader.get_ref().limit;
                // The reader's position is still where the row began.
                let line = self.reader.position().line();
                let e = super::too_long(Location::line(&self.path, line), limit);
                return Some(Err(Error::Input(Box::new(InputError {
                    hint: "raise --max-doc-bytes (`max_doc_bytes` in a pipeline's [input]); a \
                           CSV row cannot be skipped part-read"
                        .into(),
                    ..e
                }))));
            }
            Err(e) => match e.kind() {
                csv::ErrorKind::Io(_) => {
                    let e = std::io::Error::other(e.to_string());
                    return Some(Err(Error::io(&self.path, e)));
                }
                _ => {
                    let line = e.position().map_or(line, |p| p.line());
                    Body::Invalid(InputError {
                        location: Location::line(&self.path, line),
                        field: None,
                        problem: format!("malformed CSV row: {e}"),
                        hint: "fix the row, or pass --skip-invalid to skip bad records".into(),
                    })
                }
            },
        };
        let line = row.position().map_or(line, |p| p.line());
        self.reader.get_mut().read = 0;
        let byte = self.reader.position().byte();
        let input_bytes = byte - self.last_byte;
        self.last_byte = byte;
        Some(Ok(RawRecord {
            location: Location::line(&self.path, line),
            input_bytes,
            body,
        }))
    }
}

impl Columns {
    /// The column names, in file order.
    pub(super) fn headers(&self) -> &[String] {
        &self.headers
    }

    fn cell<'a>(
        &self,
        row: &'a csv::ByteRecord,
        column: usize,
        location: &Location,
    ) -> Result<&'a str, InputError> {
        let bad = |problem: &str| InputError {
            location: location.clone(),
            field: Some(self.headers[column].clone()),
            problem: problem.into(),
            hint: "fix the row, or pass --skip-invalid to skip bad records".into(),
        };
        let bytes = row
            .get(column)
            .ok_or_else(|| bad("the row has no such column"))?;
        std::str::from_utf8(bytes).map_err(|_| bad("not valid UTF-8"))
    }

    pub(super) fn parse(
        &self,
        row: &csv::ByteRecord,
        location: &Location,
    ) -> Result<Record, InputError> {
        let id = self.cell(row, self.id, location)?;
        if id.is_empty() {
            return Err(InputError {
                location: location.clone(),
                field: Some(self.headers[self.id].clone()),
                problem: "the id is empty".into(),
                hint: "give every row an id, or pass --skip-invalid".into(),
            });
        }
        let parts = self
            .text
            .iter()
            .map(|&c| self.cell(row, c, location))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Record::from_fields(id.to_owned(), &parts))
    }

    pub(super) fn to_json(
        &self,
        row: &csv::ByteRecord,
        location: &Location,
    ) -> Result<Vec<u8>, InputError> {
        let mut object = serde_json::Map::new();
        for (column, header) in self.headers.iter().enumerate() {
            let value = self.cell(row, column, location)?;
            object.insert(header.clone(), value.into());
        }
        Ok(serde_json::Value::Object(object).to_string().into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use crate::io::{FieldSpec, Input};

    /// Why opening `path` is refused.
    fn refusal(path: &std::path::Path) -> String {
        Input::new(path, None)
            .unwrap()
            .open(&fields(), u64::MAX)
            .err()
            .unwrap()
            .to_string()
    }

    fn fields() -> FieldSpec {
        FieldSpec {
            id: "id".into(),
            text: vec!["title".into(), "abstract".into()],
        }
    }

    #[test]
    fn rows_parse_with_quotes_and_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.csv");
        std::fs::write(
            &path,
            "id,title,abstract\n1,\"A, title\",text\n2,b,\"multi\nline\"\n3,c,d\n",
        )
        .unwrap();
        let input = Input::new(&path, None).unwrap();
        let records: Vec<_> = input
            .open(&fields(), u64::MAX)
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(records.len(), 3);
        let first = records[0].parse(&fields()).unwrap();
        assert_eq!(first.text, "A, title text");
        assert_eq!(records[2].location.line, Some(5));
        let json =
            String::from_utf8(records[1].original_json(&fields()).unwrap().into_owned()).unwrap();
        // Keys in column order (serde_json's `preserve_order`).
        assert_eq!(json, r#"{"id":"2","title":"b","abstract":"multi\nline"}"#);
    }

    #[test]
    fn missing_column_and_ragged_row_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.csv");
        std::fs::write(&path, "id,title\n1,a\n").unwrap();
        let err = refusal(&path);
        assert!(
            err.contains("in.csv:1: field `abstract`: no such column"),
            "{err}"
        );

        std::fs::write(&path, "id,title,abstract\n1,a,b\n2,only-two\n3,c,d\n").unwrap();
        let records: Vec<_> = Input::new(&path, None)
            .unwrap()
            .open(&fields(), u64::MAX)
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(records.len(), 3);
        let err = records[1].parse(&fields()).unwrap_err();
        assert_eq!(err.location.line, Some(3));
        assert!(err.problem.contains("malformed CSV row"), "{}", err.problem);
        assert!(records[2].parse(&fields()).is_ok());
    }

    #[test]
    fn a_column_named_twice_is_refused_with_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.csv");
        std::fs::write(&path, "id,id,title,abstract\n1,2,a,b\n").unwrap();
        let err = refusal(&path);
        assert!(
            err.contains(
                "in.csv:1: field `id`: the header names column \"id\" twice (columns 1 and 2)"
            ),
            "{err}"
        );
    }
}
