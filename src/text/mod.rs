//! Text normalisation: from a raw string to the set of hashed shingles a sketch is built from.
//!
//! A document is split into Unicode word tokens (the `\w+` of most regex engines, so Polish,
//! Cyrillic and accented text work), lower-cased, optionally filtered through a [`Stoplist`],
//! and turned into shingles: word n-grams (default: single words, as in the CORE notebook) or
//! character n-grams over the normalised text. Each shingle is hashed to 64 bits with XXH3, a
//! hash that is specified byte-for-byte and therefore identical on every platform and Rust
//! version (unlike `std`'s `DefaultHasher`).

mod shingler;
mod shingling;
mod stoplist;
mod words;

pub use shingler::{LONG_TEXT, ShingleKind, Shingler};
pub use shingling::{ShinglingSpec, UNIGRAMS};
pub use stoplist::Stoplist;
pub use words::{UNSPACED_GRAM, for_each_word, is_number_word, without_notes, words};
