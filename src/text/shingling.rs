//! Shingling settings: what a shingle is and which words are ignored, as a user writes them (a
//! pipeline file, command-line flags) and as an index manifest records them.

use std::num::NonZeroUsize;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{ShingleKind, Shingler, Stoplist};
use crate::error::{Error, Result};

/// How texts become shingles. Every method has these settings; a method supplies its own
/// default n-gram size (1 for most, 5 for resemblance).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ShinglingSpec {
    /// Word n-gram size (`None`: 1; 5 for resemblance).
    pub ngram: Option<NonZeroUsize>,
    /// Character n-grams of this size instead of word n-grams.
    pub char_ngram: Option<NonZeroUsize>,
    /// Stoplist file: one word a line (`#` comments allowed).
    pub stoplist: Option<PathBuf>,
    /// Stop words given inline.
    pub stopwords: Vec<String>,
}

impl ShinglingSpec {
    /// Checks the combination: word or character n-grams, not both.
    pub fn validate(&self) -> Result<()> {
        if self.ngram.is_some() && self.char_ngram.is_some() {
            return Err(Error::Usage(
                "give either `ngram` or `char_ngram`, not both".into(),
            ));
        }
        Ok(())
    }

    /// The shingle kind, with `default_ngram` word n-grams when neither size is set.
    pub fn kind(&self, default_ngram: NonZeroUsize) -> ShingleKind {
        match (self.char_ngram, self.ngram) {
            (Some(n), _) => ShingleKind::Chars(n.get()),
            (None, n) => ShingleKind::Words(n.unwrap_or(default_ngram).get()),
        }
    }

    /// The stop words: the inline ones and those of the stoplist file (read now).
    pub fn stoplist(&self) -> Result<Stoplist> {
        let mut stoplist = Stoplist::from_words(&self.stopwords);
        if let Some(path) = &self.stoplist {
            stoplist.extend(Stoplist::from_file(path)?);
        }
        Ok(stoplist)
    }

    /// The shingler these settings describe.
    pub fn shingler(&self, default_ngram: NonZeroUsize) -> Result<Shingler> {
        self.validate()?;
        Ok(Shingler::new(self.kind(default_ngram), self.stoplist()?))
    }

    /// The same settings with nothing left to a default or a file: the n-gram size explicit
    /// and the stoplist's words inline. What an index records, so that it shingles the same
    /// way after the stoplist file has changed or gone.
    pub fn resolved(&self, default_ngram: NonZeroUsize) -> Result<ShinglingSpec> {
        self.validate()?;
        let (ngram, char_ngram) = match self.kind(default_ngram) {
            ShingleKind::Words(n) => (NonZeroUsize::new(n), None),
            ShingleKind::Chars(n) => (None, NonZeroUsize::new(n)),
        };
        Ok(ShinglingSpec {
            ngram,
            char_ngram,
            stoplist: None,
            stopwords: self.stoplist()?.words(),
        })
    }
}

/// Word 1-grams: the default of every method but resemblance.
pub const UNIGRAMS: NonZeroUsize = NonZeroUsize::MIN;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolving_makes_the_size_explicit_and_inlines_the_stoplist() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("stop.txt");
        std::fs::write(&file, "The\n# comment\nof\n").unwrap();
        let spec = ShinglingSpec {
            stoplist: Some(file),
            stopwords: vec!["and".into()],
            ..ShinglingSpec::default()
        };
        let resolved = spec.resolved(NonZeroUsize::new(5).unwrap()).unwrap();
        assert_eq!(resolved.ngram, NonZeroUsize::new(5));
        assert_eq!(resolved.stoplist, None);
        assert_eq!(resolved.stopwords, ["and", "of", "the"]);
        assert_eq!(
            resolved.kind(UNIGRAMS),
            spec.kind(NonZeroUsize::new(5).unwrap())
        );
    }

    #[test]
    fn both_sizes_are_refused() {
        let spec = ShinglingSpec {
            ngram: NonZeroUsize::new(2),
            char_ngram: NonZeroUsize::new(3),
            ..ShinglingSpec::default()
        };
        let err = spec.shingler(UNIGRAMS).unwrap_err().to_string();
        assert!(err.contains("`ngram` or `char_ngram`"), "{err}");
    }
}
