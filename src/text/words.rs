//! Words: a text's lower-cased Unicode words, its runs of scripts written without spaces cut
//! into pairs of characters, number-like words and titles without their notes.

use std::sync::LazyLock;

use regex::Regex;

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
}
