//! `neardup.Index` underneath: an open two-stage index, its lookups, writes and explanations.

use std::path::PathBuf;
use std::sync::Mutex;

use neardup::index::{DocumentIndex, Match};
use neardup::pipeline::{self, InputSpec, Method};
use neardup::settings::MethodName;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::records::{Handed, Records};
use crate::{detached, detached_in, files_input, method_of, models_root, read_so, to_python};

/// An open two-stage index (`neardup index`): documents' vectors in the embedded store, their
/// MinHash sketches beside them. Lookups answer with each neighbour's verdict; writes are
/// journalled and flushed before a call returns, as `serve` acknowledges them.
#[pyclass(frozen, module = "neardup._neardup")]
pub(crate) struct Index {
    index: DocumentIndex,
    /// Held by each write: the index takes one writer at a time.
    writes: Mutex<()>,
}

impl Index {
    /// Opens the index in `dir`, the interpreter released meanwhile.
    fn open_in(py: Python<'_>, dir: PathBuf) -> PyResult<Index> {
        let models = models_root();
        let index = detached(py, || DocumentIndex::open(&dir, &models, None))?;
        Ok(Index {
            index,
            writes: Mutex::new(()),
        })
    }

    /// Builds an index of `input` in `dir` with the two-stage `settings` (JSON), and opens it;
    /// `handed` says what the input is where it was handed over in memory.
    fn build(
        py: Python<'_>,
        dir: PathBuf,
        input: InputSpec,
        settings: &str,
        handed: Option<&Handed>,
    ) -> PyResult<Index> {
        let Method::TwoStage(config) = method_of("two-stage", settings)? else {
            unreachable!("two-stage settings make a two-stage method")
        };
        let models = models_root();
        detached_in(py, handed, || {
            let inputs = input.inputs()?;
            let read = input.read_options();
            pipeline::build_index(&inputs, &read, &config.settings, &dir, &models)
        })?;
        Index::open_in(py, dir)
    }

    /// Looks up each of `texts` among the indexed documents: for each, its `k` nearest with
    /// their verdicts (JSON). With `add`, each is added as `ids[i]` after its lookup, in one
    /// batch flushed before this returns.
    fn look_up(
        &self,
        ids: &[String],
        texts: &[String],
        k: usize,
        add: bool,
    ) -> neardup::Result<String> {
        if !add {
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            let found = self.index.similar_to_texts(&texts, k)?;
            return Ok(serde_json::to_string(&found).expect("matches serialise"));
        }
        let _writer = self.writer();
        let batch = self.index.begin_batch()?;
        let mut found = Vec::with_capacity(texts.len());
        for (id, text) in ids.iter().zip(texts) {
            let new = self.index.prepare(text, k)?;
            found.push(self.index.insert_in(id, new, Some(batch))?);
        }
        self.index.end_batch(batch)?;
        self.index.flush()?;
        Ok(serde_json::to_string(&found).expect("matches serialise"))
    }

    /// The writer's turn: the lock, even if a writer before panicked (the journal, not the
    /// lock, keeps the index whole).
    fn writer(&self) -> std::sync::MutexGuard<'_, ()> {
        self.writes.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Matches as JSON: a list of objects (`id`, `cosine`, `jaccard_estimate`, `duplicate`,
/// `rule`).
fn matches_json(matches: &[Match]) -> String {
    serde_json::to_string(matches).expect("matches serialise")
}

#[pymethods]
impl Index {
    /// Opens the index in the folder `path`.
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Index> {
        Index::open_in(py, path)
    }

    /// The `k` nearest indexed documents to a new text, each with its verdict (JSON).
    fn query_text(&self, py: Python<'_>, text: &str, k: usize) -> PyResult<String> {
        check_top_k(k)?;
        detached(py, || self.index.similar_to_text(text, k)).map(|m| matches_json(&m))
    }

    /// The `k` nearest other documents to the indexed document `id` (JSON).
    fn query_id(&self, py: Python<'_>, id: &str, k: usize) -> PyResult<String> {
        check_top_k(k)?;
        detached(py, || self.index.similar_to_id(id, k)).map(|m| matches_json(&m))
    }

    /// Looks up each new text among the indexed documents: for each, its `k` nearest with
    /// their verdicts (JSON, a list for each text). With `add`, each is added as `ids[i]`
    /// after its lookup, so a later text of the batch also meets the earlier ones; the batch
    /// counts only whole (a crash before its end undoes it) and is flushed before this returns.
    fn deduplicate(
        &self,
        py: Python<'_>,
        ids: Vec<String>,
        texts: Vec<String>,
        k: usize,
        add: bool,
    ) -> PyResult<String> {
        check_top_k(k)?;
        if ids.len() != texts.len() {
            return Err(PyValueError::new_err(format!(
                "{} ids and {} texts: give one id for each text",
                ids.len(),
                texts.len()
            )));
        }
        detached(py, || self.look_up(&ids, &texts, k, add))
    }

    /// [`Index::deduplicate`] of the records in the files `paths`, read as `dedup` reads them
    /// (their text fields joined): the ids read, and each record's matches (JSON).
    #[pyo3(signature = (paths, id_field, text_fields, skip_invalid, max_doc_bytes, k, add))]
    #[allow(clippy::too_many_arguments)]
    fn deduplicate_files(
        &self,
        py: Python<'_>,
        paths: Vec<PathBuf>,
        id_field: String,
        text_fields: Vec<String>,
        skip_invalid: bool,
        max_doc_bytes: Option<usize>,
        k: usize,
        add: bool,
    ) -> PyResult<(Vec<String>, String)> {
        check_top_k(k)?;
        let input = files_input(paths, id_field, text_fields, skip_invalid, max_doc_bytes)?;
        detached(py, || {
            let inputs = input.inputs()?;
            let read = input.read_options();
            let (mut ids, mut texts) = (Vec::new(), Vec::new());
            neardup::io::for_each_chunk(&inputs, &read, "reading", |chunk| {
                for raw in chunk {
                    match read.parse(&raw) {
                        Ok(record) => {
                            ids.push(record.id);
                            texts.push(record.text);
                        }
                        Err(_) if read.skip_invalid => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                Ok(())
            })?;
            let found = self.look_up(&ids, &texts, k, add)?;
            Ok((ids, found))
        })
    }

    /// Removes the documents `ids`; for each, whether it was there. Flushed before this
    /// returns.
    fn remove(&self, py: Python<'_>, ids: Vec<String>) -> PyResult<Vec<bool>> {
        detached(py, || {
            let _writer = self.writer();
            let removed = ids
                .iter()
                .map(|id| self.index.remove(id))
                .collect::<neardup::Result<Vec<_>>>()?;
            self.index.flush()?;
            Ok(removed)
        })
    }

    /// Whether document `id` is indexed.
    fn contains(&self, py: Python<'_>, id: &str) -> PyResult<bool> {
        detached(py, || self.index.contains(id))
    }

    /// Flushes every write into the store and closes it; the index is unusable after.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        detached(py, || {
            let _writer = self.writer();
            self.index.close()
        })
    }
}

/// Refuses a number of neighbours the two-stage settings would refuse.
fn check_top_k(k: usize) -> PyResult<()> {
    neardup::settings::check(MethodName::TwoStage, "top_k", k).map_err(to_python)
}

/// Builds an index in `path` of the files `paths` (as `neardup index`), and opens it.
#[pyfunction]
#[pyo3(signature = (
    path, paths, settings, id_field, text_fields, skip_invalid, max_doc_bytes, quiet
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn index_files(
    py: Python<'_>,
    path: PathBuf,
    paths: Vec<PathBuf>,
    settings: &str,
    id_field: String,
    text_fields: Vec<String>,
    skip_invalid: bool,
    max_doc_bytes: Option<usize>,
    quiet: bool,
) -> PyResult<Index> {
    neardup::progress::set_quiet(quiet);
    let input = files_input(paths, id_field, text_fields, skip_invalid, max_doc_bytes)?;
    Index::build(py, path, input, settings, None)
}

/// Builds an index in `path` of records handed over in memory, and opens it.
#[pyfunction]
#[pyo3(signature = (path, records, settings, skip_invalid, max_doc_bytes, quiet))]
pub(crate) fn index_records(
    py: Python<'_>,
    path: PathBuf,
    records: &Records,
    settings: &str,
    skip_invalid: bool,
    max_doc_bytes: Option<usize>,
    quiet: bool,
) -> PyResult<Index> {
    neardup::progress::set_quiet(quiet);
    let (mut input, written) = records.take()?;
    read_so(&mut input, skip_invalid, max_doc_bytes);
    Index::build(py, path, input, settings, Some(&written.handed))
}
