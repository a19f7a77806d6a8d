//! The evidence the confirm stage weighs, beyond the MinHash signature of the whole text.
//!
//! A signature estimates the Jaccard similarity of two whole texts, and that alone misses the
//! partial duplicates of bibliographic data: a record with an abstract against a copy of the
//! title only, a title with an appended erratum note or a translated title in brackets. It also
//! cannot see that `phase ii trial` and `phase iii trial` differ in the one word that matters.
//! So each document keeps a few exact [`Facts`] besides its signature: the words of its title
//! with bracketed notes removed, the number-like words of its text, and whether it has a body.
//! [`Evidence`] gathers what two documents' sketches say, and
//! [`ConfirmRule::decide`](super::ConfirmRule::decide) turns it into a [`Verdict`] that names
//! the rule that decided.

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use super::{MinHasher, Signatures};
use crate::io::Record;
use crate::text::{Shingler, for_each_word, is_number_word, without_notes};

/// The exact facts kept of one document (tens of bytes for a title).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Facts {
    /// Hashes of the title's distinct words, bracketed notes removed, sorted; `None` where the
    /// input has no separate title (one text field, or plain files).
    pub title: Option<Vec<u32>>,
    /// Hashes of the text's distinct number-like words (`2`, `2009`, `iii`), sorted.
    pub numbers: Vec<u32>,
    /// Whether the text has words beyond the title (an abstract, a body).
    pub body: bool,
}

impl Facts {
    /// The facts of a document whose title is `title` (where the input has one) and whose rest
    /// is `body`.
    pub fn of(title: Option<&str>, body: &str) -> Facts {
        let mut numbers = NumberWords::default();
        if let Some(title) = title {
            for_each_word(title, |w| numbers.see(w));
        }
        for_each_word(body, |w| numbers.see(w));
        Facts::with_numbers(title, body, numbers)
    }

    /// The facts, the number-like words of title and body already gathered.
    fn with_numbers(title: Option<&str>, body: &str, numbers: NumberWords) -> Facts {
        let title = title.map(|title| {
            let mut words = Vec::new();
            for_each_word(&without_notes(title), |w| words.push(word_hash(w)));
            sorted_set(words)
        });
        Facts {
            title,
            numbers: sorted_set(numbers.0),
            body: has_words(body),
        }
    }
}

/// The hashes of the number-like words seen.
#[derive(Default)]
struct NumberWords(Vec<u32>);

impl NumberWords {
    fn see(&mut self, word: &str) {
        if is_number_word(word) {
            self.0.push(word_hash(word));
        }
    }
}

/// Whether `text` has a word: a byte scan, the tokeniser only for non-ASCII text without an
/// ASCII word character.
fn has_words(text: &str) -> bool {
    if text.bytes().any(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return true;
    }
    let mut any = false;
    if !text.is_ascii() {
        for_each_word(text, |_| any = true);
    }
    any
}

fn word_hash(word: &str) -> u32 {
    xxh3_64(word.as_bytes()) as u32
}

fn sorted_set(mut hashes: Vec<u32>) -> Vec<u32> {
    hashes.sort_unstable();
    hashes.dedup();
    hashes
}

/// What the confirm stage knows of one document.
#[derive(Clone, Copy, Debug)]
pub struct SketchRef<'a> {
    /// The MinHash signature of the whole text.
    pub signature: &'a [u32],
    /// Distinct shingles of the whole text.
    pub shingles: u32,
    /// The exact facts.
    pub facts: &'a Facts,
}

/// What the confirm stage needs of one document, owned.
#[derive(Clone, Debug, PartialEq)]
pub struct Sketch {
    /// The MinHash signature of the whole text.
    pub signature: Vec<u32>,
    /// Distinct shingles of the whole text.
    pub shingles: u32,
    /// The exact facts.
    pub facts: Facts,
}

impl Sketch {
    /// The sketch of `record` and its shingle set, tokenising its text once.
    pub fn of(record: &Record, shingler: &Shingler, hasher: &MinHasher) -> (Sketch, Vec<u64>) {
        let mut numbers = NumberWords::default();
        let shingles = shingler.shingle_set_seeing_words(&record.text, |w| numbers.see(w));
        let sketch = Sketch {
            signature: hasher.sign(&shingles),
            shingles: shingles.len() as u32,
            facts: Facts::with_numbers(record.title(), record.body(), numbers),
        };
        (sketch, shingles)
    }

    /// Borrows it.
    pub fn as_ref(&self) -> SketchRef<'_> {
        SketchRef {
            signature: &self.signature,
            shingles: self.shingles,
            facts: &self.facts,
        }
    }
}

/// The shingle counts and facts of a corpus, beside its [`Signatures`]: together they give
/// each document's [`SketchRef`].
#[derive(Clone, Debug, Default)]
pub struct SketchFacts {
    shingles: Vec<u32>,
    facts: Vec<Facts>,
}

impl SketchFacts {
    /// Appends the next document's distinct shingle count and facts.
    pub fn push(&mut self, shingles: u32, facts: Facts) {
        self.shingles.push(shingles);
        self.facts.push(facts);
    }

    /// Distinct shingles of document `doc`.
    pub fn shingles(&self, doc: usize) -> u32 {
        self.shingles[doc]
    }

    /// The facts of document `doc`.
    pub fn facts(&self, doc: usize) -> &Facts {
        &self.facts[doc]
    }

    /// Document `doc`'s sketch, its signature taken from `signatures`.
    pub fn get<'a>(&'a self, signatures: &'a Signatures, doc: usize) -> SketchRef<'a> {
        SketchRef {
            signature: signatures.row(doc),
            shingles: self.shingles[doc],
            facts: &self.facts[doc],
        }
    }
}

/// Everything the confirm stage weighs about a pair.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Evidence {
    /// The signatures' Jaccard estimate of the whole texts.
    pub jaccard: f64,
    /// The estimated share of the smaller text's shingles found in the larger (from the
    /// estimate and the two set sizes: `|A∩B| = J(|A|+|B|)/(1+J)`); noisy where the sizes
    /// differ a lot.
    pub containment: f64,
    /// Exact Jaccard of the two titles' words (notes removed), where both have a title.
    pub title_jaccard: Option<f64>,
    /// Distinct title words of the shorter title.
    pub title_words: usize,
    /// Whether each side has a number-like word the other lacks (`phase ii` against `phase iii`).
    pub numbers_differ: bool,
    /// Distinct shingles of the smaller text.
    pub smaller: u32,
    /// Whether both texts have a body beyond the title.
    pub both_bodies: bool,
}

impl Evidence {
    /// Gathers the evidence of two sketches.
    pub fn of(a: SketchRef<'_>, b: SketchRef<'_>) -> Evidence {
        let empty = a.shingles == 0 || b.shingles == 0;
        let jaccard = if empty {
            0.0
        } else {
            super::jaccard_estimate(a.signature, b.signature)
        };
        let smaller = a.shingles.min(b.shingles);
        let containment = if smaller == 0 {
            0.0
        } else {
            let shared = jaccard * f64::from(a.shingles + b.shingles) / (1.0 + jaccard);
            (shared / f64::from(smaller)).min(1.0)
        };
        let (title_jaccard, title_words) = match (&a.facts.title, &b.facts.title) {
            (Some(x), Some(y)) => (Some(set_jaccard(x, y)), x.len().min(y.len())),
            _ => (None, 0),
        };
        let numbers_differ = has_extra(&a.facts.numbers, &b.facts.numbers)
            && has_extra(&b.facts.numbers, &a.facts.numbers);
        Evidence {
            jaccard,
            containment,
            title_jaccard,
            title_words,
            numbers_differ,
            smaller,
            both_bodies: a.facts.body && b.facts.body,
        }
    }
}

/// Exact Jaccard of two sorted sets (0 when both are empty).
pub fn set_jaccard<T: Ord>(a: &[T], b: &[T]) -> f64 {
    let shared = shared_count(a, b);
    let union = a.len() + b.len() - shared;
    if union == 0 {
        0.0
    } else {
        shared as f64 / union as f64
    }
}

/// The number of elements two sorted sets share.
pub fn shared_count<T: Ord>(a: &[T], b: &[T]) -> usize {
    let (mut i, mut j, mut shared) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    shared
}

/// Whether sorted set `a` has an element `b` lacks.
fn has_extra(a: &[u32], b: &[u32]) -> bool {
    shared_count(a, b) < a.len()
}

/// The rule that decided a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// Accepted: the whole texts' Jaccard estimate reached the threshold.
    Jaccard,
    /// Accepted: a shared LSH band (`--confirm band`).
    Band,
    /// Accepted: the titles (notes removed) agree, and at most one side has a body.
    Title,
    /// Refused: a text has fewer distinct words than `min_shingles`.
    ShortText,
    /// Refused: each side has a number the other lacks.
    Numbers,
    /// Refused: no rule reached its threshold.
    Below,
    /// Refused: the embeddings' cosine is below `min_cosine`, so the pair is no candidate.
    Distant,
}

impl Rule {
    /// The rule's name, as JSON writes it.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Jaccard => "jaccard",
            Rule::Band => "band",
            Rule::Title => "title",
            Rule::ShortText => "short-text",
            Rule::Numbers => "numbers",
            Rule::Below => "below",
            Rule::Distant => "distant",
        }
    }

    /// What the rule means, for `explain`.
    pub fn describe(self) -> &'static str {
        match self {
            Rule::Jaccard => "the whole texts' Jaccard estimate reached the threshold",
            Rule::Band => "the signatures share an LSH band",
            Rule::Title => {
                "the titles agree (notes removed) and at most one record has an abstract"
            }
            Rule::ShortText => "a text is too short to judge (fewer words than min_shingles)",
            Rule::Numbers => "each record has a number the other lacks (phase ii / phase iii)",
            Rule::Below => "no rule reached its threshold",
            Rule::Distant => "the embeddings' cosine is below min_cosine: not a candidate",
        }
    }
}

/// A decision and the rule behind it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Whether the pair is a duplicate.
    pub duplicate: bool,
    /// The rule that decided.
    pub rule: Rule,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_lose_their_notes_and_numbers_are_collected_from_every_field() {
        let plain = Facts::of(Some("Robot-assisted gait"), "");
        let noted = Facts::of(
            Some("Robot-assisted gait.[erratum appears in exp brain res. 2010 may;202(4):943]"),
            "",
        );
        assert_eq!(plain.title, noted.title);
        assert!(!noted.body);
        assert_eq!(noted.numbers.len(), 4, "2010 202 4 943");
        let with_body = Facts::of(Some("A phase II trial"), "We enrolled 40 patients.");
        assert!(with_body.body);
        assert_eq!(with_body.numbers.len(), 2, "ii and 40");
        assert_eq!(Facts::of(None, "text").title, None);
    }

    #[test]
    fn numbers_differ_only_when_each_side_has_its_own() {
        let sign = vec![1u32; 4];
        let facts = |title: &str| Facts::of(Some(title), "");
        let (two, three, note) = (
            facts("phase ii trial of x"),
            facts("phase iii trial of x"),
            facts("phase ii trial of x (vol 3)"),
        );
        let sketch = |facts| SketchRef {
            signature: &sign,
            shingles: 4,
            facts,
        };
        assert!(Evidence::of(sketch(&two), sketch(&three)).numbers_differ);
        assert!(!Evidence::of(sketch(&two), sketch(&note)).numbers_differ);
        let evidence = Evidence::of(sketch(&two), sketch(&note));
        assert_eq!(evidence.title_jaccard, Some(1.0));
        assert_eq!(evidence.jaccard, 1.0);
        assert_eq!(evidence.containment, 1.0);
    }
}
