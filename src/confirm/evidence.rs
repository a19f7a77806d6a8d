//! The evidence the confirm stage weighs, beyond the MinHash signature of the whole text.
//!
//! A signature estimates the Jaccard similarity of two whole texts, and that alone misses the
//! partial duplicates of bibliographic data: a record with an abstract against a copy of the
//! title only, a title with an appended erratum note or a translated title in brackets. It also
//! cannot see that `phase ii trial` and `phase iii trial` differ in the one word that matters.
//! So each document keeps a few exact [`Facts`] besides its signature: the words of its title
//! with bracketed notes removed, the number-like words of its text, whether it has a body, and
//! a bottom-k sample of its word hashes that estimates containment where the two texts' sizes
//! differ (a truncated abstract against the full one), which the signature cannot.
//! [`Evidence`] gathers what two documents' sketches say, and
//! [`ConfirmRule::decide`](super::ConfirmRule::decide) turns it into a
//! [`Verdict`](super::Verdict) that names the rule that decided.

use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use crate::io::{Record, read_list, write_list};
use crate::prefetch::{AHEAD, prefetch};
use crate::similarity::{set_jaccard, shared_count};
use crate::sketch::{MinHasher, Signatures, jaccard_estimate};
use crate::text::{Shingler, for_each_word, is_number_word, without_notes};

/// How many of a text's shingle hashes its [`Facts::sample`] keeps: enough that the
/// containment estimate rarely crosses the rule's threshold by chance (on the suite's candidate
/// pairs 0.1% of verdicts differ from exact word sets, against 2.7% with 64).
pub const SAMPLE_SIZE: usize = 128;

/// The exact facts kept of one document (tens of bytes for a title, 512 more for the sample).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Facts {
    /// Hashes of the title's distinct words, bracketed notes removed, sorted; `None` where the
    /// input has no separate title (one text field, or plain files).
    pub title: Option<Vec<u32>>,
    /// Hashes of the text's distinct number-like words (`2`, `2009`, `iii`), sorted.
    pub numbers: Vec<u32>,
    /// Hashes of the title's distinct number-like words, bracketed notes included (`part
    /// (ii)`), sorted. Empty in indexes built before it was kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub title_numbers: Vec<u32>,
    /// Whether the text has words beyond the title (an abstract, a body).
    pub body: bool,
    /// The smallest [`SAMPLE_SIZE`] shingle hashes of the text (their high 32 bits, sorted): a
    /// bottom-k sample that estimates how much of one text another contains, however different
    /// their sizes. Empty in indexes built before it was kept; the containment then comes from
    /// the signatures.
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "base64_words")]
    pub sample: Vec<u32>,
}

/// The bottom-k sample of a sorted shingle-hash set: its first [`SAMPLE_SIZE`] hashes.
fn bottom_sample(shingles: &[u64]) -> Vec<u32> {
    let mut sample: Vec<u32> = shingles
        .iter()
        .take(SAMPLE_SIZE)
        .map(|h| (h >> 32) as u32)
        .collect();
    sample.dedup();
    sample
}

/// 32-bit words as base64 of their little-endian bytes: a tenth of the JSON of a list of
/// integers, and read back by a copy. Samples are serialised so, and the store writes
/// signatures so in point payloads.
pub(crate) mod base64_words {
    use base64::Engine as _;
    use base64::prelude::BASE64_STANDARD;
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

    /// The base64 text of `words`.
    pub(crate) fn encode(words: &[u32]) -> String {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        BASE64_STANDARD.encode(bytes)
    }

    /// The words of [`encode`]'s text; `None` if it is not base64 of whole words.
    pub(crate) fn decode(text: &str) -> Option<Vec<u32>> {
        let bytes = BASE64_STANDARD.decode(text).ok()?;
        let words = bytes.chunks_exact(4);
        if !words.remainder().is_empty() {
            return None;
        }
        Some(
            words
                .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                .collect(),
        )
    }

    pub fn serialize<S: Serializer>(words: &[u32], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&encode(words))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u32>, D::Error> {
        let text = String::deserialize(deserializer)?;
        decode(&text).ok_or_else(|| D::Error::custom("a sample is not base64 of 32-bit words"))
    }
}

impl Facts {
    /// Whether the record is a title and nothing else.
    pub fn title_only(&self) -> bool {
        self.title.is_some() && !self.body
    }

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
        let mut title_numbers = NumberWords::default();
        let title = title.map(|title| {
            for_each_word(title, |w| title_numbers.see(w));
            let mut words = Vec::new();
            for_each_word(&without_notes(title), |w| words.push(word_hash(w)));
            sorted_set(words)
        });
        Facts {
            title,
            numbers: sorted_set(numbers.0),
            title_numbers: sorted_set(title_numbers.0),
            body: has_words(body),
            sample: Vec::new(),
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
        let mut facts = Facts::with_numbers(record.title(), record.body(), numbers);
        facts.sample = bottom_sample(&shingles);
        let sketch = Sketch {
            signature: hasher.sign(&shingles),
            shingles: shingles.len() as u32,
            facts,
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
/// each document's [`SketchRef`]. An exact copy of an earlier document shares its facts
/// ([`SketchFacts::push_copy_of`]).
#[derive(Clone, Debug, Default)]
pub struct SketchFacts {
    shingles: Vec<u32>,
    /// The facts, each stored once.
    facts: Vec<Facts>,
    /// Each document's place in `facts`, from the first document that shares another's;
    /// `None` while each document's facts are its own, in order.
    slots: Option<Vec<u32>>,
}

/// Two are equal when they give every document the same shingle count and facts, however
/// stored.
impl PartialEq for SketchFacts {
    fn eq(&self, other: &Self) -> bool {
        self.shingles == other.shingles
            && (0..self.len()).all(|doc| self.facts(doc) == other.facts(doc))
    }
}

impl SketchFacts {
    /// Appends the next document's distinct shingle count and facts.
    pub fn push(&mut self, shingles: u32, facts: Facts) {
        if let Some(slots) = &mut self.slots {
            slots.push(self.facts.len() as u32);
        }
        self.shingles.push(shingles);
        self.facts.push(facts);
    }

    /// Where document `doc`'s facts are stored.
    fn slot(&self, doc: usize) -> usize {
        match &self.slots {
            Some(slots) => slots[doc] as usize,
            None => doc,
        }
    }

    /// Appends a document's `sketch`: its signature to `signatures`, the rest here.
    pub fn push_sketch(&mut self, signatures: &mut Signatures, sketch: SketchRef<'_>) {
        signatures.push(sketch.signature, sketch.shingles == 0);
        self.push(sketch.shingles, sketch.facts.clone());
    }

    /// Appends a document whose sketch is document `of`'s (an exact copy of its text): its
    /// signature to `signatures`, the rest here, both sharing `of`'s instead of storing them
    /// again.
    pub fn push_copy_of(&mut self, signatures: &mut Signatures, of: usize) {
        signatures.push_copy_of(of);
        let slot = self.slot(of) as u32;
        let documents = self.len() as u32;
        self.slots
            .get_or_insert_with(|| (0..documents).collect())
            .push(slot);
        self.shingles.push(self.shingles[of]);
    }

    /// Appends the documents of `other`.
    pub fn extend(&mut self, other: SketchFacts) {
        if self.slots.is_some() || other.slots.is_some() {
            let (documents, stored) = (self.len() as u32, self.facts.len() as u32);
            let slots = self.slots.get_or_insert_with(|| (0..documents).collect());
            match &other.slots {
                Some(theirs) => slots.extend(theirs.iter().map(|&slot| stored + slot)),
                None => slots.extend((0..other.len() as u32).map(|doc| stored + doc)),
            }
        }
        self.shingles.extend(other.shingles);
        self.facts.extend(other.facts);
    }

    /// Appends documents `docs` of another corpus (its `signatures` and these facts), moving
    /// their facts out of it rather than copying them: what a batch takes from the collection
    /// it is checked against. Documents that share their facts there share them here.
    pub fn take_from(
        &mut self,
        signatures: &mut Signatures,
        (their_signatures, theirs): (&Signatures, &mut SketchFacts),
        docs: &[u32],
    ) {
        // Each of their stored facts, the document here that took it.
        let mut taken = vec![u32::MAX; theirs.facts.len()];
        for &doc in docs {
            let (doc, slot) = (doc as usize, theirs.slot(doc as usize));
            match taken[slot] {
                u32::MAX => {
                    taken[slot] = self.len() as u32;
                    let shingles = theirs.shingles[doc];
                    signatures.push(their_signatures.row(doc), shingles == 0);
                    self.push(shingles, std::mem::take(&mut theirs.facts[slot]));
                }
                first => self.push_copy_of(signatures, first as usize),
            }
        }
    }

    /// The number of documents.
    pub fn len(&self) -> usize {
        self.shingles.len()
    }

    /// Whether there are no documents.
    pub fn is_empty(&self) -> bool {
        self.shingles.is_empty()
    }

    /// Distinct shingles of document `doc`.
    pub fn shingles(&self, doc: usize) -> u32 {
        self.shingles[doc]
    }

    /// The facts of document `doc`.
    pub fn facts(&self, doc: usize) -> &Facts {
        &self.facts[self.slot(doc)]
    }

    /// Starts loading the sketches that the pairs after the `i`th will read, one link further
    /// the nearer they are (signature and facts, then the facts' words); `pair(j)` gives the
    /// `j`th pair, `None` past the end. Candidates visit documents in no order, and a
    /// visit's waits on memory overlap only when asked for ahead (see `src/prefetch.rs`).
    pub fn prefetch_ahead(
        &self,
        signatures: &Signatures,
        i: usize,
        pair: impl Fn(usize) -> Option<(u32, u32)>,
    ) {
        for doc in pair(i + 2 * AHEAD).into_iter().flat_map(|(a, b)| [a, b]) {
            for line in signatures.row(doc as usize).chunks(16) {
                prefetch(line.as_ptr());
            }
            prefetch(self.facts(doc as usize));
        }
        for doc in pair(i + AHEAD).into_iter().flat_map(|(a, b)| [a, b]) {
            let facts = self.facts(doc as usize);
            if let Some(title) = &facts.title {
                prefetch(title.as_ptr());
            }
            prefetch(facts.numbers.as_ptr());
        }
    }

    /// Document `doc`'s sketch, its signature taken from `signatures`.
    pub fn get<'a>(&'a self, signatures: &'a Signatures, doc: usize) -> SketchRef<'a> {
        SketchRef {
            signature: signatures.row(doc),
            shingles: self.shingles[doc],
            facts: self.facts(doc),
        }
    }

    /// Writes them in the form [`SketchFacts::read_from`] reads: set aside on disk while a run
    /// needs the memory (the samples alone are 512 MB at a million documents).
    pub fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        write_list(w, &self.shingles)?;
        for facts in (0..self.len()).map(|doc| self.facts(doc)) {
            let flags = u8::from(facts.title.is_some()) | (u8::from(facts.body) << 1);
            w.write_all(&[flags])?;
            write_list(w, facts.title.as_deref().unwrap_or_default())?;
            write_list(w, &facts.numbers)?;
            write_list(w, &facts.title_numbers)?;
            write_list(w, &facts.sample)?;
        }
        Ok(())
    }

    /// Reads what [`SketchFacts::write_to`] wrote.
    pub fn read_from(r: &mut impl Read) -> io::Result<Self> {
        let shingles = read_list(r)?;
        let mut facts = Vec::with_capacity(shingles.len());
        for _ in 0..shingles.len() {
            let mut flags = [0u8];
            r.read_exact(&mut flags)?;
            let title = read_list(r)?;
            facts.push(Facts {
                title: (flags[0] & 1 != 0).then_some(title),
                numbers: read_list(r)?,
                title_numbers: read_list(r)?,
                body: flags[0] & 2 != 0,
                sample: read_list(r)?,
            });
        }
        Ok(SketchFacts {
            shingles,
            facts,
            slots: None,
        })
    }
}

/// Everything the confirm stage weighs about a pair.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Evidence {
    /// The signatures' Jaccard estimate of the whole texts.
    pub jaccard: f64,
    /// The estimated share of the smaller text's shingles found in the larger: from the two
    /// texts' bottom-k samples where both have one ([`Facts::sample`]), else from the Jaccard
    /// estimate and the two set sizes (`|A∩B| = J(|A|+|B|)/(1+J)`, noisy where the sizes
    /// differ a lot).
    pub containment: f64,
    /// Whether `containment` came from the samples (exact when both texts have at most
    /// [`SAMPLE_SIZE`] shingles) rather than from the signatures.
    pub containment_sampled: bool,
    /// Exact Jaccard of the two titles' words (notes removed), where both have a title.
    pub title_jaccard: Option<f64>,
    /// Distinct title words of the shorter title.
    pub title_words: usize,
    /// Whether each side has a number-like word the other lacks (`phase ii` against `phase iii`).
    pub numbers_differ: bool,
    /// Whether each title (notes removed) has a number-like word the other record lacks (in its
    /// title and its body); `None` where a side has no title.
    pub title_numbers_differ: Option<bool>,
    /// Distinct shingles of the smaller text.
    pub smaller: u32,
    /// Whether both texts have a body beyond the title.
    pub both_bodies: bool,
}

impl Evidence {
    /// Gathers the evidence of two sketches.
    pub fn of(a: SketchRef<'_>, b: SketchRef<'_>) -> Evidence {
        let mut evidence = Evidence::without_containment(a, b);
        (evidence.containment, evidence.containment_sampled) = containment(a, b, evidence.jaccard);
        evidence
    }

    /// Everything but the containment (left 0, not sampled), which reads both texts'
    /// samples: a rule asks for [`containment`] only where its verdict turns on it.
    pub(super) fn without_containment(a: SketchRef<'_>, b: SketchRef<'_>) -> Evidence {
        let empty = a.shingles == 0 || b.shingles == 0;
        let jaccard = if empty {
            0.0
        } else {
            jaccard_estimate(a.signature, b.signature)
        };
        let smaller = a.shingles.min(b.shingles);
        let (title_jaccard, title_words, title_numbers_differ) =
            match (&a.facts.title, &b.facts.title) {
                (Some(x), Some(y)) => {
                    // A title's number counts where the other record lacks it everywhere: a
                    // number moved from the title into the abstract is no difference.
                    let own = |this: &Facts, other: &Facts| {
                        has_extra(&this.title_numbers, &other.numbers)
                    };
                    let differ = own(a.facts, b.facts) && own(b.facts, a.facts);
                    (Some(set_jaccard(x, y)), x.len().min(y.len()), Some(differ))
                }
                _ => (None, 0, None),
            };
        let numbers_differ = has_extra(&a.facts.numbers, &b.facts.numbers)
            && has_extra(&b.facts.numbers, &a.facts.numbers);
        Evidence {
            jaccard,
            containment: 0.0,
            containment_sampled: false,
            title_jaccard,
            title_words,
            numbers_differ,
            title_numbers_differ,
            smaller,
            both_bodies: a.facts.body && b.facts.body,
        }
    }
}

/// [`Evidence::containment`] of two sketches whose signatures estimate `jaccard`, and whether
/// it came from their samples.
pub(super) fn containment(a: SketchRef<'_>, b: SketchRef<'_>, jaccard: f64) -> (f64, bool) {
    let smaller = a.shingles.min(b.shingles);
    if smaller == 0 {
        return (0.0, false);
    }
    match sampled_containment(a, b) {
        Some(containment) => (containment, true),
        None => {
            let shared = jaccard * f64::from(a.shingles + b.shingles) / (1.0 + jaccard);
            ((shared / f64::from(smaller)).min(1.0), false)
        }
    }
}

/// The share of the smaller text's shingles found in the larger, from the two bottom-k samples;
/// `None` where a side has no sample. The smaller text's sampled hashes below the larger's
/// largest sampled hash are a uniform sample of it whose membership in the larger text the
/// larger's sample answers exactly: the estimate holds however different the sizes, and is
/// exact when both texts fit in their samples.
fn sampled_containment(a: SketchRef<'_>, b: SketchRef<'_>) -> Option<f64> {
    let (small, large) = if a.shingles <= b.shingles {
        (a, b)
    } else {
        (b, a)
    };
    let (s, l) = (&small.facts.sample, &large.facts.sample);
    if s.is_empty() || l.is_empty() {
        return None;
    }
    let complete = l.len() >= large.shingles as usize;
    let seen = if complete {
        s.len()
    } else {
        s.partition_point(|&h| h <= l[l.len() - 1])
    };
    if seen == 0 {
        return None;
    }
    Some(shared_count(&s[..seen], l) as f64 / seen as f64)
}

/// Whether sorted set `a` has an element `b` lacks.
fn has_extra(a: &[u32], b: &[u32]) -> bool {
    shared_count(a, b) < a.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Facts taken from another corpus give the documents taken what they had there, copies
    /// sharing theirs, and nothing is copied twice.
    #[test]
    fn facts_taken_from_another_corpus_read_as_there() {
        let (mut their_signatures, mut theirs) = (Signatures::new(2), SketchFacts::default());
        for (doc, title) in ["one", "two", "three"].into_iter().enumerate() {
            let facts = Facts::of(Some(title), "a body of words");
            theirs.push(doc as u32 + 4, facts);
            their_signatures.push(&[doc as u32, 7], false);
        }
        // Document 3 is an exact copy of document 1.
        theirs.push_copy_of(&mut their_signatures, 1);
        let expected: Vec<(Vec<u32>, u32, Facts)> = [3, 1, 2]
            .iter()
            .map(|&doc| {
                let sketch = theirs.get(&their_signatures, doc);
                (
                    sketch.signature.to_vec(),
                    sketch.shingles,
                    sketch.facts.clone(),
                )
            })
            .collect();
        let (mut signatures, mut sketches) = (Signatures::new(2), SketchFacts::default());
        sketches.push(9, Facts::of(None, "already here"));
        signatures.push(&[0, 0], false);
        sketches.take_from(
            &mut signatures,
            (&their_signatures, &mut theirs),
            &[3, 1, 2],
        );
        assert_eq!(sketches.len(), 4);
        for (at, (signature, shingles, facts)) in expected.iter().enumerate() {
            let sketch = sketches.get(&signatures, at + 1);
            assert_eq!(sketch.signature, &signature[..]);
            assert_eq!((sketch.shingles, sketch.facts), (*shingles, facts));
        }
        assert_eq!(sketches.facts.len(), 3, "the copy's facts stored once");
    }

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
        assert_eq!(evidence.title_numbers_differ, Some(false));
        // A title's numbers count with its notes: the parts of one book differ.
        let part = |n: &str| Facts::of(Some(&format!("database tuning (part {n})")), "2002");
        let (first, second) = (part("i"), part("ii"));
        assert_eq!(
            Evidence::of(sketch(&first), sketch(&second)).title_numbers_differ,
            Some(true)
        );
        // A number of one title that the other record has in its body is no difference.
        let moved = Facts::of(Some("database tuning"), "part ii, 2002");
        assert_eq!(
            Evidence::of(sketch(&second), sketch(&moved)).title_numbers_differ,
            Some(false)
        );
        assert_eq!(evidence.title_jaccard, Some(1.0));
        assert_eq!(evidence.jaccard, 1.0);
        assert_eq!(evidence.containment, 1.0);
    }

    fn sketch_of_words(words: std::ops::Range<usize>) -> Sketch {
        let text: Vec<String> = words.map(|w| format!("w{w}")).collect();
        let record = Record::plain(String::new(), text.join(" "));
        let shingler = crate::text::ShinglingSpec::default()
            .shingler(crate::text::UNIGRAMS)
            .unwrap();
        Sketch::of(&record, &shingler, &MinHasher::new(128, 1)).0
    }

    #[test]
    fn samples_give_containment_where_the_sizes_differ() {
        // Small enough to fit their samples: the containment is exact.
        let (a, b) = (sketch_of_words(0..40), sketch_of_words(0..100));
        let evidence = Evidence::of(a.as_ref(), b.as_ref());
        assert!(evidence.containment_sampled);
        assert_eq!(evidence.containment, 1.0);
        assert!((evidence.jaccard - 0.4).abs() < 0.15, "{evidence:?}");
        // A truncated text against the full one, both beyond the sample: estimated from the
        // smaller's sampled words below the larger's largest, close to the truth (1 and 0.5).
        let (cut, full) = (sketch_of_words(0..300), sketch_of_words(0..1200));
        assert_eq!(full.facts.sample.len(), SAMPLE_SIZE);
        let evidence = Evidence::of(cut.as_ref(), full.as_ref());
        assert_eq!(evidence.containment, 1.0, "{evidence:?}");
        let half = sketch_of_words(150..450);
        let evidence = Evidence::of(cut.as_ref(), half.as_ref());
        assert!((evidence.containment - 0.5).abs() < 0.15, "{evidence:?}");
        // Without a sample (an index built before it was kept), the signatures answer.
        let mut old = cut.clone();
        old.facts.sample.clear();
        let evidence = Evidence::of(old.as_ref(), full.as_ref());
        assert!(!evidence.containment_sampled);
        assert!(evidence.containment > 0.5, "{evidence:?}");
    }

    #[test]
    fn a_sample_is_stored_as_base64_and_an_old_payload_has_none() {
        let facts = sketch_of_words(0..10).facts;
        let json = serde_json::to_value(&facts).unwrap();
        assert!(json["sample"].is_string(), "{json}");
        assert_eq!(serde_json::from_value::<Facts>(json).unwrap(), facts);
        let old = serde_json::json!({"title": null, "numbers": [], "body": true});
        assert!(
            serde_json::from_value::<Facts>(old)
                .unwrap()
                .sample
                .is_empty()
        );
        let odd = serde_json::json!({"title": null, "numbers": [], "body": true, "sample": "AAE="});
        assert!(serde_json::from_value::<Facts>(odd).is_err());
    }
}
