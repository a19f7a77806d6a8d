//! Writing a run's results: the records of [`crate::output::run`], from a [`Dedup`].

use std::time::Instant;

use rayon::prelude::*;

use std::collections::HashMap;

use super::{CandidateFiles, Dedup, OutputSpec, Pair, ScoredCandidates, ScoredPairs};
use crate::error::{Error, Result};
use crate::group::{Candidate, KeepPolicy, KeepValue, choose_kept};
use crate::io::{FolderLock, Input, RawRecord, ReadOptions, ScratchDir, for_each_document};
use crate::output::records::{self, Destination, Fate, OutputFormat};
use crate::output::run::{
    CandidatesFormat, GroupRecord, Groups, IdsDigest, PairLine, Pairs, RecordFile, RecordsDigest,
    RunSummary, RunWriter, SortedIds, create_pairs,
};
use crate::prefetch::{AHEAD, prefetch};
use crate::spill::Spill;

/// Writes the run's files into the folder `lock` holds ([`RunWriter::lock`]) and returns the
/// summary; `output` says in which format the records go out and which member of a group is
/// kept. `before_summary` runs once the other files are in place and before the summary,
/// which marks the folder complete: what the run must have done for its summary to be true
/// (adding its records to the collection, [`Run::execute`](super::Run::execute)); where it fails, or the
/// run is stopped during it, the folder reads as unfinished.
pub fn write_results(
    lock: FolderLock,
    inputs: &[Input],
    read: &ReadOptions,
    dedup: &Dedup,
    output: &OutputSpec,
    settings: serde_json::Value,
    before_summary: impl FnOnce() -> Result<()>,
) -> Result<RunSummary> {
    let clock = Instant::now();
    let format = output.format(inputs)?;
    let mut run = RunWriter::begin(lock)?;
    let ids = &dedup.corpus.ids;

    let records = PairRecords::new(ids, dedup.score_name);
    records.write(&mut run, Pairs::NAME, &dedup.pairs)?;
    // A part's candidates are the merge's input, whatever the output asks.
    let candidates = match (output.candidates, dedup.part) {
        (CandidatesFormat::None, Some(_)) => CandidatesFormat::default(),
        (candidates, _) => candidates,
    };
    match (&dedup.scored_candidates, candidates.file()) {
        (None, _) | (_, None) => {}
        (Some(ScoredCandidates::Held(scored)), Some(name)) => {
            records.write(&mut run, name, scored.as_ref())?;
        }
        (Some(ScoredCandidates::InFiles(files)), Some(name)) => {
            records.write_read_again(&mut run, name, files.as_ref())?;
        }
    }
    drop(records);
    if dedup.part.is_some() {
        // A part's groups and unique records are the merge's to write.
        before_summary()?;
        return run.finish(timed(run_summary(dedup, settings, 0), clock));
    }
    let kept = kept_members(inputs, read, dedup, &output.keep)?;
    let groups = dedup
        .groups
        .iter()
        .zip(&kept)
        .enumerate()
        .map(|(i, (g, &kept))| GroupRecord {
            group: i,
            representative: ids[g.representative as usize].clone(),
            representative_similarity: g.representative_similarity,
            kept: ids[kept as usize].clone(),
            size: g.members.len(),
            members: g.members.iter().map(|&m| ids[m as usize].clone()).collect(),
            matrix: None,
        });
    run.write_lines::<Groups, _>(groups)?;

    let fates = Fates::new(dedup, &kept);
    let unique = write_records(
        &mut run,
        inputs,
        read,
        dedup,
        &fates,
        format,
        output.annotate,
    )?;
    let summary = timed(run_summary(dedup, settings, unique), clock);
    before_summary()?;
    run.finish(summary)
}

/// `summary` with the seconds since `clock` as its writing time.
fn timed(summary: RunSummary, clock: Instant) -> RunSummary {
    RunSummary {
        write_seconds: clock.elapsed().as_secs_f64(),
        ..summary
    }
}

/// The summary of `dedup`, run with `settings`, that kept `unique` records (its files and
/// writing time aside).
pub fn run_summary(dedup: &Dedup, mut settings: serde_json::Value, unique: usize) -> RunSummary {
    super::provenance::record_model(&mut settings, dedup.model.as_ref());
    super::provenance::record_confirm_model(&mut settings);
    let records = dedup.records();
    let ids = &dedup.corpus.ids[..records];
    RunSummary {
        run: String::new(),
        files: Default::default(),
        settings,
        score: dedup.score_name.to_owned(),
        threshold: dedup.threshold,
        documents: records,
        ids_digest: Some(IdsDigest::of(ids.iter().map(String::as_str))),
        // A part's records, for the merge to check the input against.
        records_digest: (dedup.part)
            .map(|_| RecordsDigest::of(&dedup.corpus.fingerprints[..records])),
        skipped: dedup.corpus.skipped.count,
        skipped_first: dedup.corpus.skipped.first.clone(),
        candidates: dedup.candidates,
        pairs: dedup.pairs.len(),
        groups: dedup.groups.len(),
        documents_in_groups: dedup
            .groups
            .iter()
            .flat_map(|g| &g.members)
            .filter(|&&m| (m as usize) < records)
            .count(),
        collection_reached: dedup.collection,
        unique,
        probes: dedup.probes,
        cells: dedup.cells,
        seconds: dedup.times.clone(),
        write_seconds: 0.0,
    }
}

/// Pairs a run writes, by their place in the method's order: the confirmed pairs, or every
/// candidate scored.
trait PairList: Sync {
    fn len(&self) -> usize;
    fn get(&self, i: usize) -> Pair;
    /// Whether the pairs carry cosines (all of them, or none).
    fn has_cosines(&self) -> bool;
    /// Starts loading the `i`th pair ([`prefetch`]).
    fn prefetch(&self, i: usize);
}

impl PairList for Vec<Pair> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn get(&self, i: usize) -> Pair {
        self[i]
    }
    fn has_cosines(&self) -> bool {
        self.first().is_some_and(|p| p.cosine.is_some())
    }
    fn prefetch(&self, i: usize) {
        prefetch(&self[i]);
    }
}

impl PairList for ScoredPairs {
    fn len(&self) -> usize {
        ScoredPairs::len(self)
    }
    fn get(&self, i: usize) -> Pair {
        ScoredPairs::get(self, i)
    }
    fn has_cosines(&self) -> bool {
        ScoredPairs::has_cosines(self)
    }
    fn prefetch(&self, i: usize) {
        ScoredPairs::prefetch(self, i);
    }
}

/// Pairs as records, `id_a < id_b`, sorted. Only the order is held: each record is made as
/// it is written (a two-stage run of 100,000 documents scores two million candidates, which
/// as records at once took 1.6 GB). The order is worked out a slice of first ids at a time,
/// so that about [`SLICE_PAIRS`] pairs' keys are held: seventy million candidates of ten
/// million documents took 1.1 GB of keys sorted at once.
struct PairRecords<'a> {
    ids: &'a [String],
    score_name: &'static str,
    /// Each document's place among the sorted ids: pairs are sorted as two integers, not by
    /// comparing strings scattered over the heap (38 million candidates of a million
    /// documents took most of the writing so).
    place: Vec<u32>,
    /// The document at each place: what a table of pairs keeps its ids by.
    by_place: Vec<u32>,
}

/// Pairs sorted at a time, about: 64 MB of keys.
const SLICE_PAIRS: usize = 1 << 22;
/// Slices at most: a pair's slice is one byte (past two billion pairs, slices grow).
const MAX_SLICES: usize = 256;

impl<'a> PairRecords<'a> {
    fn new(ids: &'a [String], score_name: &'static str) -> Self {
        let mut by_id: Vec<u32> = (0..ids.len() as u32).collect();
        by_id.par_sort_unstable_by(|&x, &y| ids[x as usize].cmp(&ids[y as usize]));
        let mut place = vec![0u32; ids.len()];
        for (rank, &doc) in by_id.iter().enumerate() {
            place[doc as usize] = rank as u32;
        }
        PairRecords {
            ids,
            score_name,
            place,
            by_place: by_id,
        }
    }

    /// The run's ids by their places.
    fn sorted(&self) -> SortedIds<'_> {
        SortedIds {
            ids: self.ids,
            by_place: &self.by_place,
        }
    }

    /// How many slices `pairs` pairs are written in.
    fn slice_count(pairs: usize) -> usize {
        pairs.div_ceil(SLICE_PAIRS).clamp(1, MAX_SLICES)
    }

    /// The slice of pair `p`: its first id's place, cut into `slices` equal ranges of places.
    fn slice_of(&self, p: Pair, slices: usize) -> u8 {
        let documents = self.ids.len().max(1) as u64;
        let x = self.place[p.a as usize].min(self.place[p.b as usize]);
        (u64::from(x) * slices as u64 / documents) as u8
    }

    /// Each pair's slice. Slicing reads each pair's places once; a slice's order then reads
    /// only its own.
    fn slices(&self, pairs: &dyn PairList, slices: usize) -> Vec<u8> {
        (0..pairs.len())
            .into_par_iter()
            .map(|i| self.slice_of(pairs.get(i), slices))
            .collect()
    }

    /// The indexes of the pairs that `in_slice` takes, in the order of their records.
    fn order(&self, pairs: &dyn PairList, in_slice: impl Fn(usize) -> bool + Sync) -> Vec<u32> {
        // (smaller place, larger place, index) in one integer.
        let mut keyed: Vec<u128> = (0..pairs.len())
            .into_par_iter()
            .filter(|&i| in_slice(i))
            .map(|i| {
                let p = pairs.get(i);
                let (x, y) = (self.place[p.a as usize], self.place[p.b as usize]);
                (u128::from(x.min(y)) << 64) | (u128::from(x.max(y)) << 32) | i as u128
            })
            .collect();
        keyed.par_sort_unstable();
        keyed.into_iter().map(|key| key as u32).collect()
    }

    /// The record of the pair at `order[i]`.
    fn record(&self, pairs: &dyn PairList, order: &[u32], i: usize) -> PairLine<'a> {
        self.prefetch_ahead(pairs, order, i);
        let p = pairs.get(order[i] as usize);
        let (x, y) = (&self.ids[p.a as usize], &self.ids[p.b as usize]);
        let places = (self.place[p.a as usize], self.place[p.b as usize]);
        PairLine {
            a: x.min(y),
            b: x.max(y),
            score_name: self.score_name,
            score: p.score,
            cosine: p.cosine,
            places: (places.0.min(places.1), places.0.max(places.1)),
        }
    }

    /// Starts loading what the records after the `i`th read, one link further the nearer they
    /// are: the pair, then its ids, then their bytes. Records in id order visit the pairs and
    /// ids in no order at all.
    fn prefetch_ahead(&self, pairs: &dyn PairList, order: &[u32], i: usize) {
        let pair_at = |ahead: usize| Some(pairs.get(*order.get(i + ahead)? as usize));
        if let Some(&far) = order.get(i + 3 * AHEAD) {
            pairs.prefetch(far as usize);
        }
        if let Some(p) = pair_at(2 * AHEAD) {
            prefetch(&self.ids[p.a as usize]);
            prefetch(&self.ids[p.b as usize]);
        }
        if let Some(p) = pair_at(AHEAD) {
            prefetch(self.ids[p.a as usize].as_ptr());
            prefetch(self.ids[p.b as usize].as_ptr());
        }
    }

    /// Writes `pairs` as records into the run's file `name`, a slice of first ids' places at
    /// a time.
    fn write(&self, run: &mut RunWriter, name: &str, pairs: &dyn PairList) -> Result<()> {
        let slices = PairRecords::slice_count(pairs.len());
        let slice_of = self.slices(pairs, slices);
        let mut file = create_pairs(
            run,
            name,
            self.sorted(),
            self.score_name,
            pairs.has_cosines(),
        )?;
        for slice in 0..slices {
            let order = self.order(pairs, |i| slice_of[i] == slice as u8);
            file.append(order.len(), &|i| self.record(pairs, &order, i))?;
        }
        file.commit(run)
    }

    /// [`PairRecords::write`] for pairs in `files`, which are read once: each pair goes to its
    /// slice's spill file, and each slice is then read back, ordered and written. Only a
    /// slice's pairs are held.
    fn write_read_again(
        &self,
        run: &mut RunWriter,
        name: &str,
        files: &dyn CandidateFiles,
    ) -> Result<()> {
        let slices = PairRecords::slice_count(files.count());
        self.write_read_again_in(run, name, files, slices)
    }

    /// [`PairRecords::write_read_again`] in `slices` slices.
    fn write_read_again_in(
        &self,
        run: &mut RunWriter,
        name: &str,
        files: &dyn CandidateFiles,
        slices: usize,
    ) -> Result<()> {
        let with_cosines = files.with_cosines();
        let mut file = create_pairs(run, name, self.sorted(), self.score_name, with_cosines)?;
        let mut write_slice = |pairs: Vec<Pair>| {
            let order = self.order(&pairs, |_| true);
            file.append(order.len(), &|i| self.record(&pairs, &order, i))
        };
        if slices == 1 {
            let mut pairs = Vec::with_capacity(files.count());
            files.for_each(&mut |p| pairs.push(p))?;
            write_slice(pairs)?;
        } else {
            let scratch = ScratchDir::new()?;
            let mut spills = (0..slices)
                .map(|_| Spill::with_buffer(scratch.path(), SLICE_BUFFER))
                .collect::<Result<Vec<_>>>()?;
            let mut counts = vec![0; slices];
            let mut failed = Ok(());
            files.for_each(&mut |p| {
                if failed.is_ok() {
                    let slice = usize::from(self.slice_of(p, slices));
                    counts[slice] += 1;
                    failed = spills[slice].append(|w| p.write_to(w, with_cosines));
                }
            })?;
            failed?;
            for (spill, count) in spills.into_iter().zip(counts) {
                // A pair at a time through the reader's buffer: a slice's bytes are not held
                // beside its pairs.
                let mut read = spill.into_reader()?;
                let pairs = (0..count).map(|_| read.read(|r| Pair::read_from(r, with_cosines)));
                write_slice(pairs.collect::<Result<_>>()?)?;
            }
        }
        file.commit(run)
    }
}

/// Write buffer of each slice's spill file while pairs are dealt into them.
const SLICE_BUFFER: usize = 1 << 16;

/// What became of each document: its group and the member kept in each group.
pub struct Fates<'a> {
    ids: &'a [String],
    /// Each document's group, [`Fates::NONE`] for none.
    group_of: Vec<u32>,
    kept: &'a [u32],
}

impl<'a> Fates<'a> {
    const NONE: u32 = u32::MAX;

    /// The fates of `dedup`'s documents, `kept` holding each group's kept member
    /// ([`Run::kept`](super::Run::kept)).
    pub fn new(dedup: &'a Dedup, kept: &'a [u32]) -> Self {
        let mut group_of = vec![Self::NONE; dedup.corpus.ids.len()];
        for (g, group) in dedup.groups.iter().enumerate() {
            for &m in &group.members {
                group_of[m as usize] = g as u32;
            }
        }
        Fates {
            ids: &dedup.corpus.ids,
            group_of,
            kept,
        }
    }

    /// What became of document `doc`.
    pub fn of(&self, doc: u32) -> Fate<'a> {
        match self.group_of[doc as usize] {
            Self::NONE => Fate {
                group: None,
                kept: true,
                duplicate_of: None,
            },
            g => {
                let kept = self.kept[g as usize];
                Fate {
                    group: Some(g as usize),
                    kept: kept == doc,
                    duplicate_of: (kept != doc).then(|| self.ids[kept as usize].as_str()),
                }
            }
        }
    }
}

/// The member each group keeps under `policy`; reads the group members' records again when
/// the policy needs their length or a field. A group that reaches the collection a batch was
/// checked against keeps a record of the collection: its representative where that is one.
pub fn kept_members(
    inputs: &[Input],
    read: &ReadOptions,
    dedup: &Dedup,
    policy: &KeepPolicy,
) -> Result<Vec<u32>> {
    let corpus = &dedup.corpus;
    let mut values: HashMap<u32, KeepValue> = HashMap::new();
    if policy.reads_records() && !dedup.groups.is_empty() {
        let mut member = vec![false; corpus.ids.len()];
        for &m in dedup.groups.iter().flat_map(|g| &g.members) {
            member[m as usize] = true;
        }
        for_each_document(inputs, read, corpus, "choosing", |records| {
            let found: Vec<Result<(u32, KeepValue)>> = records
                .par_iter()
                .filter(|(_, doc)| member[*doc as usize])
                .map(|(raw, doc)| Ok((*doc, keep_value(policy, read, raw)?)))
                .collect();
            for item in found {
                let (doc, value) = item?;
                values.insert(doc, value);
            }
            Ok(())
        })?;
        if let KeepPolicy::Field { name, .. } = policy
            && values.values().all(|v| *v == KeepValue::Missing)
        {
            return Err(Error::Usage(format!(
                "--keep {policy}: no record in a duplicate group has a field {name:?}; name one \
                 of the input's fields (a JSON key, a column)"
            )));
        }
    }
    let mut not_numbers = Vec::new();
    let records = dedup.records() as u32;
    let kept = dedup
        .groups
        .iter()
        .map(|g| {
            // A group that reaches the collection keeps the collection's record.
            if let Some(&kept) = std::iter::once(&g.representative)
                .chain(&g.members)
                .find(|&&m| m >= records)
            {
                return kept;
            }
            let members: Vec<Candidate> = g
                .members
                .iter()
                .map(|&doc| Candidate {
                    doc,
                    ordinal: corpus.ordinals[doc as usize],
                    value: values.remove(&doc).unwrap_or(KeepValue::Missing),
                })
                .collect();
            if members
                .iter()
                .any(|m| matches!(m.value, KeepValue::Number(_)))
            {
                not_numbers.extend(members.iter().filter_map(|m| match &m.value {
                    KeepValue::Text(text) => Some((m.doc, text.clone())),
                    _ => None,
                }));
            }
            choose_kept(policy, &members, g.representative)
        })
        .collect();
    if let (Some((doc, text)), KeepPolicy::Field { name, .. }) = (not_numbers.first(), policy) {
        tracing::warn!(
            "--keep {policy}: {} values of {name:?} are not numbers where their group has \
             numbers (the first: {text:?} in {:?}); they are kept only if no member has a number",
            not_numbers.len(),
            corpus.ids[*doc as usize],
        );
    }
    Ok(kept)
}

/// What `policy` compares of one record: its text's length in characters, or a field.
fn keep_value(policy: &KeepPolicy, read: &ReadOptions, raw: &RawRecord) -> Result<KeepValue> {
    Ok(match policy {
        KeepPolicy::Longest => KeepValue::Number(read.parse(raw)?.text.chars().count() as f64),
        KeepPolicy::Field { name, .. } => {
            let json = raw.original_json(&read.fields)?;
            let object: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&json)
                .map_err(|e| {
                    Error::input(
                        raw.location.clone(),
                        Some(name),
                        format!("the record is not a JSON object: {e}"),
                        "fix the record",
                    )
                })?;
            KeepValue::of_json(object.get(name))
        }
        KeepPolicy::Representative | KeepPolicy::First => KeepValue::Missing,
    })
}

/// Re-reads the inputs and writes `unique.*` (the records kept) and, if `annotate`,
/// `annotated.*` (every document's record with its fate) in `format`; returns how many records
/// were kept.
fn write_records(
    run: &mut RunWriter,
    inputs: &[Input],
    read: &ReadOptions,
    dedup: &Dedup,
    fates: &Fates,
    format: OutputFormat,
    annotate: bool,
) -> Result<usize> {
    let mut unique_file = run.create(format.unique_file())?;
    let mut annotated_file = match annotate {
        true => Some(run.create(format.annotated_file())?),
        false => None,
    };
    let unique_path = unique_file.target().to_owned();
    let annotated_path = annotated_file.as_ref().map(|f| f.target().to_owned());
    let written = records::writer(format).write(
        inputs,
        read,
        &dedup.corpus,
        &|doc| fates.of(doc),
        Destination {
            out: &mut unique_file,
            path: &unique_path,
        },
        match (annotated_file.as_mut(), &annotated_path) {
            (Some(out), Some(path)) => Some(Destination { out, path }),
            _ => None,
        },
    )?;
    run.commit(unique_file)?;
    if let Some(file) = annotated_file {
        run.commit(file)?;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{DEFAULT_MAX_DOC_BYTES, FieldSpec};
    use crate::pipeline::Method;
    use crate::pipeline::dedup::dedup;
    use crate::settings::MethodName;

    /// The lines `records` writes of `pairs`, checked to be the same whether their order is
    /// worked out in one slice of first ids or in a slice for each, and whether a slice's
    /// pairs are picked from all by their indexes or gathered on their own, as pairs read
    /// again from files are.
    fn record_lines(records: &PairRecords, pairs: &dyn PairList) -> Vec<String> {
        let lines = |pairs: &dyn PairList, order: Vec<u32>| -> Vec<String> {
            (0..order.len())
                .map(|i| serde_json::to_string(&records.record(pairs, &order, i)).unwrap())
                .collect()
        };
        let whole = lines(pairs, records.order(pairs, |_| true));
        let slices = records.ids.len();
        let slice_of = records.slices(pairs, slices);
        let sliced: Vec<String> = (0..slices)
            .flat_map(|slice| lines(pairs, records.order(pairs, |i| slice_of[i] == slice as u8)))
            .collect();
        assert_eq!(sliced, whole);
        let gathered: Vec<String> = (0..slices)
            .flat_map(|slice| {
                let own: Vec<Pair> = (0..pairs.len())
                    .map(|i| pairs.get(i))
                    .filter(|&p| records.slice_of(p, slices) == slice as u8)
                    .collect();
                lines(&own, records.order(&own, |_| true))
            })
            .collect();
        assert_eq!(gathered, whole);
        whole
    }

    #[test]
    fn pair_lines_are_the_json_of_pair_records_sorted_by_their_ids() {
        use crate::output::run::PairRecord;
        use crate::pipeline::Pair;
        let ids: Vec<String> = ["b", "a10", "a9", "c"].map(String::from).to_vec();
        let pair = |a, b, score, cosine| Pair {
            a,
            b,
            score,
            cosine,
        };
        let pairs = vec![
            pair(3, 0, 0.5, Some(0.25)),
            pair(0, 2, 0.8125, Some(0.9123)),
            pair(1, 2, 1.0, None),
        ];
        for score_name in [
            "jaccard_estimate",
            "resemblance",
            "simhash_similarity",
            "a_score",
        ] {
            let records = PairRecords::new(&ids, score_name);
            let lines = record_lines(&records, &pairs);
            let read: Vec<PairRecord> = lines
                .iter()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            let as_records: Vec<String> = read
                .iter()
                .map(|r| serde_json::to_string(r).unwrap())
                .collect();
            assert_eq!(lines, as_records, "{score_name}");
            let order: Vec<(&str, &str)> =
                read.iter().map(|r| (r.a.as_str(), r.b.as_str())).collect();
            assert_eq!(order, [("a10", "a9"), ("a9", "b"), ("b", "c")]);
            assert_eq!(read[1].scores["cosine"], 0.9123);
            assert!(!read[0].scores.contains_key("cosine"));
        }
    }

    /// Pairs in memory, offered as files would offer them: with cosines, or without.
    struct InMemory(Vec<Pair>, bool);

    impl CandidateFiles for InMemory {
        fn count(&self) -> usize {
            self.0.len()
        }
        fn with_cosines(&self) -> bool {
            self.1
        }
        fn for_each(&self, each: &mut dyn FnMut(Pair)) -> Result<()> {
            self.0.iter().for_each(|&p| each(p));
            Ok(())
        }
    }

    #[test]
    fn pairs_read_again_into_slices_are_written_as_pairs_held() {
        use crate::output::run::{Candidates, RecordFile};
        let ids: Vec<String> = (0..50).map(|i| format!("doc{}", (i * 7) % 50)).collect();
        let names = [Candidates::NAME].into_iter();
        #[cfg(feature = "parquet")]
        let names = names.chain([crate::output::run::CANDIDATES_TABLE]);
        for (name, with_cosines) in names.flat_map(|n| [(n, false), (n, true)]) {
            let pairs: Vec<Pair> = (0..49u32)
                .flat_map(|a| (a + 1..50).step_by(3).map(move |b| (a, b)))
                .map(|(a, b)| Pair {
                    a,
                    b,
                    score: f64::from(a * b) / 2500.0 + 1e-9,
                    cosine: with_cosines.then_some(f32::from(b as u8) / 64.0),
                })
                .collect();
            let records = PairRecords::new(&ids, "jaccard_estimate");
            let written = |slices: Option<usize>| -> Vec<u8> {
                let dir = tempfile::tempdir().unwrap();
                let out = dir.path().join("run");
                let mut run = RunWriter::begin(RunWriter::lock(&out).unwrap()).unwrap();
                let files = InMemory(pairs.clone(), with_cosines);
                match slices {
                    None => records.write(&mut run, name, &pairs).unwrap(),
                    Some(slices) => records
                        .write_read_again_in(&mut run, name, &files, slices)
                        .unwrap(),
                }
                std::fs::read(out.join(name)).unwrap()
            };
            let held = written(None);
            assert!(held.len() > 2_000, "{name}: {} bytes", held.len());
            for slices in [1, 2, 7] {
                assert!(
                    written(Some(slices)) == held,
                    "{name}: {slices} slices, {with_cosines}"
                );
            }
        }
    }

    #[test]
    fn scored_pairs_are_written_as_the_pairs_they_hold() {
        let ids: Vec<String> = ["b", "a10", "a9", "c"].map(String::from).to_vec();
        let lines =
            |pairs: &dyn PairList| record_lines(&PairRecords::new(&ids, "jaccard_estimate"), pairs);
        let candidates = vec![(0, 3, 0.25), (0, 2, 0.9123), (1, 2, -0.5)];
        let scores = vec![0.5, 0.8125, 1.0 / 3.0];
        let as_pairs = |cosine: fn(f32) -> Option<f32>| -> Vec<Pair> {
            candidates
                .iter()
                .zip(&scores)
                .map(|(&(a, b, c), &score)| Pair {
                    a,
                    b,
                    score,
                    cosine: cosine(c),
                })
                .collect()
        };
        let with = ScoredPairs::with_cosines(candidates.clone(), scores.clone());
        assert_eq!(lines(&with), lines(&as_pairs(Some)));
        let ends: Vec<(u32, u32)> = candidates.iter().map(|&(a, b, _)| (a, b)).collect();
        let without = ScoredPairs::without_cosines(ends, scores.clone());
        assert_eq!(lines(&without), lines(&as_pairs(|_| None)));
        assert!(!lines(&without)[0].contains("cosine"));
        assert_eq!(without.get(2).score, 1.0 / 3.0);
    }

    #[test]
    fn a_record_edited_between_the_reads_stops_the_unique_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.jsonl");
        let line = |id: &str, text: &str| {
            format!(r#"{{"core_id":"{id}","processed_title":"{text}","processed_abstract":""}}"#)
        };
        let a = line("1", "robot assisted gait training after stroke");
        let b = line("2", "robot assisted gait training after stroke");
        let c = line("3", "haematology of the newborn");
        std::fs::write(&path, format!("{a}\n{b}\n{c}\n")).unwrap();
        let inputs = [Input::new(path.clone(), None).unwrap()];
        let read = ReadOptions {
            fields: FieldSpec::default(),
            skip_invalid: false,
            max_doc_bytes: DEFAULT_MAX_DOC_BYTES,
        };
        let found = dedup(
            &inputs,
            &read,
            &Method::defaults(MethodName::Minhash),
            dir.path(),
        )
        .unwrap();
        assert_eq!(found.groups.len(), 1);

        // Same ids, same length, one word changed in a record that is kept.
        let edited = line("3", "haematology of the elderly");
        std::fs::write(&path, format!("{a}\n{b}\n{edited}\n")).unwrap();
        let out = dir.path().join("run");
        let lock = RunWriter::lock(&out).unwrap();
        let output = OutputSpec::new(out.clone());
        let settings = serde_json::json!({});
        let err =
            write_results(lock, &inputs, &read, &found, &output, settings, || Ok(())).unwrap_err();
        assert!(
            matches!(&err, Error::InputChanged { location } if location.contains(":3")),
            "{err}"
        );
        assert!(!out.join("unique.jsonl").exists());
    }
}
