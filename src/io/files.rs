//! Corpora of text files: a folder (searched recursively) or a `.zip` archive. Each file is one
//! document whose id is its path inside the folder or archive, with `/` separators.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::{Body, FieldSpec, Format, RawRecord, RawRecords, Record, too_long};
use crate::error::{Error, InputError, Location, Result};

fn open_folder(root: &Path, max_record_bytes: u64) -> Result<RawRecords> {
    let mut paths = Vec::new();
    for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
        let entry = entry.map_err(|e| {
            let path = e.path().unwrap_or(root).to_owned();
            Error::io(&path, e.into())
        })?;
        if entry.file_type().is_file() {
            paths.push(entry.into_path());
        }
    }
    let root = root.to_owned();
    Ok(Box::new(paths.into_iter().map(move |path| {
        let file = File::open(&path).map_err(|e| Error::io(&path, e))?;
        let size = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        let id = relative_id(&root, &path);
        let location = Location::entry(&root, &id);
        let (bytes, input_bytes) =
            read_capped(file, max_record_bytes, size).map_err(|e| Error::io(&path, e))?;
        let body = match bytes {
            Some(bytes) => Body::File { id, bytes },
            None => Body::Invalid(too_long(location.clone(), max_record_bytes)),
        };
        Ok(RawRecord {
            location,
            input_bytes,
            body,
        })
    })))
}

/// Reads `reader` to its end, or to `limit` bytes: `None` for a longer one, whose rest is not
/// read. `expected` is the size it says it has: over the limit, nothing is read at all (a zip
/// entry may understate its size, which the limit still catches). Returns the bytes and how
/// many were read.
fn read_capped(
    mut reader: impl Read,
    limit: u64,
    expected: u64,
) -> std::io::Result<(Option<Vec<u8>>, u64)> {
    if expected > limit {
        return Ok((None, 0));
    }
    let mut bytes = Vec::with_capacity(expected as usize);
    let mut piece = vec![0; 64 << 10];
    loop {
        let n = match reader.read(&mut piece) {
            Ok(0) => {
                let read = bytes.len() as u64;
                return Ok((Some(bytes), read));
            }
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if !super::push_capped(&mut bytes, &piece[..n], limit) {
            return Ok((None, bytes.len() as u64));
        }
    }
}

fn relative_id(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

fn open_zip(path: &Path, max_record_bytes: u64) -> Result<RawRecords> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let archive = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(|e| {
        Error::input(
            Location::file(path),
            None,
            format!("not a readable zip archive: {e}"),
            "check that the file is a complete .zip",
        )
    })?;
    Ok(Box::new(ZipEntries {
        path: path.to_owned(),
        archive,
        next: 0,
        limit: max_record_bytes,
    }))
}

struct ZipEntries {
    path: PathBuf,
    archive: zip::ZipArchive<std::io::BufReader<File>>,
    next: usize,
    /// The most bytes of one entry decompressed into memory.
    limit: u64,
}

impl Iterator for ZipEntries {
    type Item = Result<RawRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.next < self.archive.len() {
            let index = self.next;
            self.next += 1;
            let mut entry = match self.archive.by_index(index) {
                Ok(entry) => entry,
                Err(e) => {
                    let location = Location::entry(&self.path, &format!("#{index}"));
                    return Some(Ok(invalid(location, format!("unreadable entry: {e}"))));
                }
            };
            if !entry.is_file() {
                continue;
            }
            let id = match entry.name() {
                Ok(name) => name.into_owned(),
                Err(e) => {
                    let location = Location::entry(&self.path, &format!("#{index}"));
                    return Some(Ok(invalid(location, format!("unreadable entry name: {e}"))));
                }
            };
            let location = Location::entry(&self.path, &id);
            let input_bytes = entry.compressed_size();
            let size = entry.size();
            let body = match read_capped(&mut entry, self.limit, size) {
                Ok((Some(bytes), _)) => Body::File { id, bytes },
                Ok((None, _)) => Body::Invalid(too_long(location.clone(), self.limit)),
                Err(e) => return Some(Ok(invalid(location, format!("cannot decompress: {e}")))),
            };
            return Some(Ok(RawRecord {
                location,
                input_bytes,
                body,
            }));
        }
        None
    }
}

fn invalid(location: Location, problem: String) -> RawRecord {
    RawRecord {
        location: location.clone(),
        input_bytes: 0,
        body: Body::Invalid(InputError {
            location,
            field: None,
            problem,
            hint: "repair the archive, or pass --skip-invalid to skip bad entries".into(),
        }),
    }
}

pub(super) fn parse(id: &str, bytes: &[u8], location: &Location) -> Result<Record, InputError> {
    let text = std::str::from_utf8(bytes).map_err(|e| InputError {
        location: location.clone(),
        field: None,
        problem: format!("not valid UTF-8 (byte {})", e.valid_up_to() + 1),
        hint: "convert the file to UTF-8, or pass --skip-invalid to skip it".into(),
    })?;
    Ok(Record::plain(id.to_owned(), text.to_owned()))
}

/// A folder of text files, searched recursively.
pub(super) struct Folder;

impl Format for Folder {
    fn name(&self) -> &'static str {
        "folder"
    }

    fn about(&self) -> &'static str {
        "A folder of text files (searched recursively)"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &[]
    }

    fn is(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn reads_a_stream(&self) -> bool {
        false
    }

    fn open(&self, path: &Path, _: &FieldSpec, max_record_bytes: u64) -> Result<RawRecords> {
        open_folder(path, max_record_bytes)
    }

    fn size(&self, path: &Path) -> u64 {
        walkdir::WalkDir::new(path)
            .into_iter()
            .filter_map(|e| e.ok())
            .filter_map(|e| e.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum()
    }

    fn written_as(&self) -> &'static str {
        "jsonl"
    }
}

/// A .zip archive of text files.
pub(super) struct Zip;

impl Format for Zip {
    fn name(&self) -> &'static str {
        "zip"
    }

    fn about(&self) -> &'static str {
        "A .zip archive of text files"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["zip"]
    }

    fn reads_a_stream(&self) -> bool {
        false
    }

    fn open(&self, path: &Path, _: &FieldSpec, max_record_bytes: u64) -> Result<RawRecords> {
        open_zip(path, max_record_bytes)
    }

    fn written_as(&self) -> &'static str {
        "jsonl"
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use crate::io::{FieldSpec, Input};

    fn read_all(input: &Input) -> Vec<(String, String)> {
        input
            .open(&FieldSpec::default(), u64::MAX)
            .unwrap()
            .map(|r| {
                let r = r.unwrap().parse(&FieldSpec::default()).unwrap();
                (r.id, r.text)
            })
            .collect()
    }

    #[test]
    fn folder_ids_are_relative_paths() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("b.txt"), "Zażółć gęślą jaźń").unwrap();
        std::fs::write(dir.path().join("sub/a.txt"), "hello").unwrap();
        let docs = read_all(&Input::new(dir.path(), None).unwrap());
        assert_eq!(
            docs,
            vec![
                ("b.txt".to_string(), "Zażółć gęślą jaźń".to_string()),
                ("sub/a.txt".to_string(), "hello".to_string())
            ]
        );
    }

    #[test]
    fn zip_entries_are_documents_and_bad_utf8_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs.zip");
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        let options = zip::write::SimpleFileOptions::default();
        zip.add_directory("news/", options).unwrap();
        zip.start_file("news/1.txt", options).unwrap();
        zip.write_all("Brexit news".as_bytes()).unwrap();
        zip.start_file("news/2.txt", options).unwrap();
        zip.write_all(b"\xff broken").unwrap();
        zip.finish().unwrap();

        let input = Input::new(&path, None).unwrap();
        let raws: Vec<_> = input
            .open(&FieldSpec::default(), u64::MAX)
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(raws.len(), 2);
        let first = raws[0].parse(&FieldSpec::default()).unwrap();
        assert_eq!(
            (first.id.as_str(), first.text.as_str()),
            ("news/1.txt", "Brexit news")
        );
        let err = raws[1]
            .parse(&FieldSpec::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("docs.zip/news/2.txt") && err.contains("UTF-8"),
            "{err}"
        );
    }
}
