//! A new batch checked against a collection kept from earlier runs (`--against INDEX`).
//!
//! The batch is deduplicated as any run is, and each of its documents is also searched in the
//! collection's index: its `k` nearest there become candidates too, judged by the same
//! classifier on the sketches the index keeps. The collection's documents a search reaches
//! join the run as documents without a record of their own, numbered after the batch's, so
//! that pairs and groups name them and a group that reaches the collection keeps its record;
//! the batch's records in such a group are its duplicates.
//!
//! The batch is embedded as the collection was: with its settings (checked as a part's are)
//! and centred on its centre, so that a cosine between a new and a kept vector means what one
//! within the collection means. A record whose id the collection holds replaces it: the two
//! are not compared, and the batch's own search compares the new record with the others.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::confirm::SketchFacts;
use crate::error::{Error, Result};
use crate::group::KeepPolicy;
use crate::index::DocumentIndex;
use crate::io::{Input, ReadOptions, Record, for_each_document};
use crate::pipeline::{Dedup, Fates, kept_members};
use crate::progress;
use crate::search::QueryReader;
use crate::sketch::Signatures;
use crate::store::SearchOptions;

/// Query vectors searched in the collection at a time (the engine runs each batch's searches
/// in parallel).
const SEARCH_BATCH: usize = 1024;

/// What the collection adds to a run: the documents of it that were reached, and the
/// candidates that reach them.
pub(super) struct CollectionCandidates {
    /// The ids of the collection's documents reached, in the order they are numbered (after
    /// the batch's).
    pub ids: Vec<String>,
    /// `(batch document, collection document, cosine)`, each pair once at its highest cosine.
    pub candidates: Vec<(u32, u32, f32)>,
}

/// Searches every query of the batch (`documents` of them, their vectors in `queries`) among
/// the collection's `k` nearest. A document's own vector looks among all; a title's, among
/// the collection's title-only records, as within a run. The collection documents reached
/// are appended to `signatures` and `sketches`; `in_batch` is each batch document's point
/// key, whose collection namesake is left out.
pub(super) fn search_collection(
    collection: &DocumentIndex,
    queries: &mut QueryReader,
    documents: usize,
    in_batch: &HashMap<u64, u32>,
    k: usize,
    signatures: &mut Signatures,
    sketches: &mut SketchFacts,
) -> Result<CollectionCandidates> {
    let search = SearchOptions {
        k,
        with_payload: true,
        exact: collection.search_exactly(),
    };
    let progress = progress::items(queries.len() as u64, "searching the collection");
    let mut reached: HashMap<u64, u32> = HashMap::new();
    let mut ids = Vec::new();
    let mut candidates = Vec::new();
    let mut replaced = HashSet::new();
    queries.rewind()?;
    while let Some((batch, vectors)) = queries.next_batch(SEARCH_BATCH)? {
        let rows: Vec<&[f32]> = vectors.chunks_exact(queries.dimensions()).collect();
        let found = collection.store().search(&rows, search)?;
        for (query, hits) in batch.iter().zip(found) {
            for hit in hits {
                let Some(payload) = hit.payload else { continue };
                if in_batch.contains_key(&hit.key) {
                    replaced.insert(hit.key);
                    continue;
                }
                let facts = &payload.facts;
                if query.title && (facts.title.is_none() || facts.body) {
                    continue;
                }
                let doc = match reached.get(&hit.key) {
                    Some(&doc) => doc,
                    None => {
                        collection.check_signature(&payload)?;
                        let doc = (documents + ids.len()) as u32;
                        signatures.push(&payload.signature, payload.shingles == 0);
                        sketches.push(payload.shingles, payload.facts.clone());
                        reached.insert(hit.key, doc);
                        ids.push(payload.id);
                        doc
                    }
                };
                candidates.push((query.doc, doc, hit.cosine));
            }
        }
        progress.inc(batch.len() as u64);
    }
    progress.finish_and_clear();
    queries.rewind()?;
    // A document and its title may both reach a record: the pair once, at its higher cosine.
    candidates.sort_unstable_by(|x, y| (x.0, x.1).cmp(&(y.0, y.1)).then(y.2.total_cmp(&x.2)));
    candidates.dedup_by_key(|c| (c.0, c.1));
    if !replaced.is_empty() {
        tracing::warn!(
            records = replaced.len(),
            "the collection holds records under ids of the batch: the batch's replace them, and \
             are compared with the rest"
        );
    }
    tracing::info!(
        candidates = candidates.len(),
        reached = ids.len(),
        "searched the collection"
    );
    Ok(CollectionCandidates { ids, candidates })
}

/// Opens the collection a batch is checked against, refusing one built with settings other
/// than the run's.
pub(super) fn open_collection(
    dir: &Path,
    settings: &crate::index::IndexSettings,
    models: &Path,
) -> Result<DocumentIndex> {
    super::part::open_matching(dir, settings, models, "this run")
}

/// Records added to the collection at a time: embedded together, then inserted.
const ADD_BATCH: usize = 4096;

/// Adds the records a run checked against `collection` kept (those in `unique.*`) to it, as
/// one batch that a crash undoes whole; returns how many.
pub fn add_to_collection(
    inputs: &[Input],
    read: &ReadOptions,
    dedup: &Dedup,
    keep: &KeepPolicy,
    collection: &Path,
    models: &Path,
) -> Result<usize> {
    let kept = kept_members(inputs, read, dedup, keep)?;
    let fates = Fates::new(dedup, &kept);
    let index = DocumentIndex::open(collection, models, None)?;
    let progress = progress::items(dedup.records() as u64, "adding to the collection");
    let batch = index.begin_batch()?;
    let mut added = 0;
    for_each_document(inputs, read, &dedup.corpus, "adding", |records| {
        for chunk in records.chunks(ADD_BATCH) {
            let new: Vec<Record> = chunk
                .iter()
                .filter(|(_, doc)| fates.of(*doc).kept)
                .map(|(raw, _)| read.parse(raw).map_err(Error::from))
                .collect::<Result<_>>()?;
            for (id, document) in index.prepare_records(new)? {
                index.insert_in(&id, document, Some(batch))?;
                added += 1;
            }
            progress.inc(chunk.len() as u64);
        }
        Ok(())
    })?;
    index.end_batch(batch)?;
    index.close()?;
    progress.finish_and_clear();
    tracing::info!(records = added, collection = %collection.display(), "added to the collection");
    Ok(added)
}
