//! Two-stage's search split by the owners of the cells: the cells learned once, then each part
//! searches the documents that probe the cells it owns.
//!
//! Within cells, a document's candidates are its best `k + 1` over the members of the few
//! cells nearest to it (`search::cells`). Its best over those cells is its best over the best
//! each cell gives, in any order. So the cells can be dealt out: a part that owns some of them
//! holds only their members' codes, and finds each document's best among those; the join
//! merges each document's lists from the parts into what one process finds, byte for byte.
//!
//! After the parts that sign and embed (`neardup dedup --part I/N`, [`super::staged`]):
//!
//! 1. **learn** (one job: `neardup merge embedded*/ --learn-cells --out cells/`, [`learn`]):
//!    reads every document's codes, learns the cells as one run learns them and finds each
//!    document's nearest cells; writes that placement (`cells.bin`). The centroids come from
//!    `f32` matrix products, whose sums another machine may split otherwise, so they are
//!    learned once and shared rather than learned by each part.
//! 2. **search** (`neardup merge cells/ --part J/N --out searchedJ/`, [`search_part`]): part
//!    `J` owns cell `c` where `c mod N = J - 1`. It holds the codes of its cells' members (a
//!    share of the corpus), reads every document's codes again a block at a time, and writes
//!    the best of each document that probes one of its cells (`nearest.bin`).
//! 3. **join** (`neardup merge searched*/ --out out/`, [`join`]): the documents' lists merged,
//!    then the rest of the run as the one-process join does it (titles, MinHash's proposals,
//!    confirming, writing).
//!
//! `neardup merge cells/ --out out/` searches the documents in the join itself.
//!
//! The join still holds every document's code and every sketch, as the one-process join does:
//! the titles' search and MinHash's proposals are not split yet (decision 0016).

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

use super::staged::{Placed, join_parts, visit_query_blocks};
use crate::error::{Error, Result};
use crate::io::{FolderLock, ReadOptions, read_list, write_list};
use crate::output::run::{RunFolder, RunSummary, RunWriter, StageTimes};
use crate::pipeline::stages::{
    SignedParts, Stage, StageFolder, open_stage, seen_from, spec_for, stage_summary,
};
use crate::pipeline::{Found, Input, Method, Part, PipelineSpec};
use crate::search::{CellPlacement, Codes, NearestLists, OwnedCells, cells_for};

/// The cells' placement of every document.
const PLACEMENT: &str = "cells.bin";
/// A searched part's lists: blocks of each document's best within the part's cells.
const NEAREST: &str = "nearest.bin";
/// Documents searched at a time by a part.
const SEARCH_BLOCK: usize = 1 << 16;

/// Stage 1: the cells of the embedded parts in `dirs`, learned once, and every document
/// placed among them, written into the folder `lock` holds.
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
    let codes = document_codes(&signed)?;
    let count = match config.cells {
        Some(count) if count > 0 => count,
        _ => cells_for(documents),
    };
    let placement = {
        let _spinner = crate::progress::spinner("learning the cells");
        CellPlacement::learn(&codes, count, config.cell_probes)
    };
    drop(codes);
    let signed_from_here = seen_from(lock.dir(), &signed.folders);
    let mut run = RunWriter::begin(lock)?;
    let mut file = run.create(PLACEMENT)?;
    placement
        .write_to(&mut file)
        .map_err(|e| Error::io(file.target(), e))?;
    run.commit(file)?;
    tracing::info!(
        cells = placement.cells(),
        documents,
        seconds = clock.elapsed().as_secs_f64(),
        "cells learned and every document placed"
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
    summary.cells = Some(count);
    run.finish(summary)
}

/// Every document's codes, by document number, from the parts' queries.
fn document_codes(signed: &SignedParts) -> Result<Codes> {
    let mut codes: Option<Codes> = None;
    visit_query_blocks(signed, |queries, block| {
        let codes = codes.get_or_insert_with(|| Codes::new(block.width()));
        for (row, query) in queries.iter().enumerate() {
            if !query.title {
                codes.push_code(block.row(row));
            }
        }
        Ok(())
    })?;
    let codes = codes.unwrap_or_else(|| Codes::new(0));
    if codes.len() != signed.documents() {
        return Err(Error::Usage(format!(
            "the embedded parts hold {} documents' codes for {} documents: embed them again",
            codes.len(),
            signed.documents()
        )));
    }
    Ok(codes)
}

/// A folder of learned cells, and the embedded parts they were learned from.
struct CellsFolder {
    folder: RunFolder,
    signed: SignedParts,
    placement: CellPlacement,
    count: usize,
}

impl CellsFolder {
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
        {
            return Err(Error::Usage(format!(
                "{} names parts ({}) that are not the embedded parts it was learned from: \
                 learn the cells again",
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
        let count = folder.summary.cells.unwrap_or(placement.cells());
        Ok(CellsFolder {
            folder,
            signed,
            placement,
            count,
        })
    }

    /// The run's pipeline, as part `part` (or none).
    fn spec(&self, part: Option<Part>) -> PipelineSpec {
        spec_for(&self.signed.folders[0], part)
    }
}

/// Stage 2: each document that probes a cell of part `part` (cell `c` where `c mod N` is
/// `J - 1`) with its best among those cells' members, from the cells in `dirs` (one folder),
/// written into the folder `lock` holds.
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
    );
    // The members' codes first, then every document a block at a time.
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
    let signed_from_here = seen_from(lock.dir(), &cells.signed.folders);
    let cells_from_here = pathdiff::diff_paths(
        dir.canonicalize().unwrap_or_else(|_| dir.clone()),
        lock.dir()
            .canonicalize()
            .unwrap_or_else(|_| lock.dir().to_owned()),
    )
    .unwrap_or_else(|| dir.clone());
    let mut run = RunWriter::begin(lock)?;
    let mut file = run.create(NEAREST)?;
    let width = cells.placement.width();
    let (mut searched, mut block, mut codes) = (0, Vec::new(), Codes::new(width));
    let bar = crate::progress::items(cells.signed.documents() as u64, "searching documents");
    let mut search = |block: &mut Vec<u32>, codes: &mut Codes| -> Result<()> {
        let found = owned.search(block, codes, config.top_k);
        let mut words = Vec::new();
        for (&doc, found) in block.iter().zip(found) {
            words.extend([doc, found.len() as u32]);
            words.extend(
                found
                    .iter()
                    .flat_map(|&(cosine, other)| [cosine.to_bits(), other]),
            );
        }
        write_list(&mut file, &words).map_err(|e| Error::io(file.target(), e))?;
        searched += block.len();
        block.clear();
        *codes = Codes::new(codes.width());
        Ok(())
    };
    visit_query_blocks(&cells.signed, |queries, block_codes| {
        for (row, query) in queries.iter().enumerate() {
            if !query.title && owned.probes_here(query.doc) {
                block.push(query.doc);
                codes.push_code(block_codes.row(row));
            }
            if block.len() == SEARCH_BLOCK {
                search(&mut block, &mut codes)?;
            }
            bar.set_position(u64::from(query.doc) + 1);
        }
        Ok(())
    })?;
    if !block.is_empty() {
        search(&mut block, &mut codes)?;
    }
    bar.finish_and_clear();
    write_list(&mut file, &[]).map_err(|e| Error::io(file.target(), e))?;
    run.commit(file)?;
    tracing::info!(part = %part, searched, seconds = clock.elapsed().as_secs_f64(), "searched");
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
    summary.cells = Some(cells.count);
    run.finish(summary)
}

/// The join from the learned cells in `dirs` (one folder): the documents searched in it.
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

/// Stage 3: the searched parts in `dirs` joined: each document's lists merged, and the rest of
/// the run done as the one-process join does it.
pub(in crate::pipeline) fn join(
    dirs: &[PathBuf],
    out: &Path,
) -> Result<(PipelineSpec, Vec<Input>, ReadOptions, Found)> {
    let parts = open_stage(dirs)?;
    let first = &parts[0];
    let cells_dir = first.dir.join(
        first.folder.summary.settings["cells"]
            .as_str()
            .unwrap_or(""),
    );
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
    let Method::TwoStage(config) = &cells.spec(None).method else {
        unreachable!("cells are two-stage's")
    };
    let mut found = NearestLists::new(cells.signed.documents(), config.top_k);
    for part in &parts {
        read_nearest(part, &mut found)?;
    }
    let placed = Placed {
        placement: cells.placement,
        count: cells.count,
        found: Some(found),
    };
    join_parts(cells.signed, out, Some(placed))
}

/// Offers `found` every list a searched part wrote.
fn read_nearest(part: &StageFolder, found: &mut NearestLists) -> Result<()> {
    let documents = found.documents() as u32;
    let invalid =
        |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    part.folder.read_with(NEAREST, |r| {
        loop {
            let words = read_list(r)?;
            if words.is_empty() {
                return Ok(());
            }
            let mut words = words.as_slice();
            while let [doc, count, rest @ ..] = words {
                let count = *count as usize;
                if *doc >= documents || rest.len() < 2 * count {
                    return Err(invalid("a list of another run's documents"));
                }
                let hits: Vec<(f32, u32)> = (rest[..2 * count].chunks_exact(2))
                    .map(|w| (f32::from_bits(w[0]), w[1]))
                    .collect();
                if hits.iter().any(|&(_, other)| other >= documents) {
                    return Err(invalid("a list of another run's documents"));
                }
                found.offer(*doc, hits);
                words = &rest[2 * count..];
            }
            if !words.is_empty() {
                return Err(invalid("a list cut short"));
            }
        }
    })
}
