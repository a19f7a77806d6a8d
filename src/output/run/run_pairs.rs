//! A run's scored pairs read back and held compactly ([`RunPairs`]): what `neardup sweep` and
//! the report rank and look up. Each id is held once and numbered, each pair is its two ids'
//! numbers, and each score is a column. The 36 million candidates of a two-stage run of a
//! million documents take about 1 GB so; one record a pair, each with its own strings and map
//! of scores, took 19 GB.

use std::collections::HashMap;

use super::PairRecord;

/// A run's scored pairs, in the order of their file, held compactly.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunPairs {
    /// Every id a pair names, numbered in the order first named.
    ids: Vec<String>,
    /// Each pair's ids, by number.
    ends: Vec<(u32, u32)>,
    /// The scores' names, sorted.
    names: Vec<String>,
    /// Each name's scores, a value a pair (NaN where a pair has none).
    columns: Vec<Vec<f64>>,
}

impl RunPairs {
    /// How many pairs there are.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The ids the pairs name, by number.
    pub fn ids(&self) -> &[String] {
        &self.ids
    }

    /// Each pair's two ids, by number.
    pub fn ends(&self) -> &[(u32, u32)] {
        &self.ends
    }

    /// The ids of pair `i`.
    pub fn pair(&self, i: usize) -> (&str, &str) {
        let (a, b) = self.ends[i];
        (&self.ids[a as usize], &self.ids[b as usize])
    }

    /// The names of the scores, sorted.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Every pair's score `name` (NaN where a pair has none), if any pair has it.
    pub fn column(&self, name: &str) -> Option<&[f64]> {
        let at = self.names.iter().position(|n| n == name)?;
        Some(&self.columns[at])
    }

    /// The first score of pair `i` in the order of the names, if it has any.
    pub fn first_score(&self, i: usize) -> Option<f64> {
        self.columns.iter().map(|c| c[i]).find(|s| !s.is_nan())
    }
}

impl FromIterator<PairRecord> for RunPairs {
    fn from_iter<T: IntoIterator<Item = PairRecord>>(records: T) -> Self {
        let mut gathering = Gathering::default();
        records.into_iter().for_each(|r| gathering.push(r));
        gathering.finish()
    }
}

/// [`RunPairs`] being gathered a record at a time.
#[derive(Default)]
pub(super) struct Gathering {
    pairs: RunPairs,
    number: HashMap<String, u32>,
}

impl Gathering {
    /// Adds the record `record`.
    pub(super) fn push(&mut self, record: PairRecord) {
        let pairs = &mut self.pairs;
        let mut number = |id: String| match self.number.get(&id) {
            Some(&n) => n,
            None => {
                let n = pairs.ids.len() as u32;
                pairs.ids.push(id.clone());
                self.number.insert(id, n);
                n
            }
        };
        let ends = (number(record.a), number(record.b));
        let row = pairs.ends.len();
        pairs.ends.push(ends);
        for (name, score) in record.scores {
            let at = match pairs.names.iter().position(|n| *n == name) {
                Some(at) => at,
                None => {
                    pairs.names.push(name);
                    pairs.columns.push(vec![f64::NAN; row]);
                    pairs.columns.len() - 1
                }
            };
            pairs.columns[at].push(score);
        }
        for column in &mut pairs.columns {
            if column.len() == row {
                column.push(f64::NAN);
            }
        }
    }

    /// The pairs gathered, their scores' names sorted.
    pub(super) fn finish(self) -> RunPairs {
        let mut pairs = self.pairs;
        let mut named: Vec<(String, Vec<f64>)> =
            pairs.names.drain(..).zip(pairs.columns.drain(..)).collect();
        named.sort_by(|x, y| x.0.cmp(&y.0));
        (pairs.names, pairs.columns) = named.into_iter().unzip();
        pairs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(a: &str, b: &str, scores: &[(&str, f64)]) -> PairRecord {
        PairRecord {
            a: a.into(),
            b: b.into(),
            scores: scores.iter().map(|&(n, s)| (n.to_string(), s)).collect(),
        }
    }

    #[test]
    fn pairs_keep_their_order_ids_once_and_each_score_in_its_column() {
        let pairs: RunPairs = [
            record("x", "y", &[("jaccard_estimate", 0.5)]),
            record("x", "z", &[("jaccard_estimate", 0.25), ("cosine", 0.9)]),
            record("y", "z", &[("cosine", 0.75)]),
        ]
        .into_iter()
        .collect();
        assert_eq!(pairs.len(), 3);
        assert_eq!(pairs.ids(), ["x", "y", "z"]);
        assert_eq!(pairs.ends(), [(0, 1), (0, 2), (1, 2)]);
        assert_eq!(pairs.pair(2), ("y", "z"));
        assert_eq!(pairs.names(), ["cosine", "jaccard_estimate"]);
        let cosine = pairs.column("cosine").unwrap();
        assert!(cosine[0].is_nan() && cosine[1..] == [0.9, 0.75]);
        let estimate = pairs.column("jaccard_estimate").unwrap();
        assert!(estimate[..2] == [0.5, 0.25] && estimate[2].is_nan());
        assert_eq!(pairs.column("resemblance"), None);
        let firsts: Vec<Option<f64>> = (0..3).map(|i| pairs.first_score(i)).collect();
        assert_eq!(firsts, [Some(0.5), Some(0.9), Some(0.75)]);
    }
}
