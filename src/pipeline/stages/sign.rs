//! Stage 1, sign: a part's share of the documents signed, and their keys routed.

use std::time::Instant;

use super::{SKETCHES, Stage, TITLE_BAND, keys_file, stage_summary, write_words};
use crate::confirm::{Confirm, Confirmer, SketchFacts, title_key};
use crate::error::{Error, Result};
use crate::io::{ByteRange, FolderLock, Input, SkipReport, read_corpus_in};
use crate::output::run::{IdsDigest, RunSummary, RunWriter, StageTimes};
use crate::pipeline::{Method, PipelineSpec};
use crate::sketch::{Signatures, band_keys};

/// What a signed part wrote.
pub struct Signed {
    /// The folder's summary: `documents` is how many the part signed.
    pub summary: RunSummary,
    /// What `--skip-invalid` skipped.
    pub skipped: SkipReport,
}

/// Stage 1: signs the documents of the part `spec`'s MinHash settings name (those that start
/// in its [`ByteRange`] of the input), and writes their sketches and their keys, routed to
/// the parts that own them, into the folder `lock` holds.
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
    let total = inputs.iter().map(Input::size).sum();
    let range = ByteRange::share(part.number, part.count, total);
    let clock = Instant::now();
    let mut signatures = Signatures::new(confirmer.num_perm());
    let mut sketches = SketchFacts::default();
    // Per part it is routed to: band, key (two words) and document, four words a key.
    let mut keys: Vec<Vec<u32>> = vec![Vec::new(); part.count as usize];
    let mut doc = 0u32;
    // Documents are numbered within the part; the stages after add the parts before.
    let corpus = read_corpus_in(
        &inputs,
        &read,
        range,
        |record| confirmer.sign(record),
        |sketch| {
            let mut route = |band: u32, key: u64| {
                let to = part.index_of(key ^ u64::from(band).wrapping_mul(0x9e37_79b9_7f4a_7c15));
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
            signatures.push(&sketch.signature, sketch.shingles == 0);
            sketches.push(sketch.shingles, sketch.facts);
            doc += 1;
        },
    )?;
    let mut run = RunWriter::begin(lock)?;
    let mut file = run.create(SKETCHES)?;
    let target = file.target().to_owned();
    (|| {
        signatures.write_to(&mut file)?;
        sketches.write_to(&mut file)
    })()
    .map_err(|e| Error::io(&target, e))?;
    run.commit(file)?;
    for (to, keys) in part.all().zip(&keys) {
        write_words(&mut run, &keys_file(to), keys)?;
    }
    let times = StageTimes {
        sketch: clock.elapsed().as_secs_f64(),
        ..StageTimes::default()
    };
    tracing::info!(part = %part, documents = corpus.ids.len(), from_byte = range.start, "signed");
    let mut summary = stage_summary(spec, Stage::Signed, None, corpus.ids.len(), (0, 0), times);
    summary.ids_digest = Some(IdsDigest::of(corpus.ids.iter().map(String::as_str)));
    Ok(Signed {
        summary: run.finish(summary)?,
        skipped: corpus.skipped,
    })
}
