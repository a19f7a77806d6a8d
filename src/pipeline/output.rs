//! The files a run leaves in its output folder, each written atomically:
//! - `pairs.jsonl`: one confirmed pair a line, `{"id_a", "id_b", SCORE}`, `id_a < id_b`,
//!   sorted; SCORE is named by the method (`jaccard_estimate`, `jaccard`, `resemblance`,
//!   `simhash_similarity`);
//! - `groups.jsonl`: one group a line, `{"group", "representative", "members", ...}`, members
//!   sorted by id, groups by their smallest id; singletons are left out;
//! - `unique.jsonl`: the input records of representatives and of documents in no group, in input
//!   order (JSONL lines byte-for-byte as read);
//! - `candidates.jsonl`: every scored candidate, same layout, where the method scores more
//!   pairs than it confirms (MinHash): what `neardup sweep` and the report re-threshold;
//! - `summary.json`: settings, counts and stage times.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::{Dedup, StageTimes};
use crate::error::{Error, Result};
use rayon::prelude::*;

use crate::io::{
    AtomicFile, FieldSpec, Input, ReadOptions, for_each_chunk, write_json_lines, write_json_pretty,
};

#[derive(Serialize)]
struct PairLine<'a> {
    id_a: &'a str,
    id_b: &'a str,
    /// The method's score, under the method's name for it (`jaccard`, `resemblance`, ...).
    #[serde(flatten)]
    score: std::collections::BTreeMap<&'static str, f64>,
    /// Cosine of the embeddings, for methods that embed.
    #[serde(skip_serializing_if = "Option::is_none")]
    cosine: Option<f32>,
}

#[derive(Serialize)]
struct GroupLine<'a> {
    group: usize,
    representative: &'a str,
    representative_similarity: f64,
    size: usize,
    members: Vec<&'a str>,
}

/// What a run did, as written to `summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct RunSummary {
    /// The method and its settings.
    pub settings: serde_json::Value,
    /// The name of the pairs' score.
    pub score: &'static str,
    /// The score a pair had to reach.
    pub threshold: f64,
    /// Documents read (valid ones).
    pub documents: usize,
    /// Records skipped under `--skip-invalid`.
    pub skipped: usize,
    /// The first few skipped records' problems.
    pub skipped_first: Vec<String>,
    /// Candidate pairs compared.
    pub candidates: usize,
    /// Confirmed pairs.
    pub pairs: usize,
    /// Groups of two or more.
    pub groups: usize,
    /// Documents that belong to a group.
    pub documents_in_groups: usize,
    /// Records written to `unique.jsonl`.
    pub unique: usize,
    /// Probes spent by SimHash's probing search, if used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probes: Option<usize>,
    /// Seconds per stage.
    pub seconds: StageTimes,
    /// Seconds spent writing the outputs.
    pub write_seconds: f64,
}

/// Writes the run's files into `dir` (created if missing) and returns the summary.
pub fn write_results(
    dir: &Path,
    inputs: &[Input],
    read: &ReadOptions,
    dedup: &Dedup,
    settings: serde_json::Value,
) -> Result<RunSummary> {
    let clock = Instant::now();
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let ids = &dedup.corpus.ids;

    write_pairs(
        &dir.join("pairs.jsonl"),
        ids,
        &dedup.pairs,
        dedup.score_name,
    )?;
    let candidates_path = dir.join("candidates.jsonl");
    match &dedup.scored_candidates {
        Some(scored) => write_pairs(&candidates_path, ids, scored, dedup.score_name)?,
        // A stale file from an earlier run would mislead a sweep.
        None if candidates_path.exists() => {
            std::fs::remove_file(&candidates_path).map_err(|e| Error::io(&candidates_path, e))?
        }
        None => {}
    }

    let groups = dedup.groups.iter().enumerate().map(|(i, g)| GroupLine {
        group: i,
        representative: &ids[g.representative as usize],
        representative_similarity: g.representative_similarity,
        size: g.members.len(),
        members: g
            .members
            .iter()
            .map(|&m| ids[m as usize].as_str())
            .collect(),
    });
    write_json_lines(&dir.join("groups.jsonl"), groups)?;

    let unique = write_unique(&dir.join("unique.jsonl"), inputs, read, dedup)?;

    let summary = RunSummary {
        settings,
        score: dedup.score_name,
        threshold: dedup.threshold,
        documents: ids.len(),
        skipped: dedup.corpus.skipped.count,
        skipped_first: dedup.corpus.skipped.first.clone(),
        candidates: dedup.candidates,
        pairs: dedup.pairs.len(),
        groups: dedup.groups.len(),
        documents_in_groups: dedup.groups.iter().map(|g| g.members.len()).sum(),
        unique,
        probes: dedup.probes,
        seconds: dedup.times.clone(),
        write_seconds: clock.elapsed().as_secs_f64(),
    };
    write_json_pretty(&dir.join("summary.json"), &summary)?;
    Ok(summary)
}

/// Writes pairs as `{"id_a", "id_b", SCORE}` lines, `id_a < id_b`, sorted.
fn write_pairs(
    path: &Path,
    ids: &[String],
    pairs: &[super::Pair],
    score_name: &'static str,
) -> Result<()> {
    let mut lines: Vec<PairLine> = pairs
        .iter()
        .map(|p| {
            let (x, y) = (ids[p.a as usize].as_str(), ids[p.b as usize].as_str());
            PairLine {
                id_a: x.min(y),
                id_b: x.max(y),
                score: [(score_name, p.score)].into(),
                cosine: p.cosine,
            }
        })
        .collect();
    lines.sort_by(|p, q| (p.id_a, p.id_b).cmp(&(q.id_a, q.id_b)));
    write_json_lines(path, &lines)
}

/// Re-reads the inputs and copies out the records to keep; returns how many.
fn write_unique(path: &Path, inputs: &[Input], read: &ReadOptions, dedup: &Dedup) -> Result<usize> {
    let corpus = &dedup.corpus;
    let mut keep = vec![true; corpus.ids.len()];
    for group in &dedup.groups {
        for &m in &group.members {
            keep[m as usize] = m == group.representative;
        }
    }
    // Documents to keep, by their position among the raw records (ascending, as read).
    let mut wanted = (0..corpus.ids.len())
        .filter(|&d| keep[d])
        .map(|d| (corpus.ordinals[d], d))
        .peekable();
    // Checking that a record is still the one sketched needs only its id.
    let id_only = FieldSpec {
        id: read.fields.id.clone(),
        text: Vec::new(),
    };
    let mut file = AtomicFile::create(path)?;
    let mut written = 0;
    let mut ordinal = 0u64;
    for_each_chunk(inputs, &read.fields, "writing", |chunk| {
        let mut kept = Vec::new();
        for raw in chunk {
            let this = ordinal;
            ordinal += 1;
            if let Some(&(want, doc)) = wanted.peek()
                && want == this
            {
                wanted.next();
                kept.push((raw, doc));
            }
        }
        let lines: Vec<Result<Vec<u8>>> = kept
            .par_iter()
            .map(|(raw, doc)| {
                if raw.parse(&id_only).map(|r| r.id == corpus.ids[*doc]) != Ok(true) {
                    return Err(Error::Usage(format!(
                        "{}: the input changed while neardup was reading it; run again on a stable copy",
                        raw.location
                    )));
                }
                Ok(raw.original_json(&read.fields)?)
            })
            .collect();
        for line in lines {
            file.write_all(&line?).map_err(|e| Error::io(path, e))?;
            file.write_all(b"\n").map_err(|e| Error::io(path, e))?;
            written += 1;
        }
        Ok(())
    })?;
    if wanted.peek().is_some() {
        return Err(Error::Usage(
            "the input became shorter while neardup was reading it; run again on a stable copy"
                .into(),
        ));
    }
    file.commit()?;
    Ok(written)
}
