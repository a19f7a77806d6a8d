//! Stage 1, sign: a part's share of the documents signed, and their keys routed.

use std::time::Instant;

use super::{SKETCHES, Stage, TITLE_BAND, keys_file, stage_summary};
use crate::confirm::{Confirm, Confirmer, SketchFacts, title_key};
use crate::error::{Error, Result};
use crate::io::{FolderLock, SkipReport, read_corpus, write_list};
use crate::output::run::{RunSummary, RunWriter, StageTimes};
use crate::pipeline::{Method, PipelineSpec};
use crate::sketch::{Signatures, band_keys};

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
pub fn sign_part(spec: &PipelineSpec, lock: FolderLock) -> Result<Signed> {
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
    let summary = stage_summary(spec, Stage::Signed, None, corpus.ids.len(), (0, 0), times);
    Ok(Signed {
        summary: run.finish(summary)?,
        signed: docs.len(),
        skipped: corpus.skipped,
    })
}
