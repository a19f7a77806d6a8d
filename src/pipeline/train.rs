//! Fitting the learned rule to labelled corpora: `neardup train`.
//!
//! A labelled corpus (the CORE layout: records with their `labelled_duplicates`) is run as the
//! two-stage method runs it, and every candidate its search finds becomes a training pair:
//! its [features](crate::confirm::features), and whether the labels put its two records in one
//! group. The model is fitted on those pairs only, so it learns to tell apart exactly what the
//! confirm stage is shown: near neighbours, not random pairs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::confirm::{
    Confirm, Evidence, FEATURES, Features, FittedOn, LearnedModel, Match, features,
};
use crate::error::{Error, Result};
use crate::eval::Truth;
use crate::io::read_corpus;

use super::dedup::dedup;
use super::labels::PairLabels;
use super::{InputSpec, Method, TwoStageConfig};

/// The candidate pairs of one labelled corpus: each one's features and label. `neardup train
/// --save-pairs` keeps them in a file, to fit other models on them without searching again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelledPairs {
    /// The features' names, in order ([`FEATURES`]).
    pub names: Vec<String>,
    /// What they came from.
    pub fitted_on: FittedOn,
    /// Each candidate's features.
    pub features: Vec<Features>,
    /// Whether the labels make it a duplicate.
    pub duplicate: Vec<bool>,
    /// The embedder whose cosines the features hold (name, sha256 of its weights).
    pub embedder: (String, String),
}

/// Every candidate the two-stage search finds in one corpus, with its features: what a
/// learned model is fitted on and asked about.
pub struct Candidates {
    /// The corpus's ids, in input order.
    pub ids: Vec<String>,
    /// Each candidate's two documents (numbers into `ids`, the smaller first).
    pub pairs: Vec<(u32, u32)>,
    /// Each candidate's features.
    pub features: Vec<Features>,
    /// Each document's text, where asked for.
    pub texts: Vec<String>,
    /// The embedder whose cosines the features hold (name, sha256 of its weights).
    pub embedder: (String, String),
}

impl Candidates {
    /// The candidates the two-stage method under `config` finds in the corpus `path`, read as
    /// `input` says; with each document's text where `keep_texts`.
    pub fn of(
        path: &Path,
        input: &InputSpec,
        config: &TwoStageConfig,
        models: &Path,
        keep_texts: bool,
    ) -> Result<Candidates> {
        let (inputs, read) = input.open(&[path.to_owned()])?;
        // The run's own rule does not matter: every candidate is kept with its cosine.
        let mut config = config.clone();
        config.settings.confirm.rule.confirm = Confirm::Evidence;
        config.settings.confirm.rule.matching = Match::Copies;
        config.settings.confirm.confirm_model = None;
        let method = Method::TwoStage(Box::new(config.clone()));
        let run = dedup(&inputs, &read, &method, models)?;
        let held = run
            .scored_candidates
            .as_ref()
            .and_then(|c| c.held())
            .ok_or_else(|| Error::Usage("training reads a run held whole: drop `part`".into()))?;
        let model = run
            .model
            .clone()
            .expect("a two-stage run names its embedder");
        let confirmer = config.settings.confirmer()?;
        let (mut sketches, mut texts) = (Vec::new(), Vec::new());
        let corpus = read_corpus(
            &inputs,
            &read,
            |record| {
                (
                    confirmer.sign(record),
                    keep_texts.then(|| record.text.clone()),
                )
            },
            |(sketch, text)| {
                sketches.push(sketch);
                texts.extend(text);
            },
        )?;
        if corpus.ids != run.corpus.ids[..run.records()] {
            return Err(Error::Usage(format!(
                "{} changed while it was read: run again",
                path.display()
            )));
        }
        let (mut pairs, mut features_of) = (Vec::new(), Vec::new());
        for i in 0..held.len() {
            let pair = held.get(i);
            let (x, y) = (
                sketches[pair.a as usize].as_ref(),
                sketches[pair.b as usize].as_ref(),
            );
            let cosine = pair.cosine.expect("two-stage candidates have cosines");
            features_of.push(features(&Evidence::of(x, y), x, y, cosine));
            pairs.push((pair.a.min(pair.b), pair.a.max(pair.b)));
        }
        Ok(Candidates {
            ids: corpus.ids,
            pairs,
            features: features_of,
            texts,
            embedder: (model.name, model.sha256),
        })
    }
}

/// A file's name, for what a model was fitted on.
pub(super) fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The candidates the two-stage method under `config` finds in the labelled corpus `truth`
/// (its records and labels in one file, read as `input` says), with their features and labels.
fn labelled_pairs(
    truth: &Path,
    input: &InputSpec,
    config: &TwoStageConfig,
    models: &Path,
) -> Result<LabelledPairs> {
    let labels = Truth::load(truth, &input.id_field)?;
    let candidates = Candidates::of(truth, input, config, models, false)?;
    let group = label_groups(&labels);
    let same_group =
        |a: &str, b: &str| matches!((group.get(a), group.get(b)), (Some(x), Some(y)) if x == y);
    let ids = &candidates.ids;
    let duplicate: Vec<bool> = candidates
        .pairs
        .iter()
        .map(|&(a, b)| same_group(&ids[a as usize], &ids[b as usize]))
        .collect();
    Ok(LabelledPairs::new(
        file_name(truth),
        candidates.features,
        duplicate,
        candidates.embedder,
    ))
}

/// Each labelled record's group: records joined by labels, directly or through others.
fn label_groups(truth: &Truth) -> HashMap<&str, usize> {
    let index: HashMap<&str, usize> = truth
        .docs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.id.as_str(), i))
        .collect();
    let mut parent: Vec<usize> = (0..truth.docs.len()).collect();
    fn root(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    for (i, doc) in truth.docs.iter().enumerate() {
        for other in &doc.duplicates {
            if let Some(&j) = index.get(other.as_str()) {
                let (ri, rj) = (root(&mut parent, i), root(&mut parent, j));
                parent[ri] = rj;
            }
        }
    }
    (0..truth.docs.len())
        .map(|i| (truth.docs[i].id.as_str(), root(&mut parent, i)))
        .collect()
}

/// Where training pairs come from: labelled corpora, searched as `config` says (and their
/// pairs kept in `save_pairs` where given), and pairs saved before.
pub struct TrainingData<'a> {
    /// Labelled corpora in the CORE layout, read as `input` says.
    pub truths: &'a [PathBuf],
    /// Pairs [`LabelledPairs::save`] wrote.
    pub saved: &'a [PathBuf],
    /// Files of labelled pairs (`neardup label`'s), of the candidates of `corpus`.
    pub labels: &'a [PathBuf],
    /// The corpus `labels` label.
    pub corpus: Option<&'a Path>,
    /// A folder to keep each corpus's pairs in (`NAME.pairs.json`).
    pub save_pairs: Option<&'a Path>,
    /// How the corpora's records are read.
    pub input: &'a InputSpec,
    /// The two-stage settings that find the candidates.
    pub config: &'a TwoStageConfig,
    /// A model to start from ([`LearnedModel::refit`]); none: fitted from nothing.
    pub prior: Option<&'a LearnedModel>,
}

/// Fits the learned rule to every candidate pair of `data`: what `neardup train` and
/// `neardup.train` do.
pub fn train(data: &TrainingData<'_>, models: &Path) -> Result<LearnedModel> {
    let mut labelled = Vec::new();
    for truth in data.truths {
        let pairs = labelled_pairs(truth, data.input, data.config, models)?;
        if let Some(dir) = data.save_pairs {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            pairs.save(&dir.join(format!("{}.pairs.json", pairs.fitted_on.truth)))?;
        }
        labelled.push(pairs);
    }
    for path in data.saved {
        labelled.push(LabelledPairs::load(path)?);
    }
    if !data.labels.is_empty() {
        let Some(corpus) = data.corpus else {
            return Err(Error::Usage(
                "labels of pairs need the corpus they label (--corpus FILE)".into(),
            ));
        };
        let candidates = Candidates::of(corpus, data.input, data.config, models, false)?;
        for path in data.labels {
            labelled.push(PairLabels::open(path)?.of_candidates(&candidates, corpus)?);
        }
    }
    fit(labelled, data.prior)
}

/// Fits the learned rule to the candidates of every corpus in `labelled`, which must share one
/// embedder: from `prior` where given (whose cosines must be that embedder's), else from
/// nothing.
pub(super) fn fit(
    labelled: Vec<LabelledPairs>,
    prior: Option<&LearnedModel>,
) -> Result<LearnedModel> {
    let Some(first) = labelled.first() else {
        return Err(Error::Usage(
            "give a labelled file (--truth) or saved pairs (--pairs)".into(),
        ));
    };
    let embedder = first.embedder.clone();
    if let Some(other) = labelled.iter().find(|l| l.embedder.0 != embedder.0) {
        return Err(Error::Usage(format!(
            "{} was embedded with {} and {} with {}: a model weighs the cosines of one embedder",
            first.fitted_on.truth, embedder.0, other.fitted_on.truth, other.embedder.0
        )));
    }
    if let Some(prior) = prior
        && prior.embedder != embedder.0
    {
        return Err(Error::Usage(format!(
            "the model to start from weighs the cosines of {}, and {} was embedded with {}: \
             start from a model fitted with the embedder the pairs were searched with",
            prior.embedder, first.fitted_on.truth, embedder.0
        )));
    }
    let (mut features_of, mut duplicate, mut fitted_on) = (Vec::new(), Vec::new(), Vec::new());
    for pairs in labelled {
        features_of.extend(pairs.features);
        duplicate.extend(pairs.duplicate);
        fitted_on.push(pairs.fitted_on);
    }
    match prior {
        Some(prior) => Ok(prior.refit(&features_of, &duplicate, fitted_on)),
        None => LearnedModel::fit(&features_of, &duplicate, embedder, fitted_on),
    }
}

impl LabelledPairs {
    /// Pairs with these `features` and labels, from the file named `truth`.
    pub fn new(
        truth: String,
        features: Vec<Features>,
        duplicate: Vec<bool>,
        embedder: (String, String),
    ) -> LabelledPairs {
        LabelledPairs {
            names: FEATURES.iter().map(|&f| f.to_owned()).collect(),
            fitted_on: FittedOn {
                truth,
                pairs: duplicate.len(),
                duplicates: duplicate.iter().filter(|&&d| d).count(),
            },
            features,
            duplicate,
            embedder,
        }
    }

    /// Writes the pairs to `path`, atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        crate::output::write_json_pretty(path, self)
    }

    /// Reads pairs [`LabelledPairs::save`] wrote, refusing those of other features.
    pub fn load(path: &Path) -> Result<LabelledPairs> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let pairs: LabelledPairs = serde_json::from_str(&text).map_err(|e| {
            Error::Usage(format!(
                "{}: not labelled pairs written by `neardup train --save-pairs` ({e})",
                path.display()
            ))
        })?;
        if pairs.names != FEATURES || pairs.features.len() != pairs.duplicate.len() {
            return Err(Error::Usage(format!(
                "{} holds the features [{}], and this neardup weighs [{}]: save them again \
                 with `neardup train --truth FILE --save-pairs DIR`",
                path.display(),
                pairs.names.join(", "),
                FEATURES.join(", ")
            )));
        }
        Ok(pairs)
    }
}
