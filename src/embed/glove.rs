//! Averaged GloVe word vectors, the embedding the CORE deduplication notebook used.
//!
//! The text file (`word v1 ... vN` per line, e.g. glove.6B.300d.txt, 1 GB) is parsed once and
//! cached beside it in a binary form (`FILE.neardup`), which loads in a fraction of the time;
//! the cache records the source's size and modification time and is rebuilt when they change.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::{Embedder, normalize};
use crate::error::{Error, Location, Result};
use crate::io::for_each_line;
use crate::output::AtomicFile;
use crate::text::for_each_word;

/// Word vectors from a GloVe file.
pub struct GloveEmbedder {
    index: HashMap<String, u32>,
    vectors: Vec<f32>,
    dimensions: usize,
    source: PathBuf,
    identity: super::ModelIdentity,
}

/// The cached, parsed form of a GloVe file.
#[derive(Serialize, Deserialize)]
struct Cache {
    source_len: u64,
    source_modified: u64,
    dimensions: usize,
    words: Vec<String>,
    vectors: Vec<f32>,
}

impl GloveEmbedder {
    /// Loads `path`, from its cache when that is current, parsing (and caching) it otherwise.
    pub fn open(path: &Path) -> Result<Self> {
        let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        let cache_path = cache_path(path);
        let cached = std::fs::read(&cache_path)
            .ok()
            .and_then(|bytes| postcard::from_bytes::<Cache>(&bytes).ok())
            .filter(|c| c.source_len == meta.len() && c.source_modified == modified);
        let cache = match cached {
            Some(cache) => cache,
            None => {
                let (dimensions, words, vectors) = parse(path)?;
                let cache = Cache {
                    source_len: meta.len(),
                    source_modified: modified,
                    dimensions,
                    words,
                    vectors,
                };
                if let Err(e) = write_cache(&cache_path, &cache) {
                    tracing::warn!(%e, "could not cache the parsed GloVe file; it will be parsed again next time");
                }
                cache
            }
        };
        let index = cache
            .words
            .into_iter()
            .enumerate()
            .map(|(i, w)| (w, i as u32))
            .collect();
        Ok(GloveEmbedder {
            index,
            vectors: cache.vectors,
            dimensions: cache.dimensions,
            source: path.to_owned(),
            identity: super::ModelIdentity::of(path, path)?,
        })
    }

    fn embed_one(&self, text: &str) -> Vec<f32> {
        let d = self.dimensions;
        let mut sum = vec![0f32; d];
        for_each_word(text, |word| {
            if let Some(&i) = self.index.get(word) {
                let row = &self.vectors[i as usize * d..(i as usize + 1) * d];
                sum.iter_mut().zip(row).for_each(|(s, x)| *s += x);
            }
        });
        normalize(&mut sum);
        sum
    }
}

impl Embedder for GloveEmbedder {
    fn describe(&self) -> String {
        format!("glove {}", self.source.display())
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn identity(&self) -> &super::ModelIdentity {
        &self.identity
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.par_iter().map(|t| self.embed_one(t)).collect())
    }
}

fn cache_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".neardup");
    path.with_file_name(name)
}

fn write_cache(path: &Path, cache: &Cache) -> Result<()> {
    let bytes =
        postcard::to_stdvec(cache).map_err(|e| Error::io(path, std::io::Error::other(e)))?;
    let mut file = AtomicFile::create(path)?;
    file.write_all(&bytes).map_err(|e| Error::io(path, e))?;
    file.commit()
}

/// Parses a GloVe text file into (dimensions, words, row-major vectors). Every line must have
/// the same number of values; the first line sets it.
fn parse(path: &Path) -> Result<(usize, Vec<String>, Vec<f32>)> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut words = Vec::new();
    let mut vectors = Vec::new();
    let mut dimensions = 0;
    for_each_line(BufReader::new(file), path, |line_no, line| {
        let bad = |problem: String| {
            Error::input(
                Location::line(path, line_no),
                None,
                problem,
                "a GloVe file has one `word v1 ... vN` line per word, N the same on every line",
            )
        };
        let line = std::str::from_utf8(line)
            .map_err(|e| bad(format!("not UTF-8 text ({e})")))?
            .trim_end_matches(['\n', '\r']);
        let mut parts = line.split(' ');
        let Some(word) = parts.next().filter(|w| !w.is_empty()) else {
            return Err(bad("empty line".into()));
        };
        let start = vectors.len();
        for value in parts {
            vectors.push(
                value
                    .trim_end()
                    .parse::<f32>()
                    .map_err(|_| bad(format!("{value:?} is not a number")))?,
            );
        }
        let count = vectors.len() - start;
        if line_no == 1 {
            if count == 0 {
                return Err(bad(format!("{word:?} has no vector")));
            }
            dimensions = count;
        } else if count != dimensions {
            return Err(bad(format!(
                "{count} values where the first line has {dimensions}"
            )));
        }
        words.push(word.to_owned());
        Ok(())
    })?;
    if words.is_empty() {
        return Err(Error::input(
            Location::file(path),
            None,
            "the file is empty",
            "give a GloVe text file",
        ));
    }
    Ok((dimensions, words, vectors))
}
