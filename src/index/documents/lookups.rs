//! Reading an open index: a document by id, the nearest documents to a text or to an indexed
//! document, each with the confirm stage's verdict.

use super::{DocumentIndex, Match, NewDocument};
use crate::confirm::{Evidence, Sketch, SketchRef, Verdict, Weighing};
use crate::error::{Error, Result};
use crate::io::Record;
use crate::store::{Fetched, Neighbour, SearchOptions, point_key};

/// New texts embedded and searched at a time.
const LOOKUP_BATCH: usize = 4096;

impl DocumentIndex {
    /// The verdict on a candidate (two documents' sketches and the cosine of their
    /// embeddings), with the evidence it rests on. A neighbour below `min_cosine` is no
    /// candidate at all.
    pub fn confirm(&self, a: SketchRef<'_>, b: SketchRef<'_>, cosine: f32) -> (Evidence, Verdict) {
        self.confirmer.confirm(a, b, cosine)
    }

    /// How the learned rule weighs two documents, where the index's rule is learned.
    pub fn weighing(&self, a: SketchRef<'_>, b: SketchRef<'_>, cosine: f32) -> Option<Weighing> {
        self.confirmer.weighing(a, b, cosine)
    }

    /// The `k` nearest documents to a text, each with its verdict.
    pub fn similar_to_text(&self, text: &str, k: usize) -> Result<Vec<Match>> {
        let (vector, sketch) = self.sketch(text)?;
        self.similar(&vector, sketch.as_ref(), k, None)
    }

    /// The `k` nearest documents to each of `texts`, each with its verdict: the texts are
    /// embedded a batch at a time and each batch searched at once, on every core.
    pub fn similar_to_texts(&self, texts: &[&str], k: usize) -> Result<Vec<Vec<Match>>> {
        let search = SearchOptions {
            k,
            with_payload: true,
            exact: self.search_exactly(),
        };
        let mut found = Vec::with_capacity(texts.len());
        for batch in texts.chunks(LOOKUP_BATCH) {
            let vectors = self.embed(batch)?;
            let rows: Vec<&[f32]> = vectors.iter().map(Vec::as_slice).collect();
            let hits = self.store.search(&rows, search)?;
            for (text, hits) in batch.iter().zip(hits) {
                let sketch = self.sign(&Record::plain(String::new(), (*text).to_owned()));
                found.push(self.verdicts(sketch.as_ref(), hits, None, k)?);
            }
        }
        Ok(found)
    }

    /// What the index keeps of a new text (one with no separate title): its vector and sketch.
    pub(super) fn sketch(&self, text: &str) -> Result<(Vec<f32>, Sketch)> {
        let vector = self.embed(&[text])?.remove(0);
        Ok((
            vector,
            self.sign(&Record::plain(String::new(), text.to_owned())),
        ))
    }

    /// The `k` nearest other documents to the indexed document `id`, each with its verdict.
    pub fn similar_to_id(&self, id: &str, k: usize) -> Result<Vec<Match>> {
        let fetched = self.document(id)?;
        self.similar(
            &fetched.vector,
            fetched.payload.sketch(),
            k,
            Some(point_key(id)),
        )
    }

    /// The indexed document `id`: its vector and payload.
    pub fn document(&self, id: &str) -> Result<Fetched> {
        let fetched = self.store.fetch(&[point_key(id)])?.remove(0);
        // Another id with the same key is not this document.
        let fetched = fetched.filter(|f| f.payload.id == id).ok_or_else(|| {
            Error::Usage(format!(
                "no document {id:?} in the index {} ({} documents); check the id",
                self.dir.display(),
                self.manifest.documents
            ))
        })?;
        self.check_signature(&fetched.payload)?;
        Ok(fetched)
    }

    /// Whether document `id` is indexed.
    pub fn contains(&self, id: &str) -> Result<bool> {
        let stored = self.store.fetch(&[point_key(id)])?.remove(0);
        Ok(stored.is_some_and(|s| s.payload.id == id))
    }

    /// What adding `text` takes, worked out before the write so that it needs no lock: its
    /// vector and sketch, and its `k` nearest documents with their verdicts.
    pub fn prepare(&self, text: &str, k: usize) -> Result<NewDocument> {
        let (vector, sketch) = self.sketch(text)?;
        let found = self.similar(&vector, sketch.as_ref(), k, None)?;
        Ok(NewDocument {
            text: text.to_owned(),
            title_len: None,
            vector,
            title: None,
            sketch,
            found,
        })
    }

    /// What adding `records` takes, without their neighbours (a run has found them): their
    /// vectors and those of their titles (where a record has more), embedded together, and
    /// sketches; each with its id.
    pub fn prepare_records(&self, records: Vec<Record>) -> Result<Vec<(String, NewDocument)>> {
        let texts = records.iter().map(|r| r.text.as_str());
        let titles = records.iter().filter_map(Record::title_apart);
        let mut vectors = self.embed(&texts.chain(titles).collect::<Vec<_>>())?;
        let mut titles = vectors.split_off(records.len()).into_iter();
        Ok(records
            .into_iter()
            .zip(vectors)
            .map(|(record, vector)| {
                let new = NewDocument {
                    sketch: self.sign(&record),
                    title: record.title_apart().and_then(|_| titles.next()),
                    text: record.text,
                    title_len: record.title_len,
                    vector,
                    found: Vec::new(),
                };
                (record.id, new)
            })
            .collect())
    }

    pub(super) fn similar(
        &self,
        vector: &[f32],
        sketch: SketchRef<'_>,
        k: usize,
        exclude: Option<u64>,
    ) -> Result<Vec<Match>> {
        let limit = k + usize::from(exclude.is_some());
        let search = SearchOptions {
            k: limit,
            with_payload: true,
            exact: self.search_exactly(),
        };
        let hits = self.store.search(&[vector], search)?.remove(0);
        self.verdicts(sketch, hits, exclude, k)
    }

    /// The first `k` of `hits` (but `exclude`) with the confirm stage's verdict on each
    /// against `sketch`.
    fn verdicts(
        &self,
        sketch: SketchRef<'_>,
        hits: Vec<Neighbour>,
        exclude: Option<u64>,
        k: usize,
    ) -> Result<Vec<Match>> {
        hits.into_iter()
            .filter(|hit| Some(hit.key) != exclude)
            .take(k)
            .filter_map(|hit: Neighbour| Some((hit.payload?, hit.cosine)))
            .map(|(payload, cosine)| {
                self.check_signature(&payload)?;
                let (evidence, verdict) = self.confirm(sketch, payload.sketch(), cosine);
                Ok(Match {
                    id: payload.id,
                    cosine,
                    jaccard_estimate: evidence.jaccard,
                    duplicate: verdict.duplicate,
                    rule: verdict.rule,
                })
            })
            .collect()
    }

    /// A stored signature must have the length this index signs with: one written by another
    /// setting (or changed by hand) would be compared slot by slot with the wrong slots.
    pub fn check_signature(&self, payload: &crate::store::Payload) -> Result<()> {
        let expected = self.manifest.settings.confirm.minhash.num_perm;
        if payload.signature.len() == expected {
            return Ok(());
        }
        Err(Error::Damaged {
            path: self.dir.clone(),
            problem: format!(
                "document {:?} has a signature of {} slots, the index signs with {expected}",
                payload.id,
                payload.signature.len()
            ),
            fix: None,
        })
    }
}
