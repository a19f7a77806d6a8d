//! [`Shingler`]: a text's words (after the stoplist) or characters, as hashed shingles.

use xxhash_rust::xxh3::xxh3_64;

use super::stoplist::Stoplist;
use super::words::for_each_word;

/// The length of text (in bytes) above which [`Shingler::shingle_set`] drops repeated
/// shingles as it goes: a record of 1 GB holds about 170 million words, 1.4 GB of hashes,
/// and a few hundred thousand distinct ones.
pub const LONG_TEXT: usize = 4 << 20;

/// Hashes collected without their repeats: sorted and deduplicated each time the unsorted
/// ones since the last time outnumber the rest (and a million), so that the list holds at
/// most about twice the distinct hashes.
#[derive(Default)]
struct DistinctHashes {
    hashes: Vec<u64>,
    /// How many at the front are sorted and distinct.
    sorted: usize,
}

impl DistinctHashes {
    fn push(&mut self, hash: u64) {
        self.hashes.push(hash);
        if self.hashes.len() - self.sorted >= self.sorted.max(1 << 20) {
            self.compact();
        }
    }

    fn compact(&mut self) {
        self.hashes.sort_unstable();
        self.hashes.dedup();
        self.sorted = self.hashes.len();
    }

    /// The distinct hashes, sorted.
    fn into_sorted(mut self) -> Vec<u64> {
        self.compact();
        self.hashes.shrink_to_fit();
        self.hashes
    }
}

/// What a shingle is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShingleKind {
    /// `n` consecutive words (after the stoplist).
    Words(usize),
    /// `n` consecutive characters of the normalised text (words joined by single spaces).
    Chars(usize),
}

impl std::fmt::Display for ShingleKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShingleKind::Words(n) => write!(f, "word {n}-grams"),
            ShingleKind::Chars(n) => write!(f, "char {n}-grams"),
        }
    }
}

/// Turns text into hashed shingles.
///
/// A text with fewer words (or characters) than the n-gram size, but at least one, yields one
/// shingle made of all of it, so short titles still get a sketch. An empty text yields none.
#[derive(Clone, Debug)]
pub struct Shingler {
    kind: ShingleKind,
    stoplist: Stoplist,
}

impl Shingler {
    /// A shingler for `kind`; `n` must be at least 1.
    pub fn new(kind: ShingleKind, stoplist: Stoplist) -> Self {
        let n = match kind {
            ShingleKind::Words(n) | ShingleKind::Chars(n) => n,
        };
        assert!(n >= 1, "shingle size must be at least 1");
        Shingler { kind, stoplist }
    }

    /// Word 1-grams, no stoplist: the CORE notebook's features.
    pub fn word_unigrams() -> Self {
        Shingler::new(ShingleKind::Words(1), Stoplist::default())
    }

    /// The kind of shingle this produces.
    pub fn kind(&self) -> ShingleKind {
        self.kind
    }

    /// Appends the 64-bit hash of every shingle of `text` to `out` (repeats included: a
    /// MinHash ignores them, and removing them costs more than it saves).
    pub fn hash_shingles(&self, text: &str, out: &mut Vec<u64>) {
        self.hash_shingles_seeing_words(text, |hash| out.push(hash), |_| {});
    }

    /// [`Shingler::hash_shingles`], also calling `see` with every word of `text` (stoplisted
    /// ones too): in the same pass where shingles are single words, so that a caller that
    /// needs both tokenises the text once.
    fn hash_shingles_seeing_words(
        &self,
        text: &str,
        mut out: impl FnMut(u64),
        mut see: impl FnMut(&str),
    ) {
        if self.kind != ShingleKind::Words(1) {
            for_each_word(text, &mut see);
        }
        match self.kind {
            ShingleKind::Words(1) => {
                for_each_word(text, |w| {
                    see(w);
                    if !self.stoplist.contains(w) {
                        out(xxh3_64(w.as_bytes()));
                    }
                });
            }
            ShingleKind::Words(n) => {
                let kept = self.kept_words(text);
                if kept.is_empty() {
                    return;
                }
                let mut joined = String::new();
                for window in kept.windows(n.min(kept.len())) {
                    joined.clear();
                    for (i, w) in window.iter().enumerate() {
                        if i > 0 {
                            joined.push(' ');
                        }
                        joined.push_str(w);
                    }
                    out(xxh3_64(joined.as_bytes()));
                }
            }
            ShingleKind::Chars(n) => {
                let normalised = self.kept_words(text).join(" ");
                let boundaries: Vec<usize> = normalised
                    .char_indices()
                    .map(|(i, _)| i)
                    .chain(std::iter::once(normalised.len()))
                    .collect();
                let chars = boundaries.len() - 1;
                if chars == 0 {
                    return;
                }
                let n = n.min(chars);
                for start in 0..=chars - n {
                    let gram = &normalised[boundaries[start]..boundaries[start + n]];
                    out(xxh3_64(gram.as_bytes()));
                }
            }
        }
    }

    /// The set of shingle hashes of `text`, sorted and without repeats.
    pub fn shingle_set(&self, text: &str) -> Vec<u64> {
        self.shingle_set_seeing_words(text, |_| {})
    }

    /// [`Shingler::shingle_set`], also calling `see` with every word of `text` (stoplisted
    /// ones too), so that a caller that needs both tokenises the text once.
    ///
    /// A text over [`LONG_TEXT`] bytes keeps its shingles' distinct hashes as it goes
    /// (`DistinctHashes`), so that it costs memory for its vocabulary, not for its length.
    pub fn shingle_set_seeing_words(&self, text: &str, see: impl FnMut(&str)) -> Vec<u64> {
        if text.len() > LONG_TEXT {
            let mut distinct = DistinctHashes::default();
            self.hash_shingles_seeing_words(text, |hash| distinct.push(hash), see);
            return distinct.into_sorted();
        }
        // About one shingle per six bytes of prose: one allocation where doubling made seven.
        let mut out = Vec::with_capacity(text.len() / 6 + 8);
        self.hash_shingles_seeing_words(text, |hash| out.push(hash), see);
        out.sort_unstable();
        out.dedup();
        out
    }

    fn kept_words(&self, text: &str) -> Vec<String> {
        let mut kept = Vec::new();
        for_each_word(text, |w| {
            if !self.stoplist.contains(w) {
                kept.push(w.to_owned());
            }
        });
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn punctuation_and_case_do_not_change_the_shingles() {
        let s = Shingler::word_unigrams();
        assert_eq!(s.shingle_set("Hello, World!"), s.shingle_set("hello world"));
        assert_ne!(s.shingle_set("hello world"), s.shingle_set("hello word"));
    }

    #[test]
    fn word_ngrams_slide_and_short_texts_get_one_shingle() {
        let s = Shingler::new(ShingleKind::Words(2), Stoplist::default());
        assert_eq!(s.shingle_set("a b c").len(), 2);
        assert_eq!(s.shingle_set("a").len(), 1);
        assert!(s.shingle_set("  ,; ").is_empty());
        assert_eq!(s.shingle_set("a b"), s.shingle_set("A, B."));
    }

    #[test]
    fn stoplist_removes_words_before_shingling() {
        let stop = Stoplist::from_words(["the", "of"]);
        let s = Shingler::new(ShingleKind::Words(2), stop);
        assert_eq!(
            s.shingle_set("the history of rome"),
            s.shingle_set("history rome")
        );
    }

    #[test]
    fn char_ngrams_count_characters_not_bytes() {
        let s = Shingler::new(ShingleKind::Chars(3), Stoplist::default());
        // "żółw" has 4 characters (7 bytes): 2 trigrams.
        assert_eq!(s.shingle_set("Żółw").len(), 2);
        assert_eq!(s.shingle_set("ab").len(), 1);
    }

    #[test]
    fn a_long_text_has_the_shingles_a_short_one_would() {
        // Over LONG_TEXT, with words repeated far apart and a tail of new ones.
        let words: Vec<String> = (0..900_000).map(|i| format!("w{}", i % 300_000)).collect();
        let text = format!(
            "{} {}",
            words.join(" "),
            (0..5000)
                .map(|i| format!("t{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        assert!(text.len() > LONG_TEXT);
        for kind in [ShingleKind::Words(1), ShingleKind::Words(2)] {
            let s = Shingler::new(kind, Stoplist::default());
            let mut all = Vec::new();
            s.hash_shingles(&text, &mut all);
            all.sort_unstable();
            all.dedup();
            assert_eq!(s.shingle_set(&text), all, "{kind}");
        }
    }

    #[test]
    fn hashes_are_stable_across_platforms() {
        // XXH3-64 of "hello" is fixed by the XXH3 specification.
        let s = Shingler::word_unigrams();
        assert_eq!(s.shingle_set("Hello"), vec![0x9555e8555c62dcfd]);
    }
}
