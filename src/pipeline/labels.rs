//! A user's own labels of pairs: what `neardup label` writes as it asks, and `neardup train
//! --labels` fits the learned rule to.
//!
//! The file is JSON Lines, one answer a line: `{"id_a": "...", "id_b": "...", "duplicate":
//! true}`. Each answer is appended and flushed to disk as it is given, so a session stopped at
//! any moment keeps every answer before it, and the next one goes on from there. A pair is
//! one pair whichever id comes first; labelled twice alike it counts once, labelled both ways
//! it is refused with the two lines.

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
    /// The model `labels` give: fitted to them once they hold a duplicate and a pair that is
    /// not, else the prior.
    pub fn model(&self, labels: &PairLabels) -> Result<Option<LearnedModel>> {
        match labels.counts() {
            (count, duplicates) if duplicates > 0 && duplicates < count => {
                let pairs = labels.of_candidates(self.candidates, self.corpus)?;
                fit(vec![pairs]).map(Some)
            }
            _ => Ok(self.prior.cloned()),
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
