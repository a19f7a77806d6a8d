//! Loading ground truth (CORE layout) and a run's predictions.

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use super::predictions::Predictions;
use crate::error::{Error, InputError, Location, Result};
use crate::io::{DEFAULT_MAX_DOC_BYTES, FieldSpec, Input, for_each_line, record_limit};
use crate::output::run::{Groups, IdsDigest, Pairs, RunFolder};

/// One labelled document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TruthDoc {
    /// Its id.
    pub id: String,
    /// Its `cat` label (`exact_dup`, `near_dup`, `non_dup`), or `unlabelled` if absent.
    pub cat: String,
    /// The ids of its labelled duplicates.
    pub duplicates: Vec<String>,
}

/// The labelled documents of a corpus.
#[derive(Clone, Debug, Default)]
pub struct Truth {
    /// In file order.
    pub docs: Vec<TruthDoc>,
}

impl Truth {
    /// Reads labels in the CORE layout: `core_id` (or `id_field`), `labelled_duplicates`, and
    /// optionally `cat`, from any input format (told by the file's name, as a run's input is):
    /// JSON Lines and Parquet hold the duplicates as a list, CSV and TSV as a list in JSON
    /// (`["id1", "id2"]`; an empty cell is none).
    pub fn load(path: &Path, id_field: &str) -> Result<Self> {
        let input = Input::new(path, None)?;
        let fields = FieldSpec {
            id: id_field.to_owned(),
            text: Vec::new(),
        };
        let mut docs = Vec::new();
        let mut lines = Vec::new();
        let mut seen = HashSet::new();
        // Scores need every label: a bad record is fixed, never skipped.
        let truth_hint = |mut e: InputError| {
            e.hint = "ground truth needs the CORE layout (core_id, labelled_duplicates, cat) on \
                      every line: fix the file"
                .into();
            Error::from(e)
        };
        for raw in input.open(&fields, record_limit(DEFAULT_MAX_DOC_BYTES))? {
            let raw = raw?;
            let record = raw.parse(&fields).map_err(truth_hint)?;
            let bad = |field: &str, problem: &str| {
                Error::from(InputError {
                    location: raw.location.clone(),
                    field: Some(field.to_owned()),
                    problem: problem.to_owned(),
                    hint: "ground truth needs the CORE layout: core_id, labelled_duplicates, cat"
                        .into(),
                })
            };
            let object: serde_json::Map<String, Value> =
                serde_json::from_slice(&raw.original_json(&fields).map_err(truth_hint)?)
                    .map_err(|e| bad(id_field, &e.to_string()))?;
            let not_a_list = || {
                bad(
                    "labelled_duplicates",
                    "expected a list of id strings (in CSV or TSV, a list in JSON: \
                     [\"id1\", \"id2\"], or an empty cell for none)",
                )
            };
            // A table's cell holds the list as JSON text.
            let in_cell = match object.get("labelled_duplicates") {
                Some(Value::String(text)) if text.trim().is_empty() => Some(Value::Array(vec![])),
                Some(Value::String(text)) => {
                    Some(serde_json::from_str(text).map_err(|_| not_a_list())?)
                }
                _ => None,
            };
            let duplicates = match in_cell.as_ref().or(object.get("labelled_duplicates")) {
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|v| match v {
                        Value::String(s) => Ok(s.clone()),
                        Value::Number(n) if n.is_u64() => Ok(n.to_string()),
                        _ => Err(not_a_list()),
                    })
                    .collect::<Result<Vec<_>>>()?,
                Some(Value::Null) | None => {
                    return Err(bad("labelled_duplicates", "missing"));
                }
                Some(_) => return Err(not_a_list()),
            };
            let cat = match object.get("cat") {
                Some(Value::String(s)) if !s.is_empty() => s.clone(),
                None | Some(Value::Null | Value::String(_)) => "unlabelled".into(),
                Some(_) => return Err(bad("cat", "expected a string")),
            };
            if !seen.insert(record.id.clone()) {
                return Err(bad(id_field, &format!("duplicate id {:?}", record.id)));
            }
            docs.push(TruthDoc {
                id: record.id,
                cat,
                duplicates,
            });
            lines.push(raw.location);
        }
        // A label naming no labelled document can never be predicted right.
        for (doc, location) in docs.iter().zip(lines) {
            if let Some(unknown) = doc.duplicates.iter().find(|d| !seen.contains(*d)) {
                return Err(Error::input(
                    location,
                    Some("labelled_duplicates"),
                    format!("{unknown:?} is not the id of any record in the file"),
                    "every labelled duplicate must be a record of the same file: add it, or \
                     remove it from the list",
                ));
            }
        }
        Ok(Truth { docs })
    }

    /// Checks that a run read exactly the documents labelled here. Scored against a run of
    /// another corpus, or of part of this one, every labelled document the run did not read
    /// would count as predicted unique, and the scores would be quietly wrong.
    pub fn check_run(
        &self,
        truth_path: &Path,
        run: &RunFolder,
        predicted: &Predictions,
    ) -> Result<()> {
        let summary = &run.summary;
        let same = match summary.ids_digest {
            Some(digest) => digest == self.ids_digest(),
            // A run written before runs kept the digest: as much as its counts can tell.
            None => summary.documents == self.docs.len() && self.unknown(predicted).is_none(),
        };
        match same {
            true => Ok(()),
            false => Err(self.other_documents(
                truth_path,
                &format!("the run in {}", run.dir().display()),
                summary.documents,
                predicted,
                "score a run over the labelled file itself (`neardup dedup TRUTH --out DIR`, \
                 then `--pred DIR`)",
            )),
        }
    }

    /// Checks that a run held in memory read exactly the labelled documents: `ids`, in order.
    pub fn check_ids(
        &self,
        truth_path: &Path,
        ids: &[String],
        predicted: &Predictions,
    ) -> Result<()> {
        match IdsDigest::of(ids.iter().map(String::as_str)) == self.ids_digest() {
            true => Ok(()),
            false => Err(self.other_documents(
                truth_path,
                "the run",
                ids.len(),
                predicted,
                "score a run over the labelled documents themselves, in the same order",
            )),
        }
    }

    /// The digest of the labelled ids, in file order, as a run records its own.
    fn ids_digest(&self) -> IdsDigest {
        IdsDigest::of(self.docs.iter().map(|d| d.id.as_str()))
    }

    /// The error for a run (`run`) that read `read` documents other than those labelled here.
    fn other_documents(
        &self,
        truth_path: &Path,
        run: &str,
        read: usize,
        predicted: &Predictions,
        hint: &str,
    ) -> Error {
        let unknown = match self.unknown(predicted) {
            Some((count, first)) => {
                format!(
                    "; {count} of the ids it predicted are not labelled here (the first: {first:?})"
                )
            }
            None => String::new(),
        };
        Error::input(
            Location::file(truth_path),
            None,
            format!(
                "{run} read other documents than the {} labelled here: it read {read}{unknown}",
                self.docs.len(),
            ),
            hint,
        )
    }

    pub fn check_predicted(&self, truth_path: &Path, predicted: &Predictions) -> Result<()> {
        match self.unknown(predicted) {
            None => Ok(()),
            Some((count, first)) => Err(Error::input(
                Location::file(truth_path),
                None,
                format!("{count} predicted ids are not labelled here (the first: {first:?})"),
                "score groups found in the labelled file itself",
            )),
        }
    }

    /// How many predicted ids are not labelled here, and the first of them in sorted order.
    fn unknown<'a>(&self, predicted: &'a Predictions) -> Option<(usize, &'a str)> {
        let labelled: HashSet<&str> = self.docs.iter().map(|d| d.id.as_str()).collect();
        let unknown: Vec<&str> = predicted
            .ids()
            .filter(|id| !labelled.contains(id))
            .collect();
        Some((unknown.len(), unknown.into_iter().min()?))
    }
}

/// Which predicted set a document is scored with.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Predicted {
    /// The other members of its group (`groups.jsonl`).
    Groups,
    /// Its confirmed pair partners (`pairs.jsonl`).
    Pairs,
}

/// The groups another tool found, to score it as a run is scored: JSON Lines, one group a line,
/// `{"members": ["id", ...]}` (other keys ignored).
pub fn load_foreign_groups(path: &Path) -> Result<Predictions> {
    #[derive(serde::Deserialize)]
    struct Group {
        members: Vec<String>,
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut groups = Vec::new();
    for_each_line(std::io::BufReader::new(file), path, |number, line| {
        if line.trim_ascii().is_empty() {
            return Ok(());
        }
        let bad = |problem: String| {
            Error::input(
                Location::line(path, number),
                Some("members"),
                problem,
                r#"write one group a line, as {"members": ["id1", "id2"]}"#,
            )
        };
        let group: Group = serde_json::from_slice(line).map_err(|e| bad(e.to_string()))?;
        if group.members.len() < 2 {
            return Err(bad("a group needs two members or more".into()));
        }
        groups.push(group.members);
        Ok(())
    })?;
    Ok(Predictions::from_groups(groups))
}

/// A run's predicted duplicates.
pub fn load_predictions(run: &RunFolder, mode: Predicted) -> Result<Predictions> {
    Ok(match mode {
        Predicted::Pairs => {
            Predictions::from_pairs(run.read::<Pairs>()?.into_iter().map(|p| (p.a, p.b)))
        }
        Predicted::Groups => {
            Predictions::from_groups(run.read::<Groups>()?.into_iter().map(|g| g.members))
        }
    })
}
