//! Re-scoring a run's stored pair scores at other thresholds, without recomputing sketches.
//!
//! A run leaves its scored pairs (`candidates.jsonl` where the method scores more pairs than it
//! confirms, else `pairs.jsonl`). Keeping the pairs whose score reaches a threshold, grouping
//! them (single linkage) and scoring the groups shows what that threshold would have given.
//! Thresholds below the run's own can only be judged where `candidates.jsonl` holds the lower
//! scores. Choose a threshold on one labelled set and confirm it on another, never the same.

use std::collections::HashMap;

use petgraph::unionfind::UnionFind;
use serde::Serialize;

use super::metrics::evaluate;
use super::predictions::Predictions;
use super::truth::{Predicted, Truth};
use crate::results::PairRecord;

/// The score names present in `pairs` (sorted).
pub fn score_names(pairs: &[PairRecord]) -> Vec<String> {
    let names: std::collections::BTreeSet<&String> =
        pairs.iter().flat_map(|p| p.scores.keys()).collect();
    names.into_iter().cloned().collect()
}

/// Predicted duplicates from the pairs whose `score` reaches `threshold`: pair partners, or the
/// rest of each single-linkage group (kept as group ids, so any threshold costs the same).
pub fn predictions_at<'a>(
    pairs: &'a [PairRecord],
    score: &str,
    threshold: f64,
    mode: Predicted,
) -> Predictions {
    let kept = pairs
        .iter()
        .filter(|p| p.scores.get(score).is_some_and(|&s| s >= threshold));
    match mode {
        Predicted::Pairs => Predictions::from_pairs(kept.map(|p| (p.a.as_str(), p.b.as_str()))),
        Predicted::Groups => {
            let mut index: HashMap<&str, u32> = HashMap::new();
            let mut names: Vec<&str> = Vec::new();
            let mut edges: Vec<(u32, u32)> = Vec::new();
            for p in kept {
                let mut node = |id: &'a str| {
                    *index.entry(id).or_insert_with(|| {
                        names.push(id);
                        names.len() as u32 - 1
                    })
                };
                let edge = (node(&p.a), node(&p.b));
                edges.push(edge);
            }
            let mut components = UnionFind::<u32>::new(names.len());
            for (x, y) in edges {
                components.union(x, y);
            }
            let labels = components.into_labeling();
            let mut members: HashMap<u32, Vec<&str>> = HashMap::new();
            for (name, root) in names.iter().zip(labels) {
                members.entry(root).or_default().push(name);
            }
            Predictions::from_groups(members.into_values())
        }
    }
}

/// The scores at one threshold.
#[derive(Clone, Debug, Serialize)]
pub struct SweepPoint {
    /// The threshold.
    pub threshold: f64,
    /// Pairs at or above it.
    pub pairs: usize,
    /// Accuracy.
    pub accuracy: f64,
    /// Macro-F1.
    pub macro_f1: f64,
    /// Duplicate-class precision.
    pub dup_precision: f64,
    /// Duplicate-class recall.
    pub dup_recall: f64,
    /// Duplicate-class F1.
    pub dup_f1: f64,
}

/// Scores every threshold in `thresholds`.
pub fn sweep(
    truth: &Truth,
    pairs: &[PairRecord],
    score: &str,
    thresholds: &[f64],
    mode: Predicted,
) -> Vec<SweepPoint> {
    thresholds
        .iter()
        .map(|&threshold| {
            let predicted = predictions_at(pairs, score, threshold, mode);
            let e = evaluate(truth, &predicted).overall;
            SweepPoint {
                threshold,
                pairs: pairs
                    .iter()
                    .filter(|p| p.scores.get(score).is_some_and(|&s| s >= threshold))
                    .count(),
                accuracy: e.accuracy,
                macro_f1: e.macro_f1,
                dup_precision: e.dup.precision,
                dup_recall: e.dup.recall,
                dup_f1: e.dup.f1,
            }
        })
        .collect()
}

/// The point with the highest macro-F1 (the lowest threshold among ties).
pub fn best(points: &[SweepPoint]) -> Option<&SweepPoint> {
    points
        .iter()
        .fold(None, |best: Option<&SweepPoint>, p| match best {
            Some(b) if b.macro_f1 >= p.macro_f1 => Some(b),
            _ => Some(p),
        })
}

/// Evenly spaced thresholds from `from` to `to` inclusive.
pub fn thresholds(from: f64, to: f64, step: f64) -> Vec<f64> {
    let n = ((to - from) / step + 1e-9).floor() as usize;
    (0..=n)
        .map(|i| ((from + i as f64 * step) * 1e6).round() / 1e6)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::TruthDoc;

    fn pair(a: &str, b: &str, s: f64) -> PairRecord {
        PairRecord {
            a: a.into(),
            b: b.into(),
            scores: [("jaccard".to_string(), s)].into(),
        }
    }

    #[test]
    fn the_best_threshold_separates_true_from_false_pairs() {
        let doc = |id: &str, d: &[&str]| TruthDoc {
            id: id.into(),
            cat: "x".into(),
            duplicates: d.iter().map(|s| s.to_string()).collect(),
        };
        let truth = Truth {
            docs: vec![
                doc("a", &["b"]),
                doc("b", &["a"]),
                doc("c", &[]),
                doc("d", &[]),
            ],
        };
        let pairs = vec![
            pair("a", "b", 0.9),
            pair("c", "d", 0.6),
            pair("b", "c", 0.5),
        ];
        let points = sweep(
            &truth,
            &pairs,
            "jaccard",
            &thresholds(0.4, 1.0, 0.1),
            Predicted::Groups,
        );
        assert_eq!(points.len(), 7);
        let top = best(&points).unwrap();
        assert!(top.threshold > 0.6 && top.threshold <= 0.9, "{top:?}");
        assert_eq!(top.accuracy, 1.0);
        assert_eq!(points[0].pairs, 3);
        // At 0.4 everything chains into one group.
        assert!(points[0].accuracy < 0.5);
    }
}
