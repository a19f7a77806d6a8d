//! The input formats: each is a reader in a file of `io/` that implements [`Format`], and
//! [`FORMATS`] lists them, once.
//!
//! A format says what it is called, which file names tell it, how to frame a file into raw
//! records, and in which format its records go back out. Everything that names the formats
//! comes from the list: `--format`'s choices and help, a pipeline file's `format`, telling a
//! format from a file name, and the checks that the README and the Python docs name every
//! one. A new format is its file, implementing [`Format`], and a line in [`FORMATS`].

use std::fmt;
use std::path::Path;

use super::{ByteRange, FieldSpec, RawRecords, range};
use crate::error::{Error, Location, Result};

/// How one input format is read.
pub trait Format: Sync {
    /// The name `--format` and a pipeline file's `format` take.
    fn name(&self) -> &'static str;

    /// What it is, in a line of `--format`'s help.
    fn about(&self) -> &'static str;

    /// The file name endings that tell it, lower case and without the dot (none for a format
    /// told otherwise, as a folder is by being one).
    fn extensions(&self) -> &'static [&'static str];

    /// Whether a path of this format is one, whatever its name says (a folder).
    fn is(&self, _path: &Path) -> bool {
        false
    }

    /// Whether a stream (standard input, a pipe), copied to a file, can be read as it.
    fn reads_a_stream(&self) -> bool {
        true
    }

    /// Frames the file or folder `path` into records: one longer than `max_record_bytes` is
    /// read no further and becomes a bad record.
    fn open(&self, path: &Path, fields: &FieldSpec, max_record_bytes: u64) -> Result<RawRecords>;

    /// [`Format::open`], for the records that start within `range` of the input's bytes
    /// ([`ByteRange`]): framed from the start, and those before the range passed over.
    fn open_range(
        &self,
        path: &Path,
        fields: &FieldSpec,
        max_record_bytes: u64,
        range: ByteRange,
    ) -> Result<RawRecords> {
        let records = self.open(path, fields, max_record_bytes)?;
        Ok(range::records_within(records, self.size(path), range))
    }

    /// Its column names, for a format with a header row.
    fn header(&self, _path: &Path) -> Result<Option<Vec<String>>> {
        Ok(None)
    }

    /// The size in bytes that progress is measured against.
    fn size(&self, path: &Path) -> u64 {
        std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
    }

    /// The `--out-format` its records go back out in, unless asked otherwise.
    fn written_as(&self) -> &'static str;
}

/// Every format neardup reads, in the order the help lists them.
pub static FORMATS: &[&dyn Format] = &[
    &super::jsonl::Jsonl,
    &super::csv_input::Csv,
    &super::csv_input::Tsv,
    &super::files::Folder,
    &super::files::Zip,
    &super::text_lines::TextLines,
    &super::parquet::Parquet,
];

/// One of [`FORMATS`]: what `--format` and a pipeline file name.
#[derive(Clone, Copy)]
pub struct InputFormat(&'static dyn Format);

impl InputFormat {
    /// JSON Lines: the default, and the format of a stream whose name tells none.
    pub const JSONL: InputFormat = InputFormat(&super::jsonl::Jsonl);

    /// The format called `name`.
    pub fn named(name: &str) -> Option<InputFormat> {
        FORMATS
            .iter()
            .find(|f| f.name() == name)
            .map(|&f| InputFormat(f))
    }

    /// The format implied by a path: one it is whatever its name (a folder), else the file's
    /// extension.
    pub fn detect(path: &Path) -> Result<Self> {
        if let Some(&format) = FORMATS.iter().find(|f| f.is(path)) {
            return Ok(InputFormat(format));
        }
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .unwrap_or_default();
        if let Some(&format) = FORMATS
            .iter()
            .find(|f| f.extensions().contains(&ext.as_str()))
        {
            return Ok(InputFormat(format));
        }
        let endings: Vec<String> = FORMATS
            .iter()
            .filter_map(|f| f.extensions().first())
            .map(|ext| format!(".{ext}"))
            .collect();
        Err(Error::input(
            Location::file(path),
            None,
            "cannot tell the input format from the file name",
            format!(
                "name it {}, give a folder, or pass --format",
                endings.join(", ")
            ),
        ))
    }

    /// How it is read.
    pub fn reader(self) -> &'static dyn Format {
        self.0
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        self.0.name()
    }
}

impl PartialEq for InputFormat {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for InputFormat {}

impl fmt::Debug for InputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for InputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The choices of `--format`, made from [`FORMATS`] once.
static CHOICES: std::sync::LazyLock<Vec<InputFormat>> =
    std::sync::LazyLock::new(|| FORMATS.iter().map(|&f| InputFormat(f)).collect());

impl clap::ValueEnum for InputFormat {
    fn value_variants<'a>() -> &'a [Self] {
        &CHOICES
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()).help(self.0.about()))
    }
}

impl serde::Serialize for InputFormat {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for InputFormat {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        InputFormat::named(&name).ok_or_else(|| {
            let names: Vec<&str> = FORMATS.iter().map(|f| f.name()).collect();
            serde::de::Error::custom(format!(
                "unknown input format {name:?}: give one of {}",
                names.join(", ")
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn names_and_extensions_are_each_one_formats() {
        let (mut names, mut endings) = (HashSet::new(), HashSet::new());
        for format in FORMATS {
            assert!(names.insert(format.name()), "{} twice", format.name());
            for ext in format.extensions() {
                assert!(endings.insert(ext), ".{ext} names two formats");
                assert_eq!(
                    InputFormat::detect(Path::new(&format!("x.{}", ext.to_uppercase())))
                        .unwrap()
                        .name(),
                    format.name()
                );
            }
            assert_eq!(
                InputFormat::named(format.name()).unwrap().name(),
                format.name()
            );
        }
        let err = InputFormat::detect(Path::new("corpus.xml")).unwrap_err();
        assert!(
            err.to_string()
                .contains("name it .jsonl, .csv, .tsv, .zip, .txt, .parquet, give a folder"),
            "{err}"
        );
    }

    #[test]
    fn a_format_is_read_and_written_by_its_name() {
        for format in CHOICES.iter() {
            let json = serde_json::to_string(format).unwrap();
            assert_eq!(json, format!("\"{}\"", format.name()));
            assert_eq!(serde_json::from_str::<InputFormat>(&json).unwrap(), *format);
        }
        let err = serde_json::from_str::<InputFormat>("\"xml\"").unwrap_err();
        assert!(
            err.to_string()
                .contains("give one of jsonl, csv, tsv, folder, zip, lines, parquet")
        );
    }

    /// The README and the Python docs name every format the list holds.
    #[test]
    fn the_readme_and_the_python_docs_name_every_format() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        let names: Vec<&str> = FORMATS.iter().map(|f| f.name()).collect();
        let flag = format!("`--format {}`", names.join("|"));
        assert!(readme.contains(&flag), "README.md does not say {flag}");
        let python = std::fs::read_to_string(root.join("docs/python.md")).unwrap();
        let row = python
            .lines()
            .find(|line| line.starts_with("| a path"))
            .expect("docs/python.md's row of paths")
            .to_lowercase();
        let module = std::fs::read_to_string(root.join("python/neardup/__init__.py")).unwrap();
        let start = module
            .find("`data` is a path")
            .expect("the module doc's paths");
        let paragraph = module[start..].split("\n\n").next().unwrap().to_lowercase();
        for format in FORMATS {
            let named = |text: &str| {
                text.contains(format.name())
                    || format.extensions().iter().any(|ext| text.contains(ext))
            };
            let name = format.name();
            assert!(
                named(&row),
                "docs/python.md's row of paths does not name {name}"
            );
            assert!(
                named(&paragraph),
                "the Python module's doc does not name {name}"
            );
        }
    }
}
