//! Split runs: one two-stage job spread over machines (a Kubernetes Job, a Slurm array).
//!
//! `neardup index` puts every document's vector into one shared index (a Qdrant cluster, or an
//! index folder that each worker can read). Each worker then runs `neardup dedup --part I/N`:
//! it reads and signs the whole input (cheap), but embeds and searches only its slice, and
//! writes that slice's candidates with their cosines. `neardup merge` reads the parts, keeps
//! each candidate once with its highest cosine, confirms it, groups and writes the usual
//! outputs: the same files, byte for byte, as one run over the same index.
//!
//! Which documents a part takes is [`Part`]'s to say.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::part::{Part, check_complete, shared_settings, spec_of};
use super::stage::Stage;
use crate::error::{Error, Location, Result};
use crate::io::FolderLock;
use crate::output::run::{
    Candidates, RecordFile, RecordsDigest, RunFolder, RunSummary, StageTimes,
};
use crate::pipeline::dedup::{Found, group};
use crate::pipeline::provenance::common_model;
use crate::pipeline::two_stage::{confirm_candidates, distinct_pairs};
use crate::pipeline::{
    Dedup, InputSpec, Method, OutputSpec, PipelineSpec, Run, ScoredCandidates, TwoStageConfig,
};

/// A split run's parts merged into the run they make together.
pub struct Merged {
    /// The whole run: the parts' own pipeline, without `part`, writing to the merge's output
    /// folder.
    pub run: Run,
    /// Pairs and groups, ready to be written.
    pub dedup: Dedup,
}

/// One part's folder and what it says it is.
struct PartFolder {
    dir: PathBuf,
    folder: RunFolder,
    input: InputSpec,
    output: OutputSpec,
    config: TwoStageConfig,
    part: Part,
}

impl PartFolder {
    fn open(dir: &Path) -> Result<Self> {
        let folder = RunFolder::open(dir)?;
        let not_a_part = |problem: String| {
            Error::Usage(format!(
                "{} is not the output of `neardup dedup --part I/N` ({problem}); give the folders \
                 the parts wrote",
                dir.display()
            ))
        };
        let PipelineSpec {
            input,
            method,
            output,
            ..
        } = spec_of(&folder.summary.settings).map_err(not_a_part)?;
        let Method::TwoStage(config) = method else {
            return Err(not_a_part(format!(
                "its method is {}",
                method.name().as_str()
            )));
        };
        let part = config
            .part
            .ok_or_else(|| not_a_part("it is a whole run".into()))?;
        Ok(PartFolder {
            dir: dir.to_owned(),
            folder,
            input,
            output,
            config: *config,
            part,
        })
    }

    /// The run's pipeline without the part, for comparing parts.
    fn whole(&self) -> serde_json::Value {
        shared_settings(&PipelineSpec {
            input: self.input.clone(),
            method: Method::TwoStage(Box::new(self.config.clone())),
            output: self.output.clone(),
            eval: None,
        })
    }
}

/// Refuses `out` where it is a folder that a merge of `dirs` reads: one of `dirs`, or a folder
/// of an earlier stage that their summaries name (the signed or embedded parts, the cells).
/// Written there, the run would replace a part that this merge, or a later one, still needs.
pub fn check_out(dirs: &[PathBuf], out: &Path) -> Result<()> {
    // A folder not there yet is none of them.
    let Ok(out_real) = out.canonicalize() else {
        return Ok(());
    };
    let mut seen = std::collections::HashSet::new();
    let mut read: Vec<PathBuf> = dirs.to_vec();
    while let Some(dir) = read.pop() {
        let Ok(real) = dir.canonicalize() else {
            continue;
        };
        if real == out_real {
            return Err(Error::Usage(format!(
                "--out {} is {}, a folder this merge reads (a part given, or an earlier \
                 stage's folder that one names): give the merged run a folder of its own",
                out.display(),
                dir.display()
            )));
        }
        if !seen.insert(real) {
            continue;
        }
        if let Ok(folder) = RunFolder::open(&dir) {
            let settings = &folder.summary.settings;
            let signed = settings["signed"].as_array().into_iter().flatten();
            let named = signed
                .chain(settings.get("cells"))
                .filter_map(|v| v.as_str());
            read.extend(named.map(|name| dir.join(name)));
        }
    }
    Ok(())
}

/// `neardup merge FOLDERS --part P`: the stage after the one that wrote `dirs`, for part
/// `part`, into the folder `lock` holds: a two-stage run's search of the cells that `part`
/// owns, or a MinHash run's next stage.
pub fn advance(dirs: &[PathBuf], part: Part, lock: FolderLock) -> Result<RunSummary> {
    match dirs.first().and_then(|dir| Stage::of(dir)) {
        Some(Stage::Cells) => super::two_stage::search_cells_part(dirs, part, lock),
        Some(Stage::Searched) => super::two_stage::confirm_searched_part(dirs, part, lock),
        _ => super::minhash::advance(dirs, part, lock),
    }
}

/// `neardup merge EMBEDDED_FOLDERS --learn-cells`: the cells of a two-stage run in stages,
/// learned once from its embedded parts, into the folder `lock` holds.
pub fn learn_cells(dirs: &[PathBuf], lock: FolderLock) -> Result<RunSummary> {
    super::two_stage::learn_cells_once(dirs, lock)
}

/// Reads the parts in `dirs`, checks that they are every part of one run, and merges them:
/// the candidates each part found, once each with its highest cosine, confirmed against the
/// input (read and signed again), grouped. `out` is recorded as the run's output folder, and
/// `models` as where the run's models are.
///
/// The stages of a split MinHash run are joined instead (`split::minhash`), and so are
/// the embedded parts of a two-stage run in stages (`split::two_stage`).
pub fn merge(dirs: &[PathBuf], out: &Path, models: &Path) -> Result<Merged> {
    // A stage of a split run; else, parts of a two-stage run over a shared index.
    if let Some(stage) = dirs.first().and_then(|dir| Stage::of(dir)) {
        let (spec, inputs, read, found) = match stage {
            Stage::Embedded => super::two_stage::join_embedded(dirs, out)?,
            Stage::Cells => super::two_stage::join_cells(dirs, out)?,
            Stage::Searched => super::two_stage::join_searched(dirs, out)?,
            Stage::Signed | Stage::Banded | Stage::Confirmed => super::minhash::join(dirs, out)?,
        };
        let dedup = group(found, &spec.method, false);
        return Ok(Merged {
            run: Run::of_inputs(spec, inputs, read, models),
            dedup,
        });
    }
    let parts: Vec<PartFolder> = dirs
        .iter()
        .map(|d| PartFolder::open(d))
        .collect::<Result<_>>()?;
    let Some(first) = parts.first() else {
        return Err(Error::Usage("give the folders of every part".into()));
    };
    check_complete(parts.iter().map(|p| (p.part, p.dir.as_path(), p.whole())))?;
    let input = first.input.clone();
    // The parts' format and keep policy; the merge writes into its own folder.
    let output = OutputSpec {
        dir: out.to_owned(),
        ..first.output.clone()
    };
    let config = TwoStageConfig {
        part: None,
        ..first.config.clone()
    };
    let inputs = input.inputs()?;
    let read = input.read_options();
    let mut times = StageTimes::default();

    let clock = Instant::now();
    let confirmer = config.settings.confirmer()?;
    let (corpus, signatures, sketches) =
        crate::pipeline::minhash::sketch(&inputs, &read, &confirmer)?;
    times.sketch = clock.elapsed().as_secs_f64();

    let clock = Instant::now();
    let doc_of: HashMap<&str, u32> = corpus
        .ids
        .iter()
        .enumerate()
        .map(|(doc, id)| (id.as_str(), doc as u32))
        .collect();
    let mut candidates = Vec::new();
    let records = RecordsDigest::of(&corpus.fingerprints);
    for part in &parts {
        if part.folder.summary.documents != corpus.ids.len() {
            return Err(Error::Usage(format!(
                "part {} ({}) read {} documents, and the input now has {}: merge the parts with \
                 the input they ran on",
                part.part,
                part.dir.display(),
                part.folder.summary.documents,
                corpus.ids.len()
            )));
        }
        if part.folder.summary.records_digest != Some(records) {
            return Err(Error::Usage(format!(
                "part {} ({}) read other records than the input now holds (some edited since, \
                 or the part made by a neardup that recorded no digest of them): run the part \
                 again on this input, or merge with the input the parts ran on",
                part.part,
                part.dir.display()
            )));
        }
        let file = part
            .dir
            .join(part.folder.candidates_file().unwrap_or(Candidates::NAME));
        let bad = |field: &'static str, problem: String| {
            Error::input(
                Location::file(&file),
                Some(field),
                problem,
                "merge the parts with the input they ran on",
            )
        };
        part.folder.each_scored_pair(|record| {
            let doc = |id: &str, field| {
                doc_of
                    .get(id)
                    .copied()
                    .ok_or_else(|| bad(field, format!("no document {id:?} in the input")))
            };
            let (a, b) = (doc(&record.a, "id_a")?, doc(&record.b, "id_b")?);
            let cosine = record
                .scores
                .get("cosine")
                .ok_or_else(|| bad("cosine", "missing".into()))?;
            candidates.push((a.min(b), a.max(b), *cosine as f32));
            Ok(())
        })?;
    }
    let candidates = distinct_pairs(candidates);
    let count = candidates.len();
    times.search = clock.elapsed().as_secs_f64();

    let clock = Instant::now();
    let confirmed = confirm_candidates(&confirmer, &signatures, &sketches, candidates);
    times.confirm = clock.elapsed().as_secs_f64();
    tracing::info!(
        parts = parts.len(),
        candidates = count,
        pairs = confirmed.pairs.len(),
        "parts merged"
    );

    let method = Method::TwoStage(Box::new(config));
    let found = Found {
        corpus,
        candidates: count,
        scored_candidates: Some(ScoredCandidates::Held(Arc::new(confirmed.scored))),
        pairs: confirmed.pairs,
        similarity: Arc::new(move |x, y| signatures.similarity(x as usize, y as usize)),
        probes: None,
        cells: None,
        collection: 0,
        model: common_model(
            parts
                .iter()
                .map(|p| (p.dir.as_path(), &p.folder.summary.settings)),
        )?,
        times,
    };
    let dedup = group(found, &method, false);
    let spec = PipelineSpec {
        input,
        method,
        output,
        eval: None,
    };
    Ok(Merged {
        run: Run::of_inputs(spec, inputs, read, models),
        dedup,
    })
}
