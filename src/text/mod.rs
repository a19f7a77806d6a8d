//! Text normalisation: from a raw string to the set of hashed shingles a sketch is built from.
//!
//! A document is split into Unicode word tokens (the `\w+` of most regex engines, so Polish,
//! Cyrillic and accented text work), lower-cased, optionally filtered through a [`Stoplist`],
//! and turned into shingles: word n-grams (default: single words, as in the CORE notebook) or
//! character n-grams over the normalised text. Each shingle is hashed to 64 bits with XXH3, a
//! hash that is specified byte-for-byte and therefore identical on every platform and Rust
//! version (unlike `std`'s `DefaultHasher`).

mod shingling;
mod stoplist;

pub use shingling::{ShinglingSpec, UNIGRAMS};
pub use stoplist::Stoplist;

use std::sync::LazyLock;

use regex::Regex;
use xxhash_rust::xxh3::xxh3_64;

/// The scripts written without spaces between words (Chinese, Japanese, Thai, Lao, Khmer,
/// Burmese), by script extension, so that marks they share with a neighbour (the Japanese
/// prolonged sound mark, the iteration mark) count as theirs.
const UNSPACED: &str = r"\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Thai}\p{scx=Lao}\p{scx=Khmer}\p{scx=Myanmar}";
/// A run of characters of [`UNSPACED`] scripts, or a word of any other.
static WORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"[{UNSPACED}]+|[\w--[{UNSPACED}]]+")).expect("valid regex")
});
/// Whether a run [`WORD`] found is of [`UNSPACED`] scripts.
static UNSPACED_RUN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!(r"\A[{UNSPACED}]")).expect("valid regex"));
/// Characters in each word a run of the scripts written without spaces is cut into.
pub const UNSPACED_GRAM: usize = 2;

/// Calls `each` with every lower-cased word of `text`, in order.
///
/// Words are maximal runs of Unicode word characters (letters, marks, digits, connector
/// punctuation), so `"Zażółć gęślą jaźń"` has three words and punctuation never sticks to one.
/// Scripts written without spaces (`UNSPACED`: Chinese, Japanese, Thai and their
/// neighbours) have no such runs to tell words by: a run of them is cut into its overlapping
/// pairs of characters ([`UNSPACED_GRAM`], a lone character standing alone), the words a
/// search engine indexes such text by, so that a copy shares most of its words with its
/// original as a copy of spaced text does (docs/methods.md, "Text without spaces").
///
/// ```
/// assert_eq!(neardup::text::words("東京タワー 2024年"), ["東京", "京タ", "タワ", "ワー", "2024", "年"]);
/// ```
pub fn for_each_word(text: &str, mut each: impl FnMut(&str)) {
    if text.is_ascii() {
        return for_each_ascii_word(text, each);
    }
    let mut lowered = String::new();
    for word in WORD.find_iter(text) {
        let word = word.as_str();
        if UNSPACED_RUN.is_match(word) {
            for_each_gram(word, UNSPACED_GRAM, &mut each);
            continue;
        }
        if word
            .bytes()
            .any(|b| b.is_ascii_uppercase() || !b.is_ascii())
        {
            lowered.clear();
            lowered.extend(word.chars().flat_map(char::to_lowercase));
            each(&lowered);
        } else {
            each(word);
        }
    }
}

/// Calls `each` with every run of `n` consecutive characters of `run`, or with `run` itself
/// where it is shorter.
fn for_each_gram(run: &str, n: usize, each: &mut impl FnMut(&str)) {
    let bounds: Vec<usize> = run
        .char_indices()
        .map(|(at, _)| at)
        .chain([run.len()])
        .collect();
    if bounds.len() <= n {
        return each(run);
    }
    for window in bounds.windows(n + 1) {
        each(&run[window[0]..window[n]]);
    }
}

/// The same words for pure-ASCII text, where `\w` is `[A-Za-z0-9_]`, without the regex engine
/// (most corpora are mostly ASCII, and this is the tokeniser's hot path). Bytes are classified
/// 64 at a time into bit masks ([`classify`]), and words are read off the mask's edges: a
/// byte-at-a-time loop mispredicted a branch at the end of nearly every word, and ran at a
/// third of the speed.
fn for_each_ascii_word(text: &str, mut each: impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let mut lowered = String::new();
    let mut emit = |start: usize, end: usize, upper: bool| {
        let word = &text[start..end];
        if upper {
            lowered.clear();
            lowered.push_str(word);
            lowered.make_ascii_lowercase();
            each(&lowered);
        } else {
            each(word);
        }
    };
    // The word being read: where it starts, and whether a capital was met in earlier blocks.
    let mut open: Option<(usize, bool)> = None;
    for (block, chunk) in bytes.chunks(64).enumerate() {
        let base = block * 64;
        let (word, capitals) = classify(chunk);
        // An edge where a byte's class differs from the one before it.
        let before = u64::from(open.is_some());
        let mut edges = word ^ ((word << 1) | before);
        let mut from = 0;
        while edges != 0 {
            let at = edges.trailing_zeros() as usize;
            edges &= edges - 1;
            match open.take() {
                None => {
                    open = Some((base + at, false));
                    from = at;
                }
                Some((start, upper)) => {
                    let upper = upper || capitals & bits(from, at) != 0;
                    emit(start, base + at, upper);
                }
            }
        }
        if let Some((_, upper)) = &mut open {
            *upper |= capitals & bits(from, 64) != 0;
        }
    }
    if let Some((start, upper)) = open {
        emit(start, bytes.len(), upper);
    }
}

/// The bits `from..to` of a 64-bit mask.
fn bits(from: usize, to: usize) -> u64 {
    let below = |n: usize| if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    below(to) & !below(from)
}

/// Masks of the word bytes and the capitals among up to 64 ASCII bytes, bit `i` for byte `i`
/// (none past the end). Each 8 bytes are tested as one integer: a byte below 128 plus
/// `128 - low` reaches 128 exactly when it is at least `low`, and no sum carries into the next
/// byte.
fn classify(chunk: &[u8]) -> (u64, u64) {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = ONES * 0x80;
    let at_least = |x: u64, low: u8| x + ONES * (0x80 - u64::from(low));
    let within = |x: u64, low: u8, high: u8| at_least(x, low) & !at_least(x, high + 1) & HIGH;
    // The high bit of each of 8 bytes gathered into 8 bits (byte `i` to bit `i`).
    let gather = |high_bits: u64| (high_bits >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56;
    let (mut word, mut capitals) = (0u64, 0u64);
    for (i, eight) in chunk.chunks(8).enumerate() {
        let mut padded = [0u8; 8];
        padded[..eight.len()].copy_from_slice(eight);
        let x = u64::from_le_bytes(padded);
        let capital = within(x, b'A', b'Z');
        let underscore = x ^ (ONES * u64::from(b'_'));
        let is_underscore = !(((underscore & !HIGH) + !HIGH) | underscore) & HIGH;
        let letter = within(x | (ONES * 0x20), b'a', b'z');
        let digit = within(x, b'0', b'9');
        word |= gather(letter | digit | is_underscore) << (8 * i);
        capitals |= gather(capital) << (8 * i);
    }
    (word, capitals)
}

/// The lower-cased words of `text`, in order.
///
/// ```
/// assert_eq!(neardup::text::words("Zażółć gęślą JAŹŃ!"), ["zażółć", "gęślą", "jaźń"]);
/// ```
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |w| out.push(w.to_owned()));
    out
}

/// Whether a word is a number or a small roman numeral (`2`, `2009`, `iii`): the words whose
/// change turns one study into another (`phase ii` / `phase iii`, `part 1` / `part 2`).
pub fn is_number_word(word: &str) -> bool {
    // Most words start with another letter: one comparison settles them.
    match word.as_bytes().first() {
        Some(b'0'..=b'9') => word.bytes().all(|b| b.is_ascii_digit()),
        Some(b'i' | b'v' | b'x') => matches!(
            word,
            "i" | "ii" | "iii" | "iv" | "v" | "vi" | "vii" | "viii" | "ix" | "x" | "xi" | "xii"
        ),
        _ => false,
    }
}

/// `text` without its bracketed notes: `[...]`, `(...)` and `<...>` segments (an unclosed one
/// runs to the end). Bibliographic titles carry such notes (`[erratum appears in ...]`,
/// `(vol 360, pg 542)`, a translated title in brackets) that a copy of the record may lack.
///
/// ```
/// let title = "Gait training.[erratum appears in 2010] (corrected)";
/// assert_eq!(neardup::text::without_notes(title).trim(), "Gait training.");
/// ```
pub fn without_notes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut closing: Option<char> = None;
    for c in text.chars() {
        match closing {
            Some(end) if c == end => {
                closing = None;
                out.push(' ');
            }
            Some(_) => {}
            None => match c {
                '[' => closing = Some(']'),
                '(' => closing = Some(')'),
                '<' => closing = Some('>'),
                _ => out.push(c),
            },
        }
    }
    out
}

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
    fn polish_words_tokenise_and_fold_case() {
        assert_eq!(words("Zażółć gęślą jaźń"), ["zażółć", "gęślą", "jaźń"]);
        assert_eq!(words("ŁÓDŹ łódź"), ["łódź", "łódź"]);
        assert_eq!(words("Привет, МИР! café_1"), ["привет", "мир", "café_1"]);
    }

    #[test]
    fn ascii_fast_path_splits_like_the_regex() {
        let slow = |text: &str| -> Vec<String> {
            WORD.find_iter(text)
                .map(|m| m.as_str().to_lowercase())
                .collect()
        };
        // Every ASCII character, alone and next to a letter.
        let every: String = (0u8..128)
            .map(char::from)
            .flat_map(|c| [c, 'Q', c, ' '])
            .collect();
        assert_eq!(words(&every), slow(&every));
        let text = "Hello, World! it's 2024_v2 -- e-mail: A.B; x__y\tz\n";
        let fast = words(text);
        assert_eq!(fast, slow(text));
        assert_eq!(
            fast,
            [
                "hello", "world", "it", "s", "2024_v2", "e", "mail", "a", "b", "x__y", "z"
            ]
        );
    }

    proptest::proptest! {
        /// Words that cross the 64-byte blocks the masks are made of, capitals anywhere in
        /// them, and texts of every length around a block's.
        #[test]
        fn ascii_words_across_blocks_split_like_the_regex(
            text in "([a-zA-Z0-9_]{0,70}[ .,;:!?'\\-\t\n@\\[`{~]{1,3}){0,12}[a-zA-Z0-9_]{0,70}"
        ) {
            let slow: Vec<String> =
                WORD.find_iter(&text).map(|m| m.as_str().to_lowercase()).collect();
            proptest::prop_assert_eq!(words(&text), slow);
        }
    }

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
    fn unspaced_scripts_are_cut_into_pairs_of_characters() {
        assert_eq!(words("コーヒー"), ["コー", "ーヒ", "ヒー"]);
        assert_eq!(words("ภาษาไทย"), ["ภา", "าษ", "ษา", "าไ", "ไท", "ทย"]);
        assert_eq!(words("中 文"), ["中", "文"]);
        assert_eq!(words("Tokyo東京2020年"), ["tokyo", "東京", "2020", "年"]);
        // An exact copy of a title without spaces has words enough to be weighed.
        let title = "東京都は新型ウイルスの感染者が過去最多になったと発表した";
        assert!(words(title).len() >= 20);
    }

    proptest::proptest! {
        /// A text of spaced words and runs of unspaced characters: each run gives its pairs of
        /// characters, in order, and the spaced words stay as they are.
        #[test]
        fn runs_of_unspaced_characters_give_their_pairs(
            parts in proptest::collection::vec("[a-z]{1,8}|[ก-ฮ]{1,9}|[ぁ-ゖ]{1,9}|[一-龥]{1,9}", 1..12)
        ) {
            let text: String = parts.iter().map(|p| format!("{p} ")).collect();
            let mut expected = Vec::new();
            for part in &parts {
                let chars: Vec<char> = part.chars().collect();
                if chars[0].is_ascii() || chars.len() == 1 {
                    expected.push(part.clone());
                } else {
                    expected.extend(chars.windows(2).map(|pair| pair.iter().collect::<String>()));
                }
            }
            proptest::prop_assert_eq!(words(&text), expected);
        }
    }

    #[test]
    fn hashes_are_stable_across_platforms() {
        // XXH3-64 of "hello" is fixed by the XXH3 specification.
        let s = Shingler::word_unigrams();
        assert_eq!(s.shingle_set("Hello"), vec![0x9555e8555c62dcfd]);
    }
}
