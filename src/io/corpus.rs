//! Reading a corpus into ids and sketches, in parallel, with per-document memory only for the
//! raw text (records are parsed in chunks and their text dropped once sketched).

use std::path::Path;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::{ByteRange, FieldSpec, Input, RawRecord, Record};
use crate::error::{Error, InputError, Location, Result};
use crate::progress;

/// Records per parallel chunk: large enough to keep both cores busy, small enough that the raw
/// text in flight stays a few megabytes.
const CHUNK: usize = 4096;
/// A chunk also ends once its records hold this many bytes, so that long records do not make
/// a chunk of gigabytes.
const CHUNK_BYTES: u64 = 32 << 20;

/// How many skipped-record locations a report keeps.
const SKIPS_SHOWN: usize = 5;

/// Records skipped under `--skip-invalid`: how many, and the first few problems.
#[derive(Clone, Debug, Default)]
pub struct SkipReport {
    /// Number of records skipped.
    pub count: usize,
    /// The first few problems, with their locations.
    pub first: Vec<String>,
}

impl SkipReport {
    /// Counts one skipped record, keeping its problem if it is among the first few.
    pub fn add(&mut self, error: &InputError) {
        self.count += 1;
        if self.first.len() < SKIPS_SHOWN {
            self.first.push(error.to_string());
        }
    }
}

/// The documents of a corpus, without their text: document `i` has id `ids[i]`; what each
/// method keeps per document (a signature, a shingle set, a fingerprint) lives beside it.
#[derive(Clone)]
pub struct Corpus {
    /// Document ids, in input order.
    pub ids: Vec<String>,
    /// For each document, its position among all raw records read (to find it again).
    pub ordinals: Vec<u64>,
    /// For each document, its raw record's [`RawRecord::fingerprint`] (to check, when it is
    /// found again, that it is still the record read).
    pub fingerprints: Vec<u64>,
    /// What `--skip-invalid` skipped.
    pub skipped: SkipReport,
}

/// The longest document text read by default: 16 MiB, a long book. Work grows with a
/// document's length (its shingles, in every method), so one runaway record (a whole dump in
/// one field) is refused by name rather than allowed to exhaust memory.
pub const DEFAULT_MAX_DOC_BYTES: usize = 16 << 20;

/// How to read and sketch a corpus.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// Which fields hold id and text.
    pub fields: FieldSpec,
    /// Skip bad records (counting them) instead of stopping at the first.
    pub skip_invalid: bool,
    /// A document whose text is longer (in bytes) is a bad record.
    pub max_doc_bytes: usize,
}

impl ReadOptions {
    /// The most bytes of one record (a line, a row, a file) read into memory:
    /// [`ReadOptions::max_doc_bytes`] and 64 KiB for the record's other fields. Reading stops
    /// there, so a longer record costs no more memory than that (twice it while the buffer
    /// grows).
    pub fn max_record_bytes(&self) -> u64 {
        record_limit(self.max_doc_bytes)
    }

    /// Reads a record's id and text, refusing a text over [`ReadOptions::max_doc_bytes`].
    pub fn parse(&self, raw: &RawRecord) -> Result<Record, InputError> {
        self.check(raw, raw.parse(&self.fields)?)
    }

    /// [`ReadOptions::parse`], letting go of the record's bytes
    /// ([`RawRecord::parse_and_release`]).
    pub fn parse_and_release(&self, raw: &mut RawRecord) -> Result<Record, InputError> {
        let record = raw.parse_and_release(&self.fields)?;
        self.check(raw, record)
    }

    /// `record`, read from `raw`, unless its text is over [`ReadOptions::max_doc_bytes`].
    fn check(&self, raw: &RawRecord, record: Record) -> Result<Record, InputError> {
        if record.text.len() > self.max_doc_bytes {
            return Err(InputError {
                location: raw.location.clone(),
                field: Some(self.fields.text.join(" + ")),
                problem: format!(
                    "the text is {} bytes, over the limit of {} bytes",
                    record.text.len(),
                    self.max_doc_bytes
                ),
                hint: "raise --max-doc-bytes (`max_doc_bytes` in a pipeline's [input]), or pass \
                       --skip-invalid to skip such records"
                    .into(),
            });
        }
        Ok(record)
    }
}

/// [`ReadOptions::max_record_bytes`] for texts of up to `max_doc_bytes`.
pub fn record_limit(max_doc_bytes: usize) -> u64 {
    (max_doc_bytes as u64).saturating_add(64 << 10)
}

/// Calls `each` with every raw record of `inputs`, in order, in chunks of up to `CHUNK`
/// records or `CHUNK_BYTES`,
/// advancing a byte progress bar labelled `label`. A thread reads the next chunk while `each`
/// works on one, so that reading is not a serial step between parallel ones.
pub fn for_each_chunk(
    inputs: &[Input],
    read: &ReadOptions,
    label: &str,
    each: impl FnMut(Vec<RawRecord>) -> Result<()>,
) -> Result<()> {
    for_each_chunk_in(inputs, read, ByteRange::ALL, label, each)
}

/// [`for_each_chunk`] over the records that start within `range` of the inputs laid end to
/// end; the inputs it holds nothing of are not opened.
fn for_each_chunk_in(
    inputs: &[Input],
    read: &ReadOptions,
    range: ByteRange,
    label: &str,
    mut each: impl FnMut(Vec<RawRecord>) -> Result<()>,
) -> Result<()> {
    let mut base = 0u64;
    let mut spans = Vec::new();
    for input in inputs {
        let size = input.size();
        if let Some(within) = range.within(base, size) {
            spans.push((input, within, size));
        }
        base += size;
    }
    let total = spans
        .iter()
        .map(|(_, within, size)| within.end.min(*size) - within.start.min(*size))
        .sum();
    let bar = progress::bytes(total, label);
    std::thread::scope(|scope| {
        let (send, chunks) = std::sync::mpsc::sync_channel(1);
        scope.spawn(move || {
            for (input, within, _) in spans {
                let opened = input.open_range(&read.fields, read.max_record_bytes(), within);
                let mut records = match opened {
                    Ok(records) => records,
                    Err(e) => return drop(send.send(Err(e))),
                };
                loop {
                    match next_chunk(&mut records) {
                        Ok(chunk) if chunk.is_empty() => break,
                        chunk => {
                            let failed = chunk.is_err();
                            // A send fails once the consumer has stopped: so does the reader.
                            if send.send(chunk).is_err() || failed {
                                return;
                            }
                        }
                    }
                }
            }
        });
        for chunk in chunks {
            if crate::cancel::requested() {
                return Err(Error::Interrupted);
            }
            let chunk: Vec<RawRecord> = chunk?;
            bar.inc(chunk.iter().map(|r| r.input_bytes).sum());
            each(chunk)?;
        }
        bar.finish_and_clear();
        Ok(())
    })
}

/// Reads `inputs` again and calls `each` with the records of `corpus`'s documents, in input
/// order, a chunk at a time, each with its document number (records skipped at the first read
/// are passed over). Every record is checked, in parallel, against the fingerprint taken at
/// the first read: a record edited since, or inputs that became shorter, stop the pass with
/// [`Error::InputChanged`].
pub fn for_each_document(
    inputs: &[Input],
    read: &ReadOptions,
    corpus: &Corpus,
    label: &str,
    mut each: impl FnMut(Vec<(RawRecord, u32)>) -> Result<()>,
) -> Result<()> {
    let mut docs = corpus.ordinals.iter().enumerate().peekable();
    let mut ordinal = 0u64;
    for_each_chunk(inputs, read, label, |chunk| {
        let mut found = Vec::with_capacity(chunk.len());
        for raw in chunk {
            let this = ordinal;
            ordinal += 1;
            if let Some(&(doc, &want)) = docs.peek()
                && want == this
            {
                docs.next();
                found.push((raw, doc as u32));
            }
        }
        let edited = found
            .par_iter()
            .find_first(|(raw, doc)| raw.fingerprint() != corpus.fingerprints[*doc as usize]);
        if let Some((raw, _)) = edited {
            return Err(Error::InputChanged {
                location: raw.location.to_string(),
            });
        }
        each(found)
    })?;
    match docs.peek() {
        Some(_) => Err(inputs_shortened(inputs)),
        None => Ok(()),
    }
}

/// The error for inputs that hold fewer records than at the first read.
pub fn inputs_shortened(inputs: &[Input]) -> Error {
    Error::InputChanged {
        location: format!(
            "{} (it became shorter)",
            inputs
                .iter()
                .map(|i| i.path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The next records of `records`, up to [`CHUNK`] of them or [`CHUNK_BYTES`]; empty at the end.
fn next_chunk(records: &mut super::RawRecords) -> Result<Vec<RawRecord>> {
    // Sized once: grown by doubling, every chunk's list moved and took fresh memory ten times.
    let mut chunk = Vec::with_capacity(CHUNK);
    let mut bytes = 0;
    while chunk.len() < CHUNK && bytes < CHUNK_BYTES {
        match records.next() {
            Some(record) => {
                let record = record?;
                bytes += record.memory();
                chunk.push(record);
            }
            None => break,
        }
    }
    Ok(chunk)
}

/// Reads every input, turns each document's text into a sketch with `sketch` (in parallel),
/// and hands the sketches to `keep` in document order. `sketch` may take what it keeps of a
/// record (its text) rather than copy it; each record's bytes are let go of once it is read.
///
/// Stops at the first bad record (an [`Error::Input`] naming it) unless `skip_invalid` is set;
/// a repeated id is a bad record too.
///
/// The numbering of one chunk (ids, order, `keep`) runs on this thread while the next chunk
/// is sketched on the others: at a million documents it was a quarter of the reading time,
/// most of it first touches of the memory `keep` fills, with every other core idle.
pub fn read_corpus<T: Send>(
    inputs: &[Input],
    options: &ReadOptions,
    sketch: impl Fn(&mut Record) -> T + Sync,
    keep: impl FnMut(T),
) -> Result<Corpus> {
    read_corpus_in(inputs, options, ByteRange::ALL, sketch, keep)
}

/// [`read_corpus`] for the records that start within `range` of the inputs laid end to end
/// (see [`ByteRange`]): a part of a split run, numbered from 0. Repeated ids are refused
/// within the range only.
pub fn read_corpus_in<T: Send>(
    inputs: &[Input],
    options: &ReadOptions,
    range: ByteRange,
    sketch: impl Fn(&mut Record) -> T + Sync,
    mut keep: impl FnMut(T),
) -> Result<Corpus> {
    // A record's bytes are let go of once it is parsed: its text is all the sketch reads.
    let sketch_chunk = |chunk: &mut [RawRecord]| -> Vec<Sketched<T>> {
        chunk
            .par_iter_mut()
            .map(|raw| {
                let fingerprint = raw.fingerprint();
                let mut record = options.parse_and_release(raw)?;
                let item = sketch(&mut record);
                Ok((record.id, item, fingerprint))
            })
            .collect()
    };
    let mut numbering = Numbering::default();
    let mut pending: Option<(Vec<RawRecord>, Vec<Sketched<T>>)> = None;
    for_each_chunk_in(inputs, options, range, "sketching", |mut chunk| {
        let sketched = std::thread::scope(|scope| {
            let sketching = scope.spawn(|| sketch_chunk(&mut chunk));
            let numbered = match pending.take() {
                Some((raw, sketched)) => numbering.add(inputs, options, &raw, sketched, &mut keep),
                None => Ok(()),
            };
            let sketched = sketching.join().expect("sketching a chunk panicked");
            numbered.map(|()| sketched)
        })?;
        pending = Some((chunk, sketched));
        Ok(())
    })?;
    if let Some((raw, sketched)) = pending {
        numbering.add(inputs, options, &raw, sketched, &mut keep)?;
    }
    numbering.finish()
}

/// A record's id, sketch and fingerprint, or why it is a bad record.
type Sketched<T> = std::result::Result<(String, T, u64), InputError>;

/// Where in its input a record is, without the input's path: a line, the byte a line starts
/// at, or the entry its id names.
#[derive(Clone, Copy)]
enum Place {
    Line(u64),
    Byte(u64),
    Entry,
}

impl Place {
    fn of(location: &Location) -> Place {
        match (location.line, location.byte) {
            (Some(line), _) => Place::Line(line),
            (None, Some(byte)) => Place::Byte(byte),
            (None, None) => Place::Entry,
        }
    }

    /// The location of the record of `id` at this place of `path`.
    fn location(self, path: &Path, id: &str) -> Location {
        match self {
            Place::Line(line) => Location::line(path, line),
            Place::Byte(byte) => Location::line_at_byte(path, byte),
            Place::Entry => Location::entry(path, id),
        }
    }
}

/// The serial half of [`read_corpus`]: numbers the documents in input order and refuses
/// repeated ids.
#[derive(Default)]
struct Numbering {
    /// id -> (document, input, place): enough to name the first occurrence of a repeated id
    /// without keeping a path per document.
    index: FxHashMap<String, (u32, u32, Place)>,
    ordinals: Vec<u64>,
    fingerprints: Vec<u64>,
    skipped: SkipReport,
    /// Raw records seen so far, skipped ones included.
    seen: u64,
}

impl Numbering {
    /// Numbers the records of one chunk, handing each good one's sketch to `keep`.
    fn add<T>(
        &mut self,
        inputs: &[Input],
        options: &ReadOptions,
        chunk: &[RawRecord],
        sketched: Vec<Sketched<T>>,
        keep: &mut impl FnMut(T),
    ) -> Result<()> {
        for (raw, result) in chunk.iter().zip(sketched) {
            let this = self.seen;
            self.seen += 1;
            let (id, item, fingerprint) = match result {
                Ok(ok) => ok,
                Err(e) if options.skip_invalid => {
                    self.skipped.add(&e);
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let input = inputs
                .iter()
                .position(|i| i.path == raw.location.path)
                .unwrap_or(0);
            if let Some(&(_, first_input, first_place)) = self.index.get(&id) {
                let first = first_place.location(&inputs[first_input as usize].path, &id);
                let e = InputError {
                    location: raw.location.clone(),
                    field: Some(options.fields.id.clone()),
                    problem: format!("duplicate id {id:?}, first seen at {first}"),
                    hint:
                        "ids must be unique; fix the data, or pass --skip-invalid to keep the first"
                            .into(),
                };
                if options.skip_invalid {
                    self.skipped.add(&e);
                    continue;
                }
                return Err(Error::from(e));
            }
            let doc = self.ordinals.len() as u32;
            let place = Place::of(&raw.location);
            self.index.insert(id, (doc, input as u32, place));
            keep(item);
            self.ordinals.push(this);
            self.fingerprints.push(fingerprint);
        }
        Ok(())
    }

    /// The corpus numbered; an error if every record was skipped.
    fn finish(self) -> Result<Corpus> {
        let Numbering {
            index,
            ordinals,
            fingerprints,
            skipped,
            ..
        } = self;
        if ordinals.is_empty() && skipped.count > 0 {
            return Err(Error::Usage(format!(
                "every record ({}) was skipped as invalid, the first: {}; check --id-field and \
                 --text-field (or `fields` in a pipeline's [input]) against the data",
                skipped.count,
                skipped.first.first().map_or("", String::as_str)
            )));
        }
        let mut ids = vec![String::new(); ordinals.len()];
        for (id, (doc, _, _)) in index {
            ids[doc as usize] = id;
        }
        Ok(Corpus {
            ids,
            ordinals,
            fingerprints,
            skipped,
        })
    }
}
