//! Stage 4, join: every part's candidates, each once, grouped: one run's findings.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rayon::prelude::*;

use super::band::{Routed, band, routed_to};
use super::judge::{Judged, SCORED, Scored, confirm, merge_sorted};
use crate::error::{Error, Result};
use crate::group::{Linkage, linked_groups};
use crate::io::{Corpus, Input, ReadOptions, read_corpus, read_count};
use crate::output::run::{CheckedFile, IdsDigest, RecordsDigest, StageTimes};
use crate::pipeline::dedup::Found;
use crate::pipeline::split::share::Share;
use crate::pipeline::split::stage::{
    SignedParts, Stage, StageFolder, open_stage, signed_of, spec_for,
};
use crate::pipeline::{
    CandidateFiles, Method, Pair, Part, PipelineSpec, ScoredCandidates, ScoredPairs,
};
use crate::sketch::Signatures;

/// The last stage, after any left (`dirs` may be of any stage): what the whole run found,
/// with its pipeline (writing to `out`), inputs and read options.
pub(in crate::pipeline) fn join(
    dirs: &[PathBuf],
    out: &Path,
) -> Result<(PipelineSpec, Vec<Input>, ReadOptions, Found)> {
    let folders = open_stage(dirs)?;
    let signed = signed_of(&folders)?;
    let config = folders[0].config.clone();
    // The cells a two-stage run searched within, which its summary names.
    let cells = folders[0].folder.summary.cells;
    let parts: Vec<Part> = folders[0].part.all().collect();
    let mut times = StageTimes::default();
    // The ids first: reading them takes more memory for a while than it keeps.
    let mut spec = spec_for(&folders[0], None);
    spec.output.dir = out.to_owned();
    let inputs = spec.input.inputs()?;
    let read = spec.input.read_options();
    let clock = Instant::now();
    let corpus = read_corpus(&inputs, &read, |_| (), |()| {})?;
    times.sketch = clock.elapsed().as_secs_f64();
    check_signed(&signed, &corpus)?;
    let clock = Instant::now();
    // Parts confirmed on this machine are held; confirmed parts' files are read again where
    // needed, never held: only the confirmed pairs and the scores grouping asks are.
    let (candidates, pairs) = match folders[0].stage {
        Stage::Signed => {
            let mut routed: Vec<Vec<Routed>> = vec![Vec::new(); parts.len()];
            for &part in &parts {
                for (to, candidates) in band(&signed, part)?.into_iter().enumerate() {
                    routed[to].extend(candidates);
                }
            }
            let lists = parts
                .iter()
                .zip(routed)
                .map(|(&part, routed)| confirm(&signed, part, routed, &config))
                .collect::<Result<Vec<_>>>()?;
            merge_held(lists)?
        }
        Stage::Banded => {
            let lists = parts
                .iter()
                .map(|&part| confirm(&signed, part, routed_to(&folders, part)?, &config))
                .collect::<Result<Vec<_>>>()?;
            merge_held(lists)?
        }
        Stage::Embedded | Stage::Cells | Stage::Searched => {
            unreachable!("two-stage parts are joined by `two_stage`")
        }
        Stage::Confirmed => {
            let (files, pairs) = ConfirmedFiles::read(folders)?;
            (ScoredCandidates::InFiles(Arc::new(files)), pairs)
        }
    };
    times.confirm = clock.elapsed().as_secs_f64();

    // A pair a part scored is answered from its score, where that is the similarity grouping
    // asks for; the signatures of the rest are read.
    let by_score = spec.method.scores_are_similarities();
    let asked = AskedScores::of(
        &corpus.ids,
        &pairs,
        spec.method.linkage(),
        by_score.then_some(&candidates),
    )?;
    let gathered = Gathered::read(&signed, asked.unscored(), config.confirm.minhash.num_perm)?;
    tracing::info!(
        parts = signed.folders.len(),
        candidates = candidates.count(),
        pairs = pairs.len(),
        asked = asked.pairs.len(),
        gathered = gathered.docs.len(),
        "parts joined"
    );
    let found = Found {
        corpus,
        candidates: candidates.count(),
        scored_candidates: Some(candidates),
        pairs,
        similarity: Arc::new(move |x, y| match asked.score(x, y) {
            Some(score) => score,
            None => gathered
                .signatures
                .similarity(gathered.row(x), gathered.row(y)),
        }),
        probes: None,
        cells,
        collection: 0,
        model: signed.model()?,
        times,
    };
    Ok((spec, inputs, read, found))
}

/// The parts confirmed on this machine, merged: the candidates, held, and the confirmed pairs
/// among them.
fn merge_held(parts: Vec<Judged>) -> Result<(ScoredCandidates, Vec<Pair>)> {
    let count = parts.iter().map(Judged::count).sum();
    let mut scored = ScoredPairs::with_capacity(count);
    let mut duplicate = Vec::with_capacity(count);
    Judged::merge(parts, |candidate| {
        scored.push(candidate.a, candidate.b, candidate.score);
        duplicate.push(candidate.duplicate);
    })?;
    let pairs = scored.selected(&duplicate);
    Ok((ScoredCandidates::Held(Arc::new(scored)), pairs))
}

/// The candidates in the files of the confirmed parts, merged as they are read: a split
/// run's join holds none of them (seventy million at ten million documents).
struct ConfirmedFiles {
    folders: Vec<StageFolder>,
    /// How many there are.
    count: usize,
}

impl ConfirmedFiles {
    /// Hands `each` every candidate, in the run's order. A file changed since it was written
    /// is named as such, before what it made of the merge.
    fn each_scored(&self, each: impl FnMut(Scored)) -> Result<()> {
        let mut files = (self.folders.iter())
            .map(ScoredFile::open)
            .collect::<Result<Vec<_>>>()?;
        let merged = merge_sorted(&mut files, each);
        for file in files {
            file.file.finish()?;
        }
        merged
    }

    /// The candidates of the confirmed parts in `folders`, read once for how many there are
    /// and the confirmed pairs among them, in order.
    fn read(folders: Vec<StageFolder>) -> Result<(ConfirmedFiles, Vec<Pair>)> {
        let mut files = ConfirmedFiles { folders, count: 0 };
        let mut count = 0;
        let mut pairs = Vec::new();
        files.each_scored(|candidate| {
            count += 1;
            if candidate.duplicate {
                pairs.push(candidate.pair());
            }
        })?;
        files.count = count;
        Ok((files, pairs))
    }
}

impl CandidateFiles for ConfirmedFiles {
    fn count(&self) -> usize {
        self.count
    }

    fn with_cosines(&self) -> bool {
        with_cosines(&self.folders[0])
    }

    fn for_each(&self, each: &mut dyn FnMut(Pair)) -> Result<()> {
        self.each_scored(|candidate| each(candidate.pair()))
    }
}

/// Whether the candidates the confirmed part in `folder` wrote have cosines: a two-stage
/// run's do.
fn with_cosines(folder: &StageFolder) -> bool {
    matches!(folder.spec.method, Method::TwoStage(_))
}

/// The candidates a confirmed part wrote, read one at a time.
struct ScoredFile<'a> {
    file: CheckedFile<'a>,
    /// Whether its candidates have cosines (a two-stage run's).
    with_cosines: bool,
    /// Candidates not yet read.
    left: usize,
}

impl<'a> ScoredFile<'a> {
    /// Opens the candidates of the confirmed part in `folder`.
    fn open(folder: &'a StageFolder) -> Result<Self> {
        let mut file = folder.folder.open_checked(SCORED)?;
        let words = read_count(file.reader()).map_err(|e| Error::io(file.path(), e))?;
        let with_cosines = with_cosines(folder);
        Ok(ScoredFile {
            file,
            with_cosines,
            left: words / Scored::words_each(with_cosines),
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
        let with_cosines = self.with_cosines;
        let read = Scored::read_from(self.file.reader(), with_cosines);
        Some(read.map_err(|e| Error::io(self.file.path(), e)))
    }
}

/// Checks that the corpus read again holds each part's documents where the part said: as
/// many, with the same ids, each record as it was read. Else the input changed since signing,
/// or an id repeats in two parts (each part refuses repeats within itself only).
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
        let share = share.start as usize..share.end as usize;
        let ids = corpus.ids[share.clone()].iter().map(String::as_str);
        let summary = &folder.folder.summary;
        let what = if summary.ids_digest != Some(IdsDigest::of(ids)) {
            "other documents than the input now holds in its share"
        } else if summary.records_digest.is_none() {
            "its share with a neardup that recorded no digest of its records"
        } else if summary.records_digest != Some(RecordsDigest::of(&corpus.fingerprints[share])) {
            "its share's records as they were, and the input now holds some of them edited \
             (the same ids, other fields or text)"
        } else {
            continue;
        };
        return Err(Error::Usage(format!(
            "{} read {what}: the input changed since signing, and the part's sketches (and \
             vectors) are not those of its records now; run the part again on this input, or \
             join with the input the parts ran on",
            folder.dir.display()
        )));
    }
    Ok(())
}

/// The pairs grouping asks the similarity of, with the score of each that is a candidate
/// where scores are similarities. A part scored every candidate; the signatures of the
/// documents of the rest are read.
struct AskedScores {
    /// The pairs asked, `(smaller, larger)`, sorted, without repeats.
    pairs: Vec<(u32, u32)>,
    /// Each one's score, where it is a candidate; NaN where not.
    scores: Vec<f64>,
}

impl AskedScores {
    /// The pairs that grouping `pairs` under `linkage` asks, scored from `candidates` (none
    /// where the scores are not the similarity groups are formed by).
    /// Grouping is run once to learn them: which pairs a group asks does not turn on their
    /// similarity (single linkage asks every pair of a component, or of a sample of a large
    /// one; complete and star ask only linked, so scored, pairs).
    fn of(
        ids: &[String],
        pairs: &[Pair],
        linkage: Linkage,
        candidates: Option<&ScoredCandidates>,
    ) -> Result<AskedScores> {
        let edges: Vec<(u32, u32)> = pairs.iter().map(|p| (p.a, p.b)).collect();
        let asked = Mutex::new(Vec::new());
        linked_groups(ids, &edges, linkage, |x, y| {
            let mut asked = asked.lock().expect("no panic while recording");
            asked.push((x.min(y), x.max(y)));
            0.0
        });
        let mut asked = asked.into_inner().expect("no panic while recording");
        asked.par_sort_unstable();
        asked.dedup();
        let scores = match candidates {
            None => vec![f64::NAN; asked.len()],
            // Held, the candidates are found by each asked pair: far fewer than they are.
            Some(ScoredCandidates::Held(scored)) => (asked.par_iter())
                .map(
                    |&(x, y)| match scored.find(x, y).or_else(|| scored.find(y, x)) {
                        Some(i) => scored.get(i).score,
                        None => f64::NAN,
                    },
                )
                .collect(),
            // In files, each candidate read finds its asked pair, if any.
            Some(ScoredCandidates::InFiles(files)) => {
                let mut scores = vec![f64::NAN; asked.len()];
                files.for_each(&mut |p| {
                    if let Ok(i) = asked.binary_search(&(p.a.min(p.b), p.a.max(p.b))) {
                        scores[i] = p.score;
                    }
                })?;
                scores
            }
        };
        Ok(AskedScores {
            pairs: asked,
            scores,
        })
    }

    /// The score of `x` and `y`, where they are a candidate grouping asks.
    fn score(&self, x: u32, y: u32) -> Option<f64> {
        let i = self.pairs.binary_search(&(x.min(y), x.max(y))).ok()?;
        Some(self.scores[i]).filter(|score| !score.is_nan())
    }

    /// The documents of the pairs asked that are no candidate, sorted, without repeats.
    fn unscored(&self) -> Vec<u32> {
        let mut docs: Vec<u32> = (self.pairs.iter().zip(&self.scores))
            .filter(|(_, score)| score.is_nan())
            .flat_map(|(&(x, y), _)| [x, y])
            .collect();
        docs.par_sort_unstable();
        docs.dedup();
        docs
    }
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

    fn scored(a: u32, b: u32, score: f64, duplicate: bool, cosine: Option<f32>) -> Scored {
        Scored {
            a,
            b,
            score,
            duplicate,
            cosine,
        }
    }

    #[test]
    fn parts_lists_merge_into_one_sorted_list_and_a_repeat_is_refused() {
        let first = vec![
            scored(0, 5, 0.5, false, None),
            scored(2, 3, 0.9, true, None),
        ];
        let second = vec![
            scored(0, 7, 0.75, true, None),
            scored(4, 6, 0.25, false, None),
        ];
        let (candidates, pairs) =
            merge_held(vec![Judged::held(first.clone()), Judged::held(second)]).unwrap();
        let scored_pairs = candidates.held().expect("held");
        let merged: Vec<(u32, u32, f64)> = (0..scored_pairs.len())
            .map(|i| scored_pairs.get(i))
            .map(|p| (p.a, p.b, p.score))
            .collect();
        assert_eq!(
            merged,
            [(0, 5, 0.5), (0, 7, 0.75), (2, 3, 0.9), (4, 6, 0.25)]
        );
        let confirmed: Vec<(u32, u32)> = pairs.iter().map(|p| (p.a, p.b)).collect();
        assert_eq!(confirmed, [(0, 7), (2, 3)]);
        let again = Judged::held(vec![scored(2, 3, 0.9, true, None)]);
        let Err(err) = merge_held(vec![Judged::held(first), again]) else {
            panic!("a repeat was merged")
        };
        assert!(err.to_string().contains("twice or out of order"), "{err}");
    }

    #[test]
    fn a_two_stage_pair_found_by_two_parts_is_kept_once_with_its_highest_cosine() {
        let first = vec![
            scored(0, 5, 0.5, false, Some(0.4)),
            scored(2, 3, 0.9, true, Some(0.8)),
            scored(4, 6, 0.7, false, Some(0.3)),
        ];
        let second = vec![
            scored(0, 5, 0.5, true, Some(0.6)),
            scored(2, 3, 0.9, false, Some(0.7)),
        ];
        let third = vec![scored(4, 6, 0.7, false, Some(0.3))];
        let mut merged = Vec::new();
        let mut lists: Vec<_> = [first, second, third]
            .map(|list| list.into_iter().map(Ok))
            .into();
        merge_sorted(&mut lists, |candidate| merged.push(candidate)).unwrap();
        assert_eq!(
            merged,
            [
                scored(0, 5, 0.5, true, Some(0.6)),
                scored(2, 3, 0.9, true, Some(0.8)),
                scored(4, 6, 0.7, false, Some(0.3)),
            ]
        );
        // Out of order within a part is still refused.
        let mut lists = [vec![
            scored(2, 3, 0.9, true, Some(0.8)),
            scored(0, 5, 0.5, true, Some(0.6)),
        ]
        .into_iter()
        .map(Ok)];
        let err = merge_sorted(&mut lists, |_| {}).unwrap_err();
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
        // a~b and b~c join a, b, c; a and c were never candidates. d~e alone. b~d is a
        // candidate that was not confirmed.
        let pairs = [pair(0, 1), pair(1, 2), pair(3, 4)];
        let mut scored = ScoredPairs::with_capacity(4);
        for (a, b, score) in [(0, 1, 0.8), (1, 2, 0.75), (1, 3, 0.25), (3, 4, 0.9)] {
            scored.push(a, b, score);
        }
        let candidates = ScoredCandidates::Held(Arc::new(scored));
        let asked = AskedScores::of(&ids, &pairs, Linkage::Single, Some(&candidates)).unwrap();
        assert_eq!(asked.pairs, [(0, 1), (0, 2), (1, 2), (3, 4)]);
        assert_eq!(asked.unscored(), [0, 2]);
        assert_eq!(asked.score(1, 0), Some(0.8));
        assert_eq!(asked.score(0, 2), None);
        assert_eq!(asked.score(1, 3), None, "not asked");
        // Complete and star linkage ask only linked pairs.
        for linkage in [Linkage::Complete, Linkage::Star] {
            let asked = AskedScores::of(&ids, &pairs, linkage, Some(&candidates)).unwrap();
            assert!(asked.unscored().is_empty(), "{linkage:?}");
            assert_eq!(asked.score(3, 4), Some(0.9), "{linkage:?}");
        }
        // Scores that are not similarities (a learned rule's probabilities) answer nothing:
        // every document of a pair asked is named.
        let asked = AskedScores::of(&ids, &pairs, Linkage::Single, None).unwrap();
        assert_eq!(asked.unscored(), [0, 1, 2, 3, 4]);
        assert_eq!(asked.score(1, 0), None);
    }
}
