//! Paths neardup records in its settings, read from the command line.

use std::path::{Path, PathBuf};

/// Parses a path that neardup records in its settings (`summary.json`, an index's manifest):
/// JSON holds UTF-8 only, so a path that is not is refused here, naming its flag, instead of
/// failing once the work is done.
#[derive(Clone, Copy, Debug)]
pub struct RecordedPath;

impl clap::builder::TypedValueParser for RecordedPath {
    type Value = PathBuf;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> std::result::Result<PathBuf, clap::Error> {
        match value.to_str() {
            Some(path) => Ok(PathBuf::from(path)),
            None => {
                let name = arg.map_or_else(|| "a path".to_owned(), |a| a.to_string());
                Err(clap::Error::raw(
                    clap::error::ErrorKind::InvalidValue,
                    format!(
                        "{name}: the path {} is not valid UTF-8, and neardup records its paths \
                         in JSON settings, which hold UTF-8 only; rename it (or link to it from \
                         a UTF-8 name)\n",
                        Path::new(value).display()
                    ),
                )
                .with_cmd(cmd))
            }
        }
    }
}
