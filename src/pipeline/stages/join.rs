//! Stage 4, join: every part's candidates, each once, grouped: one run's findings.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;

use super::{
    Routed, SCORED, Scored, Share, SignedParts, Stage, band, confirm, open_stage, read_words,
    routed_to, signed_of, spec_for,
};
use crate::error::{Error, Result};
use crate::io::{Corpus, Input, ReadOptions, read_corpus};
use crate::output::run::{IdsDigest, StageTimes};
use crate::pipeline::{Found, Part, PipelineSpec, ScoredPairs};
use crate::sketch::Signatures;

/// The last stage, after any left (`dirs` may be of any stage): what the whole run found,
/// with its pipeline (writing to `out`), inputs and read options.
pub(in crate::pipeline) fn join(
    dirs: &[PathBuf],
    out: &Path,
) -> Result<(PipelineSpec, Vec<Input>, ReadOptions, Found)> {
    let folders = open_stage(dirs)?;
    let signed = signed_of(&folders)?;
    let config = &folders[0].config;
    let parts: Vec<Part> = folders[0].part.all().collect();
    let mut times = StageTimes::default();
    let clock = Instant::now();
    let mut scored: Vec<Scored> = Vec::new();
    match folders[0].stage {
        Stage::Signed => {
            let mut routed: Vec<Vec<Routed>> = vec![Vec::new(); parts.len()];
            for &part in &parts {
                for (to, candidates) in band::band(&signed, part)?.into_iter().enumerate() {
                    routed[to].extend(candidates);
                }
            }
            for (&part, routed) in parts.iter().zip(routed) {
                scored.extend(confirm::confirm(&signed, part, routed, config)?);
            }
        }
        Stage::Banded => {
            for &part in &parts {
                let routed = routed_to(&folders, part)?;
                scored.extend(confirm::confirm(&signed, part, routed, config)?);
            }
        }
        Stage::Confirmed => {
            for folder in &folders {
                let words = read_words(folder, SCORED)?;
                scored.extend(words.chunks_exact(5).map(|w| {
                    let score = f64::from_bits(u64::from(w[2]) | (u64::from(w[3]) << 32));
                    (w[0], w[1], score, w[4] != 0)
                }));
            }
        }
    }
    times.confirm = clock.elapsed().as_secs_f64();
    // Confirm parts judge disjoint candidates, each once: sorted, they are one run's.
    scored.par_sort_unstable_by_key(|s| (s.0, s.1));
    let candidates: Vec<(u32, u32)> = scored.iter().map(|s| (s.0, s.1)).collect();
    let duplicate: Vec<bool> = scored.iter().map(|s| s.3).collect();
    let scored = ScoredPairs::without_cosines(&candidates, scored.iter().map(|s| s.2).collect());
    let pairs = scored.selected(&duplicate);

    let mut spec = spec_for(&folders[0], None);
    spec.output.dir = out.to_owned();
    let inputs = spec.input.inputs()?;
    let read = spec.input.read_options();
    let clock = Instant::now();
    let corpus = read_corpus(&inputs, &read, |_| (), |()| {})?;
    times.sketch = clock.elapsed().as_secs_f64();
    check_signed(&signed, &corpus)?;
    // The similarities groups are chosen by: those of documents in a pair.
    let mut grouped: Vec<u32> = pairs.iter().flat_map(|p| [p.a, p.b]).collect();
    grouped.par_sort_unstable();
    grouped.dedup();
    let gathered = Gathered::read(&signed, grouped, config.confirm.minhash.num_perm)?;
    tracing::info!(
        parts = signed.folders.len(),
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
                .similarity(gathered.row(x), gathered.row(y))
        }),
        probes: None,
        cells: None,
        times,
    };
    Ok((spec, inputs, read, found))
}

/// Checks that the corpus read again holds each part's documents where the part said: as
/// many, with the same ids. Else the input changed since signing, or an id repeats in two
/// parts (each part refuses repeats within itself only).
fn check_signed(signed: &SignedParts, corpus: &Corpus) -> Result<()> {
    let documents = signed.documents();
    if corpus.ids.len() != documents {
        return Err(Error::Usage(format!(
            "the parts signed {documents} documents, and the input now has {}: join the \
             parts with the input they ran on{}",
            corpus.ids.len(),
            match corpus.skipped.count {
                0 => String::new(),
                _ => format!(
                    " (--skip-invalid skipped {}, the first: {}; a split run cannot skip an \
                     id repeated in two parts as one run does: remove the repeats, or run \
                     whole)",
                    corpus.skipped.count, corpus.skipped.first[0]
                ),
            }
        )));
    }
    for folder in &signed.folders {
        let share = signed.docs_of(folder.part.number);
        let ids = corpus.ids[share.start as usize..share.end as usize]
            .iter()
            .map(String::as_str);
        if folder.folder.summary.ids_digest != Some(IdsDigest::of(ids)) {
            return Err(Error::Usage(format!(
                "{} signed other documents than the input now holds in its share: the input \
                 changed since signing; sign it again, or join with the input the parts ran on",
                folder.dir.display()
            )));
        }
    }
    Ok(())
}

/// The signatures of some documents, gathered from the signed parts: what the join chooses
/// each group's representative by.
struct Gathered {
    /// The documents, sorted: a document's place here is its row below.
    docs: Vec<u32>,
    signatures: Signatures,
}

impl Gathered {
    /// The signatures of `wanted` (sorted, without repeats), read a share at a time.
    fn read(signed: &SignedParts, wanted: Vec<u32>, num_perm: usize) -> Result<Self> {
        let mut slots = vec![0u32; wanted.len() * num_perm];
        let mut empty = vec![false; wanted.len()];
        let mut found = 0;
        for folder in &signed.folders {
            let share = Share::read(signed, folder.part.number)?;
            for (row, doc) in share.docs.clone().enumerate() {
                if let Ok(place) = wanted.binary_search(&doc) {
                    slots[place * num_perm..(place + 1) * num_perm]
                        .copy_from_slice(share.signatures.row(row));
                    empty[place] = share.signatures.is_empty_doc(row);
                    found += 1;
                }
            }
        }
        if found != wanted.len() {
            return Err(Error::Usage(
                "the signed parts do not hold every document their candidates name: give the \
                 signed folders of one run, each as it was written"
                    .into(),
            ));
        }
        let mut signatures = Signatures::new(num_perm);
        for (place, &empty) in empty.iter().enumerate() {
            signatures.push(&slots[place * num_perm..(place + 1) * num_perm], empty);
        }
        Ok(Gathered {
            docs: wanted,
            signatures,
        })
    }

    /// The row of document `doc`.
    fn row(&self, doc: u32) -> usize {
        self.docs.binary_search(&doc).expect("a gathered document")
    }
}
