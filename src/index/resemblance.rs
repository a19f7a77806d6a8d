//! An n-gram resemblance store (after Perl's Text::DeDuper): add documents, then ask which
//! stored documents a new text resembles.
//!
//! Resemblance (Broder) is `|A ∩ B| / |A ∪ B|` over the sets of word n-grams (default 5-grams,
//! after an optional stoplist). The store keeps an inverted index from n-gram hash to the
//! documents holding it, so [`ResemblanceStore::find_similar`] is exact: it counts shared
//! n-grams through the postings of the query's n-grams and never scans the whole store. A
//! document resembles the query when its resemblance exceeds the threshold (default 0.2).
//!
//! A store saves to a folder (`store.bin`, compact binary, written atomically, and a readable
//! `settings.json`) and reopens with the same answers.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::output::{AtomicFile, write_json_pretty};
use crate::settings::MethodName;
use crate::text::{ShingleKind, Shingler, Stoplist};

/// Settings of a store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResemblanceSettings {
    /// Words per n-gram.
    pub ngram_size: usize,
    /// Resemblance a document must exceed to be similar.
    pub threshold: f64,
    /// Words removed before n-grams are formed.
    pub stopwords: Vec<String>,
}

impl Default for ResemblanceSettings {
    /// Text::DeDuper's defaults: 5-grams, threshold 0.2, no stoplist.
    fn default() -> Self {
        ResemblanceSettings {
            ngram_size: crate::similarity::RESEMBLANCE_NGRAM.get(),
            threshold: crate::similarity::RESEMBLANCE_THRESHOLD,
            stopwords: Vec::new(),
        }
    }
}

impl ResemblanceSettings {
    /// Adds the words of a stoplist file (one word a line) to the stop words.
    pub fn with_stoplist_file(mut self, path: &Path) -> Result<Self> {
        self.stopwords.extend(Stoplist::from_file(path)?.words());
        self.stopwords.sort();
        self.stopwords.dedup();
        Ok(self)
    }
}

/// A store of documents' n-gram sets with an inverted index.
pub struct ResemblanceStore {
    settings: ResemblanceSettings,
    shingler: Shingler,
    ids: Vec<String>,
    by_id: HashMap<String, u32>,
    /// Distinct n-grams per document.
    sizes: Vec<u32>,
    postings: HashMap<u64, Vec<u32>>,
}

/// What `store.bin` holds.
#[derive(Serialize, Deserialize)]
struct Stored {
    format: u32,
    settings: ResemblanceSettings,
    ids: Vec<String>,
    sizes: Vec<u32>,
    postings: Vec<(u64, Vec<u32>)>,
}

const FORMAT: u32 = 1;

impl ResemblanceStore {
    /// An empty store.
    pub fn new(settings: ResemblanceSettings) -> Result<Self> {
        if settings.ngram_size == 0 {
            return Err(Error::Usage("ngram_size must be at least 1".into()));
        }
        crate::settings::check(MethodName::Resemblance, "threshold", settings.threshold)?;
        let shingler = Shingler::new(
            ShingleKind::Words(settings.ngram_size),
            Stoplist::from_words(&settings.stopwords),
        );
        Ok(ResemblanceStore {
            settings,
            shingler,
            ids: Vec::new(),
            by_id: HashMap::new(),
            sizes: Vec::new(),
            postings: HashMap::new(),
        })
    }

    /// The settings.
    pub fn settings(&self) -> &ResemblanceSettings {
        &self.settings
    }

    /// Number of stored documents.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Adds a document. An id already in the store is an error (the store is unchanged).
    pub fn add_doc(&mut self, id: &str, text: &str) -> Result<()> {
        if self.by_id.contains_key(id) {
            return Err(Error::Usage(format!(
                "document id {id:?} is already in the store; ids must be unique"
            )));
        }
        let doc = self.ids.len() as u32;
        let grams = self.shingler.shingle_set(text);
        for &g in &grams {
            self.postings.entry(g).or_default().push(doc);
        }
        self.sizes.push(grams.len() as u32);
        self.ids.push(id.to_owned());
        self.by_id.insert(id.to_owned(), doc);
        Ok(())
    }

    /// The stored documents whose resemblance to `text` exceeds the threshold, most similar
    /// first (ties by id), with their resemblance.
    pub fn find_similar(&self, text: &str) -> Vec<(String, f64)> {
        let grams = self.shingler.shingle_set(text);
        if grams.is_empty() {
            return Vec::new();
        }
        let mut shared: HashMap<u32, u32> = HashMap::new();
        for g in &grams {
            if let Some(docs) = self.postings.get(g) {
                for &d in docs {
                    *shared.entry(d).or_insert(0) += 1;
                }
            }
        }
        let mut found: Vec<(String, f64)> = shared
            .into_iter()
            .filter_map(|(doc, common)| {
                let union = grams.len() as u32 + self.sizes[doc as usize] - common;
                let resemblance = f64::from(common) / f64::from(union);
                (resemblance > self.settings.threshold)
                    .then(|| (self.ids[doc as usize].clone(), resemblance))
            })
            .collect();
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        found
    }

    /// Removes every document.
    pub fn clean(&mut self) {
        self.ids.clear();
        self.by_id.clear();
        self.sizes.clear();
        self.postings.clear();
    }

    /// Saves the store into `dir` (created if missing), atomically per file.
    pub fn save(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let mut postings: Vec<(u64, Vec<u32>)> =
            self.postings.iter().map(|(&g, d)| (g, d.clone())).collect();
        postings.sort_unstable_by_key(|p| p.0);
        let stored = Stored {
            format: FORMAT,
            settings: self.settings.clone(),
            ids: self.ids.clone(),
            sizes: self.sizes.clone(),
            postings,
        };
        let path = dir.join("store.bin");
        let bytes =
            postcard::to_stdvec(&stored).map_err(|e| Error::io(&path, std::io::Error::other(e)))?;
        let mut file = AtomicFile::create(&path)?;
        file.write_all(&bytes).map_err(|e| Error::io(&path, e))?;
        file.commit()?;
        write_json_pretty(&dir.join("settings.json"), &self.settings)
    }

    /// Reopens a store saved with [`ResemblanceStore::save`].
    pub fn open(dir: &Path) -> Result<Self> {
        let path = dir.join("store.bin");
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        let stored: Stored = postcard::from_bytes(&bytes).map_err(|e| {
            Error::Usage(format!(
                "{}: not a neardup resemblance store ({e}); rebuild it",
                path.display()
            ))
        })?;
        if stored.format != FORMAT {
            return Err(Error::Usage(format!(
                "{}: store format {} is not supported (this neardup reads {FORMAT}); rebuild it",
                path.display(),
                stored.format
            )));
        }
        check_stored(&stored).map_err(|(field, problem)| {
            Error::input(
                crate::error::Location::file(&path),
                Some(field),
                problem,
                "the store was changed or damaged: remove the folder and add the documents again",
            )
        })?;
        let mut store = ResemblanceStore::new(stored.settings)?;
        store.by_id = stored
            .ids
            .iter()
            .enumerate()
            .map(|(i, id)| (id.clone(), i as u32))
            .collect();
        store.ids = stored.ids;
        store.sizes = stored.sizes;
        store.postings = stored.postings.into_iter().collect();
        Ok(store)
    }
}

/// What is wrong with a store read back, if anything: every document needs a size, an id of
/// its own, and exactly that many postings (a shared count above the size would make the
/// union negative); postings list each document once, in the order they were added.
fn check_stored(stored: &Stored) -> std::result::Result<(), (&'static str, String)> {
    let n = stored.ids.len();
    if stored.sizes.len() != n {
        return Err(("sizes", format!("{} sizes for {n} ids", stored.sizes.len())));
    }
    let distinct: std::collections::HashSet<&String> = stored.ids.iter().collect();
    if distinct.len() != n {
        return Err(("ids", "an id is stored twice".into()));
    }
    let mut postings_of = vec![0u32; n];
    for (gram, docs) in &stored.postings {
        if docs.windows(2).any(|w| w[0] >= w[1]) {
            return Err((
                "postings",
                format!("the list of n-gram {gram:x} is out of order"),
            ));
        }
        for &doc in docs {
            let Some(count) = postings_of.get_mut(doc as usize) else {
                return Err(("postings", format!("document {doc} of {n} does not exist")));
            };
            *count += 1;
        }
    }
    match (0..n).find(|&d| postings_of[d] != stored.sizes[d]) {
        Some(d) => Err((
            "sizes",
            format!(
                "document {:?} has size {} but {} n-grams",
                stored.ids[d], stored.sizes[d], postings_of[d]
            ),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC1: &str =
        "she sells sea shells on the sea shore and the shells she sells are surely sea shells";
    const DOC2: &str =
        "she sells sea shells on the sea shore and the shells she sells are surely from the sea";
    const DOC3: &str = "peter piper picked a peck of pickled peppers where is the peck he picked";

    fn store() -> ResemblanceStore {
        let mut s = ResemblanceStore::new(ResemblanceSettings::default()).unwrap();
        s.add_doc("doc1", DOC1).unwrap();
        s.add_doc("doc3", DOC3).unwrap();
        s
    }

    #[test]
    fn finds_resembling_documents_exactly() {
        let s = store();
        let found = s.find_similar(DOC2);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, "doc1");
        // Exact: 5-gram sets of DOC1 (13) and DOC2 (14) share 11 -> 11 / 16.
        assert!((found[0].1 - 11.0 / 16.0).abs() < 1e-12, "{}", found[0].1);
        assert!(
            s.find_similar("completely unrelated words about the weather today in town")
                .is_empty()
        );
        assert!(s.find_similar("").is_empty());
    }

    #[test]
    fn duplicate_ids_are_refused_and_clean_empties() {
        let mut s = store();
        let err = s.add_doc("doc1", "anything").unwrap_err().to_string();
        assert!(err.contains("doc1") && err.contains("already"), "{err}");
        assert_eq!(s.len(), 2);
        s.clean();
        assert!(s.is_empty());
        assert!(s.find_similar(DOC1).is_empty());
        s.add_doc("doc1", DOC1).unwrap();
        assert_eq!(s.find_similar(DOC1)[0].1, 1.0);
    }

    #[test]
    fn a_saved_store_reopens_with_the_same_answers() {
        let dir = tempfile::tempdir().unwrap();
        let settings = ResemblanceSettings {
            stopwords: vec!["the".into(), "a".into()],
            ..ResemblanceSettings::default()
        };
        let mut s = ResemblanceStore::new(settings.clone()).unwrap();
        s.add_doc("doc1", DOC1).unwrap();
        s.add_doc("doc3", DOC3).unwrap();
        s.save(dir.path()).unwrap();
        let reopened = ResemblanceStore::open(dir.path()).unwrap();
        assert_eq!(reopened.settings(), &settings);
        for q in [DOC1, DOC2, DOC3, "peter piper picked a peck"] {
            assert_eq!(reopened.find_similar(q), s.find_similar(q));
        }
        let file = dir.path().join("stop.txt");
        std::fs::write(&file, "# English\nthe\nof\n").unwrap();
        let from_file = ResemblanceSettings::default()
            .with_stoplist_file(&file)
            .unwrap();
        assert_eq!(from_file.stopwords, ["of", "the"]);
        std::fs::write(dir.path().join("store.bin"), b"garbage").unwrap();
        let err = ResemblanceStore::open(dir.path())
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("not a neardup resemblance store"), "{err}");
    }

    #[test]
    fn a_stored_store_that_disagrees_with_itself_is_refused() {
        let good = || Stored {
            format: FORMAT,
            settings: ResemblanceSettings::default(),
            ids: vec!["a".into(), "b".into()],
            sizes: vec![2, 1],
            postings: vec![(1, vec![0, 1]), (2, vec![0])],
        };
        assert_eq!(check_stored(&good()), Ok(()));
        let mut cases = Vec::new();
        let mut s = good();
        s.sizes.pop();
        cases.push(s);
        let mut s = good();
        s.ids[1] = "a".into();
        cases.push(s);
        let mut s = good();
        s.postings[0].1 = vec![1, 0];
        cases.push(s);
        let mut s = good();
        s.postings[1].1 = vec![7];
        cases.push(s);
        let mut s = good();
        s.sizes[1] = 0;
        cases.push(s);
        let fields: Vec<&str> = cases
            .iter()
            .map(|s| check_stored(s).unwrap_err().0)
            .collect();
        assert_eq!(fields, ["sizes", "ids", "postings", "postings", "sizes"]);

        // Through the file, and settings as `new` checks them.
        let dir = tempfile::tempdir().unwrap();
        let open_error = |stored: &Stored| {
            let bytes = postcard::to_stdvec(stored).unwrap();
            std::fs::write(dir.path().join("store.bin"), bytes).unwrap();
            let opened = ResemblanceStore::open(dir.path());
            opened.err().unwrap().to_string()
        };
        let mut s = good();
        s.settings.ngram_size = 0;
        let err = open_error(&s);
        assert!(err.contains("ngram_size must be at least 1"), "{err}");
        let mut s = good();
        s.sizes[0] = 9;
        let err = open_error(&s);
        assert!(
            err.contains("store.bin: field `sizes`: document \"a\" has size 9 but 2 n-grams"),
            "{err}"
        );
    }
}
