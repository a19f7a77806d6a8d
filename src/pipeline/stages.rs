//! MinHash in stages that split over machines: sign, band and confirm, join.
//!
//! One MinHash run holds every signature at once (512 bytes a document: 51 GB at a hundred
//! million). Split into `N` parts, no stage holds more than its share:
//!
//! 1. **sign** (`neardup dedup --method minhash --part I/N --out signed-I/`): reads the
//!    corpus, signs the documents whose id hashes to part `I` ([`Part::holds_id`]), and writes
//!    their sketches, and each of their band keys (and, under the evidence rule, title keys)
//!    into the file of the part that owns the key: `keys-J.bin` for the `J` a hash of the key
//!    names. Every document of one bucket is so in one file of every signed part.
//! 2. **band and confirm** (`neardup merge signed-*/ --part J/N --out confirmed-J/`): reads
//!    the keys routed to `J` from every signed part; documents that share a key are candidates,
//!    exactly as one run proposes them; reads the sketches of those documents only, judges
//!    each candidate, and writes every candidate with its score and verdict.
//! 3. **join** (`neardup merge confirmed-*/ --out out/`): the candidates of every part, each
//!    once; groups by the confirmed pairs; the run's files, byte for byte those of one run
//!    (`summary.json` aside from its timings and run id).
//!
//! `neardup merge signed-*/ --out out/` runs stage 2 for each part in turn, then stage 3: one
//! machine, with the memory of one part's keys and sketches at a time. Stage folders are run
//! folders ([`RunWriter`]): their files are written atomically and read back checked against
//! the summary, whose settings say which stage wrote them.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde_json::Value;

use super::{Found, InputSpec, Method, MinHashConfig, OutputSpec, Part, PipelineSpec, ScoredPairs};
use crate::confirm::{Confirm, Confirmer, SketchFacts, title_block_pairs, title_key};
use crate::error::{Error, Result};
use crate::io::{Input, ReadOptions, SkipReport, read_corpus, read_list, write_list};
use crate::output::run::{RunFolder, RunSummary, RunWriter, StageTimes};
use crate::sketch::{Signatures, band_keys, bucket_pairs};

/// The sketches of a signed part's documents.
const SKETCHES: &str = "sketches.bin";
/// A confirmed part's candidates, scored.
const SCORED: &str = "scored.bin";
/// The band number that marks a title key among the band keys.
const TITLE_BAND: u32 = u32::MAX;

/// The file of keys a signed part routes to `part`.
fn keys_file(part: Part) -> String {
    format!("keys-{}.bin", part.number)
}

/// Which stage wrote a folder: the `stage` of its summary's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Signed,
    Confirmed,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Signed => "signed",
            Stage::Confirmed => "confirmed",
        }
    }
}

/// What a stage folder's summary says: the run it is a part of.
struct StageFolder {
    dir: PathBuf,
    folder: RunFolder,
    stage: Stage,
    spec: PipelineSpec,
    config: MinHashConfig,
    part: Part,
}

impl StageFolder {
    fn open(dir: &Path) -> Result<Self> {
        let folder = RunFolder::open(dir)?;
        let settings = &folder.summary.settings;
        let not_a_stage = |problem: String| {
            Error::Usage(format!(
                "{} is not a stage of a split MinHash run ({problem}); give the folders that \
                 `neardup dedup --method minhash --part I/N` or `neardup merge --part J/N` wrote",
                dir.display()
            ))
        };
        let stage = match settings.get("stage").and_then(Value::as_str) {
            Some("signed") => Stage::Signed,
            Some("confirmed") => Stage::Confirmed,
            _ => return Err(not_a_stage("its summary names no stage".into())),
        };
        let spec = spec_of(settings).map_err(not_a_stage)?;
        let Method::MinHash(config) = spec.method.clone() else {
            return Err(not_a_stage("its method is not minhash".into()));
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

    /// The settings every part of the run shares: its pipeline without the part.
    fn run(&self) -> Value {
        let mut config = self.config.clone();
        config.part = None;
        serde_json::json!([self.spec.input, config])
    }
}

/// The pipeline a stage folder's settings hold.
fn spec_of(settings: &Value) -> std::result::Result<PipelineSpec, String> {
    let input: InputSpec =
        serde_json::from_value(settings["input"].clone()).map_err(|e| format!("its input: {e}"))?;
    let output: OutputSpec = serde_json::from_value(settings["output"].clone())
        .map_err(|e| format!("its output: {e}"))?;
    let method: Method = serde_json::from_value(settings["method"].clone())
        .map_err(|e| format!("its method: {e}"))?;
    Ok(PipelineSpec {
        input,
        method,
        output,
        eval: None,
    })
}

/// Checks that `folders` are every part of one run, each once, all written by `stage`.
fn check_complete(folders: &[StageFolder], stage: Stage) -> Result<()> {
    let first = &folders[0];
    if let Some(folder) = folders.iter().find(|f| f.stage != stage) {
        return Err(Error::Usage(format!(
            "{} was written by the {} stage and {} by the {}: give the folders of one stage",
            first.dir.display(),
            first.stage.name(),
            folder.dir.display(),
            folder.stage.name()
        )));
    }
    super::part::check_complete(folders.iter().map(|f| (f.part, f.dir.as_path(), f.run())))
}

/// A stage's summary: the run's pipeline with this part, and the stage that wrote it.
fn stage_summary(
    spec: &PipelineSpec,
    stage: Stage,
    documents: usize,
    candidates: usize,
    pairs: usize,
    seconds: StageTimes,
) -> RunSummary {
    let mut settings = serde_json::to_value(spec).expect("settings serialise");
    settings["stage"] = stage.name().into();
    RunSummary {
        run: String::new(),
        files: Default::default(),
        settings,
        score: "jaccard_estimate".into(),
        threshold: spec.method.threshold(),
        documents,
        ids_digest: None,
        skipped: 0,
        skipped_first: Vec::new(),
        candidates,
        pairs,
        groups: 0,
        documents_in_groups: 0,
        unique: 0,
        probes: None,
        cells: None,
        seconds,
        write_seconds: 0.0,
    }
}

/// What a signed part wrote.
pub struct Signed {
    /// The folder's summary.
    pub summary: RunSummary,
    /// The documents this part signed, of the `summary.documents` read.
    pub signed: usize,
    /// What `--skip-invalid` skipped.
    pub skipped: SkipReport,
}

/// Stage 1: signs the documents of the part `spec`'s MinHash settings name, and writes their
/// sketches and their keys, routed to the parts that own them, into the folder `lock` holds.
pub fn sign_part(spec: &PipelineSpec, lock: crate::io::FolderLock) -> Result<Signed> {
    let Method::MinHash(config) = &spec.method else {
        unreachable!("only MinHash signs in stages")
    };
    let part = config.part.expect("a part to sign");
    let inputs = spec.input.inputs()?;
    let read = spec.input.read_options();
    let confirmer = Confirmer::new(&config.confirm, -1.0)?;
    let banding = confirmer.banding();
    let titles = config.confirm.rule.confirm == Confirm::Evidence;
    let clock = Instant::now();
    let mut docs = Vec::new();
    let mut signatures = Signatures::new(confirmer.num_perm());
    let mut sketches = SketchFacts::default();
    // Per part it is routed to: band, key (two words) and document, four words a key.
    let mut keys: Vec<Vec<u32>> = vec![Vec::new(); part.count as usize];
    let mut doc = 0u32;
    let corpus = read_corpus(
        &inputs,
        &read,
        |record| part.holds_id(&record.id).then(|| confirmer.sign(record)),
        |sketch| {
            if let Some(sketch) = sketch {
                let mut route = |band: u32, key: u64| {
                    let to =
                        part.index_of(key ^ u64::from(band).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    keys[to].extend([band, key as u32, (key >> 32) as u32, doc]);
                };
                if sketch.shingles > 0 {
                    for (band, key) in band_keys(&sketch.signature, banding).enumerate() {
                        route(band as u32, key);
                    }
                }
                if titles && let Some(key) = title_key(&sketch.facts) {
                    route(TITLE_BAND, key);
                }
                docs.push(doc);
                signatures.push(&sketch.signature, sketch.shingles == 0);
                sketches.push(sketch.shingles, sketch.facts);
            }
            doc += 1;
        },
    )?;
    let mut run = RunWriter::begin(lock)?;
    let mut file = run.create(SKETCHES)?;
    let target = file.target().to_owned();
    (|| {
        write_list(&mut file, &docs)?;
        signatures.write_to(&mut file)?;
        sketches.write_to(&mut file)
    })()
    .map_err(|e| Error::io(&target, e))?;
    run.commit(file)?;
    for (to, keys) in part.all().zip(&keys) {
        let mut file = run.create(&keys_file(to))?;
        write_list(&mut file, keys).map_err(|e| Error::io(file.target(), e))?;
        run.commit(file)?;
    }
    let times = StageTimes {
        sketch: clock.elapsed().as_secs_f64(),
        ..StageTimes::default()
    };
    tracing::info!(part = %part, signed = docs.len(), documents = corpus.ids.len(), "signed");
    let summary = stage_summary(spec, Stage::Signed, corpus.ids.len(), 0, 0, times);
    Ok(Signed {
        summary: run.finish(summary)?,
        signed: docs.len(),
        skipped: corpus.skipped,
    })
}

/// A candidate as a confirmed part holds it: its documents, its Jaccard estimate, and whether
/// it was confirmed.
type Scored = (u32, u32, f64, bool);

/// The sketches of some documents, gathered from the signed parts that hold them.
struct Gathered {
    /// The documents, sorted: a document's place here is its row below.
    docs: Vec<u32>,
    signatures: Signatures,
    sketches: SketchFacts,
}

impl Gathered {
    /// Reads the sketches of `wanted` (sorted, without repeats) from the signed parts.
    fn read(signed: &[StageFolder], wanted: Vec<u32>, num_perm: usize) -> Result<Self> {
        let mut found = Vec::new();
        for part in signed {
            let bytes = part.folder.read_bytes(SKETCHES)?;
            let path = part.dir.join(SKETCHES);
            let mut r = bytes.as_slice();
            let (docs, signatures, sketches) = (|| {
                Ok::<_, std::io::Error>((
                    read_list(&mut r)?,
                    Signatures::read_from(&mut r)?,
                    SketchFacts::read_from(&mut r)?,
                ))
            })()
            .map_err(|e| Error::io(&path, e))?;
            for (row, doc) in docs.iter().enumerate() {
                if let Ok(place) = wanted.binary_search(doc) {
                    let facts = sketches.facts(row).clone();
                    found.push((
                        place,
                        signatures.row(row).to_vec(),
                        signatures.is_empty_doc(row),
                        sketches.shingles(row),
                        facts,
                    ));
                }
            }
        }
        if found.len() != wanted.len() {
            return Err(Error::Usage(format!(
                "the signed parts hold {} of the {} documents their keys name: give the signed \
                 folders of one run, each as it was written",
                found.len(),
                wanted.len()
            )));
        }
        found.sort_unstable_by_key(|f| f.0);
        let mut signatures = Signatures::new(num_perm);
        let mut sketches = SketchFacts::default();
        for (_, row, empty, shingles, facts) in found {
            signatures.push(&row, empty);
            sketches.push(shingles, facts);
        }
        Ok(Gathered {
            docs: wanted,
            signatures,
            sketches,
        })
    }

    /// The row of document `doc`.
    fn row(&self, doc: u32) -> u32 {
        self.docs.binary_search(&doc).expect("a gathered document") as u32
    }
}

/// Stage 2 for `part`: the candidates the keys routed to it propose, judged.
fn band_and_confirm(
    signed: &[StageFolder],
    part: Part,
    config: &MinHashConfig,
) -> Result<Vec<Scored>> {
    let mut keys: Vec<(u32, u64, u32)> = Vec::new();
    for folder in signed {
        let bytes = folder.folder.read_bytes(&keys_file(part))?;
        let words = read_list(&mut bytes.as_slice())
            .map_err(|e| Error::io(&folder.dir.join(keys_file(part)), e))?;
        keys.extend(
            words
                .chunks_exact(4)
                .map(|w| (w[0], u64::from(w[1]) | (u64::from(w[2]) << 32), w[3])),
        );
    }
    keys.par_sort_unstable();
    let mut candidates = Vec::new();
    for bucket in keys.chunk_by(|x, y| (x.0, x.1) == (y.0, y.1)) {
        let doc = |&(_, _, doc): &(u32, u64, u32)| doc;
        match bucket[0].0 {
            TITLE_BAND => title_block_pairs(bucket, doc, &mut candidates),
            _ => bucket_pairs(bucket, doc, &mut candidates),
        }
    }
    drop(keys);
    candidates.par_sort_unstable();
    candidates.dedup();
    let mut wanted: Vec<u32> = candidates.iter().flat_map(|&(a, b)| [a, b]).collect();
    wanted.par_sort_unstable();
    wanted.dedup();
    let confirmer = Confirmer::new(&config.confirm, -1.0)?;
    let gathered = Gathered::read(signed, wanted, confirmer.num_perm())?;
    let rows: Vec<(u32, u32)> = candidates
        .par_iter()
        .map(|&(a, b)| (gathered.row(a), gathered.row(b)))
        .collect();
    let (scores, duplicate) =
        confirmer.judge_all(&gathered.signatures, &gathered.sketches, rows.len(), |i| {
            let (a, b) = rows[i];
            (a, b, None)
        });
    tracing::info!(part = %part, candidates = candidates.len(), "banded and confirmed");
    Ok(candidates
        .into_iter()
        .zip(scores.into_iter().zip(duplicate))
        .map(|((a, b), (score, duplicate))| (a, b, score, duplicate))
        .collect())
}

/// Opens the folders of one stage of one run, checked complete.
fn open_stage(dirs: &[PathBuf]) -> Result<Vec<StageFolder>> {
    let folders: Vec<StageFolder> = dirs
        .iter()
        .map(|d| StageFolder::open(d))
        .collect::<Result<_>>()?;
    let Some(first) = folders.first() else {
        return Err(Error::Usage("give the folders of every part".into()));
    };
    check_complete(&folders, first.stage)?;
    Ok(folders)
}

/// Whether `dir` holds a stage of a split MinHash run (else, a part of a two-stage run).
pub fn is_stage(dir: &Path) -> bool {
    RunFolder::open(dir).is_ok_and(|f| f.summary.settings.get("stage").is_some())
}

/// Stage 2 (`neardup merge SIGNED... --part J/N`): bands and confirms part `part` of the run
/// whose signed parts are `dirs`, into the folder `lock` holds.
pub fn confirm_part(
    dirs: &[PathBuf],
    part: Part,
    lock: crate::io::FolderLock,
) -> Result<RunSummary> {
    let signed = open_stage(dirs)?;
    if signed[0].stage != Stage::Signed {
        return Err(Error::Usage(
            "--part bands and confirms signed parts: give the folders `neardup dedup --method \
             minhash --part I/N` wrote"
                .into(),
        ));
    }
    if part.count != signed[0].part.count {
        return Err(Error::Usage(format!(
            "--part {part}: the run was signed in {} parts, and is confirmed in as many",
            signed[0].part.count
        )));
    }
    let clock = Instant::now();
    let scored = band_and_confirm(&signed, part, &signed[0].config)?;
    let mut run = RunWriter::begin(lock)?;
    let mut file = run.create(SCORED)?;
    let words: Vec<u32> = scored
        .iter()
        .flat_map(|&(a, b, score, duplicate)| {
            let bits = score.to_bits();
            [a, b, bits as u32, (bits >> 32) as u32, u32::from(duplicate)]
        })
        .collect();
    write_list(&mut file, &words).map_err(|e| Error::io(file.target(), e))?;
    run.commit(file)?;
    let mut spec = signed[0].spec.clone();
    let Method::MinHash(config) = &mut spec.method else {
        unreachable!("signed parts are MinHash's")
    };
    config.part = Some(part);
    let mut summary = stage_summary(
        &spec,
        Stage::Confirmed,
        signed[0].folder.summary.documents,
        scored.len(),
        scored.iter().filter(|s| s.3).count(),
        StageTimes {
            confirm: clock.elapsed().as_secs_f64(),
            ..StageTimes::default()
        },
    );
    summary.settings["signed"] = dirs
        .iter()
        .map(|d| {
            Value::from(
                d.canonicalize()
                    .unwrap_or_else(|_| d.clone())
                    .to_string_lossy()
                    .into_owned(),
            )
        })
        .collect();
    run.finish(summary)
}

/// Stage 3, and stage 2 first where `dirs` are signed parts: what the whole run found, with
/// its pipeline (writing to `out`), inputs and read options.
pub(super) fn join(
    dirs: &[PathBuf],
    out: &Path,
) -> Result<(PipelineSpec, Vec<Input>, ReadOptions, Found)> {
    let folders = open_stage(dirs)?;
    let mut times = StageTimes::default();
    let clock = Instant::now();
    let (signed, mut scored) = match folders[0].stage {
        Stage::Signed => {
            let mut scored = Vec::new();
            for part in folders[0].part.all() {
                scored.extend(band_and_confirm(&folders, part, &folders[0].config)?);
            }
            (folders, scored)
        }
        Stage::Confirmed => {
            let signed_dirs: Vec<PathBuf> =
                match folders[0].folder.summary.settings["signed"].as_array() {
                    Some(dirs) => dirs
                        .iter()
                        .filter_map(Value::as_str)
                        .map(PathBuf::from)
                        .collect(),
                    None => Vec::new(),
                };
            let mut scored = Vec::new();
            for folder in &folders {
                let bytes = folder.folder.read_bytes(SCORED)?;
                let words = read_list(&mut bytes.as_slice())
                    .map_err(|e| Error::io(&folder.dir.join(SCORED), e))?;
                scored.extend(words.chunks_exact(5).map(|w| {
                    (
                        w[0],
                        w[1],
                        f64::from_bits(u64::from(w[2]) | (u64::from(w[3]) << 32)),
                        w[4] != 0,
                    )
                }));
            }
            (open_stage(&signed_dirs)?, scored)
        }
    };
    times.confirm = clock.elapsed().as_secs_f64();
    // A pair two parts both proposed (two bands in two parts) is judged alike by both.
    scored.par_sort_unstable_by_key(|s| (s.0, s.1));
    scored.dedup_by_key(|s| (s.0, s.1));
    let candidates: Vec<(u32, u32)> = scored.iter().map(|s| (s.0, s.1)).collect();
    let duplicate: Vec<bool> = scored.iter().map(|s| s.3).collect();
    let scored = ScoredPairs::without_cosines(&candidates, scored.iter().map(|s| s.2).collect());
    let pairs = scored.selected(&duplicate);

    let mut spec = signed[0].spec.clone();
    let Method::MinHash(config) = &mut spec.method else {
        unreachable!("stage folders are MinHash's")
    };
    config.part = None;
    spec.output.dir = out.to_owned();
    let inputs = spec.input.inputs()?;
    let read = spec.input.read_options();
    let clock = Instant::now();
    let corpus = read_corpus(&inputs, &read, |_| (), |()| {})?;
    times.sketch = clock.elapsed().as_secs_f64();
    if corpus.ids.len() != signed[0].folder.summary.documents {
        return Err(Error::Usage(format!(
            "the parts read {} documents, and the input now has {}: join the parts with the \
             input they ran on",
            signed[0].folder.summary.documents,
            corpus.ids.len()
        )));
    }
    let mut grouped: Vec<u32> = pairs.iter().flat_map(|p| [p.a, p.b]).collect();
    grouped.par_sort_unstable();
    grouped.dedup();
    let gathered = Gathered::read(&signed, grouped, config.confirm.minhash.num_perm)?;
    tracing::info!(
        parts = signed.len(),
        candidates = candidates.len(),
        pairs = pairs.len(),
        "parts joined"
    );
    let found = Found {
        corpus,
        candidates: candidates.len(),
        scored_candidates: Some(scored),
        pairs,
        similarity: Box::new(move |x, y| {
            gathered
                .signatures
                .similarity(gathered.row(x) as usize, gathered.row(y) as usize)
        }),
        probes: None,
        cells: None,
        times,
    };
    Ok((spec, inputs, read, found))
}
