//! Two-stage's search split by the owners of the cells: the cells learned once, then each part
//! searches the documents and titles that probe the cells it owns.
//!
//! Within cells, a document's candidates are its best `k + 1` over the members of the few
//! cells nearest to it (`search::cells`); a title's, over the title-only members of the cells
//! nearest to it. A query's best over those cells is its best over the best each cell gives,
//! in any order. So the cells can be dealt out: a part that owns some of them holds only their
//! members' codes, and finds each query's best among those; the join merges each query's lists
//! from the parts into what one process finds, byte for byte.
//!
//! After the parts that sign and embed (`neardup dedup --part I/N`, [`super::staged`]):
//!
//! 1. **learn** (one job: `neardup merge embedded*/ --learn-cells --out cells/`, [`learn`]):
//!    reads the parts' codes twice. The first time it keeps the sample one run learns from,
//!    and a hash of every document's code; it learns the cells from the sample as one run
//!    learns them. The second time it finds each document's nearest cells as the codes pass
//!    (`cells.bin`), and routes each title query to its nearest cells; it also notes which
//!    documents are a title and nothing else (`titles.bin`). Where titles go by their words
//!    (`two_stage::titles_by_words`), it routes none and keeps the title-only documents'
//!    titles instead (`title-only-words.bin`). So it holds the sample and a block, not every
//!    code. The centroids come from `f32` matrix products, whose sums
//!    another machine may split otherwise, so they are learned, and every query routed, once.
//! 2. **search** (`neardup merge cells/ --part J/N --out searchedJ/`, [`search_part`]): part
//!    `J` owns cell `c` where `c mod N = J - 1`. It holds the codes of its cells' members (a
//!    share of the corpus), reads every query's code again a block at a time, and writes the
//!    best of each document (`nearest-I.bin`) and each title (`nearest-titles-I.bin`) that
//!    probes one of its cells, in the file of the embedded part `I` of the query. It also bands
//!    a share of the embedded parts' band keys, for MinHash's proposals ([`band_share`]).
//! 3. **confirm** (`neardup merge searched*/ --part I/N --out confirmedI/`,
//!    [`super::by_share`]): each embedded part's share of the candidates, found and judged;
//!    then MinHash's join.
//!
//! Or, after the search, one process joins (`neardup merge searched*/ --out out/`, [`join`]):
//! each query's lists merged, then the rest of the run as the one-process join does it
//! (MinHash's proposals, confirming, writing), holding every document's code and every sketch.
//! `neardup merge cells/ --out out/` searches in the join itself, within the cells learned once.

mod lists;
mod titles;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

pub(super) use self::lists::read_lists;
use self::lists::{Lists, nearest_file, nearest_titles_file};
pub(super) use self::titles::{TitleCells, TitleOnlyWords};
use super::staged::{Placed, join_parts, visit_query_blocks};
use crate::error::{Error, Result};
use crate::io::Input;
use crate::io::{FolderLock, ReadOptions};
use crate::output::run::{RunFolder, RunSummary, RunWriter, SUMMARY, StageTimes};
use crate::pipeline::dedup::Found;
use crate::pipeline::split::minhash::{Routed, band, write_routed};
use crate::pipeline::split::stage::{
    SignedParts, Stage, StageFolder, folders_seen_from, open_stage, seen_from, spec_for,
    stage_summary,
};
use crate::pipeline::two_stage::nearest::FoundInParts;
use crate::pipeline::two_stage::titles_by_words;
use crate::pipeline::{Method, Part, PipelineSpec};
use crate::search::{
    CellPlacement, CellSample, Codes, CopyHashes, NearestLists, OwnedCells, Placing,
};

/// The cells' placement of every document.
const PLACEMENT: &str = "cells.bin";
/// Which documents are a title and nothing else, and where each title query was routed.
const TITLES: &str = "titles.bin";
/// The titles of the title-only documents, where a record's copies among them go by words.
const TITLE_ONLY_WORDS: &str = "title-only-words.bin";
/// Stage 1: the cells of the embedded parts in `dirs`, learned once, every document placed
/// among them and every title query routed, written into the folder `lock` holds.
pub(in crate::pipeline) fn learn(dirs: &[PathBuf], lock: FolderLock) -> Result<RunSummary> {
    let folders = open_stage(dirs)?;
    if folders[0].stage != Stage::Embedded {
        return Err(Error::Usage(format!(
            "--learn-cells learns the cells of a two-stage run's embedded parts, and {} holds \
             another stage: give the folders of `neardup dedup --part I/N` (two-stage)",
            folders[0].dir.display()
        )));
    }
    let signed = SignedParts::new(folders);
    let spec = spec_for(&signed.folders[0], None);
    let Method::TwoStage(config) = &spec.method else {
        unreachable!("embedded parts are two-stage's")
    };
    let documents = signed.documents();
    if documents == 0 {
        return Err(Error::Usage(
            "the embedded parts hold no documents, so there are no cells to learn: join them \
             with `neardup merge EMBEDDED_FOLDERS... --out DIR`"
                .into(),
        ));
    }
    let clock = Instant::now();
    let count = config.cells_of(documents);
    let sample = CellSample::of(documents, count);
    let (sampled, hashes) = read_sample(&signed, sample)?;
    tracing::info!(
        sampled = sampled.len(),
        seconds = clock.elapsed().as_secs_f64(),
        "the sample's codes read, and every document's hashed"
    );
    let clock = Instant::now();
    let mut placing = {
        let _spinner = crate::progress::spinner("learning the cells");
        let rows: Vec<usize> = (0..sampled.len()).collect();
        Placing::learn(&sampled, &rows, sample, config.cell_probes, hashes)
    };
    drop(sampled);
    tracing::info!(seconds = clock.elapsed().as_secs_f64(), "cells learned");
    let by_words = titles_by_words(config);
    let (titles, words) = TitleCells::place_and_route(&signed, &mut placing, by_words)?;
    let placement = placing.finish();
    let signed_from_here = folders_seen_from(lock.dir(), &signed.folders);
    let mut run = RunWriter::begin(lock)?;
    run.write_with(PLACEMENT, |file| placement.write_to(file))?;
    run.write_with(TITLES, |file| titles.write_to(file))?;
    if let Some(words) = words {
        run.write_with(TITLE_ONLY_WORDS, |file| words.write_to(file))?;
    }
    tracing::info!(
        cells = placement.cells(),
        documents,
        seconds = clock.elapsed().as_secs_f64(),
        "cells and titles written"
    );
    let times = StageTimes {
        index: clock.elapsed().as_secs_f64(),
        ..StageTimes::default()
    };
    let mut summary = stage_summary(
        &spec,
        Stage::Cells,
        Some(signed_from_here),
        documents,
        (0, 0),
        times,
    );
    summary.settings["embedded_runs"] = embedded_runs(&signed);
    summary.cells = Some(count);
    run.finish(summary)
}

/// The run ids of the embedded parts, in part order: what the cells were learned from.
fn embedded_runs(signed: &SignedParts) -> Value {
    let runs = signed.folders.iter().map(|f| f.folder.summary.run.as_str());
    runs.map(Value::from).collect()
}

/// The codes of the documents `sample` takes, and every document's codes hashed (to find the
/// copies of a vector that many hold), from the parts' queries.
fn read_sample(signed: &SignedParts, sample: CellSample) -> Result<(Codes, CopyHashes)> {
    let mut sampled: Option<Codes> = None;
    let mut hashes = CopyHashes::default();
    visit_documents_and_titles(signed, false, |first, documents, _, _| {
        let sampled = sampled.get_or_insert_with(|| Codes::new(documents.width()));
        for row in 0..documents.len() {
            if sample.holds(first + row) {
                sampled.push_code(documents.row(row));
            }
        }
        hashes.push(documents);
        Ok(())
    })?;
    Ok((sampled.unwrap_or_else(|| Codes::new(0)), hashes))
}

/// Hands `visit` every part's queries a block at a time, in the run's order: the number of
/// the block's first document and the documents' codes, then the documents of its titles and
/// their codes (none unless `with_titles`: a title's codes are as many as a document's). Checks
/// that the parts hold every document's code once, in order.
fn visit_documents_and_titles(
    signed: &SignedParts,
    with_titles: bool,
    mut visit: impl FnMut(usize, &Codes, &[u32], &Codes) -> Result<()>,
) -> Result<()> {
    let mut next = 0;
    visit_query_blocks(signed, |queries, codes| {
        let first = next;
        let mut documents = Codes::new(codes.width());
        let (mut titles, mut title_codes) = (Vec::new(), Codes::new(codes.width()));
        for (row, query) in queries.iter().enumerate() {
            if query.title {
                if with_titles {
                    titles.push(query.doc);
                    title_codes.push_code(codes.row(row));
                }
            } else if query.doc as usize == next {
                documents.push_code(codes.row(row));
                next += 1;
            } else {
                return Err(Error::Usage(format!(
                    "the embedded parts hold the codes of document {} where document {next}'s \
                     belong: embed them again",
                    query.doc
                )));
            }
        }
        visit(first, &documents, &titles, &title_codes)
    })?;
    if next != signed.documents() {
        return Err(Error::Usage(format!(
            "the embedded parts hold {next} documents' codes for {} documents: embed them again",
            signed.documents()
        )));
    }
    Ok(())
}

/// A folder of learned cells, and the embedded parts they were learned from.
pub(super) struct CellsFolder {
    folder: RunFolder,
    pub signed: SignedParts,
    pub placement: CellPlacement,
    pub titles: TitleCells,
    /// The cells the run asked for (the summary's `cells`).
    pub count: usize,
}

impl CellsFolder {
    /// The cells that the searched parts `parts` searched, checked to be the same for all.
    pub(super) fn searched_by(parts: &[StageFolder]) -> Result<CellsFolder> {
        let first = &parts[0];
        let cells_dir = first.dir.join(
            first.folder.summary.settings["cells"]
                .as_str()
                .unwrap_or(""),
        );
        if !cells_dir.join(SUMMARY).is_file() {
            return Err(Error::Usage(format!(
                "{} names the folder of learned cells {}, which is not there: keep the cells \
                 where they were beside the searched parts (each names them relative to itself)",
                first.dir.display(),
                cells_dir.display()
            )));
        }
        let cells = CellsFolder::open(&cells_dir)?;
        let run = &cells.folder.summary.run;
        if let Some(other) = parts
            .iter()
            .find(|p| p.folder.summary.settings["cells_run"] != run.as_str())
        {
            return Err(Error::Usage(format!(
                "{} searched other cells than {} ({}): search every part in the cells of one run",
                other.dir.display(),
                first.dir.display(),
                cells_dir.display()
            )));
        }
        Ok(cells)
    }

    fn open(dir: &Path) -> Result<CellsFolder> {
        let folder = RunFolder::open(dir)?;
        let settings = &folder.summary.settings;
        if settings["stage"] != Stage::Cells.name() {
            return Err(Error::Usage(format!(
                "{} holds no learned cells: give the folder of `neardup merge EMBEDDED... \
                 --learn-cells`",
                dir.display()
            )));
        }
        let embedded: Vec<PathBuf> = (settings["signed"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .map(|embedded| dir.join(embedded))
            .collect();
        if let Some(missing) = embedded.iter().find(|d| !d.is_dir()) {
            return Err(Error::Usage(format!(
                "{} names the embedded part {}, which is not there: keep the embedded folders \
                 where they were beside the cells",
                dir.display(),
                missing.display()
            )));
        }
        let signed = SignedParts::new(open_stage(&embedded)?);
        if signed.folders[0].stage != Stage::Embedded
            || signed.documents() != folder.summary.documents
            || embedded_runs(&signed) != settings["embedded_runs"]
        {
            return Err(Error::Usage(format!(
                "{} names parts ({} ...) that are not the embedded parts it was learned from \
                 (embedded again since?): learn the cells again",
                dir.display(),
                signed.folders[0].dir.display()
            )));
        }
        let placement = folder.read_with(PLACEMENT, CellPlacement::read_from)?;
        if placement.documents() != signed.documents() {
            return Err(Error::Usage(format!(
                "{} places {} documents and its parts hold {}: learn the cells again",
                dir.display(),
                placement.documents(),
                signed.documents()
            )));
        }
        let documents = signed.documents();
        let titles =
            folder.read_with(TITLES, |r| TitleCells::read_from(r, documents, &placement))?;
        let count = folder.summary.cells.unwrap_or(placement.cells());
        Ok(CellsFolder {
            folder,
            signed,
            placement,
            titles,
            count,
        })
    }

    /// The titles of the title-only documents, which the cells keep where a record's
    /// title-only copies go by their words.
    pub(super) fn title_only_words(&self) -> Result<TitleOnlyWords> {
        let documents = self.signed.documents();
        if !self.folder.dir().join(TITLE_ONLY_WORDS).is_file() {
            return Err(Error::Usage(format!(
                "{} keeps no titles of the title-only documents ({TITLE_ONLY_WORDS}), which \
                 this version confirms by: learn the cells again",
                self.folder.dir().display()
            )));
        }
        (self.folder).read_with(TITLE_ONLY_WORDS, |r| {
            TitleOnlyWords::read_from(r, documents)
        })
    }

    /// The run's pipeline, as part `part` (or none).
    pub(super) fn spec(&self, part: Option<Part>) -> PipelineSpec {
        spec_for(&self.signed.folders[0], part)
    }
}

/// Stage 2: each document that probes a cell of part `part` (cell `c` where `c mod N` is
/// `J - 1`) with its best among those cells' members, and each title with its best among their
/// title-only members, from the cells in `dirs` (one folder), written into the folder `lock`
/// holds.
pub(in crate::pipeline) fn search_part(
    dirs: &[PathBuf],
    part: Part,
    lock: FolderLock,
) -> Result<RunSummary> {
    let [dir] = dirs else {
        return Err(Error::Usage(
            "give one folder of learned cells to search a part of".into(),
        ));
    };
    let cells = CellsFolder::open(dir)?;
    let spec = cells.spec(Some(part));
    let Method::TwoStage(config) = &spec.method else {
        unreachable!("cells are two-stage's")
    };
    let clock = Instant::now();
    let mut owned = OwnedCells::new(
        &cells.placement,
        |cell| part.holds(cell as u32),
        cells.placement.width(),
        &cells.titles.title_only,
    );
    // The members' codes first, then every query a block at a time.
    let members = owned.held().to_vec();
    let mut next = members.iter().peekable();
    visit_query_blocks(&cells.signed, |queries, codes| {
        for (row, query) in queries.iter().enumerate() {
            if !query.title && next.next_if_eq(&&query.doc).is_some() {
                owned.hold(codes.row(row));
            }
        }
        Ok(())
    })?;
    if let Some(missing) = next.next() {
        return Err(Error::Usage(format!(
            "the embedded parts hold no code of document {missing}: embed them again"
        )));
    }
    drop(members);
    let signed_from_here = folders_seen_from(lock.dir(), &cells.signed.folders);
    let cells_from_here = seen_from(lock.dir(), dir);
    let mut run = RunWriter::begin(lock)?;
    let width = cells.placement.width();
    let probes = cells.placement.probes();
    let mut documents = Lists::new(&run, nearest_file, &cells.signed, width)?;
    let mut titles = Lists::new(&run, nearest_titles_file, &cells.signed, width)?;
    let mut title = cells
        .titles
        .titles
        .iter()
        .zip(cells.titles.routed.chunks_exact(probes));
    let mut routed = Vec::new();
    let bar = crate::progress::items(
        cells.signed.documents() as u64,
        "searching documents and titles",
    );
    let k = config.top_k;
    let by_words = titles_by_words(config);
    visit_query_blocks(&cells.signed, |queries, codes| {
        for (row, query) in queries.iter().enumerate() {
            if !query.title {
                if owned.probes_here(query.doc) {
                    documents.push(query.doc, codes.row(row));
                }
                if documents.full() {
                    documents.write(|docs, codes| owned.search(docs, codes, k))?;
                }
                bar.set_position(u64::from(query.doc) + 1);
                continue;
            }
            if by_words {
                continue;
            }
            let Some((&doc, cells)) = title.next().filter(|&(&doc, _)| doc == query.doc) else {
                return Err(Error::Usage(format!(
                    "the title of document {} was not routed with the cells: learn them again",
                    query.doc
                )));
            };
            if owned.routed_here(cells) {
                titles.push(doc, codes.row(row));
                routed.extend_from_slice(cells);
            }
            if titles.full() {
                titles.write(|_, codes| owned.search_titles(&routed, codes, k))?;
                routed.clear();
            }
        }
        Ok(())
    })?;
    if let Some((doc, _)) = title.next() {
        return Err(Error::Usage(format!(
            "the cells routed a title of document {doc} that the embedded parts do not hold: \
             learn the cells again"
        )));
    }
    documents.write(|docs, codes| owned.search(docs, codes, k))?;
    titles.write(|_, codes| owned.search_titles(&routed, codes, k))?;
    bar.finish_and_clear();
    let searched = documents.searched;
    let titles_searched = titles.searched;
    documents.finish(&mut run)?;
    titles.finish(&mut run)?;
    tracing::info!(
        part = %part,
        documents = searched,
        titles = titles_searched,
        seconds = clock.elapsed().as_secs_f64(),
        "searched the cells it owns"
    );
    // The members' codes go before the keys come.
    drop(owned);
    let proposed = write_routed(&mut run, band_share(&cells.signed, part)?)?;
    tracing::info!(part = %part, proposed, "MinHash's proposals banded and routed");
    let times = StageTimes {
        search: clock.elapsed().as_secs_f64(),
        ..StageTimes::default()
    };
    let mut summary = stage_summary(
        &spec,
        Stage::Searched,
        Some(signed_from_here),
        cells.signed.documents(),
        (searched, 0),
        times,
    );
    summary.settings["cells"] = cells_from_here.to_string_lossy().into_owned().into();
    summary.settings["cells_run"] = cells.folder.summary.run.clone().into();
    summary.settings["titles_searched"] = titles_searched.into();
    summary.cells = Some(cells.count);
    run.finish(summary)
}

/// MinHash's proposals from the band keys that searched part `part` bands, routed to the
/// embedded parts that confirm them (entry `I - 1` to part `I`). The embedded parts routed
/// each key to one of their own count of files; searched part `J` of `M` bands the files `I`
/// where `I - 1 mod M` is `J - 1`, so that every file is banded once, whatever `M`.
fn band_share(signed: &SignedParts, part: Part) -> Result<Vec<Vec<Routed>>> {
    let signers = signed.folders[0].part;
    let mut routed = vec![Vec::new(); signers.count as usize];
    for keys in signers.all() {
        if (keys.number - 1) % part.count == part.number - 1 {
            for (to, proposed) in routed.iter_mut().zip(band(signed, keys)?) {
                to.extend(proposed);
            }
        }
    }
    Ok(routed)
}

/// The join from the learned cells in `dirs` (one folder): the queries searched in it.
pub(in crate::pipeline) fn join_cells(
    dirs: &[PathBuf],
    out: &Path,
) -> Result<(PipelineSpec, Vec<Input>, ReadOptions, Found)> {
    let [dir] = dirs else {
        return Err(Error::Usage(
            "give one folder of learned cells to join".into(),
        ));
    };
    let cells = CellsFolder::open(dir)?;
    let placed = Placed {
        placement: cells.placement,
        count: cells.count,
        found: None,
    };
    join_parts(cells.signed, out, Some(placed))
}

/// Stage 3: the searched parts in `dirs` joined: each query's lists merged, and the rest of the
/// run done as the one-process join does it.
pub(in crate::pipeline) fn join(
    dirs: &[PathBuf],
    out: &Path,
) -> Result<(PipelineSpec, Vec<Input>, ReadOptions, Found)> {
    let parts = open_stage(dirs)?;
    let cells = CellsFolder::searched_by(&parts)?;
    let Method::TwoStage(config) = &cells.spec(None).method else {
        unreachable!("cells are two-stage's")
    };
    let documents = cells.signed.documents();
    let mut found = FoundInParts {
        documents: NearestLists::new(documents, config.top_k),
        titles: NearestLists::new(documents, config.top_k),
    };
    for signer in cells.signed.folders[0].part.all() {
        let whole = 0..documents as u32;
        read_lists(&parts, signer, whole, &mut found)?;
    }
    let placed = Placed {
        placement: cells.placement,
        count: cells.count,
        found: Some(found),
    };
    join_parts(cells.signed, out, Some(placed))
}
