//! Exact copies signed once.
//!
//! Corpora hold texts repeated many times: boilerplate, mirrors, a record harvested again and
//! again (a million copies of one abstract is not rare in web data). A copy's sketch is its
//! first occurrence's, bit for bit, so it is taken from there instead of being made again:
//! tokenising, hashing and the MinHash kernel run once per distinct text. Nothing downstream
//! can tell: every document still has its own row, so the candidates, verdicts and groups are
//! those of signing each copy.
//!
//! Records are signed in parallel and kept in reading order, so the two halves meet through one
//! table of texts seen: [`SignOnce::sign`] (on any thread) signs a text the first time it meets
//! it and hands on a copy's record otherwise; [`SignOnce::keep`] (in order) appends each
//! document, a copy as the row of the first document of its text. Two copies met at once on
//! two threads may reach `keep` in the other order, or the first may be dropped (a repeated id
//! skipped): then the copy is signed there, so the answer never depends on timing.
//!
//! Texts are told apart by a 128-bit hash of the text and where its title ends (all a sketch
//! is made from); two texts sharing one are about as likely as a random 128-bit collision.

use std::collections::hash_map::Entry;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use rustc_hash::FxHashMap;
use xxhash_rust::xxh3::xxh3_128_with_seed;

use super::{Confirmer, Sketch, SketchFacts};
use crate::io::Record;
use crate::sketch::Signatures;

/// In the table of texts seen, a text signed whose first document is not kept yet.
const NOT_KEPT: u32 = u32::MAX;

/// What [`SignOnce::sign`] makes of a record.
pub enum Signing {
    /// The first of its text met: its sketch.
    New(Sketch, u128),
    /// A text met before: the record, should its first not be kept.
    Copy(u128, Record),
}

/// Signs each distinct text once: a copy of an earlier text takes that one's sketch (see
/// `confirm/copies.rs`).
pub struct SignOnce<'a> {
    confirmer: &'a Confirmer,
    /// Each text's first document, or [`NOT_KEPT`] between its signing and its keeping.
    first: Mutex<FxHashMap<u128, u32>>,
    copies: AtomicUsize,
}

impl<'a> SignOnce<'a> {
    pub fn new(confirmer: &'a Confirmer) -> Self {
        SignOnce {
            confirmer,
            first: Mutex::new(FxHashMap::default()),
            copies: AtomicUsize::new(0),
        }
    }

    /// The record's sketch, unless its text was met before.
    pub fn sign(&self, record: &Record) -> Signing {
        let key = text_key(record);
        let mut first = self.first.lock().unwrap_or_else(|e| e.into_inner());
        match first.entry(key) {
            Entry::Vacant(slot) => {
                slot.insert(NOT_KEPT);
                drop(first);
                Signing::New(self.confirmer.sign(record), key)
            }
            Entry::Occupied(_) => Signing::Copy(key, record.clone()),
        }
    }

    /// Appends the next document to `signatures` and `sketches`: its own sketch, or its
    /// text's first document's. Returns that first document where the text is a copy.
    pub fn keep(
        &self,
        signing: Signing,
        signatures: &mut Signatures,
        sketches: &mut SketchFacts,
    ) -> Option<u32> {
        let doc = signatures.len() as u32;
        let first_of = |key: &u128| {
            let first = self.first.lock().unwrap_or_else(|e| e.into_inner());
            first.get(key).copied().filter(|&of| of != NOT_KEPT)
        };
        let (sketch, key) = match signing {
            Signing::New(sketch, key) => (sketch, key),
            Signing::Copy(key, record) => match first_of(&key) {
                Some(of) => {
                    sketches.push_copy_of(signatures, of as usize);
                    self.copies.fetch_add(1, Ordering::Relaxed);
                    return Some(of);
                }
                None => (self.confirmer.sign(&record), key),
            },
        };
        {
            let mut first = self.first.lock().unwrap_or_else(|e| e.into_inner());
            let slot = first.entry(key).or_insert(NOT_KEPT);
            if *slot == NOT_KEPT {
                *slot = doc;
            }
        }
        sketches.push_sketch(signatures, sketch.as_ref());
        None
    }

    /// Documents kept as a copy of an earlier one.
    pub fn copies(&self) -> usize {
        self.copies.load(Ordering::Relaxed)
    }
}

/// The hash that tells texts apart: of the text, seeded with where its title ends (one call of
/// the one-shot hash, which reads the text in place; the streaming one copied it in pieces).
fn text_key(record: &Record) -> u128 {
    let title_end = record.title_len.map_or(u64::MAX, |n| n as u64);
    xxh3_128_with_seed(record.text.as_bytes(), title_end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confirm::ConfirmSettings;
    use rayon::prelude::*;

    /// Records with many copies, met in parallel and kept in order, give the signatures and
    /// facts of signing each one.
    #[test]
    fn copies_signed_once_keep_what_signing_each_gives() {
        let confirmer = Confirmer::new(&ConfirmSettings::default(), -1.0).unwrap();
        let texts = [
            "the same abstract of a paper on duplicate records in a library",
            "another abstract altogether about vectors and their cells",
            "a third one, short",
        ];
        let records: Vec<Record> = (0..3000)
            .map(|i| {
                let text = match i % 7 {
                    0 => format!("a record of its own, number {i}, with a few more words"),
                    k => texts[k % 3].to_owned(),
                };
                match i % 2 {
                    0 => Record::plain(i.to_string(), text),
                    _ => Record::from_fields(i.to_string(), &["a title of four words", &text]),
                }
            })
            .collect();

        let (mut each, mut each_facts) = (
            Signatures::new(confirmer.num_perm()),
            SketchFacts::default(),
        );
        for record in &records {
            each_facts.push_sketch(&mut each, confirmer.sign(record).as_ref());
        }

        let once = SignOnce::new(&confirmer);
        let (mut signatures, mut sketches) = (
            Signatures::new(confirmer.num_perm()),
            SketchFacts::default(),
        );
        for chunk in records.chunks(256) {
            let signed: Vec<Signing> = chunk.par_iter().map(|r| once.sign(r)).collect();
            for signing in signed {
                once.keep(signing, &mut signatures, &mut sketches);
            }
        }
        assert_eq!(signatures, each);
        assert_eq!(sketches, each_facts);
        // Set aside on disk and read back, or appended to others, copies read as their own.
        let (mut signatures_file, mut sketches_file) = (Vec::new(), Vec::new());
        signatures.write_to(&mut signatures_file).unwrap();
        sketches.write_to(&mut sketches_file).unwrap();
        let mut written = (Vec::new(), Vec::new());
        each.write_to(&mut written.0).unwrap();
        each_facts.write_to(&mut written.1).unwrap();
        assert_eq!((signatures_file, sketches_file), written);
        let mut appended = each_facts.clone();
        appended.extend(sketches.clone());
        let mut twice = sketches.clone();
        twice.extend(each_facts.clone());
        assert_eq!(appended, twice);
        assert_eq!(twice.facts(3000 + 13), each_facts.facts(13));
        // Of the 3000, 429 are records of their own; 6 distinct texts (3, with and without
        // a title) take the rest, each signed once unless met twice at once.
        assert!(once.copies() > 2500, "{}", once.copies());

        // A copy whose first was never kept (its record dropped) is signed where it is kept.
        let once = SignOnce::new(&confirmer);
        let (mut signatures, mut sketches) = (
            Signatures::new(confirmer.num_perm()),
            SketchFacts::default(),
        );
        let _dropped = once.sign(&records[1]);
        let copy = once.sign(&records[15]);
        assert!(matches!(copy, Signing::Copy(..)));
        once.keep(copy, &mut signatures, &mut sketches);
        assert_eq!(signatures.row(0), each.row(15));
        assert_eq!(once.copies(), 0);
    }
}
