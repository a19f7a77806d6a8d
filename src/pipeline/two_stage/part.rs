//! A part of a split run: which slice of the documents it searches (`--part I/N`), and the
//! shared index it searches them in, opened only if it was built as this part asks.
//!
//! Document `d` (numbered from 0 in reading order) belongs to part `d mod N + 1`, so every part
//! gets an even share of a corpus however it is ordered, and no part needs the corpus's length
//! before it starts. [`crate::pipeline::merge()`] puts the parts back together.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::index::{DocumentIndex, IndexSettings};
use crate::settings::Scope;

/// Part `number` of `count` (`I/N`, from 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Part {
    /// Which part, from 1.
    pub number: u32,
    /// How many parts.
    pub count: u32,
}

impl Part {
    /// Whether document `doc` (numbered from 0 in reading order) is in this part.
    pub fn holds(&self, doc: u32) -> bool {
        doc % self.count == self.number - 1
    }
}

impl FromStr for Part {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Part, String> {
        let bad = || format!("`part` must be I/N with 1 <= I <= N, e.g. 2/4, not {text:?}");
        let (number, count) = text.split_once('/').ok_or_else(bad)?;
        let number: u32 = number.trim().parse().map_err(|_| bad())?;
        let count: u32 = count.trim().parse().map_err(|_| bad())?;
        if number == 0 || number > count {
            return Err(bad());
        }
        Ok(Part { number, count })
    }
}

impl TryFrom<String> for Part {
    type Error = String;

    fn try_from(text: String) -> std::result::Result<Part, String> {
        text.parse()
    }
}

impl From<Part> for String {
    fn from(part: Part) -> String {
        part.to_string()
    }
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.number, self.count)
    }
}

/// Opens the index that the parts of a split run share, and checks that it was built with
/// the settings this part was given (an embedder, shingling or rule of its own would make its
/// candidates unlike the other parts').
pub(super) fn open_shared(
    dir: &Path,
    settings: &IndexSettings,
    models: &Path,
) -> Result<DocumentIndex> {
    let index = DocumentIndex::open(dir, models, settings.store.qdrant_url.as_deref())?;
    // Where the model files and the server are may differ between machines (the model itself
    // is checked by its digest when the index opens), and how the existing collection is laid
    // out is the index's to say.
    let as_map = |s: &IndexSettings| match serde_json::to_value(s) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => unreachable!("settings serialise to a JSON object"),
    };
    let wanted = as_map(&settings.resolved()?);
    let built = as_map(&index.manifest().settings);
    // The banding follows from the threshold and rule: name those first.
    let derived = |key: &str| matches!(key, "bands" | "rows");
    let mut keys: Vec<&String> = wanted
        .keys()
        .filter(|k| !crate::settings::keys_in(Scope::Local).any(|local| local == k.as_str()))
        .collect();
    keys.sort_by_key(|k| derived(k));
    for key in keys {
        let value = &wanted[key];
        let theirs = built.get(key).unwrap_or(&serde_json::Value::Null);
        if theirs != value {
            return Err(Error::Usage(format!(
                "the index in {} was built with `{key}` {theirs}, and this part asks for {value}: \
                 give every part the settings the index was built with (see {})",
                dir.display(),
                dir.join(crate::index::MANIFEST).display()
            )));
        }
    }
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_read_as_i_of_n_and_share_out_every_document_once() {
        let part: Part = "2/4".parse().unwrap();
        assert_eq!(
            part,
            Part {
                number: 2,
                count: 4
            }
        );
        assert_eq!(part.to_string(), "2/4");
        for bad in ["0/4", "5/4", "2", "a/4", "2/0", ""] {
            let err = bad.parse::<Part>().unwrap_err();
            assert!(err.contains("1 <= I <= N"), "{bad}: {err}");
        }
        let parts: Vec<Part> = (1..=3)
            .map(|i| Part {
                number: i,
                count: 3,
            })
            .collect();
        for doc in 0..100 {
            assert_eq!(parts.iter().filter(|p| p.holds(doc)).count(), 1, "{doc}");
        }
        assert_eq!(
            serde_json::to_value(part).unwrap(),
            serde_json::Value::from("2/4")
        );
    }
}
