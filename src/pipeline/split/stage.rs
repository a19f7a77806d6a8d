//! A split run's stages and their folders: which stage wrote a folder, the run it is a part
//! of, the signed parts every later stage numbers documents by, and a stage's summary.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::part::{Part, check_complete, shared_settings, spec_of};
use crate::embed::ModelIdentity;
use crate::error::{Error, Result};
use crate::io::SkipReport;
use crate::output::run::{RunFolder, RunSummary, SUMMARY as RUN_SUMMARY, StageTimes};
use crate::pipeline::provenance::common_model;
use crate::pipeline::{Method, MinHashConfig, PipelineSpec};

/// What a part of the first stage wrote (signed, or signed and embedded, its share of the
/// input).
pub struct PartWritten {
    /// The folder's summary: `documents` is how many of the input's the part took.
    pub summary: RunSummary,
    /// What `--skip-invalid` skipped.
    pub skipped: SkipReport,
}

/// Which stage wrote a folder: the `stage` of its summary's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::pipeline) enum Stage {
    Signed,
    Banded,
    Confirmed,
    /// A two-stage part: signed and embedded (`split::two_stage::staged`).
    Embedded,
    /// A two-stage run's cells, learned once from its embedded parts; no part of its own
    /// (`split::two_stage::by_cell`).
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
    pub(in crate::pipeline) fn open(dir: &Path) -> Result<Self> {
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
        let spec = spec_of(settings).map_err(not_a_stage)?;
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
    pub(in crate::pipeline) fn run(&self) -> Value {
        shared_settings(&self.spec)
    }

    /// Its folder and its summary's settings, which name the model it embedded with, if any.
    pub(in crate::pipeline) fn named(&self) -> (&Path, &Value) {
        (&self.dir, &self.folder.summary.settings)
    }

    /// The folders of the signed parts this folder's stage read (its own, if it is one).
    pub(in crate::pipeline) fn signed(&self) -> Vec<PathBuf> {
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
    check_complete(folders.iter().map(|f| (f.part, f.dir.as_path(), f.run())))?;
    common_model(folders.iter().map(StageFolder::named))?;
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
    pub(in crate::pipeline) fn folder(&self, number: u32) -> &StageFolder {
        &self.folders[number as usize - 1]
    }

    /// The model the parts embedded with (two-stage's), which [`open_stage`] found common
    /// to them.
    pub fn model(&self) -> Result<Option<ModelIdentity>> {
        common_model(self.folders.iter().map(StageFolder::named))
    }

    /// The run's numbers of part `number`'s documents.
    pub fn docs_of(&self, number: u32) -> std::ops::Range<u32> {
        self.first[number as usize - 1]..self.first[number as usize]
    }
}

/// The signed parts the stage in `folders` was made from (embedded parts are signed parts
/// too), checked to be of its run.
pub(in crate::pipeline) fn signed_of(folders: &[StageFolder]) -> Result<SignedParts> {
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
