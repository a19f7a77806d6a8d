//! `neardup.dedup`'s result underneath: a finished run, and what it found in the terms of what
//! it read.

use std::path::PathBuf;
use std::sync::Arc;

use neardup::Error;
use neardup::eval::{Predicted, Predictions, Truth, evaluate};
use neardup::index::{explain_records, find_two, minhash_settings, uncentre};
use neardup::output::run::{CandidatesFormat, RunWriter};
use neardup::pipeline::{self, Held, Method, OutputSpec, PipelineSpec};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::Value;

use crate::records::{Handed, Written};
use crate::{detached_in, in_python_terms, models_root};

/// A finished run: what the method found, in the terms of what it read.
#[pyclass(frozen, module = "neardup._neardup")]
pub(crate) struct Run {
    run: pipeline::Run,
    /// What it found, kept.
    held: Held,
    /// Records handed over in memory, as written for the run to read (shared with the runs
    /// decided again from this one).
    records: Option<Arc<Written>>,
}

impl Run {
    /// Runs `spec`'s method over its inputs, the interpreter released meanwhile.
    pub(crate) fn start(
        py: Python<'_>,
        spec: PipelineSpec,
        records: Option<Written>,
    ) -> PyResult<Run> {
        let records = records.map(Arc::new);
        let handed = records.as_deref().map(|r| &r.handed);
        detached_in(py, handed, || {
            let run = pipeline::Run::new(spec, &models_root())?;
            let held = run.hold()?;
            Ok(Run {
                run,
                held,
                records: records.clone(),
            })
        })
    }

    /// What the records handed over in memory were, where they were.
    fn handed(&self) -> Option<&Handed> {
        self.records.as_deref().map(|r| &r.handed)
    }
}

#[pymethods]
impl Run {
    /// Each document's id, in the order read.
    #[getter]
    fn ids(&self) -> Vec<String> {
        self.held.dedup.corpus.ids.clone()
    }

    /// Each document's place among the records read (a record skipped as invalid has one,
    /// and no document).
    #[getter]
    fn rows(&self) -> Vec<u64> {
        self.held.dedup.corpus.ordinals.clone()
    }

    /// The confirmed pairs: `(a, b, score)`, documents by number.
    #[getter]
    fn pairs(&self) -> Vec<(u32, u32, f64)> {
        self.held
            .dedup
            .pairs
            .iter()
            .map(|p| (p.a, p.b, p.score))
            .collect()
    }

    /// The rule that confirmed each pair (`jaccard`, `containment`, `title`, ...), in the
    /// order of `pairs`; `None` for a method that confirms by its score alone.
    #[getter]
    fn pair_rules(&self) -> Option<Vec<&'static str>> {
        let rules = self.held.dedup.pair_rules()?;
        Some(rules.into_iter().map(|rule| rule.name()).collect())
    }

    /// This run's candidates decided again where the threshold is `threshold`, and grouped
    /// again: a new run, nothing signed or embedded again (`neardup::pipeline::rethreshold`).
    fn rethreshold(&self, py: Python<'_>, threshold: f64) -> PyResult<Run> {
        if self.held.added.is_some() {
            return Err(PyValueError::new_err(
                "this run added its unique records to the collection it was checked against; \
                 rethreshold a run without add, then add what it keeps",
            ));
        }
        detached_in(py, self.handed(), || {
            let (run, held) = self.run.rethreshold(&self.held, threshold)?;
            Ok(Run {
                run,
                held,
                records: self.records.clone(),
            })
        })
    }

    /// The name of a pair's score (`jaccard_estimate`, ...).
    #[getter]
    fn score_name(&self) -> &'static str {
        self.held.dedup.score_name
    }

    /// The groups: `(members, representative, kept, representative_similarity)`, members by
    /// number, sorted by id.
    #[getter]
    fn groups(&self) -> Vec<(Vec<u32>, u32, u32, f64)> {
        self.held
            .dedup
            .groups
            .iter()
            .zip(&self.held.kept)
            .map(|(g, &kept)| {
                (
                    g.members.clone(),
                    g.representative,
                    kept,
                    g.representative_similarity,
                )
            })
            .collect()
    }

    /// What became of each document, by number: its group (or `None`), whether it is kept,
    /// and the id of the member kept in its place (or `None`): the annotated copy's columns.
    #[allow(clippy::type_complexity)]
    fn fates(&self) -> (Vec<Option<usize>>, Vec<bool>, Vec<Option<String>>) {
        let fates = pipeline::Fates::new(&self.held.dedup, &self.held.kept);
        let count = self.held.dedup.records() as u32;
        let mut columns = (Vec::new(), Vec::new(), Vec::new());
        for fate in (0..count).map(|doc| fates.of(doc)) {
            columns.0.push(fate.group);
            columns.1.push(fate.kept);
            columns.2.push(fate.duplicate_of.map(str::to_owned));
        }
        columns
    }

    /// Why documents `a` and `b` (ids) were, or were not, matched, as JSON: every piece of
    /// evidence the confirm stage weighs, the rule that decided, and a word diff (`neardup
    /// explain`). Minhash and two-stage runs; a two-stage cosine is of the vectors as made,
    /// where the run centred them on its corpus.
    fn explain(&self, py: Python<'_>, a: String, b: String) -> PyResult<String> {
        let models = models_root();
        detached_in(py, self.handed(), || {
            let (mut settings, embeds) = match &self.run.spec().method {
                Method::MinHash(config) => (minhash_settings(config.confirm.clone()), false),
                Method::TwoStage(config) => (config.settings.clone(), true),
                other => {
                    return Err(Error::Usage(format!(
                        "explain weighs the evidence of minhash and two-stage runs; this run's \
                         method is {}",
                        other.name().as_str()
                    )));
                }
            };
            uncentre(&mut settings);
            let records = find_two(self.run.inputs(), self.run.read(), [&a, &b])?;
            let explanation = explain_records(&settings, embeds, records, &models)?;
            let mut json = serde_json::to_value(&explanation).expect("an explanation serialises");
            json["diff"] = Value::from(explanation.diff);
            Ok(json.to_string())
        })
    }

    /// The CORE 2020 metrics of this run against the labelled duplicates in `truth` (JSON
    /// Lines in the CORE layout, ids in `id_field`, by default the field the run read ids
    /// from), as JSON: what `neardup eval --json` writes. A document's predicted duplicates are
    /// the rest of its group (`predicted="groups"`) or its confirmed partners (`"pairs"`).
    #[pyo3(signature = (truth, predicted, id_field = None))]
    fn evaluate(
        &self,
        py: Python<'_>,
        truth: PathBuf,
        predicted: &str,
        id_field: Option<String>,
    ) -> PyResult<String> {
        let predicted = match predicted {
            "groups" => Predicted::Groups,
            "pairs" => Predicted::Pairs,
            other => {
                return Err(PyValueError::new_err(format!(
                    "predicted: {other:?}; give \"groups\" (the rest of a document's group) or \
                     \"pairs\" (its confirmed partners)"
                )));
            }
        };
        detached_in(py, self.handed(), || {
            let id_field = id_field.as_deref().unwrap_or(&self.run.read().fields.id);
            let labelled = Truth::load(&truth, id_field)?;
            let ids = &self.held.dedup.corpus.ids;
            let id = |doc: u32| ids[doc as usize].as_str();
            let predictions = match predicted {
                Predicted::Groups => Predictions::from_groups(
                    self.held
                        .dedup
                        .groups
                        .iter()
                        .map(|g| g.members.iter().map(|&m| id(m))),
                ),
                Predicted::Pairs => Predictions::from_pairs(
                    self.held.dedup.pairs.iter().map(|p| (id(p.a), id(p.b))),
                ),
            };
            labelled.check_ids(&truth, ids, &predictions)?;
            let evaluation = evaluate(&labelled, &predictions);
            Ok(serde_json::to_string(&evaluation).expect("an evaluation serialises"))
        })
    }

    /// What the run did, as JSON: counts, settings and the seconds of each stage.
    fn summary(&self) -> String {
        let dedup = &self.held.dedup;
        let fates = pipeline::Fates::new(dedup, &self.held.kept);
        let unique = (0..dedup.records() as u32)
            .filter(|&doc| fates.of(doc).kept)
            .count();
        let settings = serde_json::to_value(self.run.spec()).expect("settings serialise");
        let mut summary = serde_json::to_value(pipeline::run_summary(dedup, settings, unique))
            .expect("a summary serialises");
        summary["method"] =
            serde_json::to_value(&self.run.spec().method).expect("a method serialises");
        if let Some(added) = self.held.added {
            summary["added"] = Value::from(added);
        }
        if let Some(skipped) = summary["skipped_first"].as_array_mut() {
            for problem in skipped {
                if let Some(text) = problem.as_str() {
                    *problem = Value::from(in_python_terms(text, self.handed()));
                }
            }
        }
        summary.to_string()
    }

    /// Writes the command line's files (pairs, candidates, groups, unique and annotated
    /// records, summary) into the folder `out`; returns the summary as JSON.
    #[pyo3(signature = (out, annotate = true, candidates = "parquet"))]
    fn write(
        &self,
        py: Python<'_>,
        out: PathBuf,
        annotate: bool,
        candidates: &str,
    ) -> PyResult<String> {
        let candidates: CandidatesFormat = candidates.parse().map_err(|_| {
            PyValueError::new_err(format!(
                "candidates={candidates:?}: give \"parquet\", \"jsonl\" or None"
            ))
        })?;
        detached_in(py, self.handed(), || {
            let output = OutputSpec {
                dir: out,
                annotate,
                candidates,
                ..self.run.spec().output.clone()
            };
            let lock = RunWriter::lock(&output.dir)?;
            // The records were added, where asked, when the run was made.
            let summary = self.run.write(lock, &self.held.dedup, &output)?;
            Ok(serde_json::to_string(&summary).expect("a summary serialises"))
        })
    }
}
