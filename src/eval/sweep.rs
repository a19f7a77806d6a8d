//! Re-scoring a run's stored pair scores at other thresholds, without recomputing sketches.
//!
//! A run leaves its scored pairs (its candidates, `candidates.parquet` or `candidates.jsonl`,
//! where the method scores more pairs than it confirms, else `pairs.jsonl`). Keeping the pairs whose score reaches a threshold, grouping
//! them (single linkage) and scoring the groups shows what that threshold would have given.
//! Thresholds below the run's own can only be judged where the candidates hold the lower
//! scores. Choose a threshold on one labelled set and confirm it on another, never the same.

use petgraph::unionfind::UnionFind;
use serde::Serialize;

use super::metrics::evaluate;
use super::predictions::Predictions;
use super::truth::{Predicted, Truth};
use crate::output::run::RunPairs;

/// A run's pairs under one score: pairs strongest first, so that every threshold of a sweep
/// keeps a prefix and single linkage grows one union-find from the top.
struct Ranked<'a> {
    /// The ids, numbered as the pairs name them.
    names: &'a [String],
    /// (score, a, b), by descending score.
    edges: Vec<(f64, u32, u32)>,
}

impl<'a> Ranked<'a> {
    fn new(pairs: &'a RunPairs, score: &str) -> Self {
        let mut edges: Vec<(f64, u32, u32)> = match pairs.column(score) {
            Some(scores) => (scores.iter().zip(pairs.ends()))
                .filter(|(s, _)| !s.is_nan())
                .map(|(&s, &(a, b))| (s, a, b))
                .collect(),
            None => Vec::new(),
        };
        edges.sort_unstable_by(|x, y| y.0.total_cmp(&x.0));
        Ranked {
            names: pairs.ids(),
            edges,
        }
    }

    /// How many pairs reach `threshold`.
    fn reaching(&self, threshold: f64) -> usize {
        self.edges.partition_point(|e| e.0 >= threshold)
    }

    /// The first `kept` pairs as pair partners.
    fn pairs(&self, kept: usize) -> Predictions {
        Predictions::from_pairs(self.edges[..kept].iter().map(|&(_, a, b)| {
            (
                self.names[a as usize].as_str(),
                self.names[b as usize].as_str(),
            )
        }))
    }

    /// The groups `components` has joined (their root is the group id); documents still
    /// alone are in none.
    fn groups(&self, components: &UnionFind<u32>) -> Predictions {
        let roots: Vec<u32> = (0..self.names.len() as u32)
            .map(|x| components.find(x))
            .collect();
        let mut sizes = vec![0usize; self.names.len()];
        for &root in &roots {
            sizes[root as usize] += 1;
        }
        let group_of = self
            .names
            .iter()
            .zip(&roots)
            .filter(|&(_, &root)| sizes[root as usize] > 1)
            .map(|(name, &root)| (name.to_string(), root))
            .collect();
        Predictions::Groups { group_of, sizes }
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

/// Scores every threshold in `thresholds` (in their order). The pairs are ranked once and
/// the thresholds visited from the highest, so the whole sweep costs one sort, one growing
/// union-find and one linear scoring per threshold.
pub fn sweep(
    truth: &Truth,
    pairs: &RunPairs,
    score: &str,
    thresholds: &[f64],
    mode: Predicted,
) -> Vec<SweepPoint> {
    let ranked = Ranked::new(pairs, score);
    let mut components = UnionFind::<u32>::new(ranked.names.len());
    let mut joined = 0;
    let mut order: Vec<usize> = (0..thresholds.len()).collect();
    order.sort_by(|&x, &y| thresholds[y].total_cmp(&thresholds[x]));
    let mut points: Vec<Option<SweepPoint>> = vec![None; thresholds.len()];
    for at in order {
        let threshold = thresholds[at];
        let kept = ranked.reaching(threshold);
        let predicted = match mode {
            Predicted::Pairs => ranked.pairs(kept),
            Predicted::Groups => {
                for &(_, a, b) in &ranked.edges[joined..kept] {
                    components.union(a, b);
                }
                joined = kept;
                ranked.groups(&components)
            }
        };
        let e = evaluate(truth, &predicted).overall;
        points[at] = Some(SweepPoint {
            threshold,
            pairs: kept,
            accuracy: e.accuracy,
            macro_f1: e.macro_f1,
            dup_precision: e.dup.precision,
            dup_recall: e.dup.recall,
            dup_f1: e.dup.f1,
        });
    }
    points.into_iter().flatten().collect()
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

    fn pair(a: &str, b: &str, s: f64) -> crate::output::run::PairRecord {
        crate::output::run::PairRecord {
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
        let pairs: RunPairs = [
            pair("a", "b", 0.9),
            pair("c", "d", 0.6),
            pair("b", "c", 0.5),
        ]
        .into_iter()
        .collect();
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
        // Pairs mode keeps the chain's links apart; any order of thresholds gives the same.
        let reversed: Vec<f64> = thresholds(0.4, 1.0, 0.1).into_iter().rev().collect();
        let pairs_mode = sweep(&truth, &pairs, "jaccard", &reversed, Predicted::Pairs);
        assert_eq!(pairs_mode[6].threshold, 0.4);
        assert_eq!(pairs_mode[6].pairs, 3);
        assert!(pairs_mode[6].accuracy > points[0].accuracy);
        let groups_reversed = sweep(&truth, &pairs, "jaccard", &reversed, Predicted::Groups);
        for (x, y) in points.iter().zip(groups_reversed.iter().rev()) {
            assert_eq!(
                (x.threshold, x.pairs, x.accuracy),
                (y.threshold, y.pairs, y.accuracy)
            );
        }
    }
}
