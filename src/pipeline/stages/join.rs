//! Stage 4, join: every part's candidates, each once, grouped: one run's findings.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rayon::prelude::*;

use super::{
    Routed, SCORED, SCORED_WORDS, Scored, Share, SignedParts, Stage, StageFolder, band, confirm,
    open_stage, routed_to, scored_of, signed_of, spec_for,
};
use crate::error::{Error, Result};
use crate::group::{Linkage, linked_groups};
use crate::io::{Corpus, Input, ReadOptions, read_corpus, read_count};
use crate::output::run::{CheckedFile, IdsDigest, StageTimes};
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
    // The ids first: reading them takes more memory for a while than it keeps, and the
    // candidates, held next, are the most the join holds.
    let mut spec = spec_for(&folders[0], None);
    spec.output.dir = out.to_owned();
    let inputs = spec.input.inputs()?;
    let read = spec.input.read_options();
    let clock = Instant::now();
    let corpus = read_corpus(&inputs, &read, |_| (), |()| {})?;
    times.sketch = clock.elapsed().as_secs_f64();
    check_signed(&signed, &corpus)?;
    let clock = Instant::now();
    let (scored, duplicate) = match folders[0].stage {
        Stage::Signed => {
            let mut routed: Vec<Vec<Routed>> = vec![Vec::new(); parts.len()];
            for &part in &parts {
                for (to, candidates) in band::band(&signed, part)?.into_iter().enumerate() {
                    routed[to].extend(candidates);
                }
            }
            let lists = parts
                .iter()
                .zip(routed)
                .map(|(&part, routed)| confirm::confirm(&signed, part, routed, config))
                .collect::<Result<Vec<_>>>()?;
            merge_held(lists)?
        }
        Stage::Banded => {
            let lists = parts
                .iter()
                .map(|&part| confirm::confirm(&signed, part, routed_to(&folders, part)?, config))
                .collect::<Result<Vec<_>>>()?;
            merge_held(lists)?
        }
        Stage::Embedded | Stage::Cells | Stage::Searched => {
            unreachable!("two-stage parts are joined by `two_stage`")
        }
        Stage::Confirmed => {
            let mut files = folders
                .iter()
                .map(ScoredFile::open)
                .collect::<Result<Vec<_>>>()?;
            let count = files.iter().map(|f| f.left).sum();
            let merged = merge_sorted(&mut files, count);
            // A changed file is named as such before what it made of the merge.
            for file in files {
                file.file.finish()?;
            }
            merged?
        }
    };
    times.confirm = clock.elapsed().as_secs_f64();
    let pairs = scored.selected(&duplicate);
    drop(duplicate);

    // A pair a part scored is answered from its score, which is the similarity grouping asks
    // for; the signatures of the rest are read.
    let scored = Arc::new(scored);
    let score_of = {
        let scored = Arc::clone(&scored);
        move |x: u32, y: u32| {
            let i = scored.find(x, y).or_else(|| scored.find(y, x))?;
            Some(scored.get(i).score)
        }
    };
    let unscored = unscored_asked(&corpus.ids, &pairs, spec.method.linkage(), &score_of);
    let gathered = Gathered::read(&signed, unscored, config.confirm.minhash.num_perm)?;
    tracing::info!(
        parts = signed.folders.len(),
        candidates = scored.len(),
        pairs = pairs.len(),
        gathered = gathered.docs.len(),
        "parts joined"
    );
    let found = Found {
        corpus,
        candidates: scored.len(),
        scored_candidates: Some(scored),
        pairs,
        similarity: Arc::new(move |x, y| match score_of(x, y) {
            Some(score) => score,
            None => gathered
                .signatures
                .similarity(gathered.row(x), gathered.row(y)),
        }),
        probes: None,
        cells: None,
        collection: 0,
        times,
    };
    Ok((spec, inputs, read, found))
}

/// Merges lists of candidates, each sorted by its documents and none sharing a candidate
/// with another (each part confirms its own), into one run's sorted candidates and which of
/// them are duplicates. `count` is how many there are in all.
fn merge_sorted<L: Iterator<Item = Result<Scored>>>(
    lists: &mut [L],
    count: usize,
) -> Result<(ScoredPairs, Vec<bool>)> {
    let mut scored = ScoredPairs::with_capacity(count);
    let mut duplicate = Vec::with_capacity(count);
    // Each list's next candidate, and the lists ordered by it.
    let mut heads: Vec<Option<Scored>> = vec![None; lists.len()];
    let mut order = BinaryHeap::new();
    for (list, items) in lists.iter_mut().enumerate() {
        if let Some(first) = items.next().transpose()? {
            order.push(Reverse((first.0, first.1, list)));
            heads[list] = Some(first);
        }
    }
    let mut last = None;
    while let Some(Reverse((a, b, list))) = order.pop() {
        if last.is_some_and(|last| last >= (a, b)) {
            return Err(Error::Usage(format!(
                "the confirmed parts hold candidate ({a}, {b}) twice or out of order: confirm \
                 the parts again with this version of neardup"
            )));
        }
        last = Some((a, b));
        let (_, _, score, confirmed) = heads[list].take().expect("a listed head");
        scored.push(a, b, score);
        duplicate.push(confirmed);
        if let Some(next) = lists[list].next().transpose()? {
            order.push(Reverse((next.0, next.1, list)));
            heads[list] = Some(next);
        }
    }
    Ok((scored, duplicate))
}

/// [`merge_sorted`] over lists held in memory (the parts confirmed on this machine).
fn merge_held(lists: Vec<Vec<Scored>>) -> Result<(ScoredPairs, Vec<bool>)> {
    let count = lists.iter().map(Vec::len).sum();
    let mut lists: Vec<_> = lists.into_iter().map(|l| l.into_iter().map(Ok)).collect();
    merge_sorted(&mut lists, count)
}

/// The candidates a confirmed part wrote, read one at a time.
struct ScoredFile<'a> {
    file: CheckedFile<'a>,
    /// Candidates not yet read.
    left: usize,
}

impl<'a> ScoredFile<'a> {
    /// Opens the candidates of the confirmed part in `folder`.
    fn open(folder: &'a StageFolder) -> Result<Self> {
        let mut file = folder.folder.open_checked(SCORED)?;
        let words = read_count(file.reader()).map_err(|e| Error::io(file.path(), e))?;
        Ok(ScoredFile {
            file,
            left: words / SCORED_WORDS,
        })
    }
}

impl Iterator for ScoredFile<'_> {
    type Item = Result<Scored>;

    fn next(&mut self) -> Option<Result<Scored>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let mut bytes = [0u8; SCORED_WORDS * 4];
        if let Err(e) = self.file.reader().read_exact(&mut bytes) {
            return Some(Err(Error::io(self.file.path(), e)));
        }
        let words = std::array::from_fn(|i| {
            u32::from_le_bytes([
                bytes[4 * i],
                bytes[4 * i + 1],
                bytes[4 * i + 2],
                bytes[4 * i + 3],
            ])
        });
        Some(Ok(scored_of(words)))
    }
}

/// Checks that the corpus read again holds each part's documents where the part said: as
/// many, with the same ids. Else the input changed since signing, or an id repeats in two
/// parts (each part refuses repeats within itself only).
pub(in crate::pipeline) fn check_signed(signed: &SignedParts, corpus: &Corpus) -> Result<()> {
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

/// The documents of the pairs that grouping `pairs` under `linkage` asks the similarity of and
/// that no part scored (`scored(x, y)` is `None`), sorted, without repeats. Grouping is run
/// once over the scores alone: which pairs a group asks does not turn on their similarity
/// (single linkage asks every pair of a component; complete and star ask only linked, so
/// scored, pairs).
fn unscored_asked(
    ids: &[String],
    pairs: &[Pair],
    linkage: Linkage,
    scored: impl Fn(u32, u32) -> Option<f64> + Sync,
) -> Vec<u32> {
    let edges: Vec<(u32, u32)> = pairs.iter().map(|p| (p.a, p.b)).collect();
    let unscored = Mutex::new(Vec::new());
    linked_groups(ids, &edges, linkage, |x, y| {
        scored(x, y).unwrap_or_else(|| {
            let mut unscored = unscored.lock().expect("no panic while recording");
            unscored.extend([x, y]);
            0.0
        })
    });
    let mut unscored = unscored.into_inner().expect("no panic while recording");
    unscored.par_sort_unstable();
    unscored.dedup();
    unscored
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

    #[test]
    fn parts_lists_merge_into_one_sorted_list_and_a_repeat_is_refused() {
        let first = vec![(0, 5, 0.5, false), (2, 3, 0.9, true)];
        let second = vec![(0, 7, 0.75, true), (4, 6, 0.25, false)];
        let (scored, duplicate) = merge_held(vec![first.clone(), second]).unwrap();
        let merged: Vec<(u32, u32, f64)> = (0..scored.len())
            .map(|i| scored.get(i))
            .map(|p| (p.a, p.b, p.score))
            .collect();
        assert_eq!(
            merged,
            [(0, 5, 0.5), (0, 7, 0.75), (2, 3, 0.9), (4, 6, 0.25)]
        );
        assert_eq!(duplicate, [false, true, true, false]);
        assert_eq!(scored.find(2, 3), Some(2));
        assert_eq!(scored.find(3, 2), None);
        let err = merge_held(vec![first, vec![(2, 3, 0.9, true)]]).unwrap_err();
        assert!(err.to_string().contains("twice or out of order"), "{err}");
    }

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
        let scored = |x: u32, y: u32| match (x.min(y), x.max(y)) {
            (0, 1) => Some(0.8),
            (1, 2) => Some(0.75),
            (3, 4) => Some(0.9),
            _ => None,
        };
        assert_eq!(
            unscored_asked(&ids, &pairs, Linkage::Single, scored),
            [0, 2]
        );
        // Complete and star linkage ask only linked pairs.
        for linkage in [Linkage::Complete, Linkage::Star] {
            let unscored = unscored_asked(&ids, &pairs, linkage, scored);
            assert!(unscored.is_empty(), "{linkage:?}");
        }
    }
}
