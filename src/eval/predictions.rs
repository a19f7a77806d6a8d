//! A run's predicted duplicates, kept in the shape the run gives them.
//!
//! In group mode a document's predicted set is the rest of its group. Materialising that set
//! per document costs the sum of the squared group sizes: a threshold low enough to chain most
//! of a corpus into one group makes it quadratic (a two-stage run of bib-dedupe re-thresholded
//! at cosine 0.5 grew past 11 GB). Kept as group ids, a document's predicted set has its size
//! and a membership test in O(1), and scoring is O(documents + labelled pairs) at any threshold.

use std::collections::{HashMap, HashSet};

/// Predicted duplicates per document.
#[derive(Clone, Debug)]
pub enum Predictions {
    /// The rest of the document's group: each grouped document's group, and each group's size.
    Groups {
        /// Group of each document in a group (others are absent).
        group_of: HashMap<String, u32>,
        /// Members per group.
        sizes: Vec<usize>,
    },
    /// The document's confirmed pair partners.
    Pairs(HashMap<String, HashSet<String>>),
}

impl Predictions {
    /// Predictions from groups of member ids.
    pub fn from_groups<I, G, S>(groups: I) -> Predictions
    where
        I: IntoIterator<Item = G>,
        G: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut group_of = HashMap::new();
        let mut sizes = Vec::new();
        for (n, members) in groups.into_iter().enumerate() {
            let before = group_of.len();
            for id in members {
                group_of.insert(id.into(), n as u32);
            }
            sizes.push(group_of.len() - before);
        }
        Predictions::Groups { group_of, sizes }
    }

    /// Predictions from confirmed pairs.
    pub fn from_pairs<I, S>(pairs: I) -> Predictions
    where
        I: IntoIterator<Item = (S, S)>,
        S: Into<String>,
    {
        let mut partners: HashMap<String, HashSet<String>> = HashMap::new();
        for (a, b) in pairs {
            let (a, b) = (a.into(), b.into());
            partners.entry(a.clone()).or_default().insert(b.clone());
            partners.entry(b).or_default().insert(a);
        }
        Predictions::Pairs(partners)
    }

    /// How many duplicates `id` is predicted to have.
    pub fn count(&self, id: &str) -> usize {
        match self {
            Predictions::Groups { group_of, sizes } => {
                group_of.get(id).map_or(0, |&g| sizes[g as usize] - 1)
            }
            Predictions::Pairs(partners) => partners.get(id).map_or(0, HashSet::len),
        }
    }

    /// Whether `other` is predicted a duplicate of `id`.
    pub fn contains(&self, id: &str, other: &str) -> bool {
        if id == other {
            return false;
        }
        match self {
            Predictions::Groups { group_of, .. } => {
                matches!((group_of.get(id), group_of.get(other)), (Some(x), Some(y)) if x == y)
            }
            Predictions::Pairs(partners) => partners.get(id).is_some_and(|p| p.contains(other)),
        }
    }

    /// The documents predicted to have a duplicate.
    pub fn ids(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        match self {
            Predictions::Groups { group_of, .. } => Box::new(group_of.keys().map(String::as_str)),
            Predictions::Pairs(partners) => Box::new(partners.keys().map(String::as_str)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_pairs_answer_alike_where_they_agree() {
        let groups = Predictions::from_groups([vec!["a", "b", "c"], vec!["d", "e"]]);
        let pairs = Predictions::from_pairs([("a", "b"), ("b", "c"), ("a", "c"), ("d", "e")]);
        for p in [&groups, &pairs] {
            assert_eq!((p.count("a"), p.count("d"), p.count("z")), (2, 1, 0));
            assert!(p.contains("a", "c") && p.contains("e", "d"));
            assert!(!p.contains("a", "d") && !p.contains("a", "a") && !p.contains("z", "a"));
            assert_eq!(p.ids().count(), 5);
        }
        // A chain is one group, but only its links are pairs.
        let chain = Predictions::from_pairs([("a", "b"), ("b", "c")]);
        assert!(!chain.contains("a", "c"));
    }
}
