//! Two-stage in stages over machines: each part reads, signs and embeds its share of the
//! input, and one process searches, confirms and writes.
//!
//! Embedding needs no document but its own, and with a model it is most of a run's work
//! (all-MiniLM-L6-v2 embeds about 55 abstracts a second on two cores). So:
//!
//! 1. **embed** (`neardup dedup --part I/N --out embeddedI/`, [`embed_part`]): the records that
//!    start in the `I`th of `N` equal byte ranges of the input (as a MinHash part signs them;
//!    see `split::minhash`), signed and embedded. The part writes their sketches
//!    (`sketches.bin`, as a signed MinHash part writes them) and its queries' vectors as int8
//!    codes (`queries.bin`): each document's, and the title of each record with more than a
//!    title. The vectors are centred as one run centres them, on the mean of the input's first
//!    documents, which every part embeds for itself.
//! 2. **join** (`neardup merge embedded*/ --out out/`, [`join`]): reads the input again for its
//!    ids and titles, and the parts' sketches and codes, then learns the cells, searches,
//!    confirms and writes as one run does. A title that a record of an earlier part had is
//!    searched once, by that record, as in one run.
//!
//! The cells compare codes only (decision 0017), and a code read back is the code written. So
//! where an embedder's vector of a text does not depend on the texts embedded beside it, the
//! join writes the files of one run, byte for byte, from any number of parts. The static
//! embedder and GloVe embed each text alone, and MiniLM on the CPU packs a batch's texts end
//! to end without padding. On a GPU (`cuda`) MiniLM pads each batch to its longest text, so a
//! vector's last bits can follow its batch, and a code can then round the other way.
//!
//! The join holds what one run holds: every sketch and every document's code. The search can
//! be split over machines too ([`super::by_cell`]): the cells learned once, and searched by the
//! parts that own them; this join then takes each query's lists from those parts
//! ([`join_parts`]). So can the confirming ([`super::by_share`]), for which a part also writes
//! its band keys and which of its records share a title ([`PartTitles`]).

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::confirm::{Confirm, ConfirmSettings, Confirmer, SketchFacts};
use crate::error::{Error, Result};
use crate::io::{
    ByteRange, Corpus, FolderLock, Input, ReadOptions, ScratchDir, read_corpus, read_list,
    write_list,
};
use crate::output::run::{IdsDigest, RecordsDigest, RunWriter, StageTimes};
use crate::pipeline::dedup::Found;
use crate::pipeline::provenance::record_model;
use crate::pipeline::split::minhash::{KeyFiles, check_signed, route_keys};
use crate::pipeline::split::share::Share;
use crate::pipeline::split::sketches::{SKETCHES, write_sketches};
use crate::pipeline::split::stage::{
    PartWritten, SignedParts, Stage, open_stage, spec_for, stage_summary,
};
use crate::pipeline::two_stage::load::{Loaded, TitleCopies, Upsert, centre_as_one_run, load};
use crate::pipeline::two_stage::nearest::{self, FoundInParts, Within};
use crate::pipeline::two_stage::set_aside::SketchesAside;
use crate::pipeline::two_stage::{
    TwoStageConfig, confirm_aside, learn_cells, minhash_proposals, open_index,
};
use crate::pipeline::{Method, Part, PipelineSpec, Run, ScoredCandidates};
use crate::search::{CellPlacement, Cells, Codes, Query, QueryFile, QueryReader};
use crate::sketch::Signatures;

/// A part's queries: blocks of what each stands for and its vector's codes.
const QUERIES: &str = "queries.bin";
/// An embedded part's records that share a title with an earlier one of the part
/// ([`PartTitles`]).
const TITLE_COPIES: &str = "title-copies.bin";
/// Queries a block of [`QUERIES`] holds.
const QUERY_BLOCK: usize = 16_384;

/// Stage 1: signs and embeds the documents of the part `spec`'s settings name (those that
/// start in its [`ByteRange`] of the input), with the run's models, and writes their
/// sketches and their queries' codes into the folder `lock` holds.
pub(in crate::pipeline) fn embed_part(run: &Run, lock: FolderLock) -> Result<PartWritten> {
    let spec = run.spec();
    let Method::TwoStage(config) = &spec.method else {
        unreachable!("only two-stage embeds in stages")
    };
    let part = config.part.expect("a part to embed");
    let whole = TwoStageConfig {
        part: None,
        ..(**config).clone()
    };
    let (inputs, read) = (run.inputs(), run.read());
    let models = run.models();
    let total = inputs.iter().map(Input::size).sum();
    let range = ByteRange::share(part.number, part.count, total);
    let mut run = RunWriter::begin(lock)?;
    let scratch = ScratchDir::new()?;
    let (mut index, upsert) = open_index(scratch.path(), &whole, models, true)?;
    debug_assert_eq!(upsert, Upsert::Unread);
    let clock = Instant::now();
    centre_as_one_run(inputs, read, &index)?;
    let centring = clock.elapsed().as_secs_f64();
    let dimensions = index.embedder().dimensions();
    let mut queries = QueryFile::of_codes(scratch.path(), dimensions)?;
    let loaded = load(
        inputs,
        read,
        range,
        &mut index,
        Some(&mut queries),
        None,
        upsert,
        None,
    )?;
    index.store().discard()?;
    let model = index.embedder().identity().clone();
    if loaded.corpus.ids.len() > (u32::MAX >> 1) as usize {
        return Err(Error::Usage(format!(
            "part {part} holds {} documents, more than a part numbers (2^31): split the run \
             into more parts",
            loaded.corpus.ids.len()
        )));
    }

    run.write_with(SKETCHES, |file| {
        write_sketches(file, &loaded.signatures, &loaded.sketches)
    })?;
    write_keys(&mut run, part, &config.settings.confirm, &loaded)?;
    let title_copies = PartTitles::words(&loaded.title_copies);
    run.write_with(TITLE_COPIES, |file| write_list(file, &title_copies))?;
    let mut queries = queries.into_reader()?;
    let mut file = run.create(QUERIES)?;
    while let Some((batch, codes)) = queries.next_codes(QUERY_BLOCK)? {
        let words: Vec<u32> = batch.iter().map(query_word).collect();
        (|| {
            write_list(&mut file, &words)?;
            codes.write_to(&mut file)
        })()
        .map_err(|e| Error::io(file.target(), e))?;
    }
    write_list(&mut file, &[]).map_err(|e| Error::io(file.target(), e))?;
    run.commit(file)?;

    let ids = &loaded.corpus.ids;
    tracing::info!(part = %part, documents = ids.len(), from_byte = range.start, "embedded");
    let times = StageTimes {
        sketch: loaded.times.sketch,
        embed: centring + loaded.times.embed,
        ..StageTimes::default()
    };
    let mut summary = stage_summary(spec, Stage::Embedded, None, ids.len(), (0, 0), times);
    record_model(&mut summary.settings, Some(&model));
    summary.ids_digest = Some(IdsDigest::of(ids.iter().map(String::as_str)));
    summary.records_digest = Some(RecordsDigest::of(&loaded.corpus.fingerprints));
    Ok(PartWritten {
        summary: run.finish(summary)?,
        skipped: loaded.corpus.skipped,
    })
}

/// Writes the band keys of the documents `loaded` signed into the folder `run` writes, each in
/// the file of the part it hashes to, as a signed MinHash part routes them: the search parts
/// band them (`by_cell`).
fn write_keys(
    run: &mut RunWriter,
    part: Part,
    settings: &ConfirmSettings,
    loaded: &Loaded,
) -> Result<()> {
    let banding = Confirmer::new(settings, -1.0)?.banding();
    let titles = settings.rule.confirm == Confirm::Evidence;
    let mut keys = KeyFiles::create(run, part)?;
    let (signatures, sketches) = (&loaded.signatures, &loaded.sketches);
    for doc in 0..signatures.len() {
        let signed = (
            signatures.row(doc),
            sketches.shingles(doc),
            sketches.facts(doc),
        );
        route_keys(signed, banding, titles, |band, key| {
            keys.key(part, band, key, doc as u32);
        });
    }
    keys.finish(run)
}

/// The records of an embedded part that share a title, numbered in the part: a title is
/// embedded once a part, by its first record there, whose title query's neighbours are those
/// of every record with the title ([`TITLE_COPIES`]).
pub(super) struct PartTitles {
    /// The later records of each title, by its first.
    pub copies: HashMap<u32, Vec<u32>>,
    /// The first record of each later one's title.
    pub first_of: HashMap<u32, u32>,
}

impl PartTitles {
    /// `copies` as the words of [`TITLE_COPIES`]: each first record, by number, with how many
    /// later ones and their numbers.
    fn words(copies: &HashMap<u32, Vec<u32>>) -> Vec<u32> {
        let mut firsts: Vec<u32> = copies.keys().copied().collect();
        firsts.sort_unstable();
        let mut words = Vec::new();
        for first in firsts {
            words.extend([first, copies[&first].len() as u32]);
            words.extend(&copies[&first]);
        }
        words
    }

    /// The titles the embedded part `number` of `signed` wrote, numbered in the run.
    pub(super) fn read(signed: &SignedParts, number: u32) -> Result<PartTitles> {
        let folder = &signed.folders[number as usize - 1];
        let docs = signed.docs_of(number);
        let words = folder.folder.read_with(TITLE_COPIES, read_list)?;
        let mut titles = PartTitles {
            copies: HashMap::new(),
            first_of: HashMap::new(),
        };
        let mut rest = words.as_slice();
        while let [first, count, after @ ..] = rest {
            let count = *count as usize;
            let in_part = |doc: u32| (doc as usize) < docs.len();
            let later = after
                .get(..count)
                .filter(|later| in_part(*first) && later.iter().all(|&doc| in_part(doc)));
            let Some(later) = later else {
                return Err(Error::Usage(format!(
                    "{} names records its part did not embed: embed the part again",
                    folder.dir.join(TITLE_COPIES).display()
                )));
            };
            let first = docs.start + first;
            let later: Vec<u32> = later.iter().map(|&doc| docs.start + doc).collect();
            titles
                .first_of
                .extend(later.iter().map(|&doc| (doc, first)));
            titles.copies.insert(first, later);
            rest = &after[count..];
        }
        Ok(titles)
    }

    /// The query of `record`'s title: its part searched each title once, by its first record
    /// there.
    pub(super) fn title_query(&self, record: u32) -> Query {
        Query {
            doc: self.first_of.get(&record).copied().unwrap_or(record),
            title: true,
        }
    }
}

/// A query as one word of [`QUERIES`]: its document, and whether it is a title.
fn query_word(query: &Query) -> u32 {
    query.doc << 1 | u32::from(query.title)
}

/// The query of [`query_word`], its document numbered after `first` more.
fn query_of(word: u32, first: u32) -> Query {
    Query {
        doc: first + (word >> 1),
        title: word & 1 == 1,
    }
}

/// The next block of a queries file: what each query stands for (as [`query_word`]s) and its
/// vector's codes; `None` at the end.
fn next_query_block(r: &mut impl Read) -> std::io::Result<Option<(Vec<u32>, Codes)>> {
    let words = read_list(r)?;
    if words.is_empty() {
        return Ok(None);
    }
    let codes = Codes::read_from(r)?;
    if codes.len() != words.len() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "a block of queries holds other than the codes it counts",
        ));
    }
    Ok(Some((words, codes)))
}

/// The last stage: the embedded parts in `dirs` searched, confirmed and grouped as one run
/// over their input, with its pipeline (writing to `out`), inputs and read options.
pub(in crate::pipeline) fn join(
    dirs: &[PathBuf],
    out: &Path,
) -> Result<(PipelineSpec, Vec<Input>, ReadOptions, Found)> {
    join_parts(SignedParts::new(open_stage(dirs)?), out, None)
}

/// Cells learned from the embedded parts once ([`super::by_cell`]), and the documents' best
/// within them where the parts that own the cells found it.
pub(super) struct Placed {
    pub placement: CellPlacement,
    /// The cells the run asked for (the summary's `cells`).
    pub count: usize,
    pub found: Option<FoundInParts>,
}

/// [`join`] over the embedded parts `signed`, within the cells of `placed` where given (else
/// learned here).
pub(super) fn join_parts(
    signed: SignedParts,
    out: &Path,
    placed: Option<Placed>,
) -> Result<(PipelineSpec, Vec<Input>, ReadOptions, Found)> {
    let mut spec = spec_for(&signed.folders[0], None);
    spec.output.dir = out.to_owned();
    let Method::TwoStage(config) = &spec.method else {
        unreachable!("embedded parts are two-stage's")
    };
    let config = (**config).clone();
    let model = signed.model()?;
    let inputs = spec.input.inputs()?;
    let read = spec.input.read_options();
    let mut times = StageTimes::default();

    let clock = Instant::now();
    let ReadAgain {
        corpus,
        title_copies,
        title_searched,
    } = read_titles(&inputs, &read)?;
    check_signed(&signed, &corpus)?;
    let documents = corpus.ids.len();
    let (signatures, sketches) = read_sketches(&signed)?;
    let work = ScratchDir::new()?;
    let queries = read_queries(&signed, work.path(), &title_searched)?;
    drop(title_searched);
    times.sketch = clock.elapsed().as_secs_f64();

    let count = match &placed {
        Some(placed) => placed.count,
        None => config.cells_of(documents),
    };
    let (neighbours, signatures, pairs) = match queries {
        Some(mut queries) => {
            let proposed = minhash_proposals((&signatures, &sketches), None, &config);
            let sketches_aside = SketchesAside::write(work.path(), signatures, sketches)?;
            let (cells, found) = match placed {
                Some(Placed {
                    placement, found, ..
                }) => {
                    let clock = Instant::now();
                    let codes = queries.document_codes(documents)?;
                    times.index += clock.elapsed().as_secs_f64();
                    (Cells::placed(codes, placement), found)
                }
                None => {
                    let cells = learn_cells(&mut queries, documents, count, &config, &mut times)?;
                    (cells, None)
                }
            };
            let clock = Instant::now();
            let within = Within::Cells(&cells, Box::new(proposed), found);
            let neighbours = nearest::candidates(within, queries, &title_copies, &config)?;
            drop(cells);
            times.search = clock.elapsed().as_secs_f64();
            times.candidates = times.index + times.search;
            let count = neighbours.len();
            let clock = Instant::now();
            let confirmer = config.settings.confirmer()?;
            let (confirmed, signatures) = confirm_aside(
                work.path(),
                &confirmer,
                neighbours,
                sketches_aside,
                |_, _| {},
            )?;
            times.confirm = clock.elapsed().as_secs_f64();
            (count, signatures, Some(confirmed))
        }
        None => (0, signatures, None),
    };
    tracing::info!(
        parts = signed.folders.len(),
        candidates = neighbours,
        "embedded parts searched and confirmed"
    );
    let (scored, pairs) = match pairs {
        Some(confirmed) => (confirmed.scored, confirmed.pairs),
        None => Default::default(),
    };
    let found = Found {
        corpus,
        candidates: neighbours,
        scored_candidates: Some(ScoredCandidates::Held(Arc::new(scored))),
        pairs,
        similarity: Arc::new(move |x, y| signatures.similarity(x as usize, y as usize)),
        probes: None,
        cells: (documents > 0).then_some(count),
        collection: 0,
        model,
        times,
    };
    Ok((spec, inputs, read, found))
}

/// The corpus as the join reads it again: its ids, and its titles as one run knows them.
struct ReadAgain {
    corpus: Corpus,
    /// The later records of each title, by its first.
    title_copies: HashMap<u32, Vec<u32>>,
    /// Whether each document's title is searched. Only the first record of a title is, as in
    /// one run; a part embedded the first among its own records, which an earlier part's may
    /// precede.
    title_searched: Vec<bool>,
}

/// Reads `inputs` again for the join.
fn read_titles(inputs: &[Input], read: &ReadOptions) -> Result<ReadAgain> {
    let mut titles = TitleCopies::default();
    let mut title_searched = Vec::new();
    let corpus = read_corpus(
        inputs,
        read,
        |record| record.title_apart().map(str::to_owned),
        |title| {
            let doc = title_searched.len() as u32;
            let first = title.is_some_and(|title| !titles.note(doc, &title).1);
            title_searched.push(first);
        },
    )?;
    Ok(ReadAgain {
        corpus,
        title_copies: titles.into_copies(),
        title_searched,
    })
}

/// Every part's sketches, in the run's order.
fn read_sketches(signed: &SignedParts) -> Result<(Signatures, SketchFacts)> {
    let num_perm = signed.folders[0].config.confirm.minhash.num_perm;
    let mut signatures = Signatures::new(num_perm);
    let mut sketches = SketchFacts::default();
    for folder in &signed.folders {
        let share = Share::read(signed, folder.part.number)?;
        signatures.extend(&share.signatures);
        sketches.extend(share.sketches);
    }
    Ok((signatures, sketches))
}

/// Every part's queries, numbered in the run, in a query file in `dir`; a title query only
/// where `title_searched` says the title is its record's to search. `None` for no queries.
fn read_queries(
    signed: &SignedParts,
    dir: &Path,
    title_searched: &[bool],
) -> Result<Option<QueryReader>> {
    let mut file: Option<QueryFile> = None;
    visit_query_blocks(signed, |queries, codes| {
        let file = match &mut file {
            Some(file) => file,
            None => file.insert(QueryFile::of_codes(dir, codes.width())?),
        };
        for (row, query) in queries.iter().enumerate() {
            if !query.title || title_searched[query.doc as usize] {
                file.append_code(*query, codes.row(row))?;
            }
        }
        Ok(())
    })?;
    file.map(QueryFile::into_reader).transpose()
}

/// Hands `visit` every part's queries a block at a time, in the run's order, numbered in the
/// run, with their codes.
pub(super) fn visit_query_blocks(
    signed: &SignedParts,
    mut visit: impl FnMut(&[Query], &Codes) -> Result<()>,
) -> Result<()> {
    for folder in &signed.folders {
        visit_part_queries(signed, folder.part.number, &mut visit)?;
    }
    Ok(())
}

/// Hands `visit` part `number`'s queries a block at a time, numbered in the run, with their
/// codes.
pub(super) fn visit_part_queries(
    signed: &SignedParts,
    number: u32,
    mut visit: impl FnMut(&[Query], &Codes) -> Result<()>,
) -> Result<()> {
    let folder = &signed.folders[number as usize - 1];
    let docs = signed.docs_of(number);
    let mut file = folder.folder.open_checked(QUERIES)?;
    loop {
        let (words, codes) = match next_query_block(file.reader()) {
            Ok(Some(block)) => block,
            Ok(None) => break,
            Err(e) => {
                // A file that does not read may be one that changed: the digest says which.
                let path = file.path().to_owned();
                file.finish()?;
                return Err(Error::io(&path, e));
            }
        };
        let queries: Vec<Query> = words.iter().map(|&w| query_of(w, docs.start)).collect();
        if queries.iter().any(|query| !docs.contains(&query.doc)) {
            return Err(Error::Usage(format!(
                "{} holds a query of a document its part did not sign: embed the part \
                     again",
                file.path().display()
            )));
        }
        visit(&queries, &codes)?;
    }
    file.finish()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::run::RunWriter;
    use crate::pipeline::{InputSpec, OutputSpec};
    use crate::settings::MethodName;

    /// Embeds `part` of `input` with the GloVe-style `vectors` into `out`.
    fn embed_with(input: &InputSpec, vectors: &Path, part: Part, out: &Path) {
        let settings = serde_json::json!({
            "embedder": "glove", "glove": vectors, "part": part.to_string(),
        });
        let method =
            Method::from_settings(MethodName::TwoStage, settings.as_object().unwrap().clone())
                .unwrap();
        let spec = PipelineSpec {
            input: input.clone(),
            method,
            output: OutputSpec::new(out.to_owned()),
            eval: None,
        };
        let run = Run::new(spec, &out.with_extension("models")).unwrap();
        embed_part(&run, RunWriter::lock(out).unwrap()).unwrap();
    }

    #[test]
    #[cfg_attr(
        not(feature = "edge"),
        ignore = "a part opens a throwaway embedded store: build with the `edge` feature"
    )]
    fn parts_embedded_with_unlike_vectors_are_not_joined() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        let lines = ["a", "b", "c", "d"].map(|id| {
            serde_json::json!({"core_id": id, "processed_title": "stroke risk",
                "processed_abstract": "aspirin trial"})
            .to_string()
        });
        std::fs::write(at("corpus.jsonl"), lines.join("\n") + "\n").unwrap();
        let input: InputSpec =
            serde_json::from_value(serde_json::json!({"paths": [at("corpus.jsonl")]})).unwrap();
        // One file at one path, as two machines would each hold it, a last digit apart.
        let vectors = |last: &str| {
            let words = ["stroke 1.0 0.5", "risk 0.5 1.0", "aspirin 0.25 1.0"];
            let text = words.join("\n") + &format!("\ntrial 1.0 {last}\n");
            std::fs::write(at("words.txt"), text).unwrap();
            at("words.txt")
        };
        let embedded = [at("embedded1"), at("embedded2")];
        for ((number, last), out) in [(1, "0.125"), (2, "0.1250001")].into_iter().zip(&embedded) {
            embed_with(&input, &vectors(last), Part { number, count: 2 }, out);
        }

        let err = match open_stage(&embedded) {
            Ok(_) => panic!("parts of unlike vectors were opened as one run"),
            Err(err) => err.to_string(),
        };
        for said in ["embedded1", "embedded2", "do not compare", "--models DIR"] {
            assert!(err.contains(said), "{said} not in: {err}");
        }
        let err = match join(&embedded, &at("out")) {
            Ok(_) => panic!("parts of unlike vectors were joined"),
            Err(err) => err.to_string(),
        };
        assert!(err.contains("do not compare"), "{err}");
    }

    #[test]
    #[cfg_attr(
        not(feature = "edge"),
        ignore = "a part opens a throwaway embedded store: build with the `edge` feature"
    )]
    fn the_join_searches_each_title_once_however_the_parts_fell() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        // Titles that repeat within a part and across parts, and a record with no body.
        let records = [
            ("a", "stroke risk", "aspirin trial"),
            ("b", "heart rate", "blood pressure"),
            ("c", "stroke risk", "care study"),
            ("d", "heart rate", "aspirin care"),
            ("e", "stroke risk", "blood trial"),
            ("f", "care", ""),
        ];
        let lines: Vec<String> = (records.iter())
            .map(|(id, title, body)| {
                serde_json::json!({"core_id": id, "processed_title": title, "processed_abstract": body})
                    .to_string()
            })
            .collect();
        std::fs::write(at("corpus.jsonl"), lines.join("\n") + "\n").unwrap();
        let words = "stroke risk aspirin trial heart rate blood pressure care study";
        let vectors: Vec<String> = (words.split(' ').enumerate())
            .map(|(i, word)| format!("{word} {} {} 1.0", i % 3, i % 2))
            .collect();
        std::fs::write(at("words.txt"), vectors.join("\n") + "\n").unwrap();
        let input: InputSpec =
            serde_json::from_value(serde_json::json!({"paths": [at("corpus.jsonl")]})).unwrap();
        let embedded: Vec<PathBuf> = (1..=3).map(|i| at(&format!("embedded{i}"))).collect();
        for (number, out) in (1..=3).zip(&embedded) {
            embed_with(&input, &at("words.txt"), Part { number, count: 3 }, out);
        }
        let signed = SignedParts::new(open_stage(&embedded).unwrap());
        let model = signed.model().unwrap().expect("the parts name their model");
        assert_eq!(model.name, "words.txt");
        // Each part embedded the first of each title among its own records.
        let in_parts: usize = (signed.folders.iter())
            .map(|folder| {
                let mut file = folder.folder.open_checked(QUERIES).unwrap();
                let mut titles = 0;
                while let Some((words, _)) = next_query_block(file.reader()).unwrap() {
                    titles += words.iter().filter(|&&w| query_of(w, 0).title).count();
                }
                titles
            })
            .sum();
        assert!(in_parts > 2, "{in_parts} title queries in the parts");

        let inputs = input.inputs().unwrap();
        let again = read_titles(&inputs, &input.read_options()).unwrap();
        assert_eq!(again.corpus.ids.len(), 6);
        assert_eq!(
            again.title_searched,
            [true, true, false, false, false, false]
        );
        let copies = HashMap::from([(0, vec![2, 4]), (1, vec![3])]);
        assert_eq!(again.title_copies, copies);
        let mut queries = read_queries(&signed, dir.path(), &again.title_searched)
            .unwrap()
            .unwrap();
        let mut titles = Vec::new();
        while let Some((batch, _)) = queries.next_titles(16).unwrap() {
            titles.extend(batch.iter().map(|query| query.doc));
        }
        titles.sort_unstable();
        assert_eq!(
            titles,
            [0, 1],
            "one title query a title, by its first record"
        );
        assert_eq!(
            queries.len(),
            6 + 2,
            "every document's query, and the two titles'"
        );
    }
}
