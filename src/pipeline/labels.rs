//! A user's own labels of pairs: what `neardup label` writes as it asks, and `neardup train
//! --labels` fits the learned rule to.
//!
//! The file is JSON Lines, one answer a line: `{"id_a": "...", "id_b": "...", "duplicate":
//! true}`. Each answer is appended and flushed to disk as it is given, so a session stopped at
//! any moment keeps every answer before it, and the next one goes on from there. Labels made
//! elsewhere may also come as a CSV or TSV file (`.csv`, `.tsv`) with the columns `id_a`,
//! `id_b` and `duplicate` (`true`/`false`, `1`/`0`, `yes`/`no`), which `train` reads and
//! `label` does not write to. A pair is one pair whichever id comes first; labelled twice
//! alike it counts once, labelled both ways it is refused with the two lines.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::train::{Candidates, LabelledPairs, file_name, fit};
use crate::confirm::LearnedModel;
use crate::error::{Error, Result};

/// One answer, as a line of the file holds it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    id_a: String,
    id_b: String,
    duplicate: bool,
}

/// The labels of a file: each pair's answer and the line that gave it.
pub struct PairLabels {
    path: PathBuf,
    answers: Vec<(String, String, bool, usize)>,
    by_pair: HashMap<(String, String), (bool, usize)>,
}

/// A pair's key, whichever id comes first.
fn key(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_owned(), b.to_owned())
    } else {
        (b.to_owned(), a.to_owned())
    }
}

impl PairLabels {
    /// The labels in `path`, none where it does not exist yet.
    pub fn open(path: &Path) -> Result<PairLabels> {
        let mut labels = PairLabels {
            path: path.to_owned(),
            answers: Vec::new(),
            by_pair: HashMap::new(),
        };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(labels),
            Err(e) => return Err(Error::io(path, e)),
        };
        if let Some(delimiter) = table_delimiter(path) {
            for (answer, line) in table_answers(path, &text, delimiter)? {
                labels.record(answer, line)?;
            }
            return Ok(labels);
        }
        for (at, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let answer: Answer = serde_json::from_str(line).map_err(|e| {
                Error::Usage(format!(
                    "{}:{}: not a label ({e}): each line is {{\"id_a\": ..., \"id_b\": ..., \
                     \"duplicate\": true or false}}; fix or remove the line",
                    path.display(),
                    at + 1
                ))
            })?;
            labels.record(answer, at + 1)?;
        }
        Ok(labels)
    }

    fn record(&mut self, answer: Answer, line: usize) -> Result<()> {
        let pair = key(&answer.id_a, &answer.id_b);
        if let Some(&(earlier, at)) = self.by_pair.get(&pair) {
            if earlier != answer.duplicate {
                return Err(Error::Usage(format!(
                    "{}: lines {at} and {line} label the pair {} / {} both ways: remove the \
                     wrong one",
                    self.path.display(),
                    pair.0,
                    pair.1
                )));
            }
            return Ok(());
        }
        self.by_pair.insert(pair, (answer.duplicate, line));
        self.answers
            .push((answer.id_a, answer.id_b, answer.duplicate, line));
        Ok(())
    }

    /// Refuses a file `append` cannot add to: a CSV or TSV table.
    pub fn check_appendable(&self) -> Result<()> {
        match table_delimiter(&self.path) {
            Some(_) => Err(Error::Usage(format!(
                "{}: answers are saved as JSON Lines: give --labels a .jsonl file (a CSV or \
                 TSV of labels is read by `neardup train --labels`)",
                self.path.display()
            ))),
            None => Ok(()),
        }
    }

    /// How many pairs are labelled, and how many of them duplicates.
    pub fn counts(&self) -> (usize, usize) {
        let duplicates = self.answers.iter().filter(|a| a.2).count();
        (self.answers.len(), duplicates)
    }

    /// The label of `a` and `b`, where they have one.
    pub fn of(&self, a: &str, b: &str) -> Option<bool> {
        self.by_pair
            .get(&key(a, b))
            .map(|&(duplicate, _)| duplicate)
    }

    /// Adds an answer, on disk before this returns.
    pub fn append(&mut self, a: &str, b: &str, duplicate: bool) -> Result<()> {
        let answer = Answer {
            id_a: a.to_owned(),
            id_b: b.to_owned(),
            duplicate,
        };
        let line = format!(
            "{}\n",
            serde_json::to_string(&answer).expect("an answer serialises")
        );
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| Error::io(&self.path, e))?;
        file.write_all(line.as_bytes())
            .and_then(|()| file.sync_data())
            .map_err(|e| Error::io(&self.path, e))?;
        let number = self.answers.last().map_or(1, |last| last.3 + 1);
        self.record(answer, number)
    }

    /// The labelled pairs of `candidates` (the search of `corpus`), with their features.
    /// Refuses an id the corpus lacks, and a pair the search does not bring together: the
    /// learned rule is never asked about it.
    pub fn of_candidates(&self, candidates: &Candidates, corpus: &Path) -> Result<LabelledPairs> {
        let number: HashMap<&str, u32> = candidates
            .ids
            .iter()
            .enumerate()
            .map(|(i, id)| (id.as_str(), i as u32))
            .collect();
        let place: HashMap<(u32, u32), usize> = candidates
            .pairs
            .iter()
            .enumerate()
            .map(|(i, &pair)| (pair, i))
            .collect();
        let (mut features, mut duplicate) = (Vec::new(), Vec::new());
        for (a, b, label, line) in &self.answers {
            let at = |id: &str| {
                number.get(id).copied().ok_or_else(|| {
                    Error::Usage(format!(
                        "{}:{line}: id \"{id}\" is not in {}: label pairs of the corpus given",
                        self.path.display(),
                        corpus.display()
                    ))
                })
            };
            let (x, y) = (at(a)?, at(b)?);
            let Some(&i) = place.get(&(x.min(y), x.max(y))) else {
                return Err(Error::Usage(format!(
                    "{}:{line}: {a} and {b} are not candidates of each other in {} (the \
                     search does not bring them together, so the learned rule never judges \
                     them): remove the line",
                    self.path.display(),
                    corpus.display()
                )));
            };
            features.push(candidates.features[i]);
            duplicate.push(*label);
        }
        Ok(LabelledPairs::new(
            file_name(&self.path),
            features,
            duplicate,
            candidates.embedder.clone(),
        ))
    }
}

/// The delimiter of a labels table: `,` for `.csv`, tab for `.tsv`; none for JSON Lines.
fn table_delimiter(path: &Path) -> Option<u8> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    match extension.as_str() {
        "csv" => Some(b','),
        "tsv" => Some(b'\t'),
        _ => None,
    }
}

/// The answers of a CSV or TSV table of labels, each with its line.
fn table_answers(path: &Path, text: &str, delimiter: u8) -> Result<Vec<(Answer, usize)>> {
    let at_line =
        |line: u64, message: String| Error::Usage(format!("{}:{line}: {message}", path.display()));
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| at_line(1, format!("not a table of labels ({e})")))?
        .clone();
    let column = |name: &str| {
        headers
            .iter()
            .position(|h| h.trim() == name)
            .ok_or_else(|| {
                at_line(
                    1,
                    format!(
                        "no `{name}` column: a table of labels has the columns id_a, id_b and \
                     duplicate (true or false)"
                    ),
                )
            })
    };
    let (a, b, label) = (column("id_a")?, column("id_b")?, column("duplicate")?);
    let mut answers = Vec::new();
    for row in reader.records() {
        let row = row.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            at_line(line, format!("not a row of the table ({e})"))
        })?;
        let line = row.position().map_or(0, |p| p.line());
        let field = |at: usize| row.get(at).unwrap_or("").trim();
        let duplicate = match field(label).to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => true,
            "false" | "0" | "no" => false,
            other => {
                return Err(at_line(
                    line,
                    format!("duplicate is \"{other}\": give true or false (or 1 / 0, yes / no)"),
                ));
            }
        };
        if field(a).is_empty() || field(b).is_empty() {
            return Err(at_line(line, "an id is empty: give both ids".into()));
        }
        let answer = Answer {
            id_a: field(a).to_owned(),
            id_b: field(b).to_owned(),
            duplicate,
        };
        answers.push((answer, line as usize));
    }
    Ok(answers)
}

/// Labelling a corpus, a pair at a time: the pair to ask about next, and the model the answers
/// so far give.
pub struct Labelling<'a> {
    /// The corpus's candidates.
    pub candidates: &'a Candidates,
    /// The corpus's path, for messages.
    pub corpus: &'a Path,
    /// The model to ask by until the answers hold both kinds of pair.
    pub prior: Option<&'a LearnedModel>,
}

impl Labelling<'_> {
    /// The model `labels` give: the prior moved towards them ([`LearnedModel::refit`]); without
    /// a prior, fitted to them once they hold a duplicate and a pair that is not.
    pub fn model(&self, labels: &PairLabels) -> Result<Option<LearnedModel>> {
        match (labels.counts(), self.prior) {
            ((0, _), prior) => Ok(prior.cloned()),
            ((count, duplicates), None) if duplicates == 0 || duplicates == count => Ok(None),
            (_, prior) => {
                let pairs = labels.of_candidates(self.candidates, self.corpus)?;
                fit(vec![pairs], prior).map(Some)
            }
        }
    }

    /// The candidate not yet labelled (nor in `passed`) whose verdict `model` is least sure
    /// of: the probability nearest one half; without a model, the cosine nearest the
    /// candidates' median. Its place among the candidates, and the model's probability.
    pub fn least_sure(
        &self,
        labels: &PairLabels,
        model: Option<&LearnedModel>,
        passed: &HashSet<usize>,
    ) -> Option<(usize, Option<f64>)> {
        let candidates = self.candidates;
        // Without a model, the candidates' median cosine (read only then).
        let median = match model {
            Some(_) => 0.0,
            None => {
                let mut cosines: Vec<f64> = candidates.features.iter().map(|f| f[0]).collect();
                cosines.sort_by(f64::total_cmp);
                cosines.get(cosines.len() / 2).copied().unwrap_or(0.0)
            }
        };
        let doubt = |i: usize| match model {
            Some(model) => (model.probability(&candidates.features[i]) - 0.5).abs(),
            None => (candidates.features[i][0] - median).abs(),
        };
        let ids = &candidates.ids;
        (0..candidates.pairs.len())
            .filter(|i| !passed.contains(i))
            .filter(|&i| {
                let (a, b) = candidates.pairs[i];
                labels.of(&ids[a as usize], &ids[b as usize]).is_none()
            })
            .min_by(|&x, &y| doubt(x).total_cmp(&doubt(y)).then(x.cmp(&y)))
            .map(|i| (i, model.map(|m| m.probability(&candidates.features[i]))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels_in(dir: &Path, name: &str, text: &str) -> Result<PairLabels> {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        PairLabels::open(&path)
    }

    #[test]
    fn a_table_of_labels_reads_as_the_answers_do_and_is_refused_where_it_is_off() {
        let dir = tempfile::tempdir().unwrap();
        let table = "id_b,note,id_a,duplicate\nb,seen twice,a,yes\nc,,a,0\n\"d, e\",,f,TRUE\n";
        let labels = labels_in(dir.path(), "labels.csv", table).unwrap();
        assert_eq!(labels.counts(), (3, 2));
        assert_eq!(labels.of("b", "a"), Some(true));
        assert_eq!(labels.of("a", "c"), Some(false));
        assert_eq!(labels.of("f", "d, e"), Some(true));
        assert!(
            labels
                .check_appendable()
                .unwrap_err()
                .to_string()
                .contains(".jsonl")
        );
        let tsv = labels_in(
            dir.path(),
            "labels.tsv",
            "id_a\tid_b\tduplicate\nx\ty\tno\n",
        );
        assert_eq!(tsv.unwrap().of("x", "y"), Some(false));

        let refused = |text: &str| {
            let error = labels_in(dir.path(), "bad.csv", text)
                .err()
                .expect("refused");
            error.to_string()
        };
        let error = refused("id_a,id_b,label\na,b,1\n");
        assert!(
            error.contains("bad.csv:1") && error.contains("`duplicate`"),
            "{error}"
        );
        let error = refused("id_a,id_b,duplicate\na,b,1\na,c,maybe\n");
        assert!(
            error.contains("bad.csv:3") && error.contains("maybe"),
            "{error}"
        );
        let error = refused("id_a,id_b,duplicate\na,b,1\nb,a,0\n");
        assert!(
            error.contains("lines 2 and 3") && error.contains("both ways"),
            "{error}"
        );
        let error = refused("id_a,id_b,duplicate\n,b,1\n");
        assert!(
            error.contains("bad.csv:2") && error.contains("empty"),
            "{error}"
        );
    }
}
