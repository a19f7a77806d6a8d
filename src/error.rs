//! Errors that say where and what to do.
//!
//! Every problem with a user's input carries a [`Location`] (file, line or archive entry), the
//! field involved if any, what is wrong, and a hint for the fix. The binary maps the kinds to
//! exit codes: 2 for bad input or usage, 1 for everything else.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where in the input a record came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The file that was read.
    pub path: PathBuf,
    /// 1-based line (JSONL, CSV, stoplists), if the format has lines.
    pub line: Option<u64>,
    /// The entry inside a folder or archive, for inputs made of many files.
    pub entry: Option<String>,
}

impl Location {
    /// A whole file.
    pub fn file(path: &Path) -> Self {
        Location {
            path: path.to_owned(),
            line: None,
            entry: None,
        }
    }

    /// A line of a file.
    pub fn line(path: &Path, line: u64) -> Self {
        Location {
            path: path.to_owned(),
            line: Some(line),
            entry: None,
        }
    }

    /// An entry of a folder or archive.
    pub fn entry(path: &Path, entry: &str) -> Self {
        Location {
            path: path.to_owned(),
            line: None,
            entry: Some(entry.to_owned()),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(entry) = &self.entry {
            write!(f, "/{entry}")?;
        }
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        Ok(())
    }
}

/// A problem with one record or setting of the user's input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    /// Where it is.
    pub location: Location,
    /// The field involved, if one is.
    pub field: Option<String>,
    /// What is wrong.
    pub problem: String,
    /// What to do about it.
    pub hint: String,
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.location)?;
        if let Some(field) = &self.field {
            write!(f, "field `{field}`: ")?;
        }
        write!(f, "{}", self.problem)?;
        if !self.hint.is_empty() {
            write!(f, " ({})", self.hint)?;
        }
        Ok(())
    }
}

/// Everything the library can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user's input is malformed: a bad record, a bad setting file.
    #[error("{0}")]
    Input(Box<InputError>),
    /// A setting or combination of settings cannot work.
    #[error("{0}")]
    Usage(String),
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file involved.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// A model is missing or unusable: what is wrong and what to run.
    #[error("{problem} ({hint})")]
    Model {
        /// What is wrong.
        problem: String,
        /// What to do about it.
        hint: String,
    },
    /// The vector store (Qdrant's embedded engine or a server) failed.
    #[error("vector store: {0}")]
    Store(String),
    /// Stored state (an index's files, its manifest, its points) is damaged or was changed by
    /// hand: it cannot be trusted and must be rebuilt.
    #[error("the index at {} is damaged ({problem}): rebuild it with `neardup index`", path.display())]
    Damaged {
        /// The index folder or file.
        path: PathBuf,
        /// What was found.
        problem: String,
    },
}

impl Error {
    /// A problem with the user's input at `location`.
    pub fn input(
        location: Location,
        field: Option<&str>,
        problem: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        Error::Input(Box::new(InputError {
            location,
            field: field.map(str::to_owned),
            problem: problem.into(),
            hint: hint.into(),
        }))
    }

    /// A model problem with the fix to suggest.
    pub fn model(problem: impl Into<String>, hint: impl Into<String>) -> Self {
        Error::Model {
            problem: problem.into(),
            hint: hint.into(),
        }
    }

    /// An I/O failure on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_owned(),
            source,
        }
    }

    /// The process exit code for this error: 2 for bad input or usage, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Input(_) | Error::Usage(_) | Error::Model { .. } | Error::Damaged { .. } => 2,
            Error::Io { .. } | Error::Store(_) => 1,
        }
    }
}

impl From<InputError> for Error {
    fn from(e: InputError) -> Self {
        Error::Input(Box::new(e))
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
