//! CSV and TSV with a header row, read record by record with the `csv` crate (so memory stays
//! per record, whatever the file size).
//!
//! The two differ in quoting. CSV quotes a field that holds a comma, a quote or a line break,
//! and a quote that never closes would take the rest of the file into one field: it is an
//! error naming the line where it opened. TSV has no quoting at all: a cell holds no tab and no
//! line break, and a quote is just a character, so `"x"` reads and writes back as `"x"`.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Body, FieldSpec, Format, RawRecord, RawRecords, Record};
use crate::error::{Error, InputError, Location, Result};

/// Which of the two delimited formats a file is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// Comma-separated, with RFC 4180 quoting.
    Csv,
    /// Tab-separated, without quoting.
    Tsv,
}

impl Dialect {
    /// The byte between cells.
    pub fn delimiter(self) -> u8 {
        match self {
            Dialect::Csv => b',',
            Dialect::Tsv => b'\t',
        }
    }

    /// Whether a cell may be quoted.
    pub fn quoting(self) -> bool {
        self == Dialect::Csv
    }
}

/// The header and the positions of the id and text columns.
#[derive(Debug)]
pub(super) struct Columns {
    headers: Vec<String>,
    id: usize,
    text: Vec<usize>,
}

pub(super) fn open(
    path: &Path,
    dialect: Dialect,
    fields: &FieldSpec,
    max_record_bytes: u64,
) -> Result<RawRecords> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(dialect.delimiter())
        .quoting(dialect.quoting())
        .from_reader(RowCap {
            inner: std::io::BufReader::with_capacity(1 << 20, file),
            read: 0,
            limit: max_record_bytes,
            lines: LineCount::default(),
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
        dialect,
        reader,
        columns,
        last_byte: start,
        file_bytes: std::fs::metadata(path)
            .map_err(|e| Error::io(path, e))?
            .len(),
    }))
}

/// What is wrong with a row the reader refused, without the reader's own count of lines
/// (which CRLF files throw off; the location says the line).
fn row_problem(e: &csv::Error) -> String {
    match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("it has {len} fields, and the rows before it {expected_len}"),
        csv::ErrorKind::Utf8 { err, .. } => format!("field {} is not valid UTF-8", err.field() + 1),
        _ => e.to_string(),
    }
}

/// The column names in the first row of the file at `path`.
pub(super) fn header(path: &Path, dialect: Dialect) -> Result<Vec<String>> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(dialect.delimiter())
        .quoting(dialect.quoting())
        .from_reader(std::io::BufReader::new(file));
    let headers = reader.headers().map_err(|e| {
        Error::input(
            Location::line(path, 1),
            None,
            format!("cannot read the header row: {e}"),
            "the first row must name the columns",
        )
    })?;
    Ok(headers.iter().map(str::to_owned).collect())
}

struct Rows {
    path: PathBuf,
    dialect: Dialect,
    reader: csv::Reader<RowCap>,
    columns: Arc<Columns>,
    last_byte: u64,
    /// The file's length.
    file_bytes: u64,
}

impl Rows {
    /// For a CSV row that runs to the end of the file, the line where a quoted field opened
    /// and never closed, if one did (the reader itself takes the end of the file as the
    /// closing quote).
    fn unclosed_quote(&mut self, row_start: u64) -> Result<Option<u64>> {
        let line = self.reader.get_mut().lines.line_of(row_start);
        let io = |e| Error::io(&self.path, e);
        let mut file = File::open(&self.path).map_err(io)?;
        file.seek(SeekFrom::Start(row_start)).map_err(io)?;
        let mut scan = QuoteScan::new(self.dialect.delimiter(), line);
        let mut buffer = vec![0; 1 << 16];
        loop {
            let n = file.read(&mut buffer).map_err(io)?;
            if n == 0 {
                return Ok(scan.open_since());
            }
            buffer[..n].iter().for_each(|&b| scan.push(b));
        }
    }
}

/// Follows a CSV row byte by byte as the `csv` crate reads it, to tell whether a quoted field
/// is still open at the end: a quote opens a field only as its first byte, a doubled quote
/// inside is a quote, and bytes after the closing quote belong to the field.
struct QuoteScan {
    delimiter: u8,
    line: u64,
    state: QuoteState,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum QuoteState {
    FieldStart,
    Unquoted,
    /// Inside quotes opened on this line.
    Quoted(u64),
    /// Just after a quote inside quotes opened on this line: a closing or a doubled one.
    QuoteInQuoted(u64),
}

impl QuoteScan {
    fn new(delimiter: u8, line: u64) -> Self {
        QuoteScan {
            delimiter,
            line,
            state: QuoteState::FieldStart,
        }
    }

    fn push(&mut self, byte: u8) {
        use QuoteState::*;
        let ends_field = byte == self.delimiter || byte == b'\n' || byte == b'\r';
        self.state = match (self.state, byte) {
            (FieldStart, b'"') => Quoted(self.line),
            (Quoted(line), b'"') => QuoteInQuoted(line),
            (Quoted(line), _) => Quoted(line),
            (QuoteInQuoted(line), b'"') => Quoted(line),
            (_, _) if ends_field => FieldStart,
            (_, _) => Unquoted,
        };
        if byte == b'\n' {
            self.line += 1;
        }
    }

    /// The line where a quoted field still open opened.
    fn open_since(&self) -> Option<u64> {
        match self.state {
            QuoteState::Quoted(line) => Some(line),
            _ => None,
        }
    }
}

/// The file under the CSV reader, failing a read once one row has taken more than `limit`
/// bytes (give or take the reader's own small buffer): the `csv` crate keeps a whole row in
/// memory, however long.
struct RowCap {
    inner: std::io::BufReader<File>,
    /// Bytes read since the current row began.
    read: u64,
    limit: u64,
    lines: LineCount,
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
        self.lines.saw(&buf[..n]);
        Ok(n)
    }
}

/// Line numbers by byte offset, counted from the bytes the reader is given. The `csv` crate's
/// own count falls one short on every line after a CRLF row, and the byte it gives as a row's
/// start is then the `\n` that ends the line before.
#[derive(Default)]
struct LineCount {
    /// Bytes seen.
    seen: u64,
    /// Offsets of the line feeds seen and not yet passed by a question.
    ahead: std::collections::VecDeque<u64>,
    /// Line feeds before the first of `ahead`.
    passed: u64,
}

impl LineCount {
    fn saw(&mut self, bytes: &[u8]) {
        let start = self.seen;
        self.ahead
            .extend(memchr::memchr_iter(b'\n', bytes).map(|i| start + i as u64));
        self.seen += bytes.len() as u64;
    }

    /// The 1-based line of the byte at `offset`. Offsets asked for never go back.
    fn line_of(&mut self, offset: u64) -> u64 {
        while self.ahead.front().is_some_and(|&at| at < offset) {
            self.ahead.pop_front();
            self.passed += 1;
        }
        self.passed + 1
    }

    /// The line of a row said to start at `offset`: the next one when `offset` is the line
    /// feed that ends a line.
    fn row_line(&mut self, offset: u64) -> u64 {
        let line = self.line_of(offset);
        line + u64::from(self.ahead.front() == Some(&offset))
    }
}

impl Iterator for Rows {
    type Item = Result<RawRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut row = csv::ByteRecord::new();
        // Where the row begins: where the reader stands before reading it.
        let mut start = self.reader.position().byte();
        let body = match self.reader.read_byte_record(&mut row) {
            Ok(false) => return None,
            Ok(true) => Body::Csv(self.columns.clone(), row.clone()),
            Err(_) if self.reader.get_ref().over() => {
                let limit = self.reader.get_ref().limit;
                let line = self.reader.get_mut().lines.row_line(start);
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
                    start = e.position().map_or(start, csv::Position::byte);
                    let line = self.reader.get_mut().lines.row_line(start);
                    Body::Invalid(InputError {
                        location: Location::line(&self.path, line),
                        field: None,
                        problem: format!("malformed CSV row: {}", row_problem(&e)),
                        hint: "fix the row, or pass --skip-invalid to skip bad records".into(),
                    })
                }
            },
        };
        if let Body::Csv(..) = body {
            start = row.position().map_or(start, csv::Position::byte);
        }
        // Only the row that runs to the end of the file can hold a quote never closed.
        if self.dialect.quoting() && self.reader.position().byte() >= self.file_bytes {
            match self.unclosed_quote(start) {
                Err(e) => return Some(Err(e)),
                Ok(None) => {}
                Ok(Some(opened)) => {
                    return Some(Err(Error::input(
                        Location::line(&self.path, opened),
                        None,
                        "a quoted field opens here and is never closed, so it would hold the \
                         rest of the file",
                        "close the quote (a quote inside a quoted field is written twice: \"\")",
                    )));
                }
            }
        }
        let line = self.reader.get_mut().lines.row_line(start);
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

/// Comma-separated values with a header row.
pub(super) struct Csv;

impl Format for Csv {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn about(&self) -> &'static str {
        "Comma-separated values with a header row"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["csv"]
    }

    fn open(&self, path: &Path, fields: &FieldSpec, max_record_bytes: u64) -> Result<RawRecords> {
        open(path, Dialect::Csv, fields, max_record_bytes)
    }

    fn header(&self, path: &Path) -> Result<Option<Vec<String>>> {
        header(path, Dialect::Csv).map(Some)
    }

    fn written_as(&self) -> &'static str {
        "csv"
    }
}

/// Tab-separated values with a header row.
pub(super) struct Tsv;

impl Format for Tsv {
    fn name(&self) -> &'static str {
        "tsv"
    }

    fn about(&self) -> &'static str {
        "Tab-separated values with a header row"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["tsv", "tab"]
    }

    fn open(&self, path: &Path, fields: &FieldSpec, max_record_bytes: u64) -> Result<RawRecords> {
        open(path, Dialect::Tsv, fields, max_record_bytes)
    }

    fn header(&self, path: &Path) -> Result<Option<Vec<String>>> {
        header(path, Dialect::Tsv).map(Some)
    }

    fn written_as(&self) -> &'static str {
        "tsv"
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

    /// The line of each record of a CSV file with `text`, and of its error if it has one.
    fn lines_of(text: &str) -> Vec<(u64, bool)> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.csv");
        std::fs::write(&path, text).unwrap();
        let fields = FieldSpec {
            id: "id".into(),
            text: vec!["text".into()],
        };
        Input::new(&path, None)
            .unwrap()
            .open(&fields, u64::MAX)
            .unwrap()
            .map(|r| {
                let r = r.unwrap();
                (r.location.line.unwrap(), r.parse(&fields).is_err())
            })
            .collect()
    }

    #[test]
    fn crlf_rows_have_the_same_line_numbers_as_lf_rows() {
        let rows = ["id,text", "1,a", "2,\"multi", "line\"", "3,b,ragged", "4,c"];
        let expected = [(2, false), (3, false), (5, true), (6, false)];
        assert_eq!(lines_of(&(rows.join("\n") + "\n")), expected);
        assert_eq!(lines_of(&(rows.join("\r\n") + "\r\n")), expected);
        assert_eq!(
            lines_of(&rows.join("\r\n")),
            expected,
            "no final line break"
        );
    }

    #[test]
    fn a_quote_is_open_only_where_the_reader_would_keep_reading() {
        let open_since = |row: &str| {
            let mut scan = super::QuoteScan::new(b',', 7);
            row.bytes().for_each(|b| scan.push(b));
            scan.open_since()
        };
        assert_eq!(open_since("1,\"never closed\nnext,row\n"), Some(7));
        assert_eq!(open_since("1,ok\n2,\"opens on the next line"), Some(8));
        assert_eq!(open_since("1,\"closed \"\"twice\"\"\"\n"), None);
        assert_eq!(
            open_since("1,a \"quote\" inside\n"),
            None,
            "not at a field's start"
        );
        assert_eq!(
            open_since("1,\"x\"y,\"\""),
            None,
            "bytes after a closing quote"
        );
        assert_eq!(
            open_since("1,\"\"\"\n"),
            Some(7),
            "a doubled quote, then still open"
        );
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
