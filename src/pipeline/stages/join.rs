//! Stage 4, join: every part's candidates, each once, grouped: one run's findings.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::{
    Routed, SCORED, Scored, Share, SignedParts, Stage, band, confirm, open_stage, read_words,
    routed_to, signed_of, spec_for,
};
use crate::error::{Error, Result};
use crate::group::{Linkage, linked_groups};
use crate::io::{Corpus, Input, ReadOptions, read_corpus};
use crate::output::run::{IdsDigest, StageTimes};
use crate::pipeline::{Found, Pair, Part, PipelineSpec, ScoredPairs};
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
    let duplicate: Vec<bool> = scored.iter().map(|s| s.3).collect();
    let (candidates, scores): (Vec<(u32, u32)>, Vec<f64>) =
        scored.into_iter().map(|s| ((s.0, s.1), s.2)).unzip();
    let scored = ScoredPairs::without_cosines(&candidates, scores);
    let pairs = scored.selected(&duplicate);
    drop(duplicate);

    let mut spec = spec_for(&folders[0], None);
    spec.output.dir = out.to_owned();
    let inputs = spec.input.inputs()?;
    let read = spec.input.read_options();
    let clock = Instant::now();
    let corpus = read_corpus(&inputs, &read, |_| (), |()| {})?;
    times.sketch = clock.elapsed().as_secs_f64();
    check_signed(&signed, &corpus)?;
    let asked = Asked::by_grouping(&corpus.ids, &pairs, spec.method.linkage(), |x, y| {
        candidates
            .binary_search(&(x, y))
            .or_else(|_| candidates.binary_search(&(y, x)))
            .ok()
            .map(|i| scored.get(i).score)
    });
    let gathered = Gathered::read(&signed, asked.unscored, config.confirm.minhash.num_perm)?;
    tracing::info!(
        parts = signed.folders.len(),
        candidates = candidates.len(),
        pairs = pairs.len(),
        gathered = gathered.docs.len(),
        "parts joined"
    );
    let known = asked.scored;
    let found = Found {
        corpus,
        candidates: candidates.len(),
        scored_candidates: Some(scored),
        pairs,
        similarity: Box::new(move |x, y| match known.get(&ordered(x, y)) {
            Some(&score) => score,
            None => gathered
                .signatures
                .similarity(gathered.row(x), gathered.row(y)),
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

/// The similarities grouping will ask for (choosing each group's representative), found
/// before the join holds any signature: most are of candidates the parts scored; the rest
/// need the signatures of a few documents.
struct Asked {
    /// The asked pairs (lower number first) that a part scored, with their score.
    scored: FxHashMap<(u32, u32), f64>,
    /// The documents of the asked pairs that no part scored, sorted, without repeats.
    unscored: Vec<u32>,
}

impl Asked {
    /// What grouping `pairs` under `linkage` asks, `score_of(x, y)` being a scored pair's
    /// score. Grouping is run once over the scores alone: which pairs a group asks does not
    /// turn on their similarity (single linkage asks every pair of a component; complete and
    /// star ask only linked, so scored, pairs).
    fn by_grouping(
        ids: &[String],
        pairs: &[Pair],
        linkage: Linkage,
        score_of: impl Fn(u32, u32) -> Option<f64> + Sync,
    ) -> Asked {
        let edges: Vec<(u32, u32)> = pairs.iter().map(|p| (p.a, p.b)).collect();
        let asked = Mutex::new(Asked {
            scored: FxHashMap::default(),
            unscored: Vec::new(),
        });
        linked_groups(ids, &edges, linkage, |x, y| {
            let score = score_of(x, y);
            let mut asked = asked.lock().expect("no panic while recording");
            match score {
                Some(score) => {
                    asked.scored.insert(ordered(x, y), score);
                }
                None => asked.unscored.extend([x, y]),
            }
            score.unwrap_or(0.0)
        });
        let mut asked = asked.into_inner().expect("no panic while recording");
        asked.unscored.par_sort_unstable();
        asked.unscored.dedup();
        asked
    }
}

/// The pair `(x, y)` with the lower number first.
fn ordered(x: u32, y: u32) -> (u32, u32) {
    (x.min(y), x.max(y))
}

/// The signatures of some documents, gathered from the signed parts.
struct Gathered {
    /// The documents, sorted: a document's place here is its row below.
    docs: Vec<u32>,
    signatures: Signatures,
}

impl Gathered {
    /// The signatures of `wanted` (sorted, without repeats), read a block at a time.
    fn read(signed: &SignedParts, wanted: Vec<u32>, num_perm: usize) -> Result<Self> {
        let mut signatures = Signatures::new(num_perm);
        for folder in &signed.folders {
            // The shares, and the blocks in each, come in the run's order, as `wanted` does:
            // each document found is the next row.
            Share::visit(signed, folder.part.number, |block| {
                let from = wanted.partition_point(|&d| d < block.docs.start);
                for &doc in wanted[from..]
                    .iter()
                    .take_while(|&&d| block.docs.contains(&d))
                {
                    let row = (doc - block.docs.start) as usize;
                    signatures.push(
                        block.signatures.row(row),
                        block.signatures.is_empty_doc(row),
                    );
                }
            })?;
        }
        if signatures.len() != wanted.len() {
            return Err(Error::Usage(
                "the signed parts do not hold every document their candidates name: give the \
                 signed folders of one run, each as it was written"
                    .into(),
            ));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(a: u32, b: u32) -> Pair {
        Pair {
            a,
            b,
            score: 0.9,
            cosine: None,
        }
    }

    #[test]
    fn grouping_asks_scored_pairs_and_names_the_documents_of_the_rest() {
        let ids: Vec<String> = ["a", "b", "c", "d", "e"].map(String::from).into();
        // a~b and b~c join a, b, c; a and c were never candidates. d~e alone.
        let pairs = [pair(0, 1), pair(1, 2), pair(3, 4)];
        let scored = |x: u32, y: u32| match ordered(x, y) {
            (0, 1) => Some(0.8),
            (1, 2) => Some(0.75),
            (3, 4) => Some(0.9),
            _ => None,
        };
        let single = Asked::by_grouping(&ids, &pairs, Linkage::Single, scored);
        assert_eq!(single.unscored, [0, 2]);
        let mut known: Vec<_> = single.scored.into_iter().collect();
        known.sort_by_key(|&(pair, _)| pair);
        assert_eq!(known, [((0, 1), 0.8), ((1, 2), 0.75), ((3, 4), 0.9)]);
        // Complete and star linkage ask only linked pairs.
        for linkage in [Linkage::Complete, Linkage::Star] {
            let asked = Asked::by_grouping(&ids, &pairs, linkage, scored);
            assert!(asked.unscored.is_empty(), "{linkage:?}");
        }
    }
}
