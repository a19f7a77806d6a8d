//! The metric arithmetic (see the module docs of [`crate::eval`] for the definitions).

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use super::predictions::Predictions;
use super::truth::Truth;

/// Precision, recall and F1 of one class, with the confusion counts they come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ClassMetrics {
    /// TP / (TP + FP), 0 when nothing was predicted in the class.
    pub precision: f64,
    /// TP / (TP + FN), 0 when the class is empty.
    pub recall: f64,
    /// Harmonic mean of precision and recall, 0 when both are 0.
    pub f1: f64,
    /// True positives.
    pub tp: usize,
    /// False positives.
    pub fp: usize,
    /// True negatives.
    pub tn: usize,
    /// False negatives.
    #[serde(rename = "fn")]
    pub fn_: usize,
}

impl ClassMetrics {
    fn from_counts(tp: usize, fp: usize, tn: usize, fn_: usize) -> Self {
        let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let precision = ratio(tp, tp + fp);
        let recall = ratio(tp, tp + fn_);
        let f1 = if precision + recall == 0.0 {
            0.0
        } else {
            2.0 * precision * recall / (precision + recall)
        };
        ClassMetrics {
            precision,
            recall,
            f1,
            tp,
            fp,
            tn,
            fn_,
        }
    }
}

/// The scores of a set of documents.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Scores {
    /// Documents scored.
    pub documents: usize,
    /// Fraction with `P(d) = L(d)`.
    pub accuracy: f64,
    /// Mean of the two classes' F1.
    pub macro_f1: f64,
    /// The duplicate class.
    pub dup: ClassMetrics,
    /// The non-duplicate class (inverse labelling).
    pub non_dup: ClassMetrics,
    /// Mean per-document precision.
    pub mean_precision: f64,
    /// Mean per-document recall.
    pub mean_recall: f64,
}

/// Correct and false counts, as in the Pinecone notebook's table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CorrectFalse {
    /// Documents with `P(d) = L(d)`.
    pub correct: usize,
    /// The others.
    pub r#false: usize,
}

/// A full evaluation: overall scores, per `cat`, per number of labelled duplicates.
#[derive(Clone, Debug, Serialize)]
pub struct Evaluation {
    /// Over all labelled documents.
    #[serde(flatten)]
    pub overall: Scores,
    /// Per `cat` value.
    pub by_cat: BTreeMap<String, Scores>,
    /// Per `|L(d)|`.
    pub by_num_duplicates: BTreeMap<usize, CorrectFalse>,
    /// Predicted ids that are not in the truth (they still count inside `P(d)`).
    pub predicted_not_in_truth: usize,
}

#[derive(Default)]
struct Tally {
    documents: usize,
    correct: usize,
    tp: usize,
    fp: usize,
    tn: usize,
    fn_: usize,
    precision_sum: f64,
    recall_sum: f64,
}

impl Tally {
    /// Adds a document predicted to have `predicted` duplicates, `hits` of them among its
    /// `labelled` ones.
    fn add(&mut self, predicted: usize, hits: usize, labelled: usize) {
        let correct = hits == labelled && hits == predicted;
        self.documents += 1;
        self.correct += usize::from(correct);
        self.recall_sum += if labelled == 0 {
            1.0
        } else {
            hits as f64 / labelled as f64
        };
        self.precision_sum += if predicted == 0 {
            0.0
        } else {
            hits as f64 / predicted as f64
        };
        match (predicted == 0, labelled == 0) {
            (false, false) if hits == labelled => self.tp += 1,
            (false, _) => self.fp += 1,
            (true, false) => self.fn_ += 1,
            (true, true) => self.tn += 1,
        }
    }

    fn scores(&self) -> Scores {
        let n = self.documents.max(1) as f64;
        let dup = ClassMetrics::from_counts(self.tp, self.fp, self.tn, self.fn_);
        let non_dup = ClassMetrics::from_counts(self.tn, self.fn_, self.tp, self.fp);
        Scores {
            documents: self.documents,
            accuracy: self.correct as f64 / n,
            macro_f1: (dup.f1 + non_dup.f1) / 2.0,
            dup,
            non_dup,
            mean_precision: self.precision_sum / n,
            mean_recall: self.recall_sum / n,
        }
    }
}

/// Scores `predicted` against `truth`, in O(documents + labelled pairs).
pub fn evaluate(truth: &Truth, predicted: &Predictions) -> Evaluation {
    let mut overall = Tally::default();
    let mut by_cat: BTreeMap<String, Tally> = BTreeMap::new();
    let mut by_num: BTreeMap<usize, CorrectFalse> = BTreeMap::new();
    for doc in &truth.docs {
        let labelled: HashSet<&str> = doc.duplicates.iter().map(String::as_str).collect();
        let hits = labelled
            .iter()
            .filter(|&&other| predicted.contains(&doc.id, other))
            .count();
        let count = predicted.count(&doc.id);
        let before = overall.correct;
        overall.add(count, hits, labelled.len());
        by_cat
            .entry(doc.cat.clone())
            .or_default()
            .add(count, hits, labelled.len());
        let cell = by_num.entry(labelled.len()).or_default();
        if overall.correct > before {
            cell.correct += 1;
        } else {
            cell.r#false += 1;
        }
    }
    let known: HashSet<&str> = truth.docs.iter().map(|d| d.id.as_str()).collect();
    let predicted_not_in_truth = predicted.ids().filter(|id| !known.contains(id)).count();
    Evaluation {
        overall: overall.scores(),
        by_cat: by_cat.into_iter().map(|(k, t)| (k, t.scores())).collect(),
        by_num_duplicates: by_num,
        predicted_not_in_truth,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::TruthDoc;

    fn doc(id: &str, cat: &str, dups: &[&str]) -> TruthDoc {
        TruthDoc {
            id: id.into(),
            cat: cat.into(),
            duplicates: dups.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn pred(entries: &[(&str, &[&str])]) -> Predictions {
        Predictions::from_pairs(
            entries
                .iter()
                .flat_map(|(k, v)| v.iter().map(move |o| (k.to_string(), o.to_string()))),
        )
    }

    #[test]
    fn hand_computed_example() {
        // a,b labelled duplicates; c,d,e not.
        let truth = Truth {
            docs: vec![
                doc("a", "exact_dup", &["b"]),
                doc("b", "exact_dup", &["a"]),
                doc("c", "non_dup", &[]),
                doc("d", "non_dup", &[]),
                doc("e", "near_dup", &["x", "y"]),
            ],
        };
        // a: {b} TP correct; b: {a, c} TP (L ⊆ P) but not correct; c: {b} FP;
        // d: {} TN correct; e: {x} FP (L not ⊆ P).
        let p = pred(&[
            ("a", &["b"]),
            ("b", &["a", "c"]),
            ("c", &["b"]),
            ("e", &["x"]),
        ]);
        let e = evaluate(&truth, &p);
        let o = &e.overall;
        assert_eq!((o.dup.tp, o.dup.fp, o.dup.tn, o.dup.fn_), (2, 2, 1, 0));
        assert!((o.accuracy - 0.4).abs() < 1e-12);
        assert!((o.dup.precision - 0.5).abs() < 1e-12);
        assert!((o.dup.recall - 1.0).abs() < 1e-12);
        // Non-dup class: TP'=TN=1, FP'=FN=0, FN'=FP=2: precision 1, recall 1/3, F1 0.5.
        assert!((o.non_dup.precision - 1.0).abs() < 1e-12);
        assert!((o.non_dup.recall - 1.0 / 3.0).abs() < 1e-12);
        assert!((o.macro_f1 - (2.0 / 3.0 + 0.5) / 2.0).abs() < 1e-12);
        // Precision(d): 1, 1/2, 0, 0 (P empty), 1 -> 2.5/5; Recall(d): 1, 1, 1, 1, 1/2.
        assert!((o.mean_precision - 0.5).abs() < 1e-12);
        assert!((o.mean_recall - 0.9).abs() < 1e-12);
        assert_eq!(
            e.by_num_duplicates[&1],
            CorrectFalse {
                correct: 1,
                r#false: 1
            }
        );
        assert_eq!(
            e.by_num_duplicates[&0],
            CorrectFalse {
                correct: 1,
                r#false: 1
            }
        );
        assert_eq!(
            e.by_num_duplicates[&2],
            CorrectFalse {
                correct: 0,
                r#false: 1
            }
        );
        assert_eq!(e.by_cat["exact_dup"].documents, 2);
        assert!((e.by_cat["non_dup"].accuracy - 0.5).abs() < 1e-12);
        assert_eq!(e.predicted_not_in_truth, 1, "x, the partner of e");
    }

    #[test]
    fn one_group_of_the_whole_corpus_is_scored_in_linear_work() {
        // Materialised, these predicted sets would hold 200,000² ids; as group ids they cost
        // one lookup per labelled pair.
        let n = 200_000;
        let ids: Vec<String> = (0..n).map(|i| format!("d{i}")).collect();
        let truth = Truth {
            docs: ids
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    let partner = if i % 2 == 0 { i + 1 } else { i - 1 };
                    doc(id, "near_dup", &[&ids[partner]])
                })
                .collect(),
        };
        let e = evaluate(
            &truth,
            &Predictions::from_groups([ids.iter().map(String::as_str)]),
        );
        assert_eq!(
            e.overall.accuracy, 0.0,
            "every document has too many predicted"
        );
        assert_eq!(
            (e.overall.dup.tp, e.overall.dup.fp),
            (n, 0),
            "yet each finds its partner"
        );
        assert!((e.overall.mean_precision - 1.0 / (n - 1) as f64).abs() < 1e-12);
    }

    #[test]
    fn perfect_prediction_scores_one() {
        let truth = Truth {
            docs: vec![
                doc("a", "exact_dup", &["b"]),
                doc("b", "exact_dup", &["a"]),
                doc("c", "non_dup", &[]),
            ],
        };
        let e = evaluate(&truth, &pred(&[("a", &["b"]), ("b", &["a"])]));
        assert_eq!(e.overall.accuracy, 1.0);
        assert_eq!(e.overall.macro_f1, 1.0);
    }
}
