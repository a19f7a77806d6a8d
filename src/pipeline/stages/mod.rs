//! MinHash in stages that split over machines: sign, band, confirm, join.
//!
//! One MinHash run holds every signature at once (512 bytes a document: 51 GB at a hundred
//! million). Split into `N` parts, each stage is `N` jobs that need no more than a share or
//! two, except the last:
//!
//! 1. **sign** (`neardup dedup --method minhash --part I/N --out signedI/`, [`sign`]): reads
//!    share `I` of the input, the records that start in the `I`th of `N` equal byte ranges
//!    ([`ByteRange`](crate::io::ByteRange); JSON Lines is entered mid-file, other formats are
//!    read from the start and the records before passed over), signs them, and writes their
//!    sketches, and each of their band keys (and, under the evidence rule, title keys) into
//!    the file of the part the key hashes to. Every document of one bucket is so in one file
//!    of every signed part. A part numbers its documents from 0; since shares follow each
//!    other in input order, a document's number in the run is its number in its part plus
//!    the documents of the parts before ([`SignedParts`]), as one run numbers it.
//! 2. **band** (`neardup merge signed*/ --part J/N --out bandedJ/`, [`band`]): reads the keys
//!    routed to `J` from every signed part; documents that share a key are candidates, exactly
//!    as one run proposes them. Each candidate goes to the part that signed one of its two
//!    documents, chosen by a hash of the pair.
//! 3. **confirm** (`neardup merge banded*/ --part I/N --out confirmedI/`, [`confirm`]): the
//!    candidates routed to `I`: part `I`'s sketches are held, and each other share is read a
//!    block at a time, for the candidates whose other document the block holds.
//! 4. **join** (`neardup merge confirmed*/ --out out/`): every candidate once, grouped by the
//!    confirmed pairs; the run's files, byte for byte those of one run (`summary.json` but for
//!    its timings and run id). Like one run's writing stage, it reads the corpus again and
//!    holds every id; it checks that each part's share holds the ids the part signed (an id
//!    repeated in two parts, or an input changed since, is refused). It holds the confirmed
//!    pairs, not the candidates: it merges the confirmed parts' sorted files as it reads them,
//!    once for the pairs, once for the scores grouping asks, and once to deal the candidates
//!    into a spill file for each slice of the candidates' file, each then sorted and written on
//!    its own. Of the signatures it reads only those of the few documents whose similarity
//!    grouping asks and no part scored.
//!
//! `neardup merge` given the folders of an earlier stage and no `--part` runs the stages left
//! in one process, one part at a time: the way on one machine. Stage folders are run folders
//! ([`RunWriter`]): their files are written atomically and read back checked against the
//! summary, whose settings say which stage wrote them and where the signed parts are.
//!
//! A two-stage run in stages (`two_stage::staged`, `two_stage::by_cell`, `two_stage::by_share`)
//! has stages of its own: `embedded`, signed parts that also hold their queries' codes, opened,
//! checked and numbered here as signed parts are; `cells`, learned once from them (one folder,
//! no part); and `searched`, the parts that searched the cells they own and banded a share of
//! the keys. Its `confirmed` parts are this module's: each share's candidates judged here, with
//! their cosines, and joined here, a pair found by two parts kept once with its highest cosine.

mod band;
mod join;
mod judge;
mod share;
mod sign;

pub(in crate::pipeline) use band::band;
pub(super) use join::{check_signed, join};
pub(in crate::pipeline) use judge::{Judged, confirm};
pub(in crate::pipeline) use share::Share;
pub use sign::Signed;
pub(in crate::pipeline) use sign::sign_part;
pub(in crate::pipeline) use sign::{KeyFiles, route_keys, write_sketches};

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;

use super::{Method, MinHashConfig, Pair, Part, PipelineSpec};
use crate::embed::ModelIdentity;
use crate::error::{Error, Result};
use crate::io::{FolderLock, read_list, write_count, write_list};
use crate::output::run::{RunFolder, RunSummary, RunWriter, SUMMARY as RUN_SUMMARY, StageTimes};

/// The sketches of a signed part's documents.
pub(in crate::pipeline) const SKETCHES: &str = "sketches.bin";
/// A confirmed part's candidates, scored.
const SCORED: &str = "scored.bin";
/// The band number that marks a title key among the band keys.
const TITLE_BAND: u32 = u32::MAX;

/// The file of keys a signed part routes to `part`.
fn keys_file(part: Part) -> String {
    format!("keys-{}.bin", part.number)
}

/// The file of candidates a banded part routes to `part`.
fn candidates_file(part: Part) -> String {
    format!("candidates-{}.bin", part.number)
}

/// A candidate on its way to the part that confirms it, which signed one of its documents: its
/// documents.
pub(in crate::pipeline) type Routed = (u32, u32);

/// A candidate as a confirmed part holds it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(in crate::pipeline) struct Scored {
    pub a: u32,
    pub b: u32,
    /// Its Jaccard estimate.
    pub score: f64,
    /// Whether it was confirmed.
    pub duplicate: bool,
    /// The cosine of its documents' vectors, in a two-stage run.
    pub cosine: Option<f32>,
}

impl Scored {
    /// Words a candidate takes in [`SCORED`]: its pair ([`Pair::write_to`]: documents,
    /// score, and in a two-stage run its cosine), then whether it was confirmed.
    fn words_each(cosine: bool) -> usize {
        (Pair::bytes(cosine) + 4) / 4
    }

    /// The candidate as a pair of the run.
    fn pair(&self) -> Pair {
        Pair {
            a: self.a,
            b: self.b,
            score: self.score,
            cosine: self.cosine,
        }
    }

    /// Writes the candidate's [`Scored::words_each`] words.
    fn write_to(&self, w: &mut impl Write) -> std::io::Result<()> {
        self.pair().write_to(w, self.cosine.is_some())?;
        w.write_all(&u32::from(self.duplicate).to_le_bytes())
    }

    /// Reads a candidate that [`Scored::write_to`] wrote, with a cosine or without.
    fn read_from(r: &mut impl Read, cosine: bool) -> std::io::Result<Scored> {
        let pair = Pair::read_from(r, cosine)?;
        let mut duplicate = [0u8; 4];
        r.read_exact(&mut duplicate)?;
        Ok(Scored {
            a: pair.a,
            b: pair.b,
            score: pair.score,
            duplicate: u32::from_le_bytes(duplicate) != 0,
            cosine: pair.cosine,
        })
    }
}

/// Merges lists of candidates, each sorted by its documents, handing `each` one run's
/// candidates in order. A MinHash part confirms its own candidates, shared with no other; a
/// two-stage candidate may be found by the parts of both its documents, and is kept once,
/// with its highest cosine, as one run keeps it (the classifier judged it the same way in
/// both, from the same sketches and, where the cosines are equal, the same cosine).
fn merge_sorted<L: Iterator<Item = Result<Scored>>>(
    lists: &mut [L],
    mut each: impl FnMut(Scored),
) -> Result<()> {
    // Each list's next candidate, and the lists ordered by it.
    let mut heads: Vec<Option<Scored>> = vec![None; lists.len()];
    let mut order = BinaryHeap::new();
    for (list, items) in lists.iter_mut().enumerate() {
        if let Some(first) = items.next().transpose()? {
            order.push(Reverse((first.a, first.b, list)));
            heads[list] = Some(first);
        }
    }
    // The last candidate, handed on once the next is another.
    let mut last: Option<Scored> = None;
    while let Some(Reverse((a, b, list))) = order.pop() {
        let next = heads[list].take().expect("a listed head");
        if let Some(after) = lists[list].next().transpose()? {
            order.push(Reverse((after.a, after.b, list)));
            heads[list] = Some(after);
        }
        let Some(held) = last else {
            last = Some(next);
            continue;
        };
        match ((held.a, held.b).cmp(&(a, b)), held.cosine, next.cosine) {
            (Ordering::Less, ..) => each(last.replace(next).expect("held")),
            (Ordering::Equal, Some(kept), Some(found)) => {
                if found > kept {
                    last = Some(next);
                }
            }
            _ => {
                return Err(Error::Usage(format!(
                    "the confirmed parts hold candidate ({a}, {b}) twice or out of order: \
                     confirm the parts again with this version of neardup"
                )));
            }
        }
    }
    if let Some(held) = last {
        each(held);
    }
    Ok(())
}

/// Which stage wrote a folder: the `stage` of its summary's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::pipeline) enum Stage {
    Signed,
    Banded,
    Confirmed,
    /// A two-stage part: signed and embedded (`pipeline::two_stage::staged`).
    Embedded,
    /// A two-stage run's cells, learned once from its embedded parts; no part of its own
    /// (`pipeline::two_stage::by_cell`).
    Cells,
    /// A two-stage part: the documents and titles that probe the cells it owns, searched.
    Searched,
}

impl Stage {
    pub(in crate::pipeline) fn name(self) -> &'static str {
        match self {
            Stage::Signed => "signed",
            Stage::Banded => "banded",
            Stage::Confirmed => "confirmed",
            Stage::Embedded => "embedded",
            Stage::Cells => "cells",
            Stage::Searched => "searched",
        }
    }

    /// The stage that wrote the folder `dir`, if it is a stage's.
    pub(in crate::pipeline) fn of(dir: &Path) -> Option<Stage> {
        let folder = RunFolder::open(dir).ok()?;
        let stage = folder.summary.settings.get("stage")?.as_str()?;
        [
            Stage::Signed,
            Stage::Banded,
            Stage::Confirmed,
            Stage::Embedded,
            Stage::Cells,
            Stage::Searched,
        ]
        .into_iter()
        .find(|s| s.name() == stage)
    }
}

/// A stage's folder and what its summary says: the run it is a part of.
pub(in crate::pipeline) struct StageFolder {
    pub dir: PathBuf,
    pub folder: RunFolder,
    pub stage: Stage,
    pub spec: PipelineSpec,
    /// How its documents are signed and confirmed (a two-stage part's own MinHash settings).
    pub config: MinHashConfig,
    pub part: Part,
}

impl StageFolder {
    fn open(dir: &Path) -> Result<Self> {
        let folder = RunFolder::open(dir)?;
        let settings = &folder.summary.settings;
        let not_a_stage = |problem: String| {
            Error::Usage(format!(
                "{} is not a stage of a split run ({problem}); give the folders that \
                 `neardup dedup --part I/N` or `neardup merge --part J/N` wrote",
                dir.display()
            ))
        };
        let stage = match settings.get("stage").and_then(Value::as_str) {
            Some("signed") => Stage::Signed,
            Some("banded") => Stage::Banded,
            Some("confirmed") => Stage::Confirmed,
            Some("embedded") => Stage::Embedded,
            Some("searched") => Stage::Searched,
            Some("cells") => {
                return Err(not_a_stage(
                    "it holds a two-stage run's cells, which are searched with `neardup merge \
                     CELLS --part J/N` or joined with `neardup merge CELLS --out DIR`, alone"
                        .into(),
                ));
            }
            _ => return Err(not_a_stage("its summary names no stage".into())),
        };
        let spec = super::part::spec_of(settings).map_err(not_a_stage)?;
        let config = match (&spec.method, stage) {
            (Method::MinHash(config), Stage::Signed | Stage::Banded | Stage::Confirmed) => {
                config.clone()
            }
            (Method::TwoStage(config), Stage::Embedded | Stage::Searched | Stage::Confirmed) => {
                MinHashConfig {
                    confirm: config.settings.confirm.clone(),
                    linkage: config.linkage,
                    part: config.part,
                }
            }
            (method, _) => {
                return Err(not_a_stage(format!(
                    "its method, {}, writes no {} stage",
                    method.name().as_str(),
                    stage.name()
                )));
            }
        };
        let part = config
            .part
            .ok_or_else(|| not_a_stage("it names no part".into()))?;
        Ok(StageFolder {
            dir: dir.to_owned(),
            folder,
            stage,
            spec,
            config,
            part,
        })
    }

    /// The settings every part of the run shares: its pipeline without the part, or the
    /// folder each part writes to.
    fn run(&self) -> Value {
        super::part::shared_settings(&self.spec)
    }

    /// Its folder and its summary's settings, which name the model it embedded with, if any.
    fn named(&self) -> (&Path, &Value) {
        (&self.dir, &self.folder.summary.settings)
    }

    /// The folders of the signed parts this folder's stage read (its own, if it is one).
    fn signed(&self) -> Vec<PathBuf> {
        match self.folder.summary.settings["signed"].as_array() {
            Some(dirs) => dirs
                .iter()
                .filter_map(Value::as_str)
                .map(|dir| self.dir.join(dir))
                .collect(),
            None => vec![self.dir.clone()],
        }
    }
}

/// Opens the folders of one stage of one run: every part, each once.
pub(in crate::pipeline) fn open_stage(dirs: &[PathBuf]) -> Result<Vec<StageFolder>> {
    let folders: Vec<StageFolder> = dirs
        .iter()
        .map(|d| StageFolder::open(d))
        .collect::<Result<_>>()?;
    let Some(first) = folders.first() else {
        return Err(Error::Usage("give the folders of every part".into()));
    };
    if let Some(folder) = folders.iter().find(|f| f.stage != first.stage) {
        return Err(Error::Usage(format!(
            "{} was written by the {} stage and {} by the {}: give the folders of one stage",
            first.dir.display(),
            first.stage.name(),
            folder.dir.display(),
            folder.stage.name()
        )));
    }
    super::part::check_complete(folders.iter().map(|f| (f.part, f.dir.as_path(), f.run())))?;
    super::part::common_model(folders.iter().map(StageFolder::named))?;
    Ok(folders)
}

/// The signed parts of a run, in part order, and where each one's documents start in the
/// numbering of the whole run: a part's documents follow those of the parts before it.
pub(in crate::pipeline) struct SignedParts {
    pub folders: Vec<StageFolder>,
    /// The run's number of each part's first document, and after the last, the run's count.
    first: Vec<u32>,
}

impl SignedParts {
    pub fn new(mut folders: Vec<StageFolder>) -> SignedParts {
        folders.sort_by_key(|f| f.part.number);
        let mut first = vec![0u32];
        for folder in &folders {
            first.push(first[first.len() - 1] + folder.folder.summary.documents as u32);
        }
        SignedParts { folders, first }
    }

    /// The documents of the whole run.
    pub fn documents(&self) -> usize {
        self.first[self.folders.len()] as usize
    }

    /// The part that signed document `doc` (an empty part holds none: the one after it,
    /// which starts at the same document, does).
    pub fn signer_of(&self, doc: u32) -> u32 {
        self.first[..self.folders.len()].partition_point(|&f| f <= doc) as u32
    }

    /// The folder of part `number`.
    fn folder(&self, number: u32) -> &StageFolder {
        &self.folders[number as usize - 1]
    }

    /// The model the parts embedded with (two-stage's), which [`open_stage`] found common
    /// to them.
    pub fn model(&self) -> Result<Option<ModelIdentity>> {
        super::part::common_model(self.folders.iter().map(StageFolder::named))
    }

    /// The run's numbers of part `number`'s documents.
    pub fn docs_of(&self, number: u32) -> std::ops::Range<u32> {
        self.first[number as usize - 1]..self.first[number as usize]
    }
}

/// The signed parts the stage in `folders` was made from (embedded parts are signed parts
/// too), checked to be of its run.
fn signed_of(folders: &[StageFolder]) -> Result<SignedParts> {
    if matches!(folders[0].stage, Stage::Signed | Stage::Embedded) {
        let dirs: Vec<PathBuf> = folders.iter().map(|f| f.dir.clone()).collect();
        return Ok(SignedParts::new(open_stage(&dirs)?));
    }
    let dirs = folders[0].signed();
    if let Some(missing) = dirs.iter().find(|d| !d.join(RUN_SUMMARY).is_file()) {
        return Err(Error::Usage(format!(
            "{} names the signed part {}, which is not there: keep the signed folders where \
             they were beside the stages after them (each stage names them relative to itself)",
            folders[0].dir.display(),
            missing.display()
        )));
    }
    let signed = open_stage(&dirs)?;
    let signed_stage = matches!(signed[0].stage, Stage::Signed | Stage::Embedded);
    if !signed_stage || signed[0].run() != folders[0].run() {
        return Err(Error::Usage(format!(
            "{} names signed parts ({}) of another run: keep the signed folders where they \
             were beside the stages after them (each stage names them relative to itself)",
            folders[0].dir.display(),
            signed[0].dir.display()
        )));
    }
    Ok(SignedParts::new(signed))
}

/// A stage's summary: the run's pipeline with this part, the stage that wrote it, and where
/// the signed parts are (`signed`, absent in a signed part's own).
pub(in crate::pipeline) fn stage_summary(
    spec: &PipelineSpec,
    stage: Stage,
    signed: Option<Vec<PathBuf>>,
    documents: usize,
    counts: (usize, usize),
    seconds: StageTimes,
) -> RunSummary {
    let mut settings = serde_json::to_value(spec).expect("settings serialise");
    settings["stage"] = stage.name().into();
    if let Some(signed) = signed {
        settings["signed"] = signed
            .iter()
            .map(|dir| Value::from(dir.to_string_lossy().into_owned()))
            .collect();
    }
    RunSummary {
        run: String::new(),
        files: Default::default(),
        settings,
        score: "jaccard_estimate".into(),
        threshold: spec.method.threshold(),
        documents,
        ids_digest: None,
        records_digest: None,
        skipped: 0,
        skipped_first: Vec::new(),
        candidates: counts.0,
        pairs: counts.1,
        groups: 0,
        documents_in_groups: 0,
        collection_reached: 0,
        unique: 0,
        probes: None,
        cells: None,
        seconds,
        write_seconds: 0.0,
    }
}

/// Where `folders` are, seen from the folder `out`: relative to it where they share a root, so
/// that the stages still find each other when the shared storage is mounted elsewhere on
/// another machine, or the whole tree of folders moves.
pub(in crate::pipeline) fn folders_seen_from(out: &Path, folders: &[StageFolder]) -> Vec<PathBuf> {
    folders.iter().map(|f| seen_from(out, &f.dir)).collect()
}

/// Where the folder `dir` is, seen from the folder `out` (see [`folders_seen_from`]).
pub(in crate::pipeline) fn seen_from(out: &Path, dir: &Path) -> PathBuf {
    let out = out.canonicalize().unwrap_or_else(|_| out.to_owned());
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
    pathdiff::diff_paths(&dir, &out).unwrap_or(dir)
}

/// The spec of `folder`'s run, as part `part`.
pub(in crate::pipeline) fn spec_for(folder: &StageFolder, part: Option<Part>) -> PipelineSpec {
    let mut spec = folder.spec.clone();
    spec.method.set_part(part);
    spec
}

/// A file of 32-bit words a stage wrote, read back checked.
fn read_words(folder: &StageFolder, name: &str) -> Result<Vec<u32>> {
    folder.folder.read_with(name, read_list)
}

/// A file of keys a signed part wrote, read back checked.
fn read_keys(folder: &StageFolder, name: &str) -> Result<Vec<u32>> {
    folder.folder.read_with(name, sign::read_word_blocks)
}

/// The candidates every banded part in `banded` routed to `part`.
pub(in crate::pipeline) fn routed_to(banded: &[StageFolder], part: Part) -> Result<Vec<Routed>> {
    let mut routed = Vec::new();
    for folder in banded {
        let words = read_words(folder, &candidates_file(part))?;
        routed.extend(words.chunks_exact(2).map(|w| (w[0], w[1])));
    }
    Ok(routed)
}

/// Writes the candidates `routed` to each part (entry `I - 1` to part `I`) into their files
/// in the folder `run` writes; returns how many.
pub(in crate::pipeline) fn write_routed(
    run: &mut RunWriter,
    routed: Vec<Vec<Routed>>,
) -> Result<usize> {
    let count = routed.iter().map(Vec::len).sum();
    let parts = routed.len() as u32;
    for (number, routed) in (1..=parts).zip(routed) {
        let words: Vec<u32> = routed.iter().flat_map(|&(a, b)| [a, b]).collect();
        let to = Part {
            number,
            count: parts,
        };
        write_words(run, &candidates_file(to), &words)?;
    }
    Ok(count)
}

/// Writes a confirmed part's candidates, `judged`, into the folder `run` writes, in order;
/// returns how many there are, and how many were confirmed.
pub(in crate::pipeline) fn write_scored(
    run: &mut RunWriter,
    judged: Judged,
) -> Result<(usize, usize)> {
    let (count, confirmed) = (judged.count(), judged.confirmed());
    let mut file = run.create(SCORED)?;
    let words = count * Scored::words_each(judged.with_cosines());
    write_count(&mut file, words).map_err(|e| Error::io(file.target(), e))?;
    let mut failed = None;
    judged.each(|candidate| {
        if failed.is_none() {
            failed = candidate.write_to(&mut file).err();
        }
    })?;
    if let Some(e) = failed {
        return Err(Error::io(file.target(), e));
    }
    run.commit(file)?;
    Ok((count, confirmed))
}

/// Writes `words` to the file `name` of `run`.
fn write_words(run: &mut RunWriter, name: &str, words: &[u32]) -> Result<()> {
    run.write_with(name, |file| write_list(file, words))
}

/// `neardup merge FOLDERS --part P`: the stage after the one that wrote `dirs`, for part
/// `part`, into the folder `lock` holds.
pub fn advance(dirs: &[PathBuf], part: Part, lock: FolderLock) -> Result<RunSummary> {
    let folders = open_stage(dirs)?;
    let first = &folders[0];
    if part.count != first.part.count {
        return Err(Error::Usage(format!(
            "--part {part}: the run was signed in {} parts, and each stage has as many",
            first.part.count
        )));
    }
    let signed = signed_of(&folders)?;
    let clock = Instant::now();
    let signed_from_here = folders_seen_from(lock.dir(), &signed.folders);
    let mut run = RunWriter::begin(lock)?;
    let (stage, counts) = match first.stage {
        Stage::Signed => {
            let count = write_routed(&mut run, band(&signed, part)?)?;
            (Stage::Banded, (count, 0))
        }
        Stage::Banded => {
            let routed = routed_to(&folders, part)?;
            let judged = confirm(&signed, part, routed, &first.config)?;
            (Stage::Confirmed, write_scored(&mut run, judged)?)
        }
        Stage::Confirmed => {
            return Err(Error::Usage(
                "these parts are confirmed: join them with `neardup merge CONFIRMED_FOLDERS... \
                 --out DIR`, without --part"
                    .into(),
            ));
        }
        Stage::Embedded => {
            return Err(Error::Usage(
                "these two-stage parts are embedded: learn their cells once with `neardup merge \
                 EMBEDDED_FOLDERS... --learn-cells --out CELLS`, then search them with \
                 `neardup merge CELLS --part J/N`; or search them in one process with \
                 `neardup merge EMBEDDED_FOLDERS... --out DIR`, without --part"
                    .into(),
            ));
        }
        Stage::Searched | Stage::Cells => {
            unreachable!("two-stage's searched parts and cells go on in `two_stage`")
        }
    };
    let seconds = StageTimes {
        candidates: clock.elapsed().as_secs_f64(),
        ..StageTimes::default()
    };
    let summary = stage_summary(
        &spec_for(first, Some(part)),
        stage,
        Some(signed_from_here),
        signed.documents(),
        counts,
        seconds,
    );
    run.finish(summary)
}
