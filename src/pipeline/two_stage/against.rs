//! A new batch checked against a collection kept from earlier runs (`--against INDEX`).
//!
//! The batch is deduplicated with the collection inside the same search. The vectors and
//! sketches the index keeps are read once (from its [`Snapshot`], which the first such read
//! writes; the store is opened only for that read), the collection's k-means cells are taken
//! as kept beside the snapshot (or learned and kept), and the batch's documents are placed in
//! them, numbered before the collection's. Only the batch's documents search: each finds its
//! `k` nearest among both sides, as in a run over both, and MinHash's bands propose pairs
//! within the batch and between the two sides, judged by the same classifier. (Walking the
//! index's graph one query at a time took 3.5 times a run over both at a million: decision
//! 0014.) The collection's documents a candidate reaches join the run as documents without a
//! record of their own, numbered after the batch's, so that pairs and groups name them and a
//! group that reaches the collection keeps its record; the batch's records in such a group are
//! its duplicates.
//!
//! The batch is embedded as the collection was: with its settings (checked as a part's are)
//! and centred on its centre, so that a cosine between a new and a kept vector means what one
//! within the collection means. A record whose id the collection holds replaces it: the two
//! are not compared, and the batch's own search compares the new record with the others.

use std::collections::HashMap;
use std::path::Path;

use crate::confirm::{SketchFacts, proposed_pairs_between};
use crate::error::{Error, Result};
use crate::group::KeepPolicy;
use crate::index::{Collection, DocumentIndex, MANIFEST, Snapshot, StoredCells, TitleVectors};
use crate::io::{Input, ReadOptions, Record, for_each_document};
use crate::pipeline::write::kept_members;
use crate::pipeline::{Dedup, Fates};
use crate::progress;
use crate::search::{CellPlacement, Cells, Codes, QueryReader, cells_for};
use crate::sketch::Signatures;
use crate::store::point_key;

use super::TwoStageConfig;

/// How much a collection may grow after its cells were learned before a run learns them again.
const CELLS_SERVE_GROWTH: f64 = 0.25;
/// Points read from the collection at a time.
const SCROLL_PAGE: usize = 1 << 16;

/// The collection a batch is checked against, read whole: its documents (but those the batch
/// replaces) and where they lie among its cells.
pub(super) struct CollectionSide {
    documents: Snapshot,
    placement: CellPlacement,
}

/// The collection's ids and sketches, once its vectors went into the cells the batch searches.
pub(super) struct Reachable {
    ids: Vec<String>,
    signatures: Signatures,
    sketches: SketchFacts,
}

/// The collection's documents that candidates reach: their ids, numbered after the batch's in
/// the order they are met, and their sketches, to join the batch's before they are confirmed.
pub(super) struct Reached {
    pub ids: Vec<String>,
    docs: Vec<u32>,
    from: Reachable,
}

impl CollectionSide {
    /// Reads `against` whole (from its snapshot, or its store opened with the models under
    /// `models`) but the documents whose point key `in_batch` holds, with its cells (kept
    /// beside the snapshot, or learned and kept). None where no document is left.
    pub(super) fn read(
        against: Collection,
        models: &Path,
        in_batch: &HashMap<u64, u32>,
        config: &TwoStageConfig,
    ) -> Result<Option<CollectionSide>> {
        let url = config.settings.store.qdrant_url.as_deref();
        let (documents, whole) = read_collection(&against, models, url, in_batch)?;
        if documents.ids.is_empty() {
            return Ok(None);
        }
        let titled = (0..documents.ids.len())
            .filter(|&doc| {
                let facts = documents.sketches.facts(doc);
                facts.title.is_some() && facts.body
            })
            .count();
        if documents.titles.is_empty() && titled > 0 {
            tracing::warn!(
                records = titled,
                "the collection keeps no vectors of its records' titles (an index built before \
                 neardup kept them): the batch's records that are only a title are not compared \
                 with those titles, and miss some copies a run over both finds; build the index \
                 again to keep them"
            );
        }
        let placement = collection_cells(&against, &documents, whole, config)?;
        Ok(Some(CollectionSide {
            documents,
            placement,
        }))
    }

    /// How many cells it is cut into.
    pub(super) fn cells(&self) -> usize {
        self.placement.cells()
    }

    /// Its documents' sketches.
    pub(super) fn sketches(&self) -> &SketchFacts {
        &self.documents.sketches
    }

    /// Whether each of its documents is a title and nothing else.
    pub(super) fn title_only(&self) -> impl Iterator<Item = bool> + '_ {
        let sketches = &self.documents.sketches;
        (0..sketches.len()).map(|doc| sketches.facts(doc).title_only())
    }

    /// The pairs MinHash proposes between a batch (its `signatures` and `sketches`) and the
    /// collection, whose documents are numbered after the batch's: as within a run, cells may
    /// part two near-copies whose vectors sit near a boundary. No pair within the collection
    /// is made.
    pub(super) fn proposed_pairs(
        &self,
        signatures: &Signatures,
        sketches: &SketchFacts,
        config: &TwoStageConfig,
    ) -> Vec<(u32, u32)> {
        let documents = signatures.len() as u32;
        let held = (&self.documents.signatures, &self.documents.sketches);
        let proposed =
            proposed_pairs_between(held, (signatures, sketches), &config.settings.confirm);
        tracing::info!(
            pairs = proposed.len(),
            "MinHash proposed pairs between the batch and the collection"
        );
        proposed
            .into_iter()
            .map(|(held, doc)| (doc, documents + held))
            .collect()
    }

    /// The cells of a batch (its documents' vectors in `queries`, `documents` of them) and the
    /// collection together: the batch's placed in the collection's cells and numbered first,
    /// the collection's after them. Only the batch's documents search, as in a run over both:
    /// their `k` nearest among both sides. Leaves `queries` rewound. With them, the vectors of
    /// the collection's titles, for its documents as numbered in the cells.
    pub(super) fn into_cells(
        self,
        queries: &mut QueryReader,
        documents: usize,
    ) -> Result<(Cells, Reachable, HeldTitles)> {
        let Snapshot {
            ids,
            vectors: held,
            width,
            signatures,
            sketches,
            titles,
        } = self.documents;
        let batch = queries.document_codes(documents)?;
        let placement = self.placement.preceded_by(&batch);
        let cells = Cells::searching_among(batch, Codes::of(&held, width), placement);
        let reachable = Reachable {
            ids,
            signatures,
            sketches,
        };
        let titles = HeldTitles {
            first: documents,
            titles,
        };
        Ok((cells, reachable, titles))
    }
}

/// The vectors of a collection's titles, its documents numbered after the batch's: a title-only
/// record of the batch lies near the title of the collection's record it copies, not near the
/// whole record, as a run over both compares them.
pub(in crate::pipeline) struct HeldTitles {
    first: usize,
    titles: TitleVectors,
}

impl HeldTitles {
    /// The vector of document `doc`'s title, where it is the collection's and has one.
    pub(super) fn get(&self, doc: u32) -> Option<&[f32]> {
        let held = (doc as usize).checked_sub(self.first)?;
        self.titles.get(held)
    }
}

impl Reachable {
    /// Numbers the collection's documents that `candidates` reach (numbered after the batch's
    /// `documents` in the cells) after the batch's again, in the order they are met.
    pub(super) fn reached(
        mut self,
        candidates: &mut [(u32, u32, f32)],
        documents: usize,
    ) -> Reached {
        let mut number = vec![u32::MAX; self.ids.len()];
        let (mut ids, mut docs) = (Vec::new(), Vec::new());
        for candidate in candidates.iter_mut() {
            for doc in [&mut candidate.0, &mut candidate.1] {
                let Some(held) = (*doc as usize).checked_sub(documents) else {
                    continue;
                };
                if number[held] == u32::MAX {
                    number[held] = (documents + docs.len()) as u32;
                    docs.push(held as u32);
                    ids.push(std::mem::take(&mut self.ids[held]));
                }
                *doc = number[held];
            }
        }
        tracing::info!(
            reached = docs.len(),
            collection = self.ids.len(),
            "the collection's documents reached"
        );
        Reached {
            ids,
            docs,
            from: self,
        }
    }
}

impl Reached {
    /// Appends the sketches of the documents reached, in their order, to the batch's.
    pub(super) fn join(self, signatures: &mut Signatures, sketches: &mut SketchFacts) {
        let from = (&self.from.signatures, &self.from.sketches);
        sketches.take_from(signatures, from, &self.docs);
    }
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
        kept.push(&whole.ids[doc], vector, sketch, whole.titles.get(doc));
    }
    Ok((kept, false))
}

/// Where the collection's documents (`collection`, every one of the index's where `whole`) lie
/// among its cells: as kept beside the snapshot where they serve this run, else learned, and
/// kept for the next.
fn collection_cells(
    against: &Collection,
    collection: &Snapshot,
    whole: bool,
    config: &TwoStageConfig,
) -> Result<CellPlacement> {
    let held = collection.ids.len();
    let (count, explicit) = match (config.exact_search, config.cells) {
        (true, _) => (1, true),
        (false, Some(count)) if count > 0 => (count, true),
        _ => (cells_for(held), false),
    };
    let probes = config.cell_probes.clamp(1, count.clamp(1, held));
    let stored = match whole {
        true => against.read_cells(collection)?,
        false => None,
    };
    if let Some(stored) = stored
        && stored.placement.probes() == probes
        && kept_cells_serve(&stored, count, explicit, held)
    {
        return Ok(stored.placement);
    }
    let spinner = progress::spinner("learning the collection's cells");
    let vectors = Codes::of(&collection.vectors, collection.width);
    let placement = CellPlacement::learn(&vectors, count, probes);
    drop(spinner);
    if !whole {
        return Ok(placement);
    }
    let stored = StoredCells {
        count,
        learned_on: held,
        of_ids: collection.ids_digest(),
        placement,
    };
    against.write_cells(&stored)?;
    Ok(stored.placement)
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
            let payload = &point.payload;
            read.push(
                &payload.id,
                &point.vector,
                payload.sketch(),
                payload.title.as_deref(),
            );
        }
        match next {
            Some(key) => from = Some(key),
            None => break,
        }
    }
    progress.finish_and_clear();
    Ok(read)
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
                    snapshot.push(&id, document.vector(), document.sketch(), document.title());
                }
                vectors.extend_from_slice(document.vector());
                index.insert_in(&id, document, Some(batch))?;
                added += 1;
            }
            if let Some(cells) = cells.as_mut() {
                cells
                    .placement
                    .place(&Codes::of(&vectors, index.embedder().dimensions()));
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

/// Names a collection whose folder was removed while a batch's records went into it, over
/// whatever the adding said: the engine writes on into files it holds open, so the writes may
/// all have succeeded into files no longer there.
pub fn check_not_removed(collection: &Path) -> Result<()> {
    match collection.join(MANIFEST).is_file() {
        true => Ok(()),
        false => Err(Error::Damaged {
            path: collection.to_owned(),
            problem: "its folder was removed while the batch's records were being added".into(),
            fix: Some("build the index again (`neardup index`), then add the batch again"),
        }),
    }
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
            placement: CellPlacement::learn(&Codes::of(&vectors, 2), 2, 1),
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
