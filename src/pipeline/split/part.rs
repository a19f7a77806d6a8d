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

use crate::error::{Error, Result};
use crate::pipeline::PipelineSpec;

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
pub(in crate::pipeline) fn spec_of(
    settings: &serde_json::Value,
) -> std::result::Result<PipelineSpec, String> {
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

/// The settings every part of a run shares, as its summary records them: the pipeline
/// `spec` of one of its parts without the part, and without the folder the part wrote to.
/// Input, method and output settings all count: a part whose files were written for another
/// keep policy, or with another `--candidates`, is of another run.
pub(in crate::pipeline) fn shared_settings(spec: &PipelineSpec) -> serde_json::Value {
    let mut method = spec.method.clone();
    method.set_part(None);
    let mut output = serde_json::to_value(&spec.output).expect("settings serialise");
    if let Some(output) = output.as_object_mut() {
        output.remove("dir");
    }
    serde_json::json!({"input": spec.input, "method": method, "output": output})
}

/// Checks that `parts`, each a part, its folder and the settings of the run it is a part of,
/// are every part of one run, each once: names the folders of two runs, a part given twice,
/// and the parts missing.
pub(in crate::pipeline) fn check_complete<'a>(
    parts: impl IntoIterator<Item = (Part, &'a Path, serde_json::Value)>,
) -> Result<()> {
    let parts: Vec<_> = parts.into_iter().collect();
    let Some((first, first_dir, first_run)) = parts.first() else {
        return Err(Error::Usage("give the folders of every part".into()));
    };
    let count = first.count;
    let mut seen: Vec<Option<&Path>> = vec![None; count as usize];
    for (part, dir, run) in &parts {
        let differs = if part.count != count {
            Some(format!("{count} parts against {}", part.count))
        } else {
            first_difference(first_run, run).map(|(setting, theirs, ours)| {
                format!("`{setting}` is {theirs} in the first and {ours} in the second")
            })
        };
        if let Some(differs) = differs {
            return Err(Error::Usage(format!(
                "{} and {} are parts of different runs ({differs}): give the parts of one \
                 run, made with the same input and settings",
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

/// The first place where the settings `a` and `b` differ: the setting's dotted path
/// (`method.num_perm`, `input.paths[1]`) and its value in each, as JSON (`absent` where one
/// has none).
pub(in crate::pipeline) fn first_difference(
    a: &serde_json::Value,
    b: &serde_json::Value,
) -> Option<(String, String, String)> {
    use serde_json::Value;
    fn walk(
        path: String,
        a: Option<&Value>,
        b: Option<&Value>,
    ) -> Option<(String, String, String)> {
        let shown = |value: Option<&Value>| value.map_or_else(|| "absent".into(), Value::to_string);
        match (a, b) {
            (Some(Value::Object(x)), Some(Value::Object(y))) => {
                let keys = x.keys().chain(y.keys().filter(|k| !x.contains_key(*k)));
                keys.into_iter().find_map(|key| {
                    let path = if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    };
                    walk(path, x.get(key), y.get(key))
                })
            }
            (Some(Value::Array(x)), Some(Value::Array(y))) if x.len() == y.len() => {
                (x.iter().zip(y).enumerate())
                    .find_map(|(i, (p, q))| walk(format!("{path}[{i}]"), Some(p), Some(q)))
            }
            _ if a == b => None,
            _ => Some((path, shown(a), shown(b))),
        }
    }
    walk(String::new(), Some(a), Some(b))
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

    #[test]
    fn the_first_setting_two_runs_differ_in_is_named_with_both_values() {
        let run = |num_perm: u64, keep: &str, paths: &[&str]| {
            serde_json::json!({
                "input": {"paths": paths},
                "method": {"name": "minhash", "num_perm": num_perm},
                "output": {"keep": keep, "annotate": true},
            })
        };
        let one = run(128, "first", &["a.jsonl"]);
        assert_eq!(first_difference(&one, &one), None);
        let differ = |other: &serde_json::Value| first_difference(&one, other).unwrap();
        assert_eq!(
            differ(&run(64, "first", &["a.jsonl"])),
            ("method.num_perm".into(), "128".into(), "64".into())
        );
        assert_eq!(
            differ(&run(128, "longest", &["a.jsonl"])),
            (
                "output.keep".into(),
                "\"first\"".into(),
                "\"longest\"".into()
            )
        );
        assert_eq!(
            differ(&run(128, "first", &["b.jsonl"])),
            (
                "input.paths[0]".into(),
                "\"a.jsonl\"".into(),
                "\"b.jsonl\"".into()
            )
        );
        assert_eq!(
            differ(&run(128, "first", &["a.jsonl", "b.jsonl"])).0,
            "input.paths"
        );
        let mut fewer = one.clone();
        fewer["output"].as_object_mut().unwrap().remove("annotate");
        assert_eq!(
            differ(&fewer),
            ("output.annotate".into(), "true".into(), "absent".into())
        );
    }
}
