//! A part of a split run (`--part I/N`): which slice of the work one machine takes.
//!
//! A two-stage part searches the documents `d` (numbered from 0 in reading order) with
//! `d mod N + 1 = I` ([`Part::holds`]), so every part gets an even share of a corpus however it
//! is ordered, and no part needs the corpus's length before it starts. A MinHash part signs the
//! records that start in its share of the input's bytes ([`crate::io::ByteRange`]), and reads
//! no other. [`crate::pipeline::merge()`] puts the parts back together.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::PipelineSpec;
use crate::error::{Error, Result};

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

    /// The part (from 0) that a key hashed to `hash` goes to.
    pub fn index_of(&self, hash: u64) -> usize {
        (hash % u64::from(self.count)) as usize
    }

    /// Every part of the split this part is one of.
    pub fn all(&self) -> impl Iterator<Item = Part> + use<> {
        let count = self.count;
        (1..=count).map(move |number| Part { number, count })
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

/// The pipeline a part's summary records in its settings, or what is wrong with it.
pub(super) fn spec_of(settings: &serde_json::Value) -> std::result::Result<PipelineSpec, String> {
    fn read<T: serde::de::DeserializeOwned>(
        settings: &serde_json::Value,
        key: &str,
    ) -> std::result::Result<T, String> {
        serde_json::from_value(settings[key].clone()).map_err(|e| format!("its {key}: {e}"))
    }
    Ok(PipelineSpec {
        input: read(settings, "input")?,
        method: read(settings, "method")?,
        output: read(settings, "output")?,
        eval: None,
    })
}

/// Checks that `parts`, each a part, its folder and the settings of the run it is a part of,
/// are every part of one run, each once: names the folders of two runs, a part given twice,
/// and the parts missing.
pub(super) fn check_complete<'a>(
    parts: impl IntoIterator<Item = (Part, &'a Path, serde_json::Value)>,
) -> Result<()> {
    let parts: Vec<_> = parts.into_iter().collect();
    let Some((first, first_dir, first_run)) = parts.first() else {
        return Err(Error::Usage("give the folders of every part".into()));
    };
    let count = first.count;
    let mut seen: Vec<Option<&Path>> = vec![None; count as usize];
    for (part, dir, run) in &parts {
        if part.count != count || run != first_run {
            return Err(Error::Usage(format!(
                "{} and {} are parts of different runs (their inputs, settings or number of \
                 parts differ): give the parts of one run",
                first_dir.display(),
                dir.display()
            )));
        }
        let slot = &mut seen[part.number as usize - 1];
        if let Some(other) = slot {
            return Err(Error::Usage(format!(
                "part {part} is given twice: {} and {}",
                other.display(),
                dir.display()
            )));
        }
        *slot = Some(dir);
    }
    let missing: Vec<String> = (1..=count)
        .filter(|&n| seen[n as usize - 1].is_none())
        .map(|n| format!("{n}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(Error::Usage(format!(
            "part {} missing: give the folders of all {count} parts",
            missing.join(", ")
        )));
    }
    Ok(())
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
        let parts: Vec<Part> = part.all().collect();
        assert_eq!(parts.len(), 4);
        for doc in 0..100 {
            assert_eq!(parts.iter().filter(|p| p.holds(doc)).count(), 1, "{doc}");
        }
        assert_eq!(
            serde_json::to_value(part).unwrap(),
            serde_json::Value::from("2/4")
        );
    }
}
