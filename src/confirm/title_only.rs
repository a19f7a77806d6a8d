//! The records that are a title and nothing else, found for a record with more by its
//! title's words.
//!
//! Under the evidence rule, a record with a body and a copy of its title alone are duplicates
//! when their titles' words reach `title_threshold` ([`ConfirmRule::titles_match`]); their
//! whole texts are too unlike for the Jaccard estimate, and the record's vector lies far from
//! the title's. So such a pair needs no vector to be found: an exact join of the titles' word
//! sets ([`SetIndex`], prefix filtering) finds every pair the rule can accept, and nothing
//! else, in a fraction of a vector search's time. The two-stage method adds these pairs to
//! its candidates instead of searching each record's title vector among the title-only
//! records; each pair is still scored by the record's title vector.
//!
//! A title that many title-only records share (an `annual report of the society`) would pair
//! each record under it with all of them: a record keeps its `most` best, by Jaccard, then by
//! document number, as a title's vector search keeps its nearest `k`. The others reach the
//! record through the copies of its title they are.

use rayon::prelude::*;

use super::rule::MIN_TITLE_WORDS;
use super::{ConfirmRule, SketchFacts};
use crate::similarity::SetIndex;

/// The titles of the records that are a title and nothing else, indexed by their words at the
/// rule's `title_threshold`.
pub struct TitleOnlyIndex {
    index: SetIndex<u32>,
    /// The document of each indexed title.
    docs: Vec<u32>,
    rule: ConfirmRule,
}

impl TitleOnlyIndex {
    /// Whether a title (its words' hashes, distinct) is long enough for the title rule to
    /// match on: the titles the index holds, and those a record probes it with.
    pub fn long_enough(title: &[u32]) -> bool {
        title.len() >= MIN_TITLE_WORDS
    }

    /// Indexes the titles (word hashes, distinct) of `title_only`, each with its document,
    /// that are long enough for `rule` to match on.
    pub fn new<'t>(
        title_only: impl IntoIterator<Item = (u32, &'t [u32])>,
        rule: &ConfirmRule,
    ) -> Self {
        let (docs, titles): (Vec<u32>, Vec<&[u32]>) = (title_only.into_iter())
            .filter(|(_, title)| TitleOnlyIndex::long_enough(title))
            .unzip();
        TitleOnlyIndex {
            index: SetIndex::new(titles, rule.title_threshold),
            docs,
            rule: *rule,
        }
    }

    /// Indexes the title-only records of `sides`, each sketches numbered from a first.
    pub fn of_sketches<'s>(
        sides: impl IntoIterator<Item = (&'s SketchFacts, u32)>,
        rule: &ConfirmRule,
    ) -> Self {
        let title_only = sides.into_iter().flat_map(|(sketches, first)| {
            (0..sketches.len()).filter_map(move |doc| {
                let title = sketches.facts(doc).title_alone()?;
                Some((first + doc as u32, title))
            })
        });
        TitleOnlyIndex::new(title_only, rule)
    }

    /// Each record of `records` (numbered from `first`) with a body and a title, paired with
    /// the indexed title-only records whose titles `rule` matches with its title: at most
    /// `most` each, the best by Jaccard, then by document. Pairs `(record, title-only)`, in
    /// the order of the records; `keep` says which title-only records may pair with which
    /// record.
    pub fn copies_of_records(
        &self,
        (records, first): (&SketchFacts, u32),
        most: usize,
        keep: impl Fn(u32, u32) -> bool + Sync,
    ) -> Vec<(u32, u32)> {
        if self.docs.is_empty() {
            return Vec::new();
        }
        (0..records.len())
            .into_par_iter()
            .flat_map_iter(|doc| {
                let record = first + doc as u32;
                let facts = records.facts(doc);
                let title = facts
                    .title
                    .filter(|title| facts.body && TitleOnlyIndex::long_enough(title));
                let mut found: Vec<(f64, u32)> = (title.map(|title| self.copies_of(title)))
                    .into_iter()
                    .flatten()
                    .filter(|&(_, other)| keep(record, other))
                    .collect();
                if found.len() > most {
                    found.sort_unstable_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
                    found.truncate(most);
                    found.sort_unstable_by_key(|&(_, other)| other);
                }
                found.into_iter().map(move |(_, other)| (record, other))
            })
            .collect()
    }

    /// The indexed title-only records that `title` matches, with their titles' Jaccard.
    fn copies_of<'s>(&'s self, title: &'s [u32]) -> impl Iterator<Item = (f64, u32)> + 's {
        (self.index.similar(title).into_iter()).filter_map(move |(at, jaccard)| {
            let words = title.len().min(self.index.size(at));
            let matched = self.rule.titles_match(jaccard, words);
            matched.then(|| (jaccard, self.docs[at as usize]))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confirm::{Facts, Rule, Sketch};

    /// Records of `(title, body)`, as sketches.
    fn sketches(records: &[(&str, &str)]) -> SketchFacts {
        let mut sketches = SketchFacts::default();
        for (title, body) in records {
            sketches.push(4, Facts::of(Some(title), body).as_ref());
        }
        sketches
    }

    #[test]
    fn a_record_finds_the_title_only_copies_the_title_rule_accepts_and_no_others() {
        let rule = ConfirmRule::default();
        let body = "an abstract of the paper in several words";
        let records = [
            ("robot gait training after stroke", body),
            ("robot gait training after stroke", ""),
            ("Robot gait training after stroke [erratum]", ""),
            // Four words and a fifth is another title.
            ("gait training after stroke", ""),
            ("robot gait training after a stroke", ""),
            ("a survey of hospital pharmacy", ""),
            ("a survey of hospital pharmacy", body),
            // Two records with a body are not this rule's.
            ("robot gait training after stroke", body),
            ("editorial notes", ""),
            ("editorial notes", body),
        ];
        let sketches = sketches(&records);
        let index = TitleOnlyIndex::of_sketches([(&sketches, 0)], &rule);
        let found = index.copies_of_records((&sketches, 0), 21, |_, _| true);
        // What the rule decides of every pair of a record with a body and a title-only one.
        let mut accepted = Vec::new();
        for record in [0, 6, 7, 9] {
            for title_only in [1, 2, 3, 4, 5, 8] {
                // Signatures that share nothing: the titles alone decide.
                let sketch = |doc: usize| Sketch {
                    signature: vec![doc as u32; 128],
                    shingles: 4,
                    facts: sketches.facts(doc).to_facts(),
                };
                let (x, y) = (sketch(record), sketch(title_only));
                let banding = crate::sketch::LshParams::optimal(0.8, 128);
                let (_, verdict) = rule.decide(x.as_ref(), y.as_ref(), banding);
                if verdict.rule == Rule::Title {
                    accepted.push((record as u32, title_only as u32));
                }
            }
        }
        assert_eq!(found, accepted);
        assert_eq!(
            found,
            [(0, 1), (0, 2), (0, 4), (6, 5), (7, 1), (7, 2), (7, 4)]
        );
    }

    #[test]
    fn a_title_many_share_keeps_a_records_best_and_keep_chooses_the_side() {
        let rule = ConfirmRule::default();
        let body = "an abstract of the paper in several words";
        let mut records = vec![("annual report of the society", body)];
        records.extend([("annual report of the royal society", ""); 3]);
        records.extend([("annual report of the society", ""); 3]);
        let sketches = sketches(&records);
        let index = TitleOnlyIndex::of_sketches([(&sketches, 10)], &rule);
        // The copies of the title itself first, then the nearest by document.
        let found = index.copies_of_records((&sketches, 10), 4, |_, _| true);
        assert_eq!(found, [(10, 11), (10, 14), (10, 15), (10, 16)]);
        let odd = index.copies_of_records((&sketches, 10), 4, |_, other| other % 2 == 1);
        assert_eq!(odd, [(10, 11), (10, 13), (10, 15)]);
    }
}
