//! The two-stage method's query vectors, spilled to disk between embedding and search.
//!
//! Every document is a query (and so is the title of every record that has more than a
//! title: see `pipeline::two_stage::title_only`), but the search cannot start before the
//! index over all documents is built. Held in memory, the query vectors of a million
//! documents take 1.5 GB at 384 dimensions; here they are appended to a [`Spill`] file in the
//! index folder as each batch is embedded and read back a batch at a time, so memory stays
//! flat however large the corpus.

use std::path::Path;

use super::codes::Codes;
use crate::error::Result;
use crate::io::{read_floats, write_floats};
use crate::spill::{Spill, SpillReader};

/// Query vectors read back at a time where every document's is gathered.
const DOCUMENTS_READ: usize = 1024;

/// What a query vector stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Query {
    /// The document searched for.
    pub doc: u32,
    /// Whether the vector is the document's title alone (see
    /// `TitleOnlyStore` of the two-stage pipeline), not the whole document.
    pub title: bool,
}

/// Query vectors being written, each with what it stands for.
pub struct QueryFile {
    vectors: Spill,
    dimensions: usize,
    queries: Vec<Query>,
}

impl QueryFile {
    /// An empty file in `dir`.
    pub fn create(dir: &Path, dimensions: usize) -> Result<Self> {
        Ok(QueryFile {
            vectors: Spill::create(dir)?,
            dimensions,
            queries: Vec::new(),
        })
    }

    /// Appends the vector of `query`.
    pub fn append(&mut self, query: Query, vector: &[f32]) -> Result<()> {
        debug_assert_eq!(vector.len(), self.dimensions);
        self.vectors.append(|w| write_floats(w, vector))?;
        self.queries.push(query);
        Ok(())
    }

    /// Finishes writing; the queries are then read back in file order.
    pub fn into_reader(self) -> Result<QueryReader> {
        Ok(QueryReader {
            vectors: self.vectors.into_reader()?,
            dimensions: self.dimensions,
            queries: self.queries,
            next: 0,
        })
    }
}

/// Query vectors read back, a batch at a time.
pub struct QueryReader {
    vectors: SpillReader,
    dimensions: usize,
    queries: Vec<Query>,
    next: usize,
}

impl QueryReader {
    /// How many queries there are in all.
    pub fn len(&self) -> usize {
        self.queries.len()
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
        while let Some((batch, flat)) = self.next_batch(DOCUMENTS_READ)? {
            let (documents, vectors): (Vec<u32>, Vec<&[f32]>) = (batch.iter())
                .zip(flat.chunks_exact(width))
                .filter(|(query, _)| !query.title)
                .map(|(query, vector)| (query.doc, vector))
                .unzip();
            let coded = Codes::of_rows(&vectors, width);
            for (row, &doc) in documents.iter().enumerate() {
                codes.set_code(doc as usize, coded.row(row));
            }
        }
        self.rewind()?;
        Ok(codes)
    }

    /// The next (at most) `max` title queries and their vectors, concatenated, the document
    /// queries among them passed over. `None` once every query was read.
    pub fn next_titles(&mut self, max: usize) -> Result<Option<(Vec<Query>, Vec<f32>)>> {
        let width = self.dimensions;
        let (mut titles, mut vectors) = (Vec::new(), Vec::new());
        while titles.len() < max {
            let Some((batch, flat)) = self.next_batch(DOCUMENTS_READ.min(max - titles.len()))?
            else {
                break;
            };
            for (query, vector) in batch.iter().zip(flat.chunks_exact(width)) {
                if query.title {
                    titles.push(*query);
                    vectors.extend_from_slice(vector);
                }
            }
        }
        Ok((!titles.is_empty()).then_some((titles, vectors)))
    }

    /// How many queries were read since the first (or since [`QueryReader::rewind`]).
    pub fn read(&self) -> usize {
        self.next
    }

    /// The next (at most) `max` queries and their vectors, concatenated. `None` once every
    /// query was read.
    pub fn next_batch(&mut self, max: usize) -> Result<Option<(Vec<Query>, Vec<f32>)>> {
        let n = max.min(self.queries.len() - self.next);
        if n == 0 {
            return Ok(None);
        }
        let count = n * self.dimensions;
        let vectors = self.vectors.read(|r| read_floats(r, count))?;
        let queries = self.queries[self.next..self.next + n].to_vec();
        self.next += n;
        Ok(Some((queries, vectors)))
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
        for doc in 0..5u32 {
            let x = doc as f32;
            file.append(query(doc), &[x, -x, x / 3.0]).unwrap();
        }
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
}
