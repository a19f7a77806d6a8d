//! Synthetic labelled corpora in the CORE 2020 layout, for tests and benchmarks at any size.
//!
//! The corpus follows the published CORE distribution of labelled duplicates per document
//! (half the documents have none, a third have one, a long tail up to thirteen), scaled to the
//! requested size. Words come from a made-up lexicon drawn with a Zipf law, so unrelated
//! documents share common words as real ones do. In a group, members are exact copies or edited
//! variants of one base document, with the edits seen in repository data: dropped, inserted and
//! swapped words, a repository prefix glued to the first word ("audiencethe ..."), truncation,
//! and case and punctuation changes. `cat` is `exact_dup` when the processed text equals a group
//! mate's, else `near_dup`; singletons are `non_dup`.
//!
//! Every document is a function of `(seed, group, member)` alone, so output is identical for a
//! seed on every machine, and memory is a few bytes per document.

use std::io::Write;
use std::path::Path;

use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::output::AtomicFile;
use crate::progress;

/// Documents with `k` labelled duplicates per 100,000 in CORE 2020, for `k = 0..=13`.
const CORE_DUPLICATES_PER_100K: [u64; 14] = [
    50_000, 36_166, 7_620, 3_108, 1_370, 756, 441, 216, 108, 60, 66, 48, 13, 28,
];

/// Noise that repositories glue to the front of an abstract.
const REPOSITORY_PREFIXES: [&str; 6] = [
    "audience",
    "abstractobjectives",
    "peer reviewed ",
    "fulltext .pdf publisher ",
    "publishedcomparative study",
    "summary",
];

/// Of the edited copies of a record that has an abstract, the share that keeps its title only
/// (`neardup gen --help` states these rates: keep it in step).
pub const TITLE_ONLY_SHARE: f64 = 0.15;
/// Of the edited copies, the share whose title gets a bibliographic note appended
/// (`[erratum appears in ...]`, `(vol 12, pg 34, 2009)`).
pub const NOTE_SHARE: f64 = 0.1;
/// Of the one-document groups, the share that is the next part or phase of the group before:
/// the same text with its series number raised (`phase ii` / `phase iii`), not a duplicate.
pub const SERIES_SHARE: f64 = 0.03;

/// The mean length in words of a generated abstract, unless asked otherwise.
pub const DEFAULT_ABSTRACT_WORDS: usize = 140;

/// The words that number a series.
const SERIES_WORDS: [&str; 3] = ["phase", "part", "study"];

/// The `n`th of a series: roman after `phase`, digits otherwise.
fn numeral(word: &str, n: usize) -> String {
    const ROMAN: [&str; 5] = ["i", "ii", "iii", "iv", "v"];
    match word {
        "phase" => ROMAN[n - 1].to_owned(),
        _ => n.to_string(),
    }
}

/// One generated document in the CORE layout.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GeneratedDoc {
    /// Digits, as in CORE.
    pub core_id: String,
    /// A made-up DOI, or null.
    pub doi: Option<String>,
    /// Title with capitals and punctuation.
    pub original_title: String,
    /// Abstract with capitals and punctuation.
    pub original_abstract: String,
    /// Lower-cased title.
    pub processed_title: String,
    /// Lower-cased abstract.
    pub processed_abstract: String,
    /// `exact_dup`, `near_dup` or `non_dup`.
    pub cat: String,
    /// Ids of the other members of its group.
    pub labelled_duplicates: Vec<String>,
}

/// A deterministic corpus of `docs` documents drawn from `seed`.
pub struct Generator {
    seed: u64,
    lexicon: Vec<String>,
    zipf_cdf: Vec<f64>,
    /// Start of each group in the flat (group, member) numbering, plus a final end.
    group_start: Vec<u32>,
    /// Output position of each flat (group, member) index.
    position: Vec<u32>,
    /// Words in an abstract: drawn uniformly from this range.
    abstract_words: std::ops::Range<usize>,
    /// Flat index at each output position.
    at_position: Vec<u32>,
}

impl Generator {
    /// Plans a corpus of `docs` documents.
    pub fn new(docs: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let lexicon = make_lexicon(&mut rng, 30_000);
        let zipf_cdf = zipf_cdf(lexicon.len(), 1.05);

        let mut sizes = Vec::new();
        let mut planned = 0u64;
        for (k, &per_100k) in CORE_DUPLICATES_PER_100K.iter().enumerate().skip(1) {
            let size = k as u64 + 1;
            let groups = (per_100k * docs as u64 / 100_000) / size;
            for _ in 0..groups {
                if planned + size <= docs as u64 {
                    sizes.push(size as u32);
                    planned += size;
                }
            }
        }
        sizes.extend(std::iter::repeat_n(1, docs - planned as usize));
        sizes.shuffle(&mut rng);

        let mut group_start = Vec::with_capacity(sizes.len() + 1);
        let mut total = 0u32;
        for s in &sizes {
            group_start.push(total);
            total += s;
        }
        group_start.push(total);
        let mut at_position: Vec<u32> = (0..total).collect();
        at_position.shuffle(&mut rng);
        let mut position = vec![0u32; total as usize];
        for (pos, &flat) in at_position.iter().enumerate() {
            position[flat as usize] = pos as u32;
        }
        Generator {
            seed,
            lexicon,
            zipf_cdf,
            group_start,
            position,
            at_position,
            abstract_words: Self::abstract_range(DEFAULT_ABSTRACT_WORDS),
        }
    }

    /// Abstracts of `mean` words on average instead of [`DEFAULT_ABSTRACT_WORDS`] (CORE's
    /// full records run to about 250), drawn from a range scaled like the default one.
    pub fn with_abstract_words(mut self, mean: usize) -> Self {
        self.abstract_words = Self::abstract_range(mean);
        self
    }

    /// 60 to 220 words at the default mean of 140, scaled to `mean`.
    fn abstract_range(mean: usize) -> std::ops::Range<usize> {
        let lo = 60 * mean / DEFAULT_ABSTRACT_WORDS;
        let hi = (220 * mean / DEFAULT_ABSTRACT_WORDS).max(lo + 1);
        lo..hi
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.at_position.len()
    }

    /// Whether the corpus is empty.
    pub fn is_empty(&self) -> bool {
        self.at_position.is_empty()
    }

    fn id_at(&self, position: u32) -> String {
        (10_000_000u64 + u64::from(position)).to_string()
    }

    /// The document at output position `position`.
    pub fn doc(&self, position: usize) -> GeneratedDoc {
        let flat = self.at_position[position];
        let group = self.group_start.partition_point(|&s| s <= flat) - 1;
        let start = self.group_start[group];
        let end = self.group_start[group + 1];
        let member = (flat - start) as usize;
        let texts = self.group_texts(group as u64, (end - start) as usize);
        let (title, abstract_) = &texts[member];
        let processed = |s: &str| {
            s.to_lowercase()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        let processed_of = |t: &(String, String)| (processed(&t.0), processed(&t.1));
        let mine = processed_of(&texts[member]);
        let cat = if texts.len() == 1 {
            "non_dup"
        } else if texts
            .iter()
            .enumerate()
            .any(|(i, t)| i != member && processed_of(t) == mine)
        {
            "exact_dup"
        } else {
            "near_dup"
        };
        let labelled_duplicates = (start..end)
            .filter(|&f| f != flat)
            .map(|f| self.id_at(self.position[f as usize]))
            .collect();
        let mut rng = self.rng(&[group as u64, 1 << 32]);
        let doi = rng
            .random_bool(0.6)
            .then(|| format!("10.{}/{}", 1000 + group % 9000, group));
        GeneratedDoc {
            core_id: self.id_at(position as u32),
            doi,
            original_title: title.clone(),
            original_abstract: abstract_.clone(),
            processed_title: mine.0,
            processed_abstract: mine.1,
            cat: cat.into(),
            labelled_duplicates,
        }
    }

    fn rng(&self, parts: &[u64]) -> ChaCha8Rng {
        let mut key = self.seed ^ 0x9e37_79b9_7f4a_7c15;
        for &p in parts {
            key = key.rotate_left(27) ^ p.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        }
        ChaCha8Rng::seed_from_u64(key)
    }

    fn word(&self, rng: &mut ChaCha8Rng) -> &str {
        let u: f64 = rng.random();
        let i = self.zipf_cdf.partition_point(|&c| c < u);
        &self.lexicon[i.min(self.lexicon.len() - 1)]
    }

    /// Title and abstract of every member of a group of `size`.
    fn group_texts(&self, group: u64, size: usize) -> Vec<(String, String)> {
        let (title, abstract_) = self.base(group as usize);
        let exact_group = self.rng(&[group, 2 << 32]).random_bool(0.75);
        (0..size)
            .map(|member| {
                let mut rng = self.rng(&[group, member as u64 + 1]);
                if member == 0 || (exact_group && !rng.random_bool(0.1)) {
                    return (
                        sentence_case(&title, &mut rng, false),
                        sentence_case(&abstract_, &mut rng, false),
                    );
                }
                let mut t = title.clone();
                let mut a = abstract_.clone();
                if !a.is_empty() && rng.random_bool(TITLE_ONLY_SHARE) {
                    a.clear();
                } else {
                    self.edit(&mut t, &mut a, &mut rng);
                }
                let mut t = sentence_case(&t, &mut rng, true);
                if rng.random_bool(NOTE_SHARE) {
                    t.push_str(&self.note(&mut rng));
                }
                (t, sentence_case(&a, &mut rng, true))
            })
            .collect()
    }

    fn group_size(&self, group: usize) -> u32 {
        match self.group_start.get(group + 1) {
            Some(&end) => end - self.group_start[group],
            None => 0,
        }
    }

    /// Whether `group` is the next part of `group - 1` (a one-document group whose text is
    /// that group's with the series number raised), and if so the series word and the
    /// partner's number.
    fn series(&self, group: usize) -> Option<(&'static str, usize)> {
        let coin = |g: usize| self.rng(&[g as u64, 3 << 32]).random_bool(SERIES_SHARE);
        if group == 0 || self.group_size(group) != 1 || !coin(group) || coin(group - 1) {
            return None;
        }
        let mut rng = self.rng(&[group as u64, 4 << 32]);
        Some((
            SERIES_WORDS[rng.random_range(0..SERIES_WORDS.len())],
            rng.random_range(1..4),
        ))
    }

    /// The words of a group's original record: its own, or for the next part of a series its
    /// partner's with the number raised.
    fn base(&self, group: usize) -> (Vec<String>, Vec<String>) {
        if let Some((word, n)) = self.series(group) {
            let (mut title, abstract_) = self.own_words(group - 1);
            title.extend([word.to_owned(), numeral(word, n + 1)]);
            return (title, abstract_);
        }
        let (mut title, abstract_) = self.own_words(group);
        if let Some((word, n)) = self.series(group + 1) {
            title.extend([word.to_owned(), numeral(word, n)]);
        }
        (title, abstract_)
    }

    fn own_words(&self, group: usize) -> (Vec<String>, Vec<String>) {
        let mut rng = self.rng(&[group as u64]);
        let title_len = rng.random_range(5..15);
        let title: Vec<String> = (0..title_len)
            .map(|_| self.word(&mut rng).to_owned())
            .collect();
        let abstract_len = if rng.random_bool(0.05) {
            0
        } else {
            rng.random_range(self.abstract_words.clone())
        };
        let abstract_ = (0..abstract_len)
            .map(|_| self.word(&mut rng).to_owned())
            .collect();
        (title, abstract_)
    }

    /// A bibliographic note as catalogues append them to a title.
    fn note(&self, rng: &mut ChaCha8Rng) -> String {
        let year = rng.random_range(1990..2021);
        let (volume, page) = (rng.random_range(1..400), rng.random_range(1..3000));
        if rng.random_bool(0.5) {
            let journal = self.word(rng).to_owned();
            format!(
                "[erratum appears in {journal} {year};{volume}({}):{page}]",
                rng.random_range(1..13)
            )
        } else {
            format!(" (vol {volume}, pg {page}, {year})")
        }
    }

    /// Applies one to three repository-style edits.
    fn edit(&self, title: &mut Vec<String>, abstract_: &mut Vec<String>, rng: &mut ChaCha8Rng) {
        for _ in 0..rng.random_range(1..4) {
            let text = if abstract_.is_empty() || rng.random_bool(0.2) {
                &mut *title
            } else {
                &mut *abstract_
            };
            if text.is_empty() {
                continue;
            }
            match rng.random_range(0..6) {
                0 => {
                    let drops = 1 + text.len() / 30;
                    for _ in 0..drops {
                        if text.len() > 1 {
                            let i = rng.random_range(0..text.len());
                            text.remove(i);
                        }
                    }
                }
                1 => {
                    let inserts = 1 + text.len() / 30;
                    for _ in 0..inserts {
                        let i = rng.random_range(0..=text.len());
                        let w = self.word(rng).to_owned();
                        text.insert(i, w);
                    }
                }
                2 => {
                    for _ in 0..1 + text.len() / 20 {
                        if text.len() > 1 {
                            let i = rng.random_range(0..text.len() - 1);
                            text.swap(i, i + 1);
                        }
                    }
                }
                3 => {
                    let prefix =
                        REPOSITORY_PREFIXES[rng.random_range(0..REPOSITORY_PREFIXES.len())];
                    text[0] = format!("{prefix}{}", text[0]);
                }
                4 => {
                    let keep = (text.len() as f64 * rng.random_range(0.55..0.95)).ceil() as usize;
                    text.truncate(keep.max(1));
                }
                _ => {
                    let i = rng.random_range(0..text.len());
                    text[i] = text[i].to_uppercase();
                }
            }
        }
    }

    /// Writes the corpus as JSONL to `path`, atomically, with a progress bar.
    pub fn write(&self, path: &Path) -> Result<()> {
        let mut file = AtomicFile::create(path)?;
        let bar = progress::items(self.len() as u64, "generating");
        for position in 0..self.len() {
            let doc = self.doc(position);
            serde_json::to_writer(&mut file, &doc).map_err(|e| Error::io(path, e.into()))?;
            file.write_all(b"\n").map_err(|e| Error::io(path, e))?;
            if position % 4096 == 0 {
                bar.set_position(position as u64);
            }
        }
        bar.finish_and_clear();
        file.commit()
    }
}

/// Capitalises the first word and puts a full stop every dozen or so words; with `noisy`, the
/// punctuation shifts a little, as between two repository copies.
fn sentence_case(words: &[String], rng: &mut ChaCha8Rng, noisy: bool) -> String {
    let mut out = String::new();
    let mut sentence_start = true;
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if sentence_start {
            let mut chars = w.chars();
            if let Some(first) = chars.next() {
                out.extend(first.to_uppercase());
                out.push_str(chars.as_str());
            }
        } else {
            out.push_str(w);
        }
        let stop = if noisy {
            rng.random_bool(0.08)
        } else {
            (i + 1) % 12 == 0
        };
        sentence_start = stop;
        if stop && i + 1 < words.len() {
            out.push(if noisy && rng.random_bool(0.3) {
                ','
            } else {
                '.'
            });
        }
    }
    if !words.is_empty() {
        out.push('.');
    }
    out
}

/// Pronounceable made-up words, distinct, shortest first (the most frequent get the shortest
/// forms, as in natural language).
fn make_lexicon(rng: &mut ChaCha8Rng, size: usize) -> Vec<String> {
    const ONSETS: [&str; 16] = [
        "b", "c", "d", "f", "g", "l", "m", "n", "p", "r", "s", "t", "v", "st", "pr", "tr",
    ];
    const VOWELS: [&str; 6] = ["a", "e", "i", "o", "u", "io"];
    let mut seen = std::collections::HashSet::new();
    let mut words = Vec::with_capacity(size);
    while words.len() < size {
        let syllables = 1 + words.len() * 4 / size + rng.random_range(0..2);
        let mut w = String::new();
        for _ in 0..syllables {
            w.push_str(ONSETS[rng.random_range(0..ONSETS.len())]);
            w.push_str(VOWELS[rng.random_range(0..VOWELS.len())]);
        }
        if rng.random_bool(0.3) {
            w.push_str(["n", "s", "l", "r", "x"][rng.random_range(0..5)]);
        }
        if seen.insert(w.clone()) {
            words.push(w);
        }
    }
    words
}

fn zipf_cdf(n: usize, exponent: f64) -> Vec<f64> {
    let weights: Vec<f64> = (1..=n).map(|r| 1.0 / (r as f64).powf(exponent)).collect();
    let total: f64 = weights.iter().sum();
    let mut acc = 0.0;
    weights
        .iter()
        .map(|w| {
            acc += w / total;
            acc
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn same_seed_same_corpus() {
        let a = Generator::new(500, 3);
        let b = Generator::new(500, 3);
        let c = Generator::new(500, 4);
        assert_eq!(a.doc(17), b.doc(17));
        assert_ne!(a.doc(17), c.doc(17));
    }

    #[test]
    fn labels_are_symmetric_and_follow_the_core_distribution() {
        let g = Generator::new(10_000, 1);
        let docs: Vec<GeneratedDoc> = (0..g.len()).map(|i| g.doc(i)).collect();
        assert_eq!(docs.len(), 10_000);
        let by_id: HashMap<&str, &GeneratedDoc> =
            docs.iter().map(|d| (d.core_id.as_str(), d)).collect();
        assert_eq!(by_id.len(), 10_000, "ids are unique");
        let mut with_k = [0usize; 14];
        for d in &docs {
            with_k[d.labelled_duplicates.len()] += 1;
            for other in &d.labelled_duplicates {
                assert!(
                    by_id[other.as_str()]
                        .labelled_duplicates
                        .contains(&d.core_id)
                );
            }
            assert_eq!(d.cat == "non_dup", d.labelled_duplicates.is_empty());
        }
        // Within rounding of the published shares (50% none, 36% one, 7.6% two).
        assert!((4_950..=5_100).contains(&with_k[0]), "{with_k:?}");
        assert!((3_550..=3_650).contains(&with_k[1]), "{with_k:?}");
        assert!((700..=800).contains(&with_k[2]), "{with_k:?}");
        let near = docs.iter().filter(|d| d.cat == "near_dup").count();
        let exact = docs.iter().filter(|d| d.cat == "exact_dup").count();
        assert!(near > 500 && exact > 2_000, "near {near}, exact {exact}");
    }

    #[test]
    fn partial_duplicates_and_series_are_generated_at_their_rates() {
        let g = Generator::new(20_000, 5);
        let docs: Vec<GeneratedDoc> = (0..g.len()).map(|i| g.doc(i)).collect();
        let by_id: HashMap<&str, &GeneratedDoc> =
            docs.iter().map(|d| (d.core_id.as_str(), d)).collect();
        let title_only = docs
            .iter()
            .filter(|d| {
                d.processed_abstract.is_empty()
                    && d.labelled_duplicates
                        .iter()
                        .any(|o| !by_id[o.as_str()].processed_abstract.is_empty())
            })
            .count();
        let noted = docs
            .iter()
            .filter(|d| d.cat == "near_dup" && d.processed_title.contains("erratum appears in"))
            .count();
        assert!(
            title_only > 100 && noted > 20,
            "{title_only} title-only, {noted} noted"
        );
        // A series member is a non-duplicate whose title differs from another record's in its
        // last word, the number.
        let stem = |d: &GeneratedDoc| {
            let title = d.processed_title.trim_end_matches('.');
            title.rsplit_once(' ').map(|(stem, _)| stem.to_owned())
        };
        let mut by_stem: HashMap<String, Vec<&GeneratedDoc>> = HashMap::new();
        for d in &docs {
            if let Some(stem) = stem(d) {
                by_stem.entry(stem).or_default().push(d);
            }
        }
        let series = docs
            .iter()
            .filter(|d| d.cat == "non_dup")
            .filter(|d| {
                let Some(stem) = stem(d) else { return false };
                SERIES_WORDS.iter().any(|w| stem.ends_with(w))
                    && by_stem[&stem]
                        .iter()
                        .any(|o| o.processed_title != d.processed_title)
            })
            .count();
        assert!(series > 5, "{series} series members");
    }

    #[test]
    fn near_duplicates_differ_and_exact_ones_do_not() {
        let g = Generator::new(2_000, 9);
        let docs: Vec<GeneratedDoc> = (0..g.len()).map(|i| g.doc(i)).collect();
        let by_id: HashMap<&str, &GeneratedDoc> =
            docs.iter().map(|d| (d.core_id.as_str(), d)).collect();
        for d in docs.iter().filter(|d| d.cat == "exact_dup") {
            let text = (&d.processed_title, &d.processed_abstract);
            assert!(d.labelled_duplicates.iter().any(|o| {
                let o = by_id[o.as_str()];
                (&o.processed_title, &o.processed_abstract) == text
            }));
        }
        assert!(docs.iter().any(|d| {
            REPOSITORY_PREFIXES
                .iter()
                .any(|p| d.processed_abstract.starts_with(p.trim_end()) && d.cat == "near_dup")
        }));
    }
}
