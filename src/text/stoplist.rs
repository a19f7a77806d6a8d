//! Stoplists: words removed before shingling, so that "the", "of" and their kin do not make
//! unrelated texts look alike.

use std::collections::HashSet;
use std::path::Path;

use crate::error::{Error, Location};

/// A set of lower-cased words to ignore. The default is empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stoplist {
    words: HashSet<String>,
}

impl Stoplist {
    /// A stoplist of the given words (lower-cased here, so the list may use any case).
    pub fn from_words<S: AsRef<str>>(words: impl IntoIterator<Item = S>) -> Self {
        let mut set = HashSet::new();
        for w in words {
            super::for_each_word(w.as_ref(), |word| {
                set.insert(word.to_owned());
            });
        }
        Stoplist { words: set }
    }

    /// Reads a stoplist file: one word a line; blank lines and lines starting with `#` are
    /// ignored.
    pub fn from_file(path: &Path) -> Result<Self, Error> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let text = std::str::from_utf8(&bytes).map_err(|e| {
            let line = 1 + bytes[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            Error::input(
                Location::line(path, line as u64),
                None,
                "the stoplist is not valid UTF-8",
                "save the stoplist as UTF-8 text, one word a line",
            )
        })?;
        let words = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'));
        Ok(Self::from_words(words))
    }

    /// The words, sorted.
    pub fn words(&self) -> Vec<String> {
        let mut words: Vec<String> = self.words.iter().cloned().collect();
        words.sort();
        words
    }

    /// Adds the words of `other`.
    pub fn extend(&mut self, other: Stoplist) {
        self.words.extend(other.words);
    }

    /// Whether `word` (already lower-cased) is on the list.
    pub fn contains(&self, word: &str) -> bool {
        !self.words.is_empty() && self.words.contains(word)
    }

    /// How many words the list holds.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_skips_comments_and_blanks_and_folds_case() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stop.txt");
        std::fs::write(&path, "# common words\nThe\n\n  of \nŁÓDŹ\n").unwrap();
        let stop = Stoplist::from_file(&path).unwrap();
        assert_eq!(stop.len(), 3);
        assert!(stop.contains("the") && stop.contains("of") && stop.contains("łódź"));
        assert!(!stop.contains("rome"));
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stop.txt");
        std::fs::write(&path, b"the\nof\n\xff\xfe\n").unwrap();
        let err = Stoplist::from_file(&path).unwrap_err().to_string();
        assert!(err.contains("stop.txt:3"), "{err}");
        assert!(err.contains("UTF-8"), "{err}");
    }
}
