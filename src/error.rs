//! Errors that say where and what to do.
//!
//! Every problem with a user's input carries a [`Location`] (file, line or archive entry), the
//! field involved if any, what is wrong, and a hint for the fix. The binary maps the kinds to
//! exit codes: 2 for what the user can fix in the command or its input (bad input or
//! settings, a damaged index to rebuild, an address in use), 130 for work stopped on request
//! ([`crate::cancel`], as a shell reports Ctrl-C), 1 for everything else.

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
    /// Where the record starts, in bytes from the file's start: for a line read without
    /// counting the lines before it (a part of a split run starts mid-file).
    pub byte: Option<u64>,
}

impl Location {
    /// A whole file.
    pub fn file(path: &Path) -> Self {
        Location {
            path: path.to_owned(),
            line: None,
            entry: None,
            byte: None,
        }
    }

    /// A line of a file.
    pub fn line(path: &Path, line: u64) -> Self {
        Location {
            path: path.to_owned(),
            line: Some(line),
            entry: None,
            byte: None,
        }
    }

    /// The line of a file that starts at byte `byte`.
    pub fn line_at_byte(path: &Path, byte: u64) -> Self {
        Location {
            path: path.to_owned(),
            line: None,
            entry: None,
            byte: Some(byte),
        }
    }

    /// An entry of a folder or archive.
    pub fn entry(path: &Path, entry: &str) -> Self {
        Location {
            path: path.to_owned(),
            line: None,
            entry: Some(entry.to_owned()),
            byte: None,
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
        if let Some(byte) = self.byte {
            write!(f, " (the line at byte {byte})")?;
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
    /// Fetching a model over the network failed: a failure of the moment, not of the input.
    #[error("{problem} ({hint})")]
    Fetch {
        /// What failed.
        problem: String,
        /// What to do about it.
        hint: String,
    },
    /// The vector store (Qdrant's embedded engine or a server) failed.
    #[error("vector store: {message}{}", source.as_ref().map(|s| format!(": {s}")).unwrap_or_default())]
    Store {
        /// What neardup was doing, or what went wrong.
        message: String,
        /// The engine's or client's own error, where there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// Another neardup process, or another part of this one, holds the folder (an index, an
    /// output folder).
    #[error(
        "{} is in use {}{}; {} {hint}",
        path.display(),
        if *ours { "elsewhere in this process" } else { "by another neardup process" },
        holder.as_ref().map(|h| format!(" ({h})")).unwrap_or_default(),
        if *ours { "close what holds it (an open index, a run not finished) or" } else { "wait for it or" }
    )]
    Busy {
        /// The folder that is locked.
        path: PathBuf,
        /// Whether this process holds it (an index opened twice, from Python say).
        ours: bool,
        /// The process holding it, as it wrote itself into the lock file.
        holder: Option<String>,
        /// What else the user can do.
        hint: &'static str,
    },
    /// An input file changed while it was being read (it is read twice: to sketch, then to copy
    /// out the records kept).
    #[error(
        "{location}: the input changed while neardup was reading it; run again on a copy that does not change"
    )]
    InputChanged {
        /// Where the difference was seen.
        location: String,
    },
    /// Too little disk space is left where neardup must write: refused before the write,
    /// since a file the engine maps into memory cannot report a full disk any other way.
    #[error(
        "{}: {what} needs about {} MB free, and {} MB are: free some space there, or {hint}",
        path.display(),
        needed.div_ceil(1 << 20),
        free >> 20
    )]
    DiskFull {
        /// The folder written to.
        path: PathBuf,
        /// What was about to be written.
        what: &'static str,
        /// Bytes it needs.
        needed: u64,
        /// Bytes free.
        free: u64,
        /// What else the user can do.
        hint: &'static str,
    },
    /// A server could not listen on its address.
    #[error("cannot listen on {addr}: {source} (is another server using it? give another --addr)")]
    Listen {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// Drawing one of a report's plots failed (what the plotting library said).
    #[error("drawing a plot of the report failed: {0}")]
    Plot(String),
    /// Two different document ids have the same 64-bit point key, so a store cannot hold both.
    #[error(
        "documents {first:?} and {second:?} have the same 64-bit key (a hash collision, about one in 10^19 per pair): rename one of them"
    )]
    IdCollision {
        /// The id stored first.
        first: String,
        /// The id that collides with it.
        second: String,
    },
    /// A setting's value is refused (out of its range), by key: a pipeline file names its line,
    /// the command line its flag.
    #[error("`{key}` {message}")]
    Setting {
        /// The setting's key.
        key: &'static str,
        /// What is wrong, after the key: "must lie in (0, 1], not 1.5".
        message: String,
    },
    /// The caller asked the work to stop ([`crate::cancel`]).
    #[error("interrupted")]
    Interrupted,
    /// Stored state (an index's files, its manifest, its points) is damaged or was changed by
    /// hand: it cannot be trusted and must be rebuilt.
    #[error(
        "the index at {} is damaged ({problem}): {}",
        path.display(),
        fix.unwrap_or("rebuild it with `neardup index`")
    )]
    Damaged {
        /// The index folder or file.
        path: PathBuf,
        /// What was found.
        problem: String,
        /// What mends it, where less than rebuilding the index does.
        fix: Option<&'static str>,
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

    /// A vector store failure described by `message`.
    pub fn store(message: impl Into<String>) -> Self {
        Error::Store {
            message: message.into(),
            source: None,
        }
    }

    /// A vector store failure while doing `context`, caused by `source`.
    pub fn store_from(
        context: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::Store {
            message: context.into(),
            source: Some(Box::new(source)),
        }
    }

    /// An I/O failure on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_owned(),
            source,
        }
    }

    /// The process exit code for this error (see the module docs).
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Input(_)
            | Error::Usage(_)
            | Error::Setting { .. }
            | Error::Model { .. }
            | Error::Damaged { .. }
            | Error::Listen { .. }
            | Error::IdCollision { .. } => 2,
            Error::Io { .. }
            | Error::DiskFull { .. }
            | Error::Fetch { .. }
            | Error::Store { .. }
            | Error::Busy { .. }
            | Error::InputChanged { .. }
            | Error::Plot(_) => 1,
            Error::Interrupted => 130,
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
