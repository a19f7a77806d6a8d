//! The first stage: read the corpus, sign every document (MinHash signature and facts, kept
//! compact for the confirm stage; an exact copy takes its first's), embed the documents a batch
//! at a time (each distinct text once: `vectors_once.rs`), upsert each batch into the vector store and spill its vectors into the query
//! file, so that no stage holds every vector. Titles of records with a body are embedded too,
//! as queries of their own. An index kept for later runs stores each such title's vector with
//! its record, and gets its snapshot written once it is built.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::time::Instant;

use super::title_only::TitleOnlyStore;
use super::vectors_once::VectorsOnce;
use crate::confirm::{SignOnce, Signing, SketchFacts};
use crate::error::{Error, Result};
use crate::index::{DocumentIndex, Snapshot, SnapshotSpool};
use crate::io::{ByteRange, Corpus, Input, ReadOptions, read_corpus_in};
use crate::output::run::StageTimes;
use crate::pipeline::Part;
use crate::progress;
use crate::search::{Query, QueryFile};
use crate::sketch::Signatures;
use crate::store::{StoredPoint, point_key};
use xxhash_rust::xxh3::xxh3_64;

/// Documents embedded, upserted and spilled at a time while reading (bounded memory).
const EMBED_BATCH: usize = 8192;

/// A corpus read, embedded, signed and indexed.
pub(in crate::pipeline) struct Loaded {
    pub corpus: Corpus,
    pub signatures: Signatures,
    /// Shingle counts and facts per document.
    pub sketches: SketchFacts,
    /// Each point key's document.
    pub doc_of_key: HashMap<u64, u32>,
    /// The records whose title another record had before, by that first record: the title is
    /// embedded and searched once, and its neighbours are theirs too.
    pub title_copies: HashMap<u32, Vec<u32>>,
    pub times: StageTimes,
}

/// What the sketching side hands the loader for each document.
struct Sketched {
    id: String,
    signing: Signing,
    text: String,
    /// The title, where the record has more than a title.
    title: Option<String>,
    /// Whether the record is a title and nothing else.
    title_only: bool,
}

/// Where a pending record's title vector is among those embedded with its batch.
#[derive(Clone, Copy, Debug)]
enum TitleRow {
    /// The title's query.
    Query(usize),
    /// A title met in an earlier batch, embedded again.
    Repeated(usize),
}

/// What the loader writes into the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::pipeline) enum Upsert {
    /// Vectors, ids and sketches: an index kept to answer queries by itself later.
    WithSketches,
    /// Vectors and ids: a throwaway index, searched by a caller that holds the sketches.
    VectorsOnly,
    /// Nothing: the shared index of a split run already holds every document.
    Nothing,
    /// Nothing: the run searches within cells, from the spilled query vectors, and would never
    /// read a throwaway index's copy of them (a gigabyte at a million documents).
    Unread,
}

/// The corpus as it streams in: sketches kept (compact), texts embedded a batch at a time,
/// and each batch upserted at once and its vectors spilled for the search stage, so no stage
/// holds every vector.
struct Loader<'a> {
    index: &'a DocumentIndex,
    /// Signs each distinct text once.
    once: &'a SignOnce<'a>,
    queries: Option<&'a mut QueryFile>,
    /// Where the title-only documents also go, for the title queries.
    title_only: Option<&'a mut TitleOnlyStore>,
    upsert: Upsert,
    /// The documents to embed (a part's slice); all where `None`.
    slice: Option<Part>,
    signatures: Signatures,
    sketches: SketchFacts,
    doc_of_key: HashMap<u64, u32>,
    /// Documents read and not yet embedded.
    docs: Vec<u32>,
    ids: Vec<String>,
    /// Each pending document's text, empty where its vector comes from another's.
    texts: Vec<String>,
    /// The vectors of the texts embedded, for their later copies; where each pending
    /// document's vector comes from.
    once_vectors: VectorsOnce,
    /// Which of `texts` are a title and nothing else.
    title_only_texts: Vec<bool>,
    /// In a part, the keys of every title-only document, whichever part embeds it.
    title_only_keys: Vec<u64>,
    titles: Vec<(u32, String)>,
    title_copies: TitleCopies,
    /// Where an index keeps each record's title vector: each pending record's, where it has
    /// more than a title.
    stored_titles: Vec<Option<TitleRow>>,
    /// The pending titles by their hash, where they are embedded.
    pending_titles: HashMap<u64, TitleRow>,
    /// Pending titles an earlier batch embedded already (as queries): embedded again for the
    /// store only.
    repeated_titles: Vec<String>,
    /// An index kept: its vectors, as they go into the store, for its snapshot; or why they
    /// could not be kept.
    snapshot: Option<Result<SnapshotSpool>>,
    /// The last batch's vectors, refilled by the next
    /// ([`crate::embed::Embedder::embed_into`]).
    vectors: Vec<Vec<f32>>,
    embed_seconds: f64,
    upsert_seconds: f64,
    failure: Option<Error>,
    /// A point key met twice: the earlier document and the later id.
    collision: Option<(u32, String)>,
}

impl<'a> Loader<'a> {
    fn new(
        index: &'a DocumentIndex,
        once: &'a SignOnce<'a>,
        queries: Option<&'a mut QueryFile>,
        title_only: Option<&'a mut TitleOnlyStore>,
        upsert: Upsert,
        slice: Option<Part>,
        once_vectors: VectorsOnce,
    ) -> Self {
        Loader {
            index,
            once,
            queries,
            title_only,
            upsert,
            slice,
            signatures: Signatures::new(index.manifest().settings.confirm.minhash.num_perm),
            sketches: SketchFacts::default(),
            doc_of_key: HashMap::new(),
            docs: Vec::new(),
            ids: Vec::new(),
            texts: Vec::new(),
            once_vectors,
            title_only_texts: Vec::new(),
            title_only_keys: Vec::new(),
            titles: Vec::new(),
            title_copies: TitleCopies::default(),
            stored_titles: Vec::new(),
            pending_titles: HashMap::new(),
            repeated_titles: Vec::new(),
            snapshot: None,
            vectors: Vec::new(),
            embed_seconds: 0.0,
            upsert_seconds: 0.0,
            failure: None,
            collision: None,
        }
    }

    fn keep(&mut self, item: Sketched) {
        if self.failure.is_some() || self.collision.is_some() {
            return;
        }
        let doc = self.signatures.len() as u32;
        let key = point_key(&item.id);
        if let Some(other) = self.doc_of_key.insert(key, doc) {
            self.collision = Some((other, item.id));
            return;
        }
        let first = self
            .once
            .keep(item.signing, &mut self.signatures, &mut self.sketches);
        if self.slice.is_some() && item.title_only {
            self.title_only_keys.push(key);
        }
        if self.slice.is_some_and(|part| !part.holds(doc)) {
            return;
        }
        let embedded = self.once_vectors.note(first, &self.docs);
        self.docs.push(doc);
        self.ids.push(item.id);
        self.texts
            .push(if embedded { item.text } else { String::new() });
        self.title_only_texts.push(item.title_only);
        let mut stored_title = None;
        if let Some(title) = item.title {
            let keeps_titles = self.upsert == Upsert::WithSketches;
            match self.title_copies.note(doc, &title) {
                (hash, true) => {
                    if keeps_titles {
                        let repeated = &mut self.repeated_titles;
                        let row = *self.pending_titles.entry(hash).or_insert_with(|| {
                            repeated.push(title);
                            TitleRow::Repeated(repeated.len() - 1)
                        });
                        stored_title = Some(row);
                    }
                }
                (hash, false) => {
                    self.titles.push((doc, title));
                    let row = TitleRow::Query(self.titles.len() - 1);
                    if keeps_titles {
                        self.pending_titles.insert(hash, row);
                        stored_title = Some(row);
                    }
                }
            }
        }
        self.stored_titles.push(stored_title);
        if self.texts.len() == EMBED_BATCH {
            self.flush();
        }
    }

    /// Embeds, stores and spills what is pending.
    fn flush(&mut self) {
        if !self.texts.is_empty()
            && self.failure.is_none()
            && let Err(e) = self.embed_and_store()
        {
            self.failure = Some(e);
        }
        self.docs.clear();
        self.ids.clear();
        self.texts.clear();
        self.once_vectors.clear_batch();
        self.title_only_texts.clear();
        self.titles.clear();
        self.stored_titles.clear();
        self.pending_titles.clear();
        self.repeated_titles.clear();
    }

    fn embed_and_store(&mut self) -> Result<()> {
        let started = Instant::now();
        let buffer = std::mem::take(&mut self.vectors);
        let (docs, texts, titles) = (&self.docs, &self.texts, &self.titles);
        let mut vectors =
            (self.once_vectors).embed_batch(self.index, docs, texts, titles, buffer)?;
        let titles = vectors.split_off(self.texts.len());
        // Apart from the rest: a batch of other texts could change a vector's last bits.
        let repeated: Vec<&str> = self.repeated_titles.iter().map(String::as_str).collect();
        let repeated = match repeated.is_empty() {
            true => Vec::new(),
            false => self.index.embed(&repeated)?,
        };
        self.embed_seconds += started.elapsed().as_secs_f64();

        let started = Instant::now();
        if matches!(self.upsert, Upsert::WithSketches | Upsert::VectorsOnly) {
            let keeps_sketches = self.upsert == Upsert::WithSketches;
            let title_of = |row: &Option<TitleRow>| match *row {
                Some(TitleRow::Query(at)) => Some(titles[at].as_slice()),
                Some(TitleRow::Repeated(at)) => Some(repeated[at].as_slice()),
                None => None,
            };
            let points: Vec<StoredPoint<'_>> = (self.ids.iter().zip(&vectors))
                .zip(self.docs.iter().zip(&self.stored_titles))
                .map(|((id, vector), (&doc, title))| {
                    let sketch =
                        keeps_sketches.then(|| self.sketches.get(&self.signatures, doc as usize));
                    StoredPoint::new(id, vector, sketch).with_title(title_of(title))
                })
                .collect();
            self.index.add(&points)?;
            if let Some(Ok(snapshot)) = self.snapshot.as_mut()
                && let Err(e) = points
                    .iter()
                    .try_for_each(|p| snapshot.push(p.vector, p.title))
            {
                self.snapshot = Some(Err(e));
            }
        }
        if let Some(title_only) = self.title_only.as_deref_mut()
            && self.slice.is_none()
        {
            let (ids, vectors): (Vec<&str>, Vec<&[f32]>) = self
                .ids
                .iter()
                .zip(&vectors)
                .zip(&self.title_only_texts)
                .filter(|(_, title_only)| **title_only)
                .map(|((id, vector), _)| (id.as_str(), vector.as_slice()))
                .unzip();
            title_only.add(&ids, &vectors)?;
        }
        self.upsert_seconds += started.elapsed().as_secs_f64();

        if let Some(queries) = self.queries.as_deref_mut() {
            // The documents' queries, then their titles'.
            let batch: Vec<Query> = (self.docs.iter().map(|&doc| Query { doc, title: false }))
                .chain(
                    self.titles
                        .iter()
                        .map(|&(doc, _)| Query { doc, title: true }),
                )
                .collect();
            let rows: Vec<&[f32]> = vectors.iter().chain(&titles).map(Vec::as_slice).collect();
            queries.append(&batch, &rows)?;
        }
        vectors.extend(titles);
        self.vectors = vectors;
        Ok(())
    }
}

/// Reads, signs, embeds and indexes the records of `inputs` that start within `range`
/// (numbered from 0) into `index`, spilling every query vector into `queries` where the caller
/// will search. `upsert` says what the store gets; a `slice` limits embedding (and queries) to
/// a part's documents, while every document is still signed.
#[allow(clippy::too_many_arguments)]
pub(in crate::pipeline) fn load(
    inputs: &[Input],
    read: &ReadOptions,
    range: ByteRange,
    index: &mut DocumentIndex,
    queries: Option<&mut QueryFile>,
    mut title_only: Option<&mut TitleOnlyStore>,
    upsert: Upsert,
    slice: Option<Part>,
) -> Result<Loaded> {
    let mut times = StageTimes::default();
    let clock = Instant::now();
    let once = SignOnce::new(index.confirmer());
    let once_vectors = VectorsOnce::new(index.embedder().dimensions())?;
    let mut loader = Loader::new(
        index,
        &once,
        queries,
        title_only.as_deref_mut(),
        upsert,
        slice,
        once_vectors,
    );
    if upsert == Upsert::WithSketches {
        loader.snapshot = Some(index.snapshot_spool());
    }
    let mut corpus = read_corpus_in(
        inputs,
        read,
        range,
        |record| Sketched {
            id: record.id.clone(),
            signing: once.sign(record),
            title: record.title_apart().map(str::to_owned),
            title_only: record.title().is_some() && record.body().is_empty(),
            // Taken, not copied: a long record is held once.
            text: std::mem::take(&mut record.text),
        },
        |item| loader.keep(item),
    )?;
    loader.flush();
    let Loader {
        mut signatures,
        mut sketches,
        snapshot,
        doc_of_key,
        embed_seconds,
        upsert_seconds,
        failure,
        collision,
        title_only_keys,
        title_copies,
        once_vectors,
        ..
    } = loader;
    if let Some(e) = failure {
        return Err(e);
    }
    if let Some((first, second)) = collision {
        return Err(Error::IdCollision {
            first: corpus.ids[first as usize].clone(),
            second,
        });
    }
    times.embed = embed_seconds;
    times.upsert = upsert_seconds;
    times.sketch = clock.elapsed().as_secs_f64() - embed_seconds - upsert_seconds;
    let n = corpus.ids.len();
    tracing::info!(
        documents = n,
        copies = once.copies(),
        vectors_reused = once_vectors.reused(),
        embedder = %index.embedder().describe(),
        "embedded, signed (an exact copy taking its first's sketch and vector) and stored"
    );

    match upsert {
        // Nothing stored: no index to build.
        Upsert::Unread => {}
        Upsert::Nothing => {
            let indexed = index.manifest().documents;
            if indexed != n {
                return Err(Error::Usage(format!(
                    "the shared index holds {indexed} documents and the input {n}: every part \
                     must read the input the index was built from"
                )));
            }
        }
        Upsert::WithSketches | Upsert::VectorsOnly => {
            let clock = Instant::now();
            let _spinner = progress::spinner("building the vector index");
            let graph = index.finish()?;
            if let Some(snapshot) = snapshot {
                let parts = (&mut corpus.ids, &mut signatures, &mut sketches);
                // The copy saves a later batch a read of the store; the index stands without it.
                if let Err(e) = snapshot.and_then(|spool| keep_snapshot(index, spool, parts)) {
                    tracing::warn!(
                        "the index's snapshot is not written ({e}): the first batch checked \
                         against it reads its store instead"
                    );
                }
            }
            times.index = clock.elapsed().as_secs_f64();
            tracing::info!(
                documents = n,
                hnsw = graph,
                seconds = times.index,
                "index ready"
            );
        }
    }
    if let Some(title_only) = title_only {
        let clock = Instant::now();
        title_only.copy_from(index, &title_only_keys)?;
        times.upsert += clock.elapsed().as_secs_f64();
        let clock = Instant::now();
        let _spinner = progress::spinner("building the title index");
        title_only.finish()?;
        times.index += clock.elapsed().as_secs_f64();
    }
    Ok(Loaded {
        corpus,
        signatures,
        sketches,
        doc_of_key,
        title_copies: title_copies.into_copies(),
        times,
    })
}

/// Centres `index` as a run over all of `inputs` centres it: on the mean of the vectors of the
/// first batch of documents it embeds ([`EMBED_BATCH`], or every document of a smaller
/// corpus), whichever part of a split run reads them. Reads ever longer spans from the start
/// of the inputs until it holds them.
pub(in crate::pipeline) fn centre_as_one_run(
    inputs: &[Input],
    read: &ReadOptions,
    index: &DocumentIndex,
) -> Result<()> {
    if !index.manifest().settings.centre {
        return Ok(());
    }
    let total: u64 = inputs.iter().map(Input::size).sum();
    let mut end = 1u64 << 20;
    loop {
        let range = match end < total {
            true => ByteRange { start: 0, end },
            false => ByteRange::ALL,
        };
        let mut texts = Vec::new();
        read_corpus_in(
            inputs,
            read,
            range,
            |record| std::mem::take(&mut record.text),
            |text| {
                if texts.len() < EMBED_BATCH {
                    texts.push(text);
                }
            },
        )?;
        if texts.len() == EMBED_BATCH || range == ByteRange::ALL {
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            index.learn_centre(&index.embedder().embed(&texts)?);
            return Ok(());
        }
        end = end.saturating_mul(4);
    }
}

/// Which records share a title: the first record of each title text, and the later ones,
/// whose title is embedded and searched once, by the first. Copies of a record repeat its
/// title (a fifth of the titles of `neardup gen`).
#[derive(Default)]
pub(in crate::pipeline) struct TitleCopies {
    first_of_title: HashMap<u64, u32>,
    copies: HashMap<u32, Vec<u32>>,
}

impl TitleCopies {
    /// Notes that record `doc`, read after those noted, has `title`: returns the title's hash,
    /// and whether an earlier record had it.
    pub(in crate::pipeline) fn note(&mut self, doc: u32, title: &str) -> (u64, bool) {
        let hash = xxh3_64(title.as_bytes());
        match self.first_of_title.entry(hash) {
            Entry::Occupied(first) => {
                self.copies.entry(*first.get()).or_default().push(doc);
                (hash, true)
            }
            Entry::Vacant(slot) => {
                slot.insert(doc);
                (hash, false)
            }
        }
    }

    /// The later records of each title, in order, by its first record.
    pub(in crate::pipeline) fn into_copies(self) -> HashMap<u32, Vec<u32>> {
        self.copies
    }
}

/// Writes the snapshot of an index just built (`parts`: its ids and sketches), so that the
/// first batch checked against the index need not read its store.
fn keep_snapshot(
    index: &DocumentIndex,
    spool: SnapshotSpool,
    (ids, signatures, sketches): (&mut Vec<String>, &mut Signatures, &mut SketchFacts),
) -> Result<()> {
    let clock = Instant::now();
    if spool.documents() != ids.len() {
        return Err(Error::store(format!(
            "the snapshot holds {} vectors of {} documents",
            spool.documents(),
            ids.len()
        )));
    }
    let mut snapshot = spool.into_snapshot(signatures.num_perm())?;
    // Lent to the snapshot while it is written, and taken back.
    let mut swap = |snapshot: &mut Snapshot| {
        std::mem::swap(&mut snapshot.ids, ids);
        std::mem::swap(&mut snapshot.signatures, signatures);
        std::mem::swap(&mut snapshot.sketches, sketches);
    };
    swap(&mut snapshot);
    let kept = index.keep_snapshot(&snapshot);
    swap(&mut snapshot);
    kept?;
    tracing::info!(
        seconds = clock.elapsed().as_secs_f64(),
        "the index's snapshot written"
    );
    Ok(())
}
