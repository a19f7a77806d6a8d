//! `neardup._neardup`: the library's deduplication runs, as a Python extension module.
//!
//! The Python package around it (`python/neardup`) turns the caller's data (paths, lists,
//! DataFrames, Arrow tables, datasets) into what a run reads, and a run's findings back into
//! the caller's own type. This module only runs: it reads files, or records handed over as
//! columns of strings, and answers with document numbers (a record's place in what it read),
//! so that no record has to travel back through it.
//!
//! Long calls release the interpreter (other Python threads run meanwhile). The library's
//! errors become `ValueError` (bad records, settings, usage) or `OSError` (files, disks)
//! carrying the command line's own messages.

mod records;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use neardup::Error;
use neardup::eval::{Predicted, Predictions, Truth, evaluate};
use neardup::group::KeepPolicy;
use neardup::index::{DocumentIndex, Match, explain_records, find_two, minhash_settings, uncentre};
use neardup::io::{Input, ReadOptions};
use neardup::output::run::RunWriter;
use neardup::pipeline::{self, Dedup, InputSpec, Method, OutputSpec, PipelineSpec};
use neardup::settings::MethodName;
use pyo3::exceptions::{
    PyFileNotFoundError, PyKeyboardInterrupt, PyOSError, PyPermissionError, PyRuntimeError,
    PyValueError,
};
use pyo3::prelude::*;
use records::{Handed, KEEP_FIELD, Records, Written};
use serde_json::{Map, Value};

/// The library's error as the Python exception a caller expects of it.
fn to_python(error: Error) -> PyErr {
    to_python_in(error, None)
}

/// [`to_python`], its message naming what `handed` holds as the caller knows it (rows and
/// columns, not the scratch file's lines and fields), and the command line's flags as the
/// package's keywords.
fn to_python_in(error: Error, handed: Option<&Handed>) -> PyErr {
    let message = in_python_terms(&error.to_string(), handed);
    match &error {
        Error::Io { source, .. } | Error::Listen { source, .. } => match source.kind() {
            std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(message),
            std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(message),
            _ => PyOSError::new_err(message),
        },
        Error::DiskFull { .. } | Error::Busy { .. } => PyOSError::new_err(message),
        Error::Interrupted => PyKeyboardInterrupt::new_err(message),
        Error::Input(_) | Error::Usage(_) | Error::Setting { .. } | Error::InputChanged { .. } => {
            PyValueError::new_err(message)
        }
        _ => PyRuntimeError::new_err(message),
    }
}

/// A library message in the package's terms: what `handed` holds named as the caller knows
/// it ([`Handed::message`]), and the command line's flags as the keywords that say the same.
fn in_python_terms(message: &str, handed: Option<&Handed>) -> String {
    let mut message = match handed {
        Some(handed) => handed.message(message),
        None => message.to_owned(),
    };
    for (flag, keyword) in FLAGS_AS_KEYWORDS {
        message = message.replace(flag, keyword);
    }
    message
}

/// The command line's flags, as they appear in the library's hints, and the keyword arguments
/// of the package that say the same; longest first.
const FLAGS_AS_KEYWORDS: [(&str, &str); 7] = [
    (
        "raise --max-doc-bytes (`max_doc_bytes` in a pipeline's [input])",
        "give a larger max_doc_bytes=",
    ),
    ("--max-doc-bytes", "max_doc_bytes="),
    ("pass --skip-invalid", "pass skip_invalid=True"),
    ("--skip-invalid", "skip_invalid=True"),
    ("--id-field", "id="),
    ("--text-field", "text="),
    ("--keep", "keep="),
];

/// Runs `work` with the interpreter released, and Ctrl-C asking it to stop: its error as the
/// Python exception it maps to, `KeyboardInterrupt` where Ctrl-C came while it worked.
///
/// Python's own Ctrl-C handler runs only once the interpreter has control again, which a long
/// call keeps; meanwhile SIGINT asks the library to stop instead ([`neardup::cancel`]).
fn detached<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> neardup::error::Result<T> + Send,
) -> PyResult<T> {
    detached_in(py, None, work)
}

/// [`detached`], over records `handed` over: its errors name their rows and columns.
///
/// A panic in the library (a bug) becomes a `RuntimeError` with its message, never Python's
/// `PanicException`, which no `except Exception` catches.
fn detached_in<T: Send>(
    py: Python<'_>,
    handed: Option<&Handed>,
    work: impl FnOnce() -> neardup::error::Result<T> + Send,
) -> PyResult<T> {
    let sigint = sigint::Asking::install();
    let result = py.detach(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)));
    let interrupted = neardup::cancel::requested();
    // The last call at work clears the request: one clearing it sooner would keep the
    // others, in other threads, from seeing it.
    drop(sigint);
    if interrupted {
        return Err(PyKeyboardInterrupt::new_err("interrupted"));
    }
    match result {
        Ok(done) => done.map_err(|e| to_python_in(e, handed)),
        Err(panic) => Err(PyRuntimeError::new_err(format!(
            "neardup failed unexpectedly ({}); please report this with the call that caused it",
            panics::message(&*panic)
        ))),
    }
}

/// Panics in the library, which reach Python as exceptions ([`detached_in`]) rather than as
/// text on standard error.
mod panics {
    use std::any::Any;
    use std::sync::Mutex;

    /// The last panic's message and place, as the hook saw it (on whichever thread).
    static LAST: Mutex<Option<String>> = Mutex::new(None);

    /// Keeps the library's panics off standard error: [`detached_in`](super::detached_in)
    /// raises each as an exception with its message and place. This extension's own hook:
    /// other extensions keep theirs.
    pub(super) fn keep_quiet() {
        std::panic::set_hook(Box::new(|info| {
            *LAST.lock().unwrap_or_else(|e| e.into_inner()) = Some(info.to_string());
        }));
    }

    /// What a panic said, and where.
    pub(super) fn message(panic: &(dyn Any + Send)) -> String {
        if let Some(seen) = LAST.lock().unwrap_or_else(|e| e.into_inner()).take() {
            return seen;
        }
        match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
            (Some(text), _) => (*text).to_owned(),
            (_, Some(text)) => text.clone(),
            _ => "a panic with no message".to_owned(),
        }
    }
}

/// SIGINT as a request to stop, while any call works.
#[cfg(unix)]
mod sigint {
    use std::sync::Mutex;

    /// Calls at work, and the handler theirs replaced (Python's).
    static WORKING: Mutex<(usize, Option<libc::sigaction>)> = Mutex::new((0, None));

    extern "C" fn ask_to_stop(_: libc::c_int) {
        neardup::cancel::request();
    }

    /// SIGINT asks the library to stop until the last of these is dropped.
    pub(super) struct Asking;

    impl Asking {
        pub(super) fn install() -> Asking {
            let mut working = WORKING.lock().unwrap_or_else(|e| e.into_inner());
            if working.0 == 0 {
                neardup::cancel::clear();
                // SAFETY: a zeroed sigaction is a valid empty one; the handler only stores to
                // an atomic, which is safe in a signal handler.
                unsafe {
                    let mut action: libc::sigaction = std::mem::zeroed();
                    action.sa_sigaction = ask_to_stop as *const () as libc::sighandler_t;
                    libc::sigemptyset(&mut action.sa_mask);
                    let mut previous: libc::sigaction = std::mem::zeroed();
                    if libc::sigaction(libc::SIGINT, &action, &mut previous) == 0 {
                        working.1 = Some(previous);
                    }
                }
            }
            working.0 += 1;
            Asking
        }
    }

    impl Drop for Asking {
        fn drop(&mut self) {
            let mut working = WORKING.lock().unwrap_or_else(|e| e.into_inner());
            working.0 -= 1;
            if working.0 > 0 {
                return;
            }
            neardup::cancel::clear();
            if let Some(previous) = working.1.take() {
                // SAFETY: restoring the handler that `install` replaced.
                unsafe { libc::sigaction(libc::SIGINT, &previous, std::ptr::null_mut()) };
            }
        }
    }
}

/// Elsewhere Ctrl-C is Python's once the call returns.
#[cfg(not(unix))]
mod sigint {
    pub(super) struct Asking;

    impl Asking {
        pub(super) fn install() -> Asking {
            Asking
        }
    }
}

/// Where models are looked up: where the command line looks, `--models` aside.
fn models_root() -> PathBuf {
    std::env::var_os("NEARDUP_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(neardup::embed::models::default_root)
}

/// The method `name` with `settings`, a JSON object of the keys a pipeline file takes.
fn method_of(name: &str, settings: &str) -> PyResult<Method> {
    let name: MethodName = name.parse().map_err(|e: String| PyValueError::new_err(e))?;
    let settings: Map<String, Value> = serde_json::from_str(settings)
        .map_err(|e| PyValueError::new_err(format!("settings: {e}")))?;
    Method::from_settings(name, settings).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A finished run: what the method found, in the terms of what it read.
#[pyclass(frozen, module = "neardup._neardup")]
struct Run {
    spec: PipelineSpec,
    inputs: Vec<Input>,
    read: ReadOptions,
    dedup: Dedup,
    /// The member each group keeps.
    kept: Vec<u32>,
    /// The records added to the collection checked against (`add`).
    added: Option<usize>,
    /// Records handed over in memory, as written for the run to read (shared with the runs
    /// decided again from this one).
    records: Option<Arc<Written>>,
}

impl Run {
    /// Runs `spec`'s method over its inputs, the interpreter released meanwhile.
    fn start(py: Python<'_>, spec: PipelineSpec, records: Option<Written>) -> PyResult<Run> {
        let models = models_root();
        let records = records.map(Arc::new);
        let handed = records.as_deref().map(|r| &r.handed);
        detached_in(py, handed, || {
            let inputs = spec.input.inputs()?;
            let read = spec.input.read_options();
            let _adding = pipeline::lock_collection_to_add(&spec.method)?;
            let dedup = pipeline::dedup_to_rethreshold(&inputs, &read, &spec.method, &models)?;
            let keep = &spec.output.keep;
            let kept = pipeline::kept_members(&inputs, &read, &dedup, keep)?;
            let added =
                pipeline::add_where_asked(&spec.method, &inputs, &read, &dedup, keep, &models)?
                    .map(|(added, _)| added);
            Ok(Run {
                spec,
                inputs,
                read,
                dedup,
                kept,
                added,
                records: records.clone(),
            })
        })
    }

    /// What the records handed over in memory were, where they were.
    fn handed(&self) -> Option<&Handed> {
        self.records.as_deref().map(|r| &r.handed)
    }
}

#[pymethods]
impl Run {
    /// Each document's id, in the order read.
    #[getter]
    fn ids(&self) -> Vec<String> {
        self.dedup.corpus.ids.clone()
    }

    /// Each document's place among the records read (a record skipped as invalid has one,
    /// and no document).
    #[getter]
    fn rows(&self) -> Vec<u64> {
        self.dedup.corpus.ordinals.clone()
    }

    /// The confirmed pairs: `(a, b, score)`, documents by number.
    #[getter]
    fn pairs(&self) -> Vec<(u32, u32, f64)> {
        self.dedup
            .pairs
            .iter()
            .map(|p| (p.a, p.b, p.score))
            .collect()
    }

    /// The rule that confirmed each pair (`jaccard`, `containment`, `title`, ...), in the
    /// order of `pairs`; `None` for a method that confirms by its score alone.
    #[getter]
    fn pair_rules(&self) -> Option<Vec<&'static str>> {
        let rules = self.dedup.pair_rules()?;
        Some(rules.into_iter().map(|rule| rule.name()).collect())
    }

    /// This run's candidates decided again where the threshold is `threshold`, and grouped
    /// again: a new run, nothing signed or embedded again (`neardup::pipeline::rethreshold`).
    fn rethreshold(&self, py: Python<'_>, threshold: f64) -> PyResult<Run> {
        if self.added.is_some() {
            return Err(PyValueError::new_err(
                "this run added its unique records to the collection it was checked against; \
                 rethreshold a run without add, then add what it keeps",
            ));
        }
        detached_in(py, self.handed(), || {
            let (dedup, method) = pipeline::rethreshold(&self.dedup, &self.spec.method, threshold)?;
            let spec = PipelineSpec {
                method,
                ..self.spec.clone()
            };
            let kept = pipeline::kept_members(&self.inputs, &self.read, &dedup, &spec.output.keep)?;
            Ok(Run {
                spec,
                inputs: self.inputs.clone(),
                read: self.read.clone(),
                dedup,
                kept,
                added: None,
                records: self.records.clone(),
            })
        })
    }

    /// The name of a pair's score (`jaccard_estimate`, ...).
    #[getter]
    fn score_name(&self) -> &'static str {
        self.dedup.score_name
    }

    /// The groups: `(members, representative, kept, representative_similarity)`, members by
    /// number, sorted by id.
    #[getter]
    fn groups(&self) -> Vec<(Vec<u32>, u32, u32, f64)> {
        self.dedup
            .groups
            .iter()
            .zip(&self.kept)
            .map(|(g, &kept)| {
                (
                    g.members.clone(),
                    g.representative,
                    kept,
                    g.representative_similarity,
                )
            })
            .collect()
    }

    /// What became of each document, by number: its group (or `None`), whether it is kept,
    /// and the id of the member kept in its place (or `None`): the annotated copy's columns.
    #[allow(clippy::type_complexity)]
    fn fates(&self) -> (Vec<Option<usize>>, Vec<bool>, Vec<Option<String>>) {
        let fates = pipeline::Fates::new(&self.dedup, &self.kept);
        let count = self.dedup.records() as u32;
        let mut columns = (Vec::new(), Vec::new(), Vec::new());
        for fate in (0..count).map(|doc| fates.of(doc)) {
            columns.0.push(fate.group);
            columns.1.push(fate.kept);
            columns.2.push(fate.duplicate_of.map(str::to_owned));
        }
        columns
    }

    /// Why documents `a` and `b` (ids) were, or were not, matched, as JSON: every piece of
    /// evidence the confirm stage weighs, the rule that decided, and a word diff (`neardup
    /// explain`). Minhash and two-stage runs; a two-stage cosine is of the vectors as made,
    /// where the run centred them on its corpus.
    fn explain(&self, py: Python<'_>, a: String, b: String) -> PyResult<String> {
        let models = models_root();
        detached_in(py, self.handed(), || {
            let (mut settings, embeds) = match &self.spec.method {
                Method::MinHash(config) => (minhash_settings(config.confirm.clone()), false),
                Method::TwoStage(config) => (config.settings.clone(), true),
                other => {
                    return Err(Error::Usage(format!(
                        "explain weighs the evidence of minhash and two-stage runs; this run's \
                         method is {}",
                        other.name().as_str()
                    )));
                }
            };
            uncentre(&mut settings);
            let records = find_two(&self.inputs, &self.read, [&a, &b])?;
            let explanation = explain_records(&settings, embeds, records, &models)?;
            let mut json = serde_json::to_value(&explanation).expect("an explanation serialises");
            json["diff"] = Value::from(explanation.diff);
            Ok(json.to_string())
        })
    }

    /// The CORE 2020 metrics of this run against the labelled duplicates in `truth` (JSON
    /// Lines in the CORE layout, ids in `id_field`, by default the field the run read ids
    /// from), as JSON: what `neardup eval --json` writes. A document's predicted duplicates are
    /// the rest of its group (`predicted="groups"`) or its confirmed partners (`"pairs"`).
    #[pyo3(signature = (truth, predicted, id_field = None))]
    fn evaluate(
        &self,
        py: Python<'_>,
        truth: PathBuf,
        predicted: &str,
        id_field: Option<String>,
    ) -> PyResult<String> {
        let predicted = match predicted {
            "groups" => Predicted::Groups,
            "pairs" => Predicted::Pairs,
            other => {
                return Err(PyValueError::new_err(format!(
                    "predicted: {other:?}; give \"groups\" (the rest of a document's group) or \
                     \"pairs\" (its confirmed partners)"
                )));
            }
        };
        detached_in(py, self.handed(), || {
            let id_field = id_field.as_deref().unwrap_or(&self.read.fields.id);
            let labelled = Truth::load(&truth, id_field)?;
            let ids = &self.dedup.corpus.ids;
            let id = |doc: u32| ids[doc as usize].as_str();
            let predictions = match predicted {
                Predicted::Groups => Predictions::from_groups(
                    self.dedup
                        .groups
                        .iter()
                        .map(|g| g.members.iter().map(|&m| id(m))),
                ),
                Predicted::Pairs => {
                    Predictions::from_pairs(self.dedup.pairs.iter().map(|p| (id(p.a), id(p.b))))
                }
            };
            labelled.check_ids(&truth, ids, &predictions)?;
            let evaluation = evaluate(&labelled, &predictions);
            Ok(serde_json::to_string(&evaluation).expect("an evaluation serialises"))
        })
    }

    /// What the run did, as JSON: counts, settings and the seconds of each stage.
    fn summary(&self) -> String {
        let dedup = &self.dedup;
        let fates = pipeline::Fates::new(dedup, &self.kept);
        let unique = (0..dedup.records() as u32)
            .filter(|&doc| fates.of(doc).kept)
            .count();
        let settings = serde_json::to_value(&self.spec).expect("settings serialise");
        let mut summary = serde_json::to_value(pipeline::run_summary(dedup, settings, unique))
            .expect("a summary serialises");
        summary["method"] = serde_json::to_value(&self.spec.method).expect("a method serialises");
        if let Some(added) = self.added {
            summary["added"] = Value::from(added);
        }
        if let Some(skipped) = summary["skipped_first"].as_array_mut() {
            for problem in skipped {
                if let Some(text) = problem.as_str() {
                    *problem = Value::from(in_python_terms(text, self.handed()));
                }
            }
        }
        summary.to_string()
    }

    /// Writes the command line's files (pairs, candidates, groups, unique and annotated
    /// records, summary) into the folder `out`; returns the summary as JSON.
    #[pyo3(signature = (out, annotate = true, candidates = true))]
    fn write(
        &self,
        py: Python<'_>,
        out: PathBuf,
        annotate: bool,
        candidates: bool,
    ) -> PyResult<String> {
        detached_in(py, self.handed(), || {
            let output = OutputSpec {
                dir: out,
                annotate,
                candidates,
                ..self.spec.output.clone()
            };
            let lock = RunWriter::lock(&output.dir)?;
            let settings = serde_json::to_value(&self.spec).expect("settings serialise");
            let summary = pipeline::write_results(
                lock,
                &self.inputs,
                &self.read,
                &self.dedup,
                &output,
                settings,
                // The records were added, where asked, when the run was made.
                || Ok(()),
            )?;
            Ok(serde_json::to_string(&summary).expect("a summary serialises"))
        })
    }
}

/// An open two-stage index (`neardup index`): documents' vectors in the embedded store, their
/// MinHash sketches beside them. Lookups answer with each neighbour's verdict; writes are
/// journalled and flushed before a call returns, as `serve` acknowledges them.
#[pyclass(frozen, module = "neardup._neardup")]
struct Index {
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
fn index_files(
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
fn index_records(
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

/// The spec of a run of `method` over `paths`, keeping `keep`'s member of each group.
fn spec_of(input: InputSpec, method: &str, settings: &str, keep: &str) -> PyResult<PipelineSpec> {
    let keep: KeepPolicy = keep
        .parse()
        .map_err(|e| PyValueError::new_err(format!("keep: {e}")))?;
    Ok(PipelineSpec {
        method: method_of(method, settings)?,
        input,
        output: OutputSpec {
            keep,
            ..OutputSpec::new(PathBuf::new())
        },
        eval: None,
    })
}

/// Deduplicates the files `paths`, reading each record's id from `id_field` and its text from
/// `text_fields` (joined with a space; the first is the title where there are several).
#[pyfunction]
#[pyo3(signature = (
    paths, method, settings, id_field, text_fields, keep, skip_invalid, max_doc_bytes, quiet
))]
#[allow(clippy::too_many_arguments)]
fn dedup_files(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    method: &str,
    settings: &str,
    id_field: String,
    text_fields: Vec<String>,
    keep: &str,
    skip_invalid: bool,
    max_doc_bytes: Option<usize>,
    quiet: bool,
) -> PyResult<Run> {
    neardup::progress::set_quiet(quiet);
    let input = files_input(paths, id_field, text_fields, skip_invalid, max_doc_bytes)?;
    Run::start(py, spec_of(input, method, settings, keep)?, None)
}

/// Deduplicates records handed over in memory ([`Records`]). A `field:NAME:max|min` keep
/// policy reads the column the records carry for it.
#[pyfunction]
#[pyo3(signature = (records, method, settings, keep, skip_invalid, max_doc_bytes, quiet))]
#[allow(clippy::too_many_arguments)]
fn dedup_records(
    py: Python<'_>,
    records: &Records,
    method: &str,
    settings: &str,
    keep: &str,
    skip_invalid: bool,
    max_doc_bytes: Option<usize>,
    quiet: bool,
) -> PyResult<Run> {
    neardup::progress::set_quiet(quiet);
    let carried = records.carry_keep();
    let (mut input, written) = records.take()?;
    read_so(&mut input, skip_invalid, max_doc_bytes);
    let mut spec = spec_of(input, method, settings, keep)?;
    if let (KeepPolicy::Field { name, .. }, true) = (&mut spec.output.keep, carried) {
        *name = KEEP_FIELD.to_owned();
    }
    Run::start(py, spec, Some(written))
}

/// The input of files `paths`, each record's id in `id_field` and its text in `text_fields`;
/// a missing file is refused as Python refuses one.
fn files_input(
    paths: Vec<PathBuf>,
    id_field: String,
    text_fields: Vec<String>,
    skip_invalid: bool,
    max_doc_bytes: Option<usize>,
) -> PyResult<InputSpec> {
    if let Some(path) = paths.iter().find(|p| p.as_os_str() != "-" && !p.exists()) {
        // The reader's own message, as the exception Python raises for a missing file.
        let message = Input::new(path, None).err().map(|e| e.to_string());
        return Err(PyFileNotFoundError::new_err(message.unwrap_or_else(|| {
            format!("{}: no such file or folder", path.display())
        })));
    }
    let mut input = InputSpec {
        paths,
        format: None,
        id_field,
        text_fields,
        skip_invalid: false,
        max_doc_bytes: neardup::io::DEFAULT_MAX_DOC_BYTES,
    };
    read_so(&mut input, skip_invalid, max_doc_bytes);
    Ok(input)
}

/// Reads `input` skipping bad records where `skip_invalid`, and refusing texts over
/// `max_doc_bytes` (the command line's default where `None`).
fn read_so(input: &mut InputSpec, skip_invalid: bool, max_doc_bytes: Option<usize>) {
    input.skip_invalid = skip_invalid;
    input.max_doc_bytes = max_doc_bytes.unwrap_or(neardup::io::DEFAULT_MAX_DOC_BYTES);
}

/// Fits the learned rule to the labelled files `truths` (CORE layout; ids from `id_field`,
/// text from `text_fields`), their candidates found by two-stage under `settings`, and writes
/// the model to `out`: `neardup train`. Returns the model file's text.
#[pyfunction]
#[pyo3(signature = (truths, out, settings, id_field, text_fields, prior, quiet))]
#[allow(clippy::too_many_arguments)]
fn train(
    py: Python<'_>,
    truths: Vec<PathBuf>,
    out: PathBuf,
    settings: &str,
    id_field: String,
    text_fields: Vec<String>,
    prior: Option<PathBuf>,
    quiet: bool,
) -> PyResult<String> {
    neardup::progress::set_quiet(quiet);
    let input = files_input(truths.clone(), id_field, text_fields, false, None)?;
    let Method::TwoStage(config) = method_of("two-stage", settings)? else {
        unreachable!("two-stage settings make a two-stage method")
    };
    detached(py, || {
        let prior = (prior.as_deref())
            .map(neardup::confirm::LearnedModel::named)
            .transpose()?;
        let data = pipeline::TrainingData {
            prior: prior.as_ref(),
            truths: &truths,
            saved: &[],
            labels: &[],
            corpus: None,
            save_pairs: None,
            input: &input,
            config: &config,
        };
        let model = pipeline::train(&data, &models_root())?;
        model.save(&out)?;
        Ok(serde_json::to_string(&model).expect("a model serialises"))
    })
}

/// While `on`, the library keeps its newest progress bar for [`progress`] to read: where no
/// terminal shows its own bars (a notebook), the package draws them.
#[pyfunction]
fn watch_progress(on: bool) {
    neardup::progress::watch(on);
}

/// The newest progress bar of the work under way, unless it is done: its message, position
/// and length (none for work without a count).
#[pyfunction]
fn progress() -> Option<(String, u64, Option<u64>)> {
    neardup::progress::watched()
}

/// The extension module.
/// mimalloc, as the command line: the same work at the same speed (`neardup::allocator`).
#[global_allocator]
static ALLOCATOR: neardup::allocator::MiMalloc = neardup::allocator::MiMalloc;

#[pymodule]
fn _neardup(module: &Bound<'_, PyModule>) -> PyResult<()> {
    neardup::allocator::tune();
    panics::keep_quiet();
    module.add_class::<Run>()?;
    module.add_class::<Index>()?;
    module.add_class::<Records>()?;
    module.add_function(wrap_pyfunction!(index_files, module)?)?;
    module.add_function(wrap_pyfunction!(index_records, module)?)?;
    module.add("DEFAULT_TOP_K", neardup::search::DEFAULT_TOP_K)?;
    module.add("DEFAULT_MAX_DOC_BYTES", neardup::io::DEFAULT_MAX_DOC_BYTES)?;
    module.add_function(wrap_pyfunction!(dedup_files, module)?)?;
    module.add_function(wrap_pyfunction!(dedup_records, module)?)?;
    module.add_function(wrap_pyfunction!(train, module)?)?;
    module.add_function(wrap_pyfunction!(watch_progress, module)?)?;
    module.add_function(wrap_pyfunction!(progress, module)?)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add(
        "ANNOTATION_COLUMNS",
        neardup::output::records::ANNOTATION_COLUMNS.to_vec(),
    )?;
    Ok(())
}
