//! Two-stage's candidates gathered and confirmed by the parts that embedded their documents.
//!
//! One run's candidates are every pair its searches and MinHash's proposals found, each kept
//! once with its highest cosine, if that is at least the floor. After the search split by the
//! cells' owners ([`super::by_cell`]), the pieces lie with the parts: each searched part wrote
//! its lists in a file for each embedded part (the query's), and banded a share of the band
//! keys, routing each proposal to the embedded part of one of its documents by a hash of the
//! pair, as MinHash's band stage routes them.
//!
//! Confirm part `I` (`neardup merge searched*/ --part I/N --out confirmedI/`, [`confirm_part`])
//! finds every pair with a document of its share that one run finds:
//!
//! 1. **lists**: each of its documents' best `k + 1`, merged over the searched parts as one run
//!    merges them; and, where titles were searched by vector, each title its part embedded
//!    (once a part, by the title's first record there), whose hits pair with every record of
//!    the part that has the title. Records with the same title have the same code, so a
//!    title's hits are the same in every part.
//! 2. **copies** of a vector that many documents hold, which the cells search neither: each
//!    paired with the first of them.
//! 3. **proposals** routed to it, scored by their codes; where a title-only document and a
//!    record with more lie too far apart, scored again at the record's title's code, as one
//!    run scores them.
//! 4. **title-only copies** of its records, where titles go by their words instead of a search
//!    (`two_stage::titles_by_words`): the title-only documents whose titles the cells' learn
//!    job kept, joined with its records' titles, scored at the record's title's code.
//!
//! It keeps each pair once with its highest cosine, drops those under the floor, and judges
//! the rest as a MinHash confirmed part does: its share's sketches held, each other share's
//! read a block at a time. The codes a pair needs from another share are read from that part's
//! queries, one part at a time.
//!
//! A pair may be found by the parts of both its documents, with the same cosine or, from a
//! title, a higher one. The join (`neardup merge confirmed*/ --out out/`, in
//! `split::minhash`, as for MinHash) merges the parts' sorted files and keeps each pair once
//! with its highest cosine: one run's candidates, judged as one run judges them.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Instant;

use rayon::prelude::*;

use super::by_cell::{CellsFolder, TitleCells, read_lists};
use super::staged::{PartTitles, visit_part_queries};
use crate::confirm::TitleOnlyIndex;
use crate::error::{Error, Result};
use crate::io::FolderLock;
use crate::output::run::{RunSummary, RunWriter, StageTimes};
use crate::pipeline::TwoStageConfig;
use crate::pipeline::split::minhash::{confirm, routed_to, write_scored};
use crate::pipeline::split::share::Share;
use crate::pipeline::split::stage::{
    SignedParts, Stage, StageFolder, folders_seen_from, open_stage, stage_summary,
};
use crate::pipeline::two_stage::nearest::{FoundInParts, distinct_pairs};
use crate::pipeline::two_stage::titles_by_words;
use crate::pipeline::{Method, Part};
use crate::search::{Code, Codes, NearestLists, Query, cosine, is_paired_copy};

/// Stage 4 of a two-stage run in stages: the candidates with a document in embedded part
/// `part`'s share, from the searched parts in `dirs`, found and judged, written into the folder
/// `lock` holds.
pub(in crate::pipeline) fn confirm_part(
    dirs: &[PathBuf],
    part: Part,
    lock: FolderLock,
) -> Result<RunSummary> {
    let searched = open_stage(dirs)?;
    let cells = CellsFolder::searched_by(&searched)?;
    let spec = cells.spec(Some(part));
    let Method::TwoStage(config) = &spec.method else {
        unreachable!("cells are two-stage's")
    };
    let by_words = (titles_by_words(config))
        .then(|| cells.title_only_words())
        .transpose()?
        .map(|words| words.index(&config.settings.confirm.rule));
    // Of the cells, a share needs only which documents are title-only and the copies of a
    // vector many hold; the rest goes as it is read (the search's tables, the titles' routes).
    let CellsFolder {
        signed,
        placement,
        titles: TitleCells { title_only, .. },
        count,
        ..
    } = cells;
    let signers = signed.folders[0].part;
    if part.count != signers.count {
        return Err(Error::Usage(format!(
            "--part {part}: the run was embedded in {} parts, and its candidates are confirmed \
             in as many",
            signers.count
        )));
    }
    let clock = Instant::now();
    let signed = &signed;
    let share = signed.docs_of(part.number);
    let copies: Vec<(u32, u32)> = (placement.copies().iter())
        .filter(|(copy, _)| share.contains(copy))
        .copied()
        .collect();
    drop(placement);
    let titles = PartTitles::read(signed, part.number)?;
    let of_cells = (copies.as_slice(), title_only.as_slice());
    let titles_of = (&titles, by_words.as_ref());
    let scored = proposals_and_copies(&searched, signed, part, of_cells, titles_of, config)?;
    drop((title_only, by_words));

    let found = listed_pairs(&searched, (part, share), config, (&titles, &copies), scored)?;
    drop(copies);
    tracing::info!(
        part = %part,
        candidates = found.len(),
        seconds = clock.elapsed().as_secs_f64(),
        "a share's candidates found"
    );

    let judged = confirm(signed, part, found, &searched[0].config)?;
    let signed_from_here = folders_seen_from(lock.dir(), &signed.folders);
    let mut run = RunWriter::begin(lock)?;
    let counts = write_scored(&mut run, judged)?;
    let times = StageTimes {
        confirm: clock.elapsed().as_secs_f64(),
        ..StageTimes::default()
    };
    let mut summary = stage_summary(
        &spec,
        Stage::Confirmed,
        Some(signed_from_here),
        signed.documents(),
        counts,
        times,
    );
    summary.cells = Some(count);
    run.finish(summary)
}

/// The pairs that the lists of part `part`'s queries make (its documents are `share`), read
/// from the searched parts: each of its documents with its best, and each of its part's
/// titles' best with every record of the part that has the title (`titles`), but the share's
/// `copies` of a vector that many hold, which one run pairs with their first alone. With them,
/// `scored`; then each pair at or above the floor, once, with its highest cosine.
fn listed_pairs(
    searched: &[StageFolder],
    (part, share): (Part, Range<u32>),
    config: &TwoStageConfig,
    (titles, copies): (&PartTitles, &[(u32, u32)]),
    scored: Vec<(u32, u32, f32)>,
) -> Result<Vec<(u32, u32, f32)>> {
    let min_cosine = config.settings.min_cosine;
    let mut lists = FoundInParts {
        documents: NearestLists::new(share.len(), config.top_k),
        titles: NearestLists::new(share.len(), config.top_k),
    };
    read_lists(searched, part, share.clone(), &mut lists)?;
    let records_of = |doc: u32| {
        let later = titles.copies.get(&doc).map_or(&[][..], Vec::as_slice);
        std::iter::once(doc)
            .chain(later.iter().copied())
            .filter(|&record| !is_paired_copy(copies, record))
    };
    // Counted first: a list of tens of millions that grows by doubling holds two copies for a
    // while.
    let listed: usize = (share.clone())
        .map(|doc| {
            let titled = lists.titles.list(doc - share.start).len() * records_of(doc).count();
            lists.documents.list(doc - share.start).len() + titled
        })
        .sum();
    let mut found = Vec::with_capacity(listed + scored.len());
    for doc in share.clone() {
        for &(cosine, other) in lists.documents.list(doc - share.start) {
            if other != doc {
                found.push((doc.min(other), doc.max(other), cosine));
            }
        }
        for record in records_of(doc) {
            for &(cosine, other) in lists.titles.list(doc - share.start) {
                if other != record && cosine >= min_cosine {
                    found.push((record.min(other), record.max(other), cosine));
                }
            }
        }
    }
    drop(lists);
    found.extend(scored);
    found.retain(|&(_, _, cosine)| cosine >= min_cosine);
    // A pair is found from both its documents, by its title and by MinHash: kept once, the
    // list gives back the room of the others while the candidates are judged.
    let mut found = distinct_pairs(found);
    found.shrink_to_fit();
    Ok(found)
}

/// The pairs of MinHash's proposals routed to part `part` and of the `copies` of its share
/// (each with the first of a vector many hold), with their cosines; and, scored at the
/// record's title (`titles`: its part's) as one run scores them, where a proposal joins a
/// title-only document to a record with more, too far apart, and the pairs of its share's
/// records with the title-only documents their titles' words match (`by_words`, where the
/// run finds them so).
fn proposals_and_copies(
    searched: &[StageFolder],
    signed: &SignedParts,
    part: Part,
    (copies, title_only): (&[(u32, u32)], &[bool]),
    (titles, by_words): (&PartTitles, Option<&TitleOnlyIndex>),
    config: &TwoStageConfig,
) -> Result<Vec<(u32, u32, f32)>> {
    let min_cosine = config.settings.min_cosine;
    let mut proposed = routed_to(searched, part)?;
    proposed.par_sort_unstable();
    proposed.dedup();
    let pairs: Vec<(u32, u32)> = (proposed.iter().copied())
        .chain(copies.iter().map(|&(copy, first)| (first, copy)))
        .collect();
    let mut by_title_words = Vec::new();
    if let Some(index) = by_words {
        // A copy of a vector many hold leaves them to its first, as one run leaves it them.
        let searched = |record: u32, _| !is_paired_copy(copies, record);
        Share::visit(signed, part.number, |block| {
            let records = (&block.sketches, block.docs.start);
            by_title_words.extend(index.copies_of_records(records, config.top_k + 1, searched));
        })?;
    }
    if pairs.is_empty() && by_title_words.is_empty() {
        return Ok(Vec::new());
    }
    let own = HeldCodes::of_parts(signed, [part.number], |q| !q.title)?;
    let wanted: Vec<(Query, Query)> = (pairs.iter())
        .map(|&(a, b)| (document(a), document(b)))
        .collect();
    let cosines = cosines_of(signed, part, &own, &wanted)?;
    drop(wanted);
    // Every document has a code: a pair without one names a document the parts lack.
    let mut scored: Vec<(u32, u32, f32)> = (pairs.iter().zip(cosines))
        .map(|(&(a, b), cosine)| {
            let missing = || {
                Error::Usage(format!(
                    "the embedded parts hold no code of document {a} or {b}: embed them again"
                ))
            };
            Ok((a, b, cosine.ok_or_else(missing)?))
        })
        .collect::<Result<_>>()?;
    drop(pairs);

    // A title-only document proposed with a record with more, too far from it: scored again at
    // the record's title.
    let (mut rescued, mut wanted) = (Vec::new(), Vec::new());
    let mut part_titles: HashMap<u32, PartTitles> = HashMap::new();
    for &(a, b, cosine) in &scored[..proposed.len()] {
        if cosine >= min_cosine {
            continue;
        }
        let (record, alone) = match (title_only[a as usize], title_only[b as usize]) {
            (false, true) => (a, b),
            (true, false) => (b, a),
            _ => continue,
        };
        let signer = signed.signer_of(record);
        let of_record = match signer == part.number {
            true => titles,
            false => match part_titles.entry(signer) {
                Entry::Occupied(held) => held.into_mut(),
                Entry::Vacant(slot) => slot.insert(PartTitles::read(signed, signer)?),
            },
        };
        rescued.push((record.min(alone), record.max(alone)));
        wanted.push((of_record.title_query(record), document(alone)));
    }
    drop(part_titles);
    for (record, alone) in by_title_words {
        rescued.push((record.min(alone), record.max(alone)));
        wanted.push((titles.title_query(record), document(alone)));
    }
    // A record without a title has no title query, and so no second chance.
    let cosines = cosines_of(signed, part, &own, &wanted)?;
    let before = scored.len();
    scored.extend(
        (rescued.into_iter().zip(cosines))
            .filter_map(|((x, y), cosine)| Some((x, y, cosine?)))
            .filter(|&(_, _, cosine)| cosine >= min_cosine),
    );
    tracing::info!(
        part = %part,
        proposed = proposed.len(),
        copies = before - proposed.len(),
        by_titles = scored.len() - before,
        "proposals and copies scored"
    );
    Ok(scored)
}

/// The codes of some queries of one part, as its queries file holds them.
struct HeldCodes {
    codes: Codes,
    /// Each query's row in `codes`.
    rows: HashMap<Query, usize>,
}

impl HeldCodes {
    /// The codes of the queries of the parts `numbers` that `keep` says.
    fn of_parts(
        signed: &SignedParts,
        numbers: impl IntoIterator<Item = u32>,
        mut keep: impl FnMut(&Query) -> bool,
    ) -> Result<HeldCodes> {
        let mut held = HeldCodes {
            codes: Codes::new(0),
            rows: HashMap::new(),
        };
        for number in numbers {
            visit_part_queries(signed, number, |queries, codes| {
                if held.rows.is_empty() {
                    held.codes = Codes::new(codes.width());
                }
                for (row, query) in queries.iter().enumerate() {
                    if keep(query) {
                        held.rows.insert(*query, held.codes.len());
                        held.codes.push_code(codes.row(row));
                    }
                }
                Ok(())
            })?;
        }
        Ok(held)
    }

    /// Hands `take` the code of `query`, as a pair's cosine takes it: a title's from its
    /// decoded vector coded again, as one run scores a title against a document. `None` where
    /// none is held (a record without a title has no title query).
    fn with_code<R>(&self, query: Query, take: impl FnOnce(Code<'_>) -> R) -> Option<R> {
        let row = *self.rows.get(&query)?;
        Some(match query.title {
            true => {
                let decoded = self.codes.decoded(&[row]);
                take(Codes::of(&decoded, self.codes.width()).row(0))
            }
            false => take(self.codes.row(row)),
        })
    }
}

/// The cosine of each of `wanted`, two queries: documents of part `part`'s share, whose codes
/// are `own`, or of another's, and titles (a few, read first from their parts). The documents
/// of other shares are read from their parts' queries, one part at a time, as the pairs with
/// one there need them. `None` where a query is none of its part's.
fn cosines_of(
    signed: &SignedParts,
    part: Part,
    own: &HeldCodes,
    wanted: &[(Query, Query)],
) -> Result<Vec<Option<f32>>> {
    let share = signed.docs_of(part.number);
    let mut titles: Vec<Query> = (wanted.iter())
        .flat_map(|&(x, y)| [x, y])
        .filter(|q| q.title)
        .collect();
    titles.sort_unstable_by_key(|q| q.doc);
    titles.dedup();
    let mut parts: Vec<u32> = titles.iter().map(|q| signed.signer_of(q.doc)).collect();
    parts.dedup();
    let titles = HeldCodes::of_parts(signed, parts, |q| {
        q.title && titles.binary_search_by_key(&q.doc, |t| t.doc).is_ok()
    })?;
    // The document of another share a pair needs, if any.
    let elsewhere = |&(x, y): &(Query, Query)| {
        [x, y]
            .into_iter()
            .find(|q| !q.title && !share.contains(&q.doc))
    };
    let mut by_part: Vec<Vec<usize>> = vec![Vec::new(); part.count as usize];
    for (i, pair) in wanted.iter().enumerate() {
        let number = elsewhere(pair).map_or(part.number, |q| signed.signer_of(q.doc));
        by_part[number as usize - 1].push(i);
    }
    let mut cosines = vec![None; wanted.len()];
    for (number, wanted_here) in (1..).zip(&by_part) {
        if wanted_here.is_empty() {
            continue;
        }
        let theirs = match number == part.number {
            true => None,
            false => {
                let mut docs: Vec<u32> = (wanted_here.iter())
                    .filter_map(|&i| elsewhere(&wanted[i]))
                    .map(|q| q.doc)
                    .collect();
                docs.par_sort_unstable();
                docs.dedup();
                let needed = |q: &Query| !q.title && docs.binary_search(&q.doc).is_ok();
                Some(HeldCodes::of_parts(signed, [number], needed)?)
            }
        };
        let held = |query: &Query| match (query.title, share.contains(&query.doc)) {
            (true, _) => Some(&titles),
            (false, true) => Some(own),
            (false, false) => theirs.as_ref(),
        };
        for &i in wanted_here {
            let (x, y) = wanted[i];
            cosines[i] = held(&x)
                .and_then(|of_x| {
                    of_x.with_code(x, |x| {
                        held(&y).and_then(|of_y| of_y.with_code(y, |y| cosine(x, y)))
                    })
                })
                .flatten();
        }
    }
    Ok(cosines)
}

/// The query of document `doc`'s own vector.
fn document(doc: u32) -> Query {
    Query { doc, title: false }
}
