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

mod index;
mod records;
mod run;

use std::path::PathBuf;

use index::{Index, index_files, index_records};
use neardup::Error;
use neardup::group::KeepPolicy;
use neardup::io::Input;
use neardup::pipeline::{self, InputSpec, Method, OutputSpec, PipelineSpec};
use neardup::settings::MethodName;
use pyo3::exceptions::{
    PyFileNotFoundError, PyKeyboardInterrupt, PyOSError, PyPermissionError, PyRuntimeError,
    PyValueError,
};
use pyo3::prelude::*;
use records::{Handed, KEEP_FIELD, Records};
use run::Run;
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
