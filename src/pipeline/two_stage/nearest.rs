//! The second stage: every query (each document's vector, and each title's) asks the vector
//! store for its nearest neighbours, or, searching within cells, the documents of its nearest
//! cells; each pair found is a candidate, kept once with its highest cosine. Where the pairs
//! of a record and its title-only copies come from their titles' words (`Proposed`'s
//! `by_title_words`), the titles are not searched, and their vectors only score those pairs.

use std::collections::HashMap;

use rayon::prelude::*;

use super::TwoStageConfig;
use super::against::HeldTitles;
use super::title_only::TitleOnlyStore;
use crate::error::{Error, Result};
use crate::index::DocumentIndex;
use crate::progress;
use crate::search::{Cells, InCells, InStore, NearestLists, NeighbourSearch, Query, QueryReader};

/// Queries per search call.
const SEARCH_BATCH: usize = 2048;

/// The pairs MinHash proposed, to join the neighbours found within cells.
pub(in crate::pipeline) struct Proposed {
    /// The pairs `(a, b)`, `a < b`.
    pub pairs: Vec<(u32, u32)>,
    /// Whether each document is a title and nothing else.
    pub title_only: Vec<bool>,
    /// The title vectors of a collection's documents, where a batch searches with them.
    pub held_titles: Option<HeldTitles>,
    /// The pairs `(record, title-only record)` that their titles' words make, where these
    /// stand in for searching each title among the title-only documents.
    pub by_title_words: Option<Vec<(u32, u32)>>,
}

/// Where the queries are searched.
pub(in crate::pipeline) enum Within<'a> {
    /// The vector store, by the graph or, with `exact_search`, a full scan; a title among the
    /// title-only documents of `title_only`. `doc_of_key` turns the store's point keys back
    /// into documents.
    Store {
        index: &'a DocumentIndex,
        title_only: &'a TitleOnlyStore,
        doc_of_key: &'a HashMap<u64, u32>,
    },
    /// The documents' nearest cells, joined by the pairs MinHash proposed; searched here,
    /// or, as given, by the parts that own the cells.
    Cells(&'a Cells, Box<Proposed>, Option<FoundInParts>),
}

/// What the parts that own the cells found (`by_cell`): each document's best within its
/// cells, and each title's among their title-only members.
pub(in crate::pipeline) struct FoundInParts {
    pub documents: NearestLists,
    pub titles: NearestLists,
}

/// Where a title's nearest title-only documents come from.
enum TitleHits<'a> {
    /// A search among the title-only documents.
    Searched(Box<dyn NeighbourSearch + 'a>),
    /// The lists found by the parts that own the cells.
    Found(NearestLists),
    /// Nowhere: the pairs of a record and its title-only copies came from their titles' words
    /// (`Proposed::by_title_words`), and a title's vector only scores them.
    ByWords,
}

/// The candidate pairs `(a, b, cosine)` of every query in `queries`: its `top_k` nearest
/// documents (the title-only documents, for a title), searched `within` the store or the
/// cells. With the cells come the pairs MinHash proposed, candidates too, scored by the cells'
/// vectors, or, for a title-only document and a record with more, by the record's title
/// vector. A candidate below `min_cosine` is dropped: the classifier would refuse it unread.
/// A title's neighbours are also those of the records in `title_copies` under its record.
pub(in crate::pipeline) fn candidates(
    within: Within<'_>,
    mut queries: QueryReader,
    title_copies: &HashMap<u32, Vec<u32>>,
    config: &TwoStageConfig,
) -> Result<Vec<(u32, u32, f32)>> {
    let (top_k, min_cosine) = (config.top_k, config.settings.min_cosine);
    let dimensions = queries.dimensions();
    // Room for every pair the search can find, taken once: a list of tens of millions that
    // grows by doubling is copied each time, and holds both copies for a moment. Only the
    // room that is filled takes memory.
    let copies: usize = title_copies.values().map(Vec::len).sum();
    let proposed = match &within {
        Within::Cells(_, proposed, _) => proposed.pairs.len(),
        Within::Store { .. } => 0,
    };
    let mut neighbours = Vec::with_capacity((top_k + 1) * (queries.len() + copies) + 2 * proposed);
    let mut by_title = TitleOnlyPartners::default();
    // A title is searched among the title-only documents; a document among all, unless the
    // cells found every document's neighbours already.
    let mut titles_at_once = None;
    let mut paired_copy = None;
    let (documents_in, titles_in): (Option<Box<dyn NeighbourSearch>>, TitleHits) = match within {
        Within::Store {
            index,
            title_only,
            doc_of_key,
        } => {
            let exact = config.exact_search || index.search_exactly();
            let in_store = |store| -> Box<dyn NeighbourSearch + '_> {
                Box::new(InStore {
                    store,
                    documents: doc_of_key,
                    exact,
                })
            };
            let titles_in = TitleHits::Searched(in_store(title_only.store()));
            (Some(in_store(index.store())), titles_in)
        }
        Within::Cells(cells, proposed, found) => {
            let clock = std::time::Instant::now();
            cells.with_cosines(&proposed.pairs, &mut neighbours);
            by_title = TitleOnlyPartners::of(cells, &neighbours, &proposed.title_only, min_cosine);
            if let Some(pairs) = &proposed.by_title_words {
                // A copy of a vector many hold leaves them to its first, as it leaves it
                // its title's search.
                let paired = cells.paired_copy();
                let searched = |record: u32| paired.as_ref().is_none_or(|paired| !paired(record));
                by_title.add(pairs.iter().filter(|&&(record, _)| searched(record)));
            }
            if let Some(held) = &proposed.held_titles {
                by_title.score_held(held, min_cosine, &mut neighbours);
            }
            let by_words = proposed.by_title_words.is_some();
            let among =
                (!by_words && found.is_none()).then(|| InCells::among(cells, &proposed.title_only));
            drop(proposed);
            tracing::info!(
                seconds = clock.elapsed().as_secs_f64(),
                "MinHash's pairs scored by their vectors"
            );
            let clock = std::time::Instant::now();
            let before = neighbours.len();
            let titles_in = match found {
                Some(found) => {
                    cells.neighbours_found(found.documents, &mut neighbours);
                    match by_words {
                        true => TitleHits::ByWords,
                        false => TitleHits::Found(found.titles),
                    }
                }
                None => {
                    cells.neighbours(top_k, &mut neighbours);
                    match among {
                        Some(among) => TitleHits::Searched(Box::new(among)),
                        None => TitleHits::ByWords,
                    }
                }
            };
            tracing::info!(
                pairs = neighbours.len() - before,
                seconds = clock.elapsed().as_secs_f64(),
                "documents searched within their cells"
            );
            // Within cells only titles are left to search, many at a time.
            titles_at_once = Some(cells.queries_at_once());
            paired_copy = cells.paired_copy();
            (None, titles_in)
        }
    };
    neighbours.retain(|&(_, _, cosine)| cosine >= min_cosine);
    let clock = std::time::Instant::now();
    // Titles searched on their own count beside the documents.
    let bar = progress::items(queries.len() as u64, "searching documents and titles");
    // The documents a query's neighbours are paired with.
    let mut family = Vec::new();
    let next_batch = |queries: &mut QueryReader| match titles_at_once {
        Some(titles) => queries.next_titles(titles),
        None => queries.next_batch(SEARCH_BATCH),
    };
    while let Some((batch, flat)) = next_batch(&mut queries)? {
        if crate::cancel::requested() {
            return Err(Error::Interrupted);
        }
        let vectors = flat.chunks_exact(dimensions);
        let (titles, documents): (Vec<_>, Vec<_>) = batch
            .iter()
            .zip(vectors)
            .partition(|(query, _)| query.title);
        let (documents, mut hits) = match &documents_in {
            Some(search) => {
                let hits = search.nearest(&vectors_of(&documents), top_k + 1)?;
                (documents, hits)
            }
            None => (Vec::new(), Vec::new()),
        };
        match &titles_in {
            TitleHits::ByWords => hits.extend(titles.iter().map(|_| Vec::new())),
            TitleHits::Found(found) => hits.extend(
                titles
                    .iter()
                    .map(|(query, _)| found.list(query.doc).to_vec()),
            ),
            TitleHits::Searched(search) => {
                hits.extend(search.nearest(&vectors_of(&titles), top_k + 1)?)
            }
        }
        let searched = documents.iter().chain(&titles);
        for ((query, vector), hits) in searched.zip(hits) {
            let copies = query.title.then(|| title_copies.get(&query.doc)).flatten();
            let docs = std::iter::once(query.doc).chain(copies.into_iter().flatten().copied());
            if query.title {
                for doc in docs.clone() {
                    by_title.score(doc, vector, min_cosine, &mut neighbours);
                }
            }
            // A copy of a vector that many hold takes its neighbours from its first, with
            // which it is paired: a title held by a million copies would else pair each with
            // the title's neighbours.
            family.clear();
            family
                .extend(docs.filter(|&doc| paired_copy.as_ref().is_none_or(|paired| !paired(doc))));
            for (cosine, other) in hits {
                for &doc in &family {
                    if other != doc && cosine >= min_cosine {
                        neighbours.push((doc.min(other), doc.max(other), cosine));
                    }
                }
            }
        }
        bar.set_position(queries.read() as u64);
    }
    bar.finish_and_clear();
    drop(queries);
    tracing::info!(
        found = neighbours.len(),
        seconds = clock.elapsed().as_secs_f64(),
        "queries searched"
    );
    let clock = std::time::Instant::now();
    let neighbours = distinct_pairs(neighbours);
    tracing::info!(
        candidates = neighbours.len(),
        seconds = clock.elapsed().as_secs_f64(),
        "candidates kept once each"
    );
    Ok(neighbours)
}

/// The title-only documents MinHash proposed for a record with more than a title, whose
/// vectors are too far apart to be a candidate: a title-only copy lies near the record's title
/// vector, not the whole record's, so the pair is scored again at the record's title query.
#[derive(Default)]
struct TitleOnlyPartners<'c> {
    cells: Option<&'c Cells>,
    partners: HashMap<u32, Vec<u32>>,
}

impl<'c> TitleOnlyPartners<'c> {
    /// The pairs of `scored` below `min_cosine` that join a title-only document to another.
    fn of(
        cells: &'c Cells,
        scored: &[(u32, u32, f32)],
        title_only: &[bool],
        min_cosine: f32,
    ) -> Self {
        let mut partners: HashMap<u32, Vec<u32>> = HashMap::new();
        for &(a, b, cosine) in scored {
            if cosine >= min_cosine {
                continue;
            }
            match (title_only[a as usize], title_only[b as usize]) {
                (false, true) => partners.entry(a).or_default().push(b),
                (true, false) => partners.entry(b).or_default().push(a),
                _ => {}
            }
        }
        TitleOnlyPartners {
            cells: Some(cells),
            partners,
        }
    }

    /// Adds `pairs` of a record and a title-only document to be scored at the record's title.
    fn add<'p>(&mut self, pairs: impl Iterator<Item = &'p (u32, u32)>) {
        for &(record, title_only) in pairs {
            self.partners.entry(record).or_default().push(title_only);
        }
    }

    /// Adds to `found` the partners of a collection's documents that their titles (`held`)
    /// are near: they have no title query of their own.
    fn score_held(&self, held: &HeldTitles, min_cosine: f32, found: &mut Vec<(u32, u32, f32)>) {
        for &doc in self.partners.keys() {
            if let Some(title) = held.get(doc) {
                self.score(doc, title, min_cosine, found);
            }
        }
    }

    /// Adds to `found` the partners of `doc` that its `title` vector is near.
    fn score(&self, doc: u32, title: &[f32], min_cosine: f32, found: &mut Vec<(u32, u32, f32)>) {
        let (Some(cells), Some(partners)) = (self.cells, self.partners.get(&doc)) else {
            return;
        };
        for &other in partners {
            let cosine = cells.cosine_to(title, other);
            if cosine >= min_cosine {
                found.push((doc.min(other), doc.max(other), cosine));
            }
        }
    }
}

/// The vectors of queries paired with them.
fn vectors_of<'v>(queries: &[(&Query, &'v [f32])]) -> Vec<&'v [f32]> {
    queries.iter().map(|(_, vector)| *vector).collect()
}

/// Candidate pairs `(a, b, cosine)`, `a < b`, each kept once with its highest cosine: a pair
/// is usually found from both ends, and by a title, and, in a split run, by two parts.
pub(in crate::pipeline) fn distinct_pairs(mut pairs: Vec<(u32, u32, f32)>) -> Vec<(u32, u32, f32)> {
    pairs.par_sort_unstable_by(|x, y| (x.0, x.1).cmp(&(y.0, y.1)).then(y.2.total_cmp(&x.2)));
    pairs.dedup_by(|x, y| (x.0, x.1) == (y.0, y.1));
    pairs
}
