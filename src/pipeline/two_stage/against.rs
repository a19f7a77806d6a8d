//! A new batch checked against a collection kept from earlier runs (`--against INDEX`).
//!
//! The batch is deduplicated as any run is, and each of its documents is also searched among
//! the collection's: the vectors and sketches the index keeps are read once (from its
//! [`Snapshot`], which the first such read writes; the store is opened only for that read),
//! cut into k-means cells as a run's own are (or placed in the cells kept beside the snapshot),
//! and each batch document's `k` nearest there become candidates too, with the pairs MinHash's
//! bands propose between the two sides, judged by the same classifier. (Walking the index's
//! graph one query at a time took 3.5 times a run over both at a million: decision 0014.) The
//! collection's documents a search reaches join the run as documents without a record of their
//! own, numbered after the batch's, so that pairs and groups name them and a group that reaches
//! the collection keeps its record; the batch's records in such a group are its duplicates.
//!
//! The batch is embedded as the collection was: with its settings (checked as a part's are)
//! and centred on its centre, so that a cosine between a new and a kept vector means what one
//! within the collection means. A record whose id the collection holds replaces it: the two
//! are not compared, and the batch's own search compares the new record with the others.

use std::collections::HashMap;
use std::path::Path;

use rayon::prelude::*;

use crate::confirm::{SketchFacts, proposed_pairs_between};
use crate::error::{Error, Result};
use crate::group::KeepPolicy;
use crate::index::{Collection, DocumentIndex, Snapshot, StoredCells};
use crate::io::{Input, ReadOptions, Record, for_each_document};
use crate::pipeline::{Dedup, Fates, kept_members};
use crate::progress;
use crate::search::{CellPlacement, Cells, QueryReader, cells_for};
use crate::sketch::Signatures;
use crate::store::point_key;

use super::TwoStageConfig;

/// How much a collection may grow after its cells were learned before a run learns them again.
const CELLS_SERVE_GROWTH: f64 = 0.25;
/// Points read from the collection at a time.
const SCROLL_PAGE: usize = 1 << 16;
/// Query vectors searched in the cells at a time.
const QUERY_BLOCK: usize = 1 << 16;

/// What a run takes from the collection: its documents reached, and the candidates that
/// reach them.
pub(super) struct CollectionCandidates {
    /// The ids of the collection's documents reached, in the order they are numbered (after
    /// the batch's).
    pub ids: Vec<String>,
    /// `(batch document, collection document, cosine)`, each pair once at its highest cosine.
    pub candidates: Vec<(u32, u32, f32)>,
}

/// Reads every document of `collection` (vector, id, sketch) but those whose point key
/// `in_batch` holds: from its snapshot, or else from its store (opened with the models under
/// `models`, on the server at `url` where the run names one, and then closed), and then writes
/// the snapshot for the next run. Says whether it read every document (none left out).
fn read_collection(
    collection: &Collection,
    models: &Path,
    url: Option<&str>,
    in_batch: &HashMap<u64, u32>,
) -> Result<(Snapshot, bool)> {
    let clock = std::time::Instant::now();
    let (whole, from) = match collection.read_snapshot()? {
        Some(snapshot) => (snapshot, "its snapshot"),
        None => {
            let index = DocumentIndex::open(collection.dir(), models, url)?;
            let whole = scroll_store(&index)?;
            collection.write_snapshot(&whole)?;
            (whole, "its store")
        }
    };
    tracing::info!(
        documents = whole.ids.len(),
        from,
        seconds = clock.elapsed().as_secs_f64(),
        "read the collection"
    );
    let keep: Vec<bool> = whole
        .ids
        .iter()
        .map(|id| !in_batch.contains_key(&point_key(id)))
        .collect();
    let replaced = keep.iter().filter(|&&kept| !kept).count();
    if replaced == 0 {
        return Ok((whole, true));
    }
    tracing::warn!(
        records = replaced,
        "the collection holds records under ids of the batch: the batch's replace them, and \
         are compared with the rest"
    );
    let mut kept = Snapshot::empty(whole.width, whole.signatures.num_perm());
    for (doc, _) in keep.iter().enumerate().filter(|(_, kept)| **kept) {
        let vector = &whole.vectors[doc * whole.width..(doc + 1) * whole.width];
        let sketch = whole.sketches.get(&whole.signatures, doc);
        kept.push(&whole.ids[doc], vector, sketch);
    }
    Ok((kept, false))
}

/// The cells of the collection's documents (`collection`, every one of the index's where
/// `whole`): those kept beside the snapshot where they serve this run, else learned, and kept
/// for the next.
fn collection_cells(
    against: &Collection,
    collection: &mut Snapshot,
    whole: bool,
    config: &TwoStageConfig,
) -> Result<Cells> {
    let held = collection.ids.len();
    let (count, explicit) = match (config.exact_search, config.cells) {
        (true, _) => (1, true),
        (false, Some(count)) if count > 0 => (count, true),
        _ => (cells_for(held), false),
    };
    let probes = config.cell_probes.clamp(1, count.clamp(1, held));
    let vectors = std::mem::take(&mut collection.vectors);
    let stored = match whole {
        true => against.read_cells(collection)?,
        false => None,
    };
    if let Some(stored) = stored
        && stored.placement.probes() == probes
        && kept_cells_serve(&stored, count, explicit, held)
    {
        return Ok(Cells::placed(vectors, collection.width, stored.placement));
    }
    let spinner = progress::spinner("learning the collection's cells");
    let placement = CellPlacement::learn(&vectors, collection.width, count, probes);
    drop(spinner);
    if !whole {
        return Ok(Cells::placed(vectors, collection.width, placement));
    }
    let stored = StoredCells {
        count,
        learned_on: held,
        of_ids: collection.ids_digest(),
        placement,
    };
    against.write_cells(&stored)?;
    Ok(Cells::placed(vectors, collection.width, stored.placement))
}

/// Whether cells kept for a collection serve a run over its `held` documents that asks for
/// `count` cells (`explicit`: named by the user, else as many as its size suggests): the same
/// cells asked for, or by default, default cells while the collection has grown by at most
/// [`CELLS_SERVE_GROWTH`] since they were learned. Learning them again costs seconds at a
/// million documents; a quarter more documents in the same cells makes them a quarter larger.
fn kept_cells_serve(stored: &StoredCells, count: usize, explicit: bool, held: usize) -> bool {
    match explicit {
        true => stored.count == count,
        false => {
            stored.count == cells_for(stored.learned_on)
                && held as f64 <= stored.learned_on as f64 * (1.0 + CELLS_SERVE_GROWTH)
        }
    }
}

/// Reads every point of `index`'s store, a page at a time.
fn scroll_store(index: &DocumentIndex) -> Result<Snapshot> {
    let store = index.store();
    let progress = progress::items(store.len()? as u64, "reading the collection");
    let manifest = index.manifest();
    let mut read = Snapshot::empty(
        manifest.dimensions,
        manifest.settings.confirm.minhash.num_perm,
    );
    let mut from = None;
    loop {
        let (page, next) = store.scroll(from, SCROLL_PAGE)?;
        progress.inc(page.len() as u64);
        for (_, point) in page {
            index.check_signature(&point.payload)?;
            read.push(&point.payload.id, &point.vector, point.payload.sketch());
        }
        match next {
            Some(key) => from = Some(key),
            None => break,
        }
    }
    progress.finish_and_clear();
    Ok(read)
}

/// Searches every query of the batch (its documents' vectors in `queries`, their sketches in
/// `signatures` and `sketches`) for its `top_k` nearest in the collection, within k-means
/// cells of the collection's vectors as a run searches its own. A document's vector looks
/// among all; a title's, among the collection's title-only records, as within a run. The
/// collection documents reached are appended to `signatures` and `sketches`; `in_batch` is
/// each batch document's point key, whose collection namesake is left out. `models` holds the
/// model, where the collection's store must be read.
pub(super) fn search_collection(
    against: Collection,
    models: &Path,
    queries: &mut QueryReader,
    in_batch: &HashMap<u64, u32>,
    config: &TwoStageConfig,
    signatures: &mut Signatures,
    sketches: &mut SketchFacts,
) -> Result<CollectionCandidates> {
    let documents = signatures.len();
    let url = config.settings.store.qdrant_url.as_deref();
    let (mut collection, whole) = read_collection(&against, models, url, in_batch)?;
    let held = collection.ids.len();
    if held == 0 {
        return Ok(CollectionCandidates {
            ids: Vec::new(),
            candidates: Vec::new(),
        });
    }
    let cells = collection_cells(&against, &mut collection, whole, config)?;
    let title_only: Vec<bool> = (0..held)
        .map(|doc| collection.sketches.facts(doc).title_only())
        .collect();
    let title_members = cells.members_among(&title_only);

    let progress = progress::items(queries.len() as u64, "searching the collection");
    let mut found: Vec<(u32, u32, f32)> = Vec::new();
    let width = queries.dimensions();
    let mut batch_vectors = vec![0f32; documents * width];
    queries.rewind()?;
    while let Some((batch, flat)) = queries.next_batch(QUERY_BLOCK)? {
        let rows: Vec<&[f32]> = flat.chunks_exact(width).collect();
        for (query, row) in batch.iter().zip(&rows).filter(|(query, _)| !query.title) {
            let at = query.doc as usize * width;
            batch_vectors[at..at + width].copy_from_slice(row);
        }
        for (titles, members) in [(false, cells.members()), (true, &title_members[..])] {
            let (asked, vectors): (Vec<u32>, Vec<&[f32]>) = batch
                .iter()
                .zip(&rows)
                .filter(|(query, _)| query.title == titles)
                .map(|(query, row)| (query.doc, *row))
                .unzip();
            let hits = cells.nearest_among(&vectors, members, config.top_k);
            for (&doc, hits) in asked.iter().zip(hits) {
                found.extend(hits.into_iter().map(|(cosine, other)| (doc, other, cosine)));
            }
        }
        progress.inc(batch.len() as u64);
    }
    progress.finish_and_clear();
    queries.rewind()?;
    // As within a run, cells may part two near-copies whose vectors sit near a boundary: the
    // pairs MinHash proposes between the batch and the collection join the candidates.
    if super::proposes(config, cells.count()) {
        let proposed = proposed_pairs_between(
            (&collection.signatures, &collection.sketches),
            (signatures, sketches),
            &config.settings.confirm,
        );
        tracing::info!(
            pairs = proposed.len(),
            "MinHash proposed pairs between the batch and the collection"
        );
        found.par_extend(proposed.into_par_iter().map(|(other, doc)| {
            let at = doc as usize * width;
            let cosine = cells.cosine_to(&batch_vectors[at..at + width], other);
            (doc, other, cosine)
        }));
    }
    let count = cells.count();
    drop((cells, batch_vectors));

    // A document and its title may both reach a record: the pair once, at its higher cosine.
    found.sort_unstable_by(|x, y| (x.0, x.1).cmp(&(y.0, y.1)).then(y.2.total_cmp(&x.2)));
    found.dedup_by_key(|c| (c.0, c.1));
    // The collection's documents reached are numbered after the batch's, in the order met.
    let mut number = vec![u32::MAX; held];
    let mut ids = Vec::new();
    for candidate in &mut found {
        let other = candidate.1 as usize;
        if number[other] == u32::MAX {
            number[other] = (documents + ids.len()) as u32;
            let sketch = collection.sketches.get(&collection.signatures, other);
            sketches.push_sketch(signatures, sketch);
            ids.push(collection.ids[other].clone());
        }
        candidate.1 = number[other];
    }
    tracing::info!(
        candidates = found.len(),
        reached = ids.len(),
        collection = held,
        cells = count,
        "searched the collection"
    );
    Ok(CollectionCandidates {
        ids,
        candidates: found,
    })
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
    // The first write removes the snapshot and its cells: they are read first, and written
    // again with the records added, so that the next batch need not read the store.
    let files = Collection::open(collection)?;
    let mut snapshot = files.read_snapshot()?;
    let mut cells = match &snapshot {
        Some(snapshot) => files.read_cells(snapshot)?,
        None => None,
    };
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
            let mut vectors = Vec::new();
            for (id, document) in index.prepare_records(new)? {
                if let Some(snapshot) = snapshot.as_mut() {
                    snapshot.push(&id, document.vector(), document.sketch());
                }
                vectors.extend_from_slice(document.vector());
                index.insert_in(&id, document, Some(batch))?;
                added += 1;
            }
            if let Some(cells) = cells.as_mut() {
                cells.placement.place(&vectors);
            }
            progress.inc(chunk.len() as u64);
        }
        Ok(())
    })?;
    index.end_batch(batch)?;
    index.close()?;
    progress.finish_and_clear();
    // A record that replaced one of the same id leaves the copy a row too many: then the next
    // batch reads the store instead.
    if let Some(snapshot) = snapshot
        && snapshot.ids.len() == index.store().len()?
    {
        files.write_snapshot(&snapshot)?;
        if let Some(mut cells) = cells {
            cells.of_ids = snapshot.ids_digest();
            files.write_cells(&cells)?;
        }
    }
    tracing::info!(records = added, collection = %collection.display(), "added to the collection");
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::CellPlacement;

    /// Cells asked for by name serve only that count; default ones serve while the
    /// collection grows by up to a quarter, and not cells asked for by name.
    #[test]
    fn kept_cells_serve_the_count_they_were_learned_for() {
        let vectors: Vec<f32> = (0..40).flat_map(|i| [1.0, i as f32 / 40.0]).collect();
        let stored = |count: usize, learned_on: usize| StoredCells {
            count,
            learned_on,
            of_ids: 0,
            placement: CellPlacement::learn(&vectors, 2, 2, 1),
        };
        let held = 1_000_000;
        let default = cells_for(held);
        assert!(kept_cells_serve(&stored(7, held), 7, true, held));
        assert!(!kept_cells_serve(&stored(7, held), 8, true, held));
        assert!(kept_cells_serve(
            &stored(default, held),
            default,
            false,
            held
        ));
        let grown = held + held / 4;
        let now = cells_for(grown);
        assert!(kept_cells_serve(&stored(default, held), now, false, grown));
        assert!(!kept_cells_serve(
            &stored(default, held),
            now,
            false,
            grown + 1
        ));
        assert!(!kept_cells_serve(
            &stored(default + 1, held),
            default,
            false,
            held
        ));
    }
}
