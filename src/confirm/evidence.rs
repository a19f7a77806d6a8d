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

/// A document's [`Facts`], borrowed from wherever they are kept (see [`SketchFacts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FactsRef<'a> {
    /// [`Facts::title`].
    pub title: Option<&'a [u32]>,
    /// [`Facts::numbers`].
    pub numbers: &'a [u32],
    /// [`Facts::title_numbers`].
    pub title_numbers: &'a [u32],
    /// [`Facts::body`].
    pub body: bool,
    /// [`Facts::sample`].
    pub sample: &'a [u32],
}

impl<'a> FactsRef<'a> {
    /// Whether the record is a title and nothing else.
    pub fn title_only(&self) -> bool {
        self.title_alone().is_some()
    }

    /// The title of a record that is a title and nothing else.
    pub fn title_alone(&self) -> Option<&'a [u32]> {
        self.title.filter(|_| !self.body)
    }

    /// An owned copy.
    pub fn to_facts(&self) -> Facts {
        Facts {
            title: self.title.map(<[u32]>::to_vec),
            numbers: self.numbers.to_vec(),
            title_numbers: self.title_numbers.to_vec(),
            body: self.body,
            sample: self.sample.to_vec(),
        }
    }
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
        self.as_ref().title_only()
    }

    /// Borrows them.
    pub fn as_ref(&self) -> FactsRef<'_> {
        FactsRef {
            title: self.title.as_deref(),
            numbers: &self.numbers,
            title_numbers: &self.title_numbers,
            body: self.body,
            sample: &self.sample,
        }
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
    pub facts: FactsRef<'a>,
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
            facts: self.facts.as_ref(),
        }
    }
}

/// The shingle counts and facts of a corpus, beside its [`Signatures`]: together they give
/// each document's [`SketchRef`]. The facts' lists lie end to end in large blocks, each
/// document's found by a fixed-size entry: a [`Facts`] apiece took four allocations, about 100
/// bytes of list headers and the allocator's rounding, an eighth of a document's sketch. Blocks
/// are reserved once, like the signatures' (one array grown by doubling would copy and hold
/// twice its size at the moment it grows). An exact copy of an earlier document shares its
/// facts ([`SketchFacts::push_copy_of`]).
#[derive(Clone, Debug, Default)]
pub struct SketchFacts {
    shingles: Vec<u32>,
    /// Every stored facts' lists, end to end (title, numbers, title numbers, sample), in
    /// blocks (see [`SketchFacts::BLOCK_WORDS`]).
    blocks: Vec<Vec<u32>>,
    /// Where each stored facts lie in `blocks`, each stored once.
    entries: Vec<FactsEntry>,
    /// Each document's place in `entries`, from the first document that shares another's;
    /// `None` while each document's facts are its own, in order.
    slots: Option<Vec<u32>>,
}

/// Where one document's facts lie in [`SketchFacts::blocks`]: from `start` in block `block`,
/// the title (none where `title` is [`NO_TITLE`]), the numbers, the title's numbers, then the
/// sample.
#[derive(Clone, Copy, Debug, Default)]
struct FactsEntry {
    block: u32,
    start: u32,
    title: u32,
    numbers: u32,
    title_numbers: u32,
    sample: u32,
    body: bool,
}

/// A [`FactsEntry`]'s title length where the input has no title.
const NO_TITLE: u32 = u32::MAX;

/// Two are equal when they give every document the same shingle count and facts, however
/// stored.
impl PartialEq for SketchFacts {
    fn eq(&self, other: &Self) -> bool {
        self.shingles == other.shingles
            && (0..self.len()).all(|doc| self.facts(doc) == other.facts(doc))
    }
}

impl SketchFacts {
    /// Words a block of facts holds, once there are many: 32 MB, reserved at once but touched
    /// only as facts arrive. The first blocks are smaller, each twice the last, so that a few
    /// documents' facts take little; a document longer than a block gets one its size.
    const BLOCK_WORDS: usize = 1 << 23;

    /// Appends the next document's distinct shingle count and facts.
    pub fn push(&mut self, shingles: u32, facts: FactsRef<'_>) {
        if let Some(slots) = &mut self.slots {
            slots.push(self.entries.len() as u32);
        }
        self.shingles.push(shingles);
        self.store(facts);
    }

    /// Stores `facts` at the end of the last block (a new one where they do not fit), and
    /// their entry after the others.
    fn store(&mut self, facts: FactsRef<'_>) {
        let lists = [
            facts.title.unwrap_or_default(),
            facts.numbers,
            facts.title_numbers,
            facts.sample,
        ];
        let words: usize = lists.iter().map(|list| list.len()).sum();
        if self
            .blocks
            .last()
            .is_none_or(|block| block.capacity() - block.len() < words)
        {
            let size = self
                .blocks
                .last()
                .map_or(1 << 12, |last| (2 * last.capacity()).min(Self::BLOCK_WORDS));
            self.blocks.push(Vec::with_capacity(size.max(words)));
        }
        let at = (self.blocks.len() - 1) as u32;
        let block = self.blocks.last_mut().expect("a block with room");
        let count = |list: &[u32]| u32::try_from(list.len()).expect("fewer than 2^32 words");
        self.entries.push(FactsEntry {
            block: at,
            start: count(block),
            title: facts.title.map_or(NO_TITLE, count),
            numbers: count(facts.numbers),
            title_numbers: count(facts.title_numbers),
            sample: count(facts.sample),
            body: facts.body,
        });
        for list in lists {
            block.extend_from_slice(list);
        }
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
        self.push(sketch.shingles, sketch.facts);
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

    /// Appends the documents of `other`, their facts copied into these blocks: its own
    /// blocks, each partly filled, would keep their room unused (a part reads its share a
    /// block of documents at a time).
    pub fn extend(&mut self, other: SketchFacts) {
        if self.slots.is_some() || other.slots.is_some() {
            let (documents, stored) = (self.len() as u32, self.entries.len() as u32);
            let slots = self.slots.get_or_insert_with(|| (0..documents).collect());
            match &other.slots {
                Some(theirs) => slots.extend(theirs.iter().map(|&slot| stored + slot)),
                None => slots.extend((0..other.len() as u32).map(|doc| stored + doc)),
            }
        }
        self.entries.reserve(other.entries.len());
        for &entry in &other.entries {
            self.store(other.stored(entry));
        }
        self.shingles.extend(other.shingles);
    }

    /// Appends documents `docs` of another corpus (its `signatures` and these facts): what a
    /// batch takes from the collection it is checked against. Documents that share their facts
    /// there share them here.
    pub fn take_from(
        &mut self,
        signatures: &mut Signatures,
        (their_signatures, theirs): (&Signatures, &SketchFacts),
        docs: &[u32],
    ) {
        // Each of their stored facts, the document here that took it.
        let mut taken = vec![u32::MAX; theirs.entries.len()];
        for &doc in docs {
            let (doc, slot) = (doc as usize, theirs.slot(doc as usize));
            match taken[slot] {
                u32::MAX => {
                    taken[slot] = self.len() as u32;
                    self.push_sketch(signatures, theirs.get(their_signatures, doc));
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
    pub fn facts(&self, doc: usize) -> FactsRef<'_> {
        self.stored(self.entries[self.slot(doc)])
    }

    /// The facts stored where `entry` says.
    fn stored(&self, entry: FactsEntry) -> FactsRef<'_> {
        let mut rest = &self.blocks[entry.block as usize][entry.start as usize..];
        let mut take = |n: u32| {
            let (list, after) = rest.split_at(n as usize);
            rest = after;
            list
        };
        FactsRef {
            title: (entry.title != NO_TITLE).then(|| take(entry.title)),
            numbers: take(entry.numbers),
            title_numbers: take(entry.title_numbers),
            body: entry.body,
            sample: take(entry.sample),
        }
    }

    /// Starts loading the sketches that the pairs after the `i`th will read, one link further
    /// the nearer they are (signature and facts' entry, then the facts' words); `pair(j)` gives
    /// the `j`th pair, `None` past the end. Candidates visit documents in no order, and a
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
            prefetch(&self.entries[self.slot(doc as usize)]);
        }
        for doc in pair(i + AHEAD).into_iter().flat_map(|(a, b)| [a, b]) {
            let entry = &self.entries[self.slot(doc as usize)];
            prefetch(self.blocks[entry.block as usize][entry.start as usize..].as_ptr());
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
            write_list(w, facts.title.unwrap_or_default())?;
            write_list(w, facts.numbers)?;
            write_list(w, facts.title_numbers)?;
            write_list(w, facts.sample)?;
        }
        Ok(())
    }

    /// Reads what [`SketchFacts::write_to`] wrote.
    pub fn read_from(r: &mut impl Read) -> io::Result<Self> {
        let shingles: Vec<u32> = read_list(r)?;
        let mut read = SketchFacts::default();
        read.entries.reserve(shingles.len());
        for &count in &shingles {
            let mut flags = [0u8];
            r.read_exact(&mut flags)?;
            let title: Vec<u32> = read_list(r)?;
            let (numbers, title_numbers, sample): (Vec<u32>, Vec<u32>, Vec<u32>) =
                (read_list(r)?, read_list(r)?, read_list(r)?);
            let facts = FactsRef {
                title: (flags[0] & 1 != 0).then_some(&title[..]),
                numbers: &numbers,
                title_numbers: &title_numbers,
                body: flags[0] & 2 != 0,
                sample: &sample,
            };
            read.push(count, facts);
        }
        Ok(read)
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
            match (a.facts.title, b.facts.title) {
                (Some(x), Some(y)) => {
                    // A title's number counts where the other record lacks it everywhere: a
                    // number moved from the title into the abstract is no difference.
                    let own = |this: FactsRef<'_>, other: FactsRef<'_>| {
                        has_extra(this.title_numbers, other.numbers)
                    };
                    let differ = own(a.facts, b.facts) && own(b.facts, a.facts);
                    (Some(set_jaccard(x, y)), x.len().min(y.len()), Some(differ))
                }
                _ => (None, 0, None),
            };
        let numbers_differ = has_extra(a.facts.numbers, b.facts.numbers)
            && has_extra(b.facts.numbers, a.facts.numbers);
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
    let (s, l) = (small.facts.sample, large.facts.sample);
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

    /// Facts of every size, over blocks that grow and one document larger than its block,
    /// read back as pushed: alone, appended to others, and written and read again.
    #[test]
    fn facts_over_many_blocks_read_as_pushed() {
        let facts_of = |doc: u32| Facts {
            title: (doc % 3 != 0).then(|| (0..doc % 17).collect()),
            numbers: (0..doc % 5).map(|n| n * doc).collect(),
            title_numbers: (0..doc % 2).collect(),
            body: doc % 4 != 0,
            sample: match doc {
                150 => (0..20_000).collect(),
                _ => (0..(doc * 7) % 129).map(|w| w ^ doc).collect(),
            },
        };
        let build = |docs: std::ops::Range<u32>| {
            let mut sketches = SketchFacts::default();
            for doc in docs {
                sketches.push(doc, facts_of(doc).as_ref());
            }
            sketches
        };
        let first = build(0..300);
        assert!(first.blocks.len() > 3, "{} blocks", first.blocks.len());
        for doc in 0..300 {
            assert_eq!(
                first.facts(doc as usize),
                facts_of(doc).as_ref(),
                "document {doc}"
            );
        }
        let mut both = first.clone();
        both.extend(build(300..400));
        both.push(400, facts_of(400).as_ref());
        for doc in 0..401 {
            assert_eq!(
                both.facts(doc as usize),
                facts_of(doc).as_ref(),
                "document {doc}"
            );
        }
        let mut bytes = Vec::new();
        both.write_to(&mut bytes).unwrap();
        assert_eq!(SketchFacts::read_from(&mut &bytes[..]).unwrap(), both);
    }

    /// Facts taken from another corpus give the documents taken what they had there, copies
    /// sharing theirs, and nothing is copied twice.
    #[test]
    fn facts_taken_from_another_corpus_read_as_there() {
        let (mut their_signatures, mut theirs) = (Signatures::new(2), SketchFacts::default());
        for (doc, title) in ["one", "two", "three"].into_iter().enumerate() {
            let facts = Facts::of(Some(title), "a body of words");
            theirs.push(doc as u32 + 4, facts.as_ref());
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
                    sketch.facts.to_facts(),
                )
            })
            .collect();
        let (mut signatures, mut sketches) = (Signatures::new(2), SketchFacts::default());
        sketches.push(9, Facts::of(None, "already here").as_ref());
        signatures.push(&[0, 0], false);
        sketches.take_from(&mut signatures, (&their_signatures, &theirs), &[3, 1, 2]);
        assert_eq!(sketches.len(), 4);
        for (at, (signature, shingles, facts)) in expected.iter().enumerate() {
            let sketch = sketches.get(&signatures, at + 1);
            assert_eq!(sketch.signature, &signature[..]);
            assert_eq!((sketch.shingles, sketch.facts), (*shingles, facts.as_ref()));
        }
        assert_eq!(sketches.entries.len(), 3, "the copy's facts stored once");
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
        assert!(Evidence::of(sketch(two.as_ref()), sketch(three.as_ref())).numbers_differ);
        assert!(!Evidence::of(sketch(two.as_ref()), sketch(note.as_ref())).numbers_differ);
        let evidence = Evidence::of(sketch(two.as_ref()), sketch(note.as_ref()));
        assert_eq!(evidence.title_numbers_differ, Some(false));
        // A title's numbers count with its notes: the parts of one book differ.
        let part = |n: &str| Facts::of(Some(&format!("database tuning (part {n})")), "2002");
        let (first, second) = (part("i"), part("ii"));
        assert_eq!(
            Evidence::of(sketch(first.as_ref()), sketch(second.as_ref())).title_numbers_differ,
            Some(true)
        );
        // A number of one title that the other record has in its body is no difference.
        let moved = Facts::of(Some("database tuning"), "part ii, 2002");
        assert_eq!(
            Evidence::of(sketch(second.as_ref()), sketch(moved.as_ref())).title_numbers_differ,
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
