//! The learned rule: a logistic model that weighs the [`Evidence`] on a pair and the cosine of
//! its embeddings into the probability that the pair is a duplicate.
//!
//! The evidence rule reads its pieces of evidence one at a time, each against a threshold of
//! its own; it was chosen on copies (versions of one paper, one record in two catalogues) and
//! never weighs the cosine. Two wordings of one sentence share few words, so no Jaccard or
//! containment threshold finds them without also joining papers on one topic; their cosine
//! tells them apart better. The learned rule adds the pieces up instead, each with a weight
//! fitted on labelled pairs, so that a high cosine can outweigh a low Jaccard:
//!
//! `logit = intercept + Σ weight_i · (x_i − centre_i) / scale_i`, `probability = 1 / (1 + e^−logit)`
//!
//! Each term is what one piece of evidence contributes (`neardup explain` prints them), read
//! against an average candidate of the pairs the model was fitted on. A model file
//! ([`LearnedModel`]) says which features it weighs, which embedder its cosines came from (a
//! cosine from another model means something else), and what it was fitted on. `neardup train`
//! fits one; the one neardup ships, fitted on the validation suite, is
//! [`LearnedModel::shipped`].
//!
//! The fit (logistic regression with an L2 penalty) is linfa's. Its intercept is then moved so
//! that the fitted pairs' best cut (by F1) lies at probability one half: the default threshold
//! of the learned rule.
//!
//! A user's own labels are few (`neardup label` asks about tens of pairs), too few to fit nine
//! weights from nothing. [`LearnedModel::refit`] starts from a model instead: the same
//! penalty, centred on that model's weights rather than on zero (a Gaussian prior on the
//! weights), so each label moves the model only as far as it is evidence against it, and no
//! label leaves it as it was. linfa's fit penalises towards zero only, so this one is a few
//! Newton steps of its own (ten parameters). The labels move the probabilities as the fit
//! left them, before its intercept was moved ([`LearnedModel::cut`]), and the fit's cut is
//! then taken off again: a label is evidence about how likely a pair is, not about where the
//! cut lies, and a few labels near the boundary would put the cut anywhere (decision 0037).

use std::path::Path;

use linfa::prelude::*;
use linfa_logistic::LogisticRegression;
use ndarray::{Array1, Array2};
use serde::{Deserialize, Serialize};

use super::evidence::{Evidence, SketchRef};
use crate::error::{Error, Result};

/// The pieces of evidence the learned rule weighs, in the order of a model's weights.
pub const FEATURES: [&str; 9] = [
    "cosine",
    "jaccard",
    "containment",
    "title_jaccard",
    "both_titles",
    "numbers_differ",
    "log_words",
    "log_length_ratio",
    "both_bodies",
];

/// The version of the model file's layout; a file of another is refused by name.
const FORMAT: u32 = 1;

/// The probability a pair must reach under the learned rule unless told otherwise: a fitted
/// model's intercept puts its best cut there.
pub const LEARNED_THRESHOLD: f64 = 0.5;

/// The strength of the L2 penalty of a fit (linfa's `alpha`), on standardised features.
const PENALTY: f64 = 1.0;

/// What a pair's features are, in the order of [`FEATURES`].
pub type Features = [f64; FEATURES.len()];

/// The features of two sketches whose embeddings' cosine is `cosine`, from their `evidence`.
pub fn features(evidence: &Evidence, a: SketchRef<'_>, b: SketchRef<'_>, cosine: f32) -> Features {
    let (smaller, larger) = (a.shingles.min(b.shingles), a.shingles.max(b.shingles));
    let numbers_differ = evidence
        .title_numbers_differ
        .unwrap_or(evidence.numbers_differ);
    [
        f64::from(cosine),
        evidence.jaccard,
        evidence.containment,
        evidence.title_jaccard.unwrap_or(0.0),
        f64::from(u8::from(evidence.title_jaccard.is_some())),
        f64::from(u8::from(numbers_differ)),
        f64::from(smaller).ln_1p(),
        (f64::from(larger.max(1)) / f64::from(smaller.max(1))).ln(),
        f64::from(u8::from(evidence.both_bodies)),
    ]
}

/// How a learned model weighed one pair, for `neardup explain`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Weighing {
    /// The probability that the pair is a duplicate.
    pub probability: f64,
    /// The log-odds of an average fitted pair, which the terms move.
    pub intercept: f64,
    /// Each feature's value and what it added to the log-odds.
    pub terms: Vec<Term>,
}

/// One feature's part in a [`Weighing`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Term {
    /// The feature's name ([`FEATURES`]).
    pub feature: &'static str,
    /// Its value for the pair.
    pub value: f64,
    /// What it added to the log-odds.
    pub contribution: f64,
}

/// What a model was fitted on: one labelled corpus.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FittedOn {
    /// The labelled file's name.
    pub truth: String,
    /// Candidate pairs it gave.
    pub pairs: usize,
    /// Of which labelled duplicates.
    pub duplicates: usize,
}

/// A fitted logistic model over [`FEATURES`], as its file holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LearnedModel {
    /// The file layout's version ([`FORMAT`]).
    pub format: u32,
    /// The features weighed, by name, in order: a file fitted on others is refused.
    pub features: Vec<String>,
    /// Each feature's mean over the fitted pairs.
    pub centre: Vec<f64>,
    /// Each feature's standard deviation over the fitted pairs (1 where it did not vary).
    pub scale: Vec<f64>,
    /// Each standardised feature's weight.
    pub weights: Vec<f64>,
    /// The log-odds of an average pair.
    pub intercept: f64,
    /// The log-odds of the fitted pairs' best cut (by F1), taken off the intercept so that
    /// the cut lies at one half: a refit moves the probabilities as fitted (this added back)
    /// and then takes it off again. 0 in a model written before it was kept.
    #[serde(default)]
    pub cut: f64,
    /// The embedder whose cosines the model weighs (its model's name, as a run's
    /// `summary.json` gives it).
    pub embedder: String,
    /// The sha256 of that embedder's weights: a cosine from other weights means something else.
    pub embedder_sha256: String,
    /// The labelled corpora the model was fitted on.
    pub fitted_on: Vec<FittedOn>,
}

/// The model neardup ships (`match = "meaning"` without `confirm_model`).
const SHIPPED: &str = include_str!("meaning-model.json");

impl LearnedModel {
    /// The model fitted on the validation suite, shipped with neardup.
    pub fn shipped() -> LearnedModel {
        LearnedModel::parse(SHIPPED, Path::new("meaning-model.json"))
            .expect("the shipped model is read by a test")
    }

    /// The model `name` names: `shipped`, or a model file ([`LearnedModel::load`]).
    pub fn named(name: &Path) -> Result<LearnedModel> {
        match name == Path::new("shipped") {
            true => Ok(LearnedModel::shipped()),
            false => LearnedModel::load(name),
        }
    }

    /// Reads a model file written by [`LearnedModel::save`], refusing one of another layout or
    /// fitted on other features.
    pub fn load(path: &Path) -> Result<LearnedModel> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::Usage(format!(
                "cannot read the model file {}: {e} (give a file written by `neardup train` or \
                 `neardup label`)",
                path.display()
            ))
        })?;
        LearnedModel::parse(&text, path)
    }

    fn parse(text: &str, path: &Path) -> Result<LearnedModel> {
        let refuse = |why: String| {
            Error::Usage(format!(
                "{} is no confirm model of this neardup: {why} (fit it again with `neardup train`)",
                path.display()
            ))
        };
        let format = serde_json::from_str::<serde_json::Value>(text)
            .map_err(|e| refuse(format!("it is not JSON ({e})")))?
            .get("format")
            .and_then(serde_json::Value::as_u64);
        if format != Some(u64::from(FORMAT)) {
            let found = format.map_or("no `format`".to_owned(), |f| format!("format {f}"));
            return Err(refuse(format!(
                "it has {found}, and this neardup reads format {FORMAT}"
            )));
        }
        let model: LearnedModel = serde_json::from_str(text).map_err(|e| refuse(format!("{e}")))?;
        if model.features != FEATURES {
            return Err(refuse(format!(
                "it was fitted on the features [{}], and this neardup weighs [{}]",
                model.features.join(", "),
                FEATURES.join(", ")
            )));
        }
        let n = FEATURES.len();
        let lengths = [model.centre.len(), model.scale.len(), model.weights.len()];
        if lengths.iter().any(|&l| l != n) {
            return Err(refuse(format!(
                "`centre`, `scale` and `weights` need {n} values each, not {lengths:?}"
            )));
        }
        let numbers = model
            .centre
            .iter()
            .chain(&model.scale)
            .chain(&model.weights);
        if !numbers.chain([&model.intercept]).all(|x| x.is_finite()) || model.scale.contains(&0.0) {
            return Err(refuse(
                "a weight, centre or scale is not a finite number (or a scale is 0)".into(),
            ));
        }
        Ok(model)
    }

    /// Writes the model to `path` atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        crate::output::write_json_pretty(path, self)
    }

    /// What each feature adds to the log-odds of a pair with `features`, in [`FEATURES`]'
    /// order.
    pub fn contributions(&self, features: &Features) -> Features {
        std::array::from_fn(|i| self.weights[i] * (features[i] - self.centre[i]) / self.scale[i])
    }

    /// How the model weighs a pair with `features`: each feature's value and contribution, and
    /// the probability they add up to.
    pub fn weighing(&self, features: &Features) -> Weighing {
        let contributions = self.contributions(features);
        Weighing {
            probability: self.probability(features),
            intercept: self.intercept,
            terms: FEATURES
                .iter()
                .zip(features.iter().zip(contributions))
                .map(|(&feature, (&value, contribution))| Term {
                    feature,
                    value,
                    contribution,
                })
                .collect(),
        }
    }

    /// The probability that a pair with `features` is a duplicate.
    pub fn probability(&self, features: &Features) -> f64 {
        let logit = self.intercept + self.contributions(features).iter().sum::<f64>();
        1.0 / (1.0 + (-logit).exp())
    }

    /// Fits a model to labelled pairs: each pair's features and whether it is a duplicate,
    /// the pairs' embedder, and what they came from. Refuses labels of one class only.
    pub fn fit(
        features: &[Features],
        duplicate: &[bool],
        embedder: (String, String),
        fitted_on: Vec<FittedOn>,
    ) -> Result<LearnedModel> {
        assert_eq!(features.len(), duplicate.len(), "a label for each pair");
        let positives = duplicate.iter().filter(|&&d| d).count();
        if positives == 0 || positives == duplicate.len() {
            return Err(Error::Usage(format!(
                "the labels give {} candidate pairs, {positives} of them duplicates: a model \
                 needs both duplicates and pairs that are not among the candidates (label \
                 more pairs, or give more labelled files)",
                duplicate.len()
            )));
        }
        let n = FEATURES.len();
        let count = features.len() as f64;
        let centre: Vec<f64> = (0..n)
            .map(|i| features.iter().map(|f| f[i]).sum::<f64>() / count)
            .collect();
        let scale: Vec<f64> = (0..n)
            .map(|i| {
                let variance = features
                    .iter()
                    .map(|f| (f[i] - centre[i]).powi(2))
                    .sum::<f64>()
                    / count;
                if variance > 1e-12 {
                    variance.sqrt()
                } else {
                    1.0
                }
            })
            .collect();
        let standardised = Array2::from_shape_fn((features.len(), n), |(row, i)| {
            (features[row][i] - centre[i]) / scale[i]
        });
        let labels = Array1::from_iter(duplicate.iter().copied());
        let fitted = LogisticRegression::default()
            .alpha(PENALTY)
            .max_iterations(200)
            .fit(&Dataset::new(standardised, labels))
            .map_err(|e| Error::Usage(format!("the logistic fit failed: {e}")))?;
        // linfa's model gives the probability of its positive class, the `true` labels.
        let mut model = LearnedModel {
            format: FORMAT,
            features: FEATURES.iter().map(|&f| f.to_owned()).collect(),
            centre,
            scale,
            weights: fitted.params().to_vec(),
            intercept: fitted.intercept(),
            cut: 0.0,
            embedder: embedder.0,
            embedder_sha256: embedder.1,
            fitted_on,
        };
        if !fitted.labels().pos.class {
            model.weights.iter_mut().for_each(|w| *w = -*w);
            model.intercept = -model.intercept;
        }
        model.cut = logit(model.best_cut(features, duplicate));
        model.intercept -= model.cut;
        Ok(model)
    }

    /// This model moved towards the pairs `features` labelled `duplicate` (see the module doc):
    /// the log-likelihood of the labels, less the penalty of a fit on the distance from this
    /// model's weights and intercept, maximised by Newton's method on this model's
    /// standardisation. `fitted_on` is added to what this model was fitted on.
    pub fn refit(
        &self,
        features: &[Features],
        duplicate: &[bool],
        fitted_on: Vec<FittedOn>,
    ) -> LearnedModel {
        use nalgebra::{DMatrix, DVector};
        assert_eq!(features.len(), duplicate.len(), "a label for each pair");
        let n = FEATURES.len() + 1;
        // The intercept first, then the standardised features.
        let rows: Vec<DVector<f64>> = features
            .iter()
            .map(|f| {
                DVector::from_fn(n, |i, _| match i {
                    0 => 1.0,
                    i => (f[i - 1] - self.centre[i - 1]) / self.scale[i - 1],
                })
            })
            .collect();
        // The labels move the probabilities as fitted; the cut stays where the fit put it.
        let prior = DVector::from_fn(n, |i, _| match i {
            0 => self.intercept + self.cut,
            i => self.weights[i - 1],
        });
        // The log-likelihood of the labels less the penalty: strictly concave.
        let objective = |theta: &DVector<f64>| {
            let likelihood: f64 = (rows.iter().zip(duplicate))
                .map(|(z, &label)| {
                    let logit = theta.dot(z);
                    // log σ(s) = −softplus(−s), for s = ±logit, without overflow.
                    let s = if label { logit } else { -logit };
                    -((-s).max(0.0) + (-s.abs()).exp().ln_1p())
                })
                .sum();
            likelihood - 0.5 * PENALTY * (theta - &prior).norm_squared()
        };
        let mut theta = prior.clone();
        let mut value = objective(&theta);
        for _ in 0..100 {
            let mut gradient = -(&theta - &prior) * PENALTY;
            let mut hessian = DMatrix::<f64>::identity(n, n) * PENALTY;
            for (z, &label) in rows.iter().zip(duplicate) {
                let p = 1.0 / (1.0 + (-theta.dot(z)).exp());
                gradient += z * (f64::from(u8::from(label)) - p);
                hessian += z * z.transpose() * (p * (1.0 - p));
            }
            // The Hessian (negated here) is positive definite; a step is halved until it gains.
            let Some(mut step) = hessian.cholesky().map(|c| c.solve(&gradient)) else {
                break;
            };
            let mut next = &theta + &step;
            let mut next_value = objective(&next);
            while next_value < value && step.norm() > 1e-12 {
                step /= 2.0;
                next = &theta + &step;
                next_value = objective(&next);
            }
            if next_value <= value {
                break;
            }
            (theta, value) = (next, next_value);
            if step.norm() < 1e-10 {
                break;
            }
        }
        let mut model = self.clone();
        model.intercept = theta[0] - self.cut;
        model.weights = theta.iter().skip(1).copied().collect();
        model.fitted_on.extend(fitted_on);
        model
    }

    /// The probability at or above which calling pairs duplicates gives the best F1 on
    /// `features` labelled `duplicate`.
    fn best_cut(&self, features: &[Features], duplicate: &[bool]) -> f64 {
        let mut scored: Vec<(f64, bool)> = features
            .iter()
            .map(|f| self.probability(f))
            .zip(duplicate.iter().copied())
            .collect();
        scored.sort_by(|x, y| y.0.total_cmp(&x.0));
        let positives = duplicate.iter().filter(|&&d| d).count() as f64;
        let (mut found, mut best, mut cut) = (0.0, -1.0, 0.5);
        for (taken, &(probability, is_duplicate)) in scored.iter().enumerate() {
            found += f64::from(u8::from(is_duplicate));
            let f1 = 2.0 * found / (taken as f64 + 1.0 + positives);
            let tied_with_next = scored.get(taken + 1).is_some_and(|n| n.0 == probability);
            if f1 > best && !tied_with_next {
                (best, cut) = (f1, probability);
            }
        }
        cut.clamp(1e-6, 1.0 - 1e-6)
    }
}

fn logit(p: f64) -> f64 {
    (p / (1.0 - p)).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity() -> (String, String) {
        ("test-vectors".into(), "0".repeat(64))
    }

    /// Pairs whose duplicates have a high cosine and a Jaccard that says little.
    fn labelled(count: usize) -> (Vec<Features>, Vec<bool>) {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        (0..count)
            .map(|_| {
                let duplicate = rng.random::<bool>();
                let cosine = if duplicate { 0.75 } else { 0.55 } + rng.random::<f64>() * 0.2;
                let jaccard = rng.random::<f64>() * 0.6;
                let mut f = [0.0; FEATURES.len()];
                (f[0], f[1], f[2], f[6]) = (cosine, jaccard, jaccard, 3.0 + rng.random::<f64>());
                (f, duplicate)
            })
            .unzip()
    }

    #[test]
    fn a_fit_weighs_the_evidence_that_separates_the_labels_and_cuts_at_one_half() {
        let (features, duplicate) = labelled(2_000);
        let model = LearnedModel::fit(&features, &duplicate, identity(), Vec::new()).unwrap();
        assert!(model.weights[0] > 2.0 * model.weights[1].abs(), "{model:?}");
        let correct = features
            .iter()
            .zip(&duplicate)
            .filter(|(f, d)| (model.probability(f) >= LEARNED_THRESHOLD) == **d)
            .count();
        assert!(correct as f64 > 0.97 * features.len() as f64, "{correct}");
        let contributions = model.contributions(&features[0]);
        let logit = model.intercept + contributions.iter().sum::<f64>();
        assert!((1.0 / (1.0 + (-logit).exp()) - model.probability(&features[0])).abs() < 1e-12);
    }

    #[test]
    fn a_refit_moves_a_model_as_far_as_the_labels_are_evidence_against_it() {
        let (features, duplicate) = labelled(2_000);
        let right = LearnedModel::fit(&features, &duplicate, identity(), Vec::new()).unwrap();
        let correct = |model: &LearnedModel| {
            (features.iter().zip(&duplicate))
                .filter(|(f, d)| (model.probability(f) >= LEARNED_THRESHOLD) == **d)
                .count()
        };
        // No labels: the model as it was.
        let same = right.refit(&[], &[], Vec::new());
        assert_eq!(
            (same.weights, same.intercept),
            (right.weights.clone(), right.intercept)
        );
        // A model that weighs the cosine the wrong way round: 40 labels turn it round, and
        // 400 make it right on most pairs.
        let mut wrong = right.clone();
        wrong.weights[0] = -right.weights[0];
        let fitted_on = vec![FittedOn {
            truth: "labels.jsonl".into(),
            pairs: 40,
            duplicates: 20,
        }];
        let moved = wrong.refit(&features[..40], &duplicate[..40], fitted_on.clone());
        assert!(moved.weights[0] > 0.0, "{moved:?}");
        assert!(correct(&wrong) < correct(&moved));
        assert_eq!(moved.fitted_on, fitted_on);
        let moved = wrong.refit(&features[..400], &duplicate[..400], Vec::new());
        assert!(
            correct(&moved) as f64 > 0.9 * features.len() as f64,
            "{moved:?}"
        );
        // A right model stays right with labels that agree with it.
        let kept = right.refit(&features[..40], &duplicate[..40], Vec::new());
        assert!(
            correct(&kept) as f64 >= 0.95 * features.len() as f64,
            "{}",
            correct(&kept)
        );
    }

    /// Few duplicates among many pairs that are not, and a cosine that tells them apart only
    /// roughly: the best cut by F1 lies well below a probability of one half.
    #[test]
    fn a_refit_moves_the_probabilities_and_keeps_the_fits_cut() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let (features, duplicate): (Vec<Features>, Vec<bool>) = (0..4_000)
            .map(|_| {
                let duplicate = rng.random::<f64>() < 0.05;
                let mut f = [0.0; FEATURES.len()];
                f[0] = if duplicate { 0.65 } else { 0.5 } + rng.random::<f64>() * 0.3;
                (f, duplicate)
            })
            .unzip();
        let fitted = LearnedModel::fit(&features, &duplicate, identity(), Vec::new()).unwrap();
        assert!(fitted.cut < -1.0, "{fitted:?}");
        let called = |model: &LearnedModel| {
            (features.iter())
                .filter(|f| model.probability(f) >= LEARNED_THRESHOLD)
                .count() as f64
        };
        // Labels drawn like the fitted pairs agree with the model: its calls hardly move.
        let refit =
            |model: &LearnedModel| model.refit(&features[..1000], &duplicate[..1000], vec![]);
        let moved = refit(&fitted);
        assert!((called(&moved) / called(&fitted) - 1.0).abs() < 0.2);
        // Taken for probabilities, the cut is what the labels pull back: a model of the same
        // weights that does not keep it (as written before it was kept) calls fewer.
        let unkept = LearnedModel {
            cut: 0.0,
            ..fitted.clone()
        };
        let (lost, kept) = (called(&refit(&unkept)), called(&fitted));
        assert!(lost < 0.7 * kept, "{lost} of {kept}");
    }

    #[test]
    fn labels_of_one_class_are_refused() {
        let (features, _) = labelled(50);
        let error = LearnedModel::fit(&features, &[false; 50], identity(), Vec::new())
            .unwrap_err()
            .to_string();
        assert!(error.contains("0 of them duplicates"), "{error}");
    }

    #[test]
    fn a_model_file_of_another_layout_or_other_features_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.json");
        let (features, duplicate) = labelled(200);
        let model = LearnedModel::fit(&features, &duplicate, identity(), Vec::new()).unwrap();
        model.save(&path).unwrap();
        assert_eq!(LearnedModel::load(&path).unwrap(), model);
        let mut value: serde_json::Value = serde_json::to_value(&model).unwrap();
        value["format"] = 99.into();
        std::fs::write(&path, value.to_string()).unwrap();
        let error = LearnedModel::load(&path).unwrap_err().to_string();
        assert!(
            error.contains("format 99") && error.contains("model.json"),
            "{error}"
        );
        value["format"] = FORMAT.into();
        value["features"][0] = "title_cosine".into();
        std::fs::write(&path, value.to_string()).unwrap();
        let error = LearnedModel::load(&path).unwrap_err().to_string();
        assert!(
            error.contains("title_cosine") && error.contains("neardup train"),
            "{error}"
        );
    }

    #[test]
    fn the_shipped_model_is_read() {
        let model = LearnedModel::shipped();
        assert!(!model.fitted_on.is_empty());
        // Its cut, for a refit to keep: the best by F1 lay below one half.
        assert!(model.cut < 0.0, "{}", model.cut);
    }
}
