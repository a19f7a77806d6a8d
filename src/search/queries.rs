//! The two-stage method's query vectors, spilled to disk between embedding and search.
//!
//! Every document is a query (and so is the title of every record that has more than a
//! title: see `pipeline::two_stage::title_only`), but the search cannot start before the
//! index over all documents is built. Held in memory, the query vectors of a million
//! documents take 1.5 GB at 384 dimensions; here they are appended to a [`Spill`] file in the
//! index folder as each batch is embedded and read back a batch at a time, so memory stays
//! flat however large the corpus.
//!
//! A search within cells compares codes only ([`super::codes`]), so its queries are spilled
//! as codes ([`QueryFile::of_codes`]): 388 bytes a query at 384 dimensions, not 1,536. Read
//! back as vectors, a code gives the unit vector whose code it is again, so a search that
//! encodes what it reads compares what it would have compared on the vectors themselves.

use std::io::{Read, Write};
use std::path::Path;

use super::codes::{Code, Codes};
use crate::error::Result;
use crate::io::{read_floats, write_floats};
use crate::spill::{Spill, SpillReader};

/// Query vectors read back at a time where every document's is gathered.
const DOCUMENTS_READ: usize = 1024;

/// What a query vector stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Query {
    /// The document searched for.
    pub doc: u32,
    /// Whether the vector is the document's title alone (see
    /// `TitleOnlyStore` of the two-stage pipeline), not the whole document.
    pub title: bool,
}

/// How a query file holds its vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// As the embedder made them: what a search of the vector store asks with.
    Vectors,
    /// As codes: all a search within cells compares.
    Codes,
}

/// Query vectors being written, each with what it stands for.
pub struct QueryFile {
    vectors: Spill,
    dimensions: usize,
    form: Form,
    queries: Vec<Query>,
}

impl QueryFile {
    /// An empty file in `dir` that keeps the vectors as they are.
    pub fn create(dir: &Path, dimensions: usize) -> Result<Self> {
        QueryFile::new(dir, dimensions, Form::Vectors)
    }

    /// An empty file in `dir` that keeps each vector's codes only.
    pub fn of_codes(dir: &Path, dimensions: usize) -> Result<Self> {
        QueryFile::new(dir, dimensions, Form::Codes)
    }

    fn new(dir: &Path, dimensions: usize, form: Form) -> Result<Self> {
        Ok(QueryFile {
            vectors: Spill::create(dir)?,
            dimensions,
            form,
            queries: Vec::new(),
        })
    }

    /// Appends the `vectors` of `queries`, in the same order. A file of codes encodes them on
    /// every core: encoded one at a time on the loader's thread, which the others wait on, they
    /// took 0.4-1.4 s of its time at a million documents.
    pub fn append(&mut self, queries: &[Query], vectors: &[&[f32]]) -> Result<()> {
        assert_eq!(queries.len(), vectors.len(), "a vector for each query");
        debug_assert!(vectors.iter().all(|vector| vector.len() == self.dimensions));
        match self.form {
            Form::Vectors => (self.vectors).append(|w| {
                vectors
                    .iter()
                    .try_for_each(|vector| write_floats(w, vector))
            })?,
            Form::Codes => {
                let codes = Codes::of_rows(vectors, self.dimensions);
                self.vectors.append(|w| {
                    (0..codes.len()).try_for_each(|row| write_code(w, codes.row(row)))
                })?;
            }
        }
        self.queries.extend_from_slice(queries);
        Ok(())
    }

    /// Appends the codes of `query`'s vector, to a file of codes.
    pub(crate) fn append_code(&mut self, query: Query, code: Code<'_>) -> Result<()> {
        debug_assert!(self.form == Form::Codes && code.codes.len() == self.dimensions);
        self.vectors.append(|w| write_code(w, code))?;
        self.queries.push(query);
        Ok(())
    }

    /// Finishes writing; the queries are then read back in file order.
    pub fn into_reader(self) -> Result<QueryReader> {
        Ok(QueryReader {
            vectors: self.vectors.into_reader()?,
            dimensions: self.dimensions,
            form: self.form,
            queries: self.queries,
            next: 0,
        })
    }
}

/// Writes a code as a file of codes holds it: its bytes, then its inverse length.
fn write_code(w: &mut impl Write, code: Code<'_>) -> std::io::Result<()> {
    w.write_all(bytemuck::cast_slice(code.codes))?;
    write_floats(w, &[code.inverse_length])
}

/// Query vectors read back, a batch at a time.
pub struct QueryReader {
    vectors: SpillReader,
    dimensions: usize,
    form: Form,
    queries: Vec<Query>,
    next: usize,
}

impl QueryReader {
    /// How many queries there are in all.
    pub fn len(&self) -> usize {
        self.queries.len()
    }

    /// How many components a query vector has.
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// Starts reading from the first query again.
    pub fn rewind(&mut self) -> Result<()> {
        self.vectors.rewind()?;
        self.next = 0;
        Ok(())
    }

    /// The codes of the first `documents` documents' vectors (titles are not documents), by
    /// document number. Leaves the reader rewound.
    pub(crate) fn document_codes(&mut self, documents: usize) -> Result<Codes> {
        let width = self.dimensions;
        let mut codes = Codes::zeroed(width, documents);
        self.rewind()?;
        while let Some((batch, coded)) = self.next_codes(DOCUMENTS_READ)? {
            for (row, query) in batch.iter().enumerate() {
                if !query.title {
                    codes.set_code(query.doc as usize, coded.row(row));
                }
            }
        }
        self.rewind()?;
        Ok(codes)
    }

    /// The next (at most) `max` title queries and their vectors, concatenated, the document
    /// queries among them passed over. `None` once every query was read.
    pub fn next_titles(&mut self, max: usize) -> Result<Option<(Vec<Query>, Vec<f32>)>> {
        let width = self.dimensions;
        // Room taken once: the titles' vectors run to 100 MB, and a list grown by doubling is
        // copied into fresh memory each time.
        let most = max.min(self.queries.len() - self.next);
        let (mut titles, mut vectors) = (Vec::new(), Vec::with_capacity(most * width));
        while titles.len() < max {
            let read = DOCUMENTS_READ.min(max - titles.len());
            match self.form {
                Form::Vectors => {
                    let Some((batch, flat)) = self.next_batch(read)? else {
                        break;
                    };
                    for (query, vector) in batch.iter().zip(flat.chunks_exact(width)) {
                        if query.title {
                            titles.push(*query);
                            vectors.extend_from_slice(vector);
                        }
                    }
                }
                // Only the titles' codes are decoded: the documents' were searched already.
                Form::Codes => {
                    let Some((batch, codes)) = self.next_codes(read)? else {
                        break;
                    };
                    let rows: Vec<usize> = (0..batch.len()).filter(|&r| batch[r].title).collect();
                    codes.decode_onto(&rows, &mut vectors);
                    titles.extend(rows.iter().map(|&row| batch[row]));
                }
            }
        }
        Ok((!titles.is_empty()).then_some((titles, vectors)))
    }

    /// How many queries were read since the first (or since [`QueryReader::rewind`]).
    pub fn read(&self) -> usize {
        self.next
    }

    /// The next (at most) `max` queries and their vectors, concatenated (a file of codes gives
    /// the unit vectors of its codes). `None` once every query was read.
    pub fn next_batch(&mut self, max: usize) -> Result<Option<(Vec<Query>, Vec<f32>)>> {
        match self.form {
            Form::Vectors => {
                let Some(queries) = self.next_queries(max) else {
                    return Ok(None);
                };
                let count = queries.len() * self.dimensions;
                let vectors = self.vectors.read(|r| read_floats(r, count))?;
                Ok(Some((queries, vectors)))
            }
            Form::Codes => Ok(self.next_codes(max)?.map(|(queries, codes)| {
                let rows: Vec<usize> = (0..codes.len()).collect();
                (queries, codes.decoded(&rows))
            })),
        }
    }

    /// The next (at most) `max` queries and their vectors' codes. `None` once every query was
    /// read.
    pub(crate) fn next_codes(&mut self, max: usize) -> Result<Option<(Vec<Query>, Codes)>> {
        let width = self.dimensions;
        match self.form {
            Form::Vectors => Ok(self.next_batch(max)?.map(|(queries, vectors)| {
                let rows: Vec<&[f32]> = vectors.chunks_exact(width.max(1)).collect();
                (queries, Codes::of_rows(&rows, width))
            })),
            Form::Codes => {
                let Some(queries) = self.next_queries(max) else {
                    return Ok(None);
                };
                // A code's bytes, then its inverse length's.
                let mut bytes = vec![0u8; queries.len() * (width + 4)];
                self.vectors.read(|r| r.read_exact(&mut bytes))?;
                let mut codes = Codes::new(width);
                for row in bytes.chunks_exact(width + 4) {
                    let (code, inverse_length) = row.split_at(width);
                    codes.push_code(Code {
                        codes: bytemuck::cast_slice(code),
                        inverse_length: f32::from_le_bytes(
                            inverse_length.try_into().expect("4 bytes"),
                        ),
                    });
                }
                Ok(Some((queries, codes)))
            }
        }
    }

    /// What the next (at most) `max` queries stand for, counted as read; `None` once every
    /// query was read.
    fn next_queries(&mut self, max: usize) -> Option<Vec<Query>> {
        let n = max.min(self.queries.len() - self.next);
        if n == 0 {
            return None;
        }
        let queries = self.queries[self.next..self.next + n].to_vec();
        self.next += n;
        Some(queries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_come_back_in_order_in_batches_and_leave_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = QueryFile::create(dir.path(), 3).unwrap();
        let query = |doc: u32| Query {
            doc: doc * 10,
            title: doc % 2 == 1,
        };
        // One and then a batch of four.
        let vectors: Vec<[f32; 3]> = (0..5u32)
            .map(|doc| doc as f32)
            .map(|x| [x, -x, x / 3.0])
            .collect();
        let rows: Vec<&[f32]> = vectors.iter().map(|v| v.as_slice()).collect();
        file.append(&[query(0)], &rows[..1]).unwrap();
        let rest: Vec<Query> = (1..5).map(query).collect();
        file.append(&rest, &rows[1..]).unwrap();
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "the file has no name"
        );
        let mut reader = file.into_reader().unwrap();
        assert_eq!(reader.len(), 5);
        let (queries, vectors) = reader.next_batch(2).unwrap().unwrap();
        assert_eq!(queries, [query(0), query(1)]);
        assert_eq!(vectors, [0.0, -0.0, 0.0, 1.0, -1.0, 1.0 / 3.0]);
        let (queries, _) = reader.next_batch(2).unwrap().unwrap();
        assert_eq!(queries, [query(2), query(3)]);
        let (queries, vectors) = reader.next_batch(2).unwrap().unwrap();
        assert_eq!(
            (queries, vectors),
            (vec![query(4)], vec![4.0, -4.0, 4.0 / 3.0])
        );
        assert!(reader.next_batch(2).unwrap().is_none());
        reader.rewind().unwrap();
        let (queries, vectors) = reader.next_batch(1).unwrap().unwrap();
        assert_eq!((queries, vectors), (vec![query(0)], vec![0.0, -0.0, 0.0]));

        // Titles alone: the documents between them passed over, every query read.
        reader.rewind().unwrap();
        let (queries, vectors) = reader.next_titles(1).unwrap().unwrap();
        assert_eq!(
            (queries, vectors),
            (vec![query(1)], vec![1.0, -1.0, 1.0 / 3.0])
        );
        assert_eq!(reader.read(), 2);
        let (queries, _) = reader.next_titles(5).unwrap().unwrap();
        assert_eq!(queries, [query(3)]);
        assert_eq!(reader.read(), 5);
        assert!(reader.next_titles(5).unwrap().is_none());
    }

    #[test]
    fn a_file_of_codes_gives_back_the_codes_of_its_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let width = 5;
        let vectors: Vec<Vec<f32>> = (0..7u32)
            .map(|i| {
                (0..width)
                    .map(|j| ((i * 7 + j as u32) % 11) as f32 - 5.0)
                    .collect()
            })
            .collect();
        let query = |doc: u32| Query {
            doc,
            title: doc % 3 == 2,
        };
        let mut file = QueryFile::of_codes(dir.path(), width).unwrap();
        // Five vectors in one batch, then two codes as they are.
        let rows: Vec<&[f32]> = vectors[..5].iter().map(Vec::as_slice).collect();
        let first: Vec<Query> = (0..5).map(query).collect();
        file.append(&first, &rows).unwrap();
        // Codes appended as they are: those of a part read back.
        let coded = Codes::of(&vectors[5..].concat(), width);
        for row in 0..2 {
            file.append_code(query(5 + row as u32), coded.row(row))
                .unwrap();
        }
        let expected = Codes::of(&vectors.concat(), width);
        let mut reader = file.into_reader().unwrap();
        let (queries, codes) = reader.next_codes(4).unwrap().unwrap();
        assert_eq!(queries, (0..4).map(query).collect::<Vec<_>>());
        for row in 0..4 {
            assert_eq!(codes.bytes(row), expected.bytes(row));
        }
        let (queries, vectors) = reader.next_batch(10).unwrap().unwrap();
        assert_eq!(queries, (4..7).map(query).collect::<Vec<_>>());
        assert_eq!(vectors, expected.decoded(&[4, 5, 6]));
        assert!(reader.next_codes(1).unwrap().is_none());

        // Each document's codes by its number; titles (2 and 5) are left as zeros.
        let documents = reader.document_codes(7).unwrap();
        for doc in [0, 1, 3, 4, 6] {
            assert_eq!(documents.row(doc).codes, expected.row(doc).codes);
            assert_eq!(
                documents.row(doc).inverse_length.to_bits(),
                expected.row(doc).inverse_length.to_bits()
            );
        }
        assert!(documents.row(2).codes.iter().all(|&c| c == 0));
        assert_eq!(reader.read(), 0, "left rewound");

        // Titles alone, decoded from their codes, one at a time and all at once.
        let (queries, vectors) = reader.next_titles(1).unwrap().unwrap();
        assert_eq!((queries, vectors), (vec![query(2)], expected.decoded(&[2])));
        let (queries, vectors) = reader.next_titles(5).unwrap().unwrap();
        assert_eq!((queries, vectors), (vec![query(5)], expected.decoded(&[5])));
        assert!(reader.next_titles(5).unwrap().is_none());
        reader.rewind().unwrap();
        let (queries, vectors) = reader.next_titles(10).unwrap().unwrap();
        assert_eq!(queries, [query(2), query(5)]);
        assert_eq!(vectors, expected.decoded(&[2, 5]));
    }
}
