//! Writing a run's results: the records of [`crate::results`], from a [`Dedup`].

use std::io::Write;
use std::time::Instant;

use rayon::prelude::*;

use super::Dedup;
use crate::error::{Error, Result};
use crate::io::{FolderLock, Input, ReadOptions, for_each_chunk};
use crate::results::{
    CANDIDATES, GROUPS, GroupRecord, PAIRS, PairRecord, RunFile, RunSummary, RunWriter, UNIQUE,
};

/// Writes the run's files into the folder `lock` holds ([`RunWriter::lock`]) and returns the
/// summary.
pub fn write_results(
    lock: FolderLock,
    inputs: &[Input],
    read: &ReadOptions,
    dedup: &Dedup,
    settings: serde_json::Value,
) -> Result<RunSummary> {
    let clock = Instant::now();
    let mut run = RunWriter::begin(lock)?;
    let ids = &dedup.corpus.ids;

    run.write_lines(PAIRS, pair_records(ids, &dedup.pairs, dedup.score_name))?;
    if let Some(scored) = &dedup.scored_candidates {
        run.write_lines(CANDIDATES, pair_records(ids, scored, dedup.score_name))?;
    }
    if dedup.part.is_some() {
        // A part's groups and unique records are the merge's to write.
        return run.finish(summary(dedup, settings, 0, clock));
    }
    let groups = dedup.groups.iter().enumerate().map(|(i, g)| GroupRecord {
        group: i,
        representative: ids[g.representative as usize].clone(),
        representative_similarity: g.representative_similarity,
        size: g.members.len(),
        members: g.members.iter().map(|&m| ids[m as usize].clone()).collect(),
        matrix: None,
    });
    run.write_lines(GROUPS, groups)?;

    let mut unique_file = run.create(UNIQUE)?;
    let unique = write_unique(&mut unique_file, inputs, read, dedup)?;
    run.commit(unique_file)?;

    run.finish(summary(dedup, settings, unique, clock))
}

fn summary(
    dedup: &Dedup,
    settings: serde_json::Value,
    unique: usize,
    clock: Instant,
) -> RunSummary {
    let ids = &dedup.corpus.ids;
    RunSummary {
        run: String::new(),
        files: Default::default(),
        settings,
        score: dedup.score_name.to_owned(),
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
    }
}

/// Pairs as records, `id_a < id_b`, sorted. Only the order is held: each record is made as
/// it is written (a two-stage run of 100,000 documents scores two million candidates, which
/// as records at once took 1.6 GB).
fn pair_records<'a>(
    ids: &'a [String],
    pairs: &'a [super::Pair],
    score_name: &'static str,
) -> impl Iterator<Item = PairRecord> + 'a {
    let ordered = |p: &super::Pair| {
        let (x, y) = (&ids[p.a as usize], &ids[p.b as usize]);
        (x.min(y), x.max(y))
    };
    let mut order: Vec<u32> = (0..pairs.len() as u32).collect();
    order.par_sort_unstable_by(|&i, &j| {
        ordered(&pairs[i as usize]).cmp(&ordered(&pairs[j as usize]))
    });
    order.into_iter().map(move |i| {
        let p = &pairs[i as usize];
        let (a, b) = ordered(p);
        let mut scores = std::collections::BTreeMap::from([(score_name.to_owned(), p.score)]);
        if let Some(cosine) = p.cosine {
            scores.insert("cosine".to_owned(), shortest_f64(cosine));
        }
        PairRecord {
            a: a.clone(),
            b: b.clone(),
            scores,
        }
    })
}

/// An `f32` as the `f64` with the same shortest decimal form, so that it prints as `0.9123`,
/// not `0.9122999906539917`.
fn shortest_f64(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

/// Re-reads the inputs and copies out the records to keep; returns how many.
fn write_unique(
    file: &mut RunFile,
    inputs: &[Input],
    read: &ReadOptions,
    dedup: &Dedup,
) -> Result<usize> {
    let path = file.target().to_owned();
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
    let mut written = 0;
    let mut ordinal = 0u64;
    for_each_chunk(inputs, read, "writing", |chunk| {
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
        let lines: Vec<Result<std::borrow::Cow<[u8]>>> = kept
            .par_iter()
            .map(|(raw, doc)| {
                if raw.fingerprint() != corpus.fingerprints[*doc] {
                    return Err(Error::InputChanged {
                        location: raw.location.to_string(),
                    });
                }
                Ok(raw.original_json(&read.fields)?)
            })
            .collect();
        for line in lines {
            file.write_all(&line?).map_err(|e| Error::io(&path, e))?;
            file.write_all(b"\n").map_err(|e| Error::io(&path, e))?;
            written += 1;
        }
        Ok(())
    })?;
    if wanted.peek().is_some() {
        return Err(Error::InputChanged {
            location: format!(
                "{} (it became shorter)",
                inputs
                    .iter()
                    .map(|i| i.path.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{DEFAULT_MAX_DOC_BYTES, FieldSpec};
    use crate::pipeline::{Method, MethodName, dedup};

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
        let err = write_results(lock, &inputs, &read, &found, serde_json::json!({})).unwrap_err();
        assert!(
            matches!(&err, Error::InputChanged { location } if location.contains(":3")),
            "{err}"
        );
        assert!(!out.join(UNIQUE).exists());
    }
}
