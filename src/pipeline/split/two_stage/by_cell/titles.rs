//! What the titles need of the cells: which documents are a title and nothing else, and where
//! each title query was routed, learned once with the cells and read by every part. Where the
//! run pairs a record with the title-only documents by their titles' words instead
//! (`two_stage::titles_by_words`), no title is routed, and the title-only documents' titles
//! are kept for the parts that confirm ([`TitleOnlyWords`]).

use std::time::Instant;

use super::visit_documents_and_titles;
use crate::confirm::{ConfirmRule, TitleOnlyIndex};
use crate::error::Result;
use crate::io::{read_list, write_list};
use crate::pipeline::split::share::Share;
use crate::pipeline::split::stage::SignedParts;
use crate::search::{CellPlacement, NO_CELL, Placing};

/// What the titles need of the cells: which documents are a title and nothing else (the
/// documents a title is searched among), and each title query's nearest cells, routed as one
/// run routes them.
pub(in crate::pipeline::split::two_stage) struct TitleCells {
    /// Whether each document is a title and nothing else.
    pub title_only: Vec<bool>,
    /// The document of each title query, in the run's order.
    pub(super) titles: Vec<u32>,
    /// Each title query's cells (`probes` each, as `CellPlacement::route` gives them).
    pub(super) routed: Vec<u32>,
}

impl TitleCells {
    /// Reads which documents are title-only from the parts' sketches, a block at a time, and,
    /// where titles go `by_words`, their titles' words; then, in one pass over the parts'
    /// codes, places every document among the cells `placing` learned, and routes every title
    /// query to its nearest cells unless titles go by words.
    pub(super) fn place_and_route(
        signed: &SignedParts,
        placing: &mut Placing,
        by_words: bool,
    ) -> Result<(TitleCells, Option<TitleOnlyWords>)> {
        let clock = Instant::now();
        let mut title_only = Vec::with_capacity(signed.documents());
        let mut words = by_words.then(TitleOnlyWords::default);
        for folder in &signed.folders {
            Share::visit(signed, folder.part.number, |block| {
                let sketches = &block.sketches;
                for doc in 0..sketches.len() {
                    let title = sketches.facts(doc).title_alone();
                    title_only.push(title.is_some());
                    if let (Some(words), Some(title)) = (&mut words, title)
                        && TitleOnlyIndex::long_enough(title)
                    {
                        words.push(block.docs.start + doc as u32, title);
                    }
                }
            })?;
        }
        tracing::info!(
            seconds = clock.elapsed().as_secs_f64(),
            "title-only documents read from the sketches"
        );
        let clock = Instant::now();
        let bar = crate::progress::items(
            signed.documents() as u64,
            "placing the documents and routing the titles",
        );
        let (mut titles, mut routed) = (Vec::new(), Vec::new());
        visit_documents_and_titles(
            signed,
            !by_words,
            |_, documents, block_titles, title_codes| {
                placing.place(documents);
                titles.extend_from_slice(block_titles);
                routed.extend(placing.placement().route(title_codes));
                bar.inc(documents.len() as u64);
                Ok(())
            },
        )?;
        bar.finish_and_clear();
        tracing::info!(
            titles = titles.len(),
            seconds = clock.elapsed().as_secs_f64(),
            "documents placed and title queries routed to their cells"
        );
        let cells = TitleCells {
            title_only,
            titles,
            routed,
        };
        Ok((cells, words))
    }

    pub(super) fn write_to(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        let title_only: Vec<u32> = (0..self.title_only.len() as u32)
            .filter(|&doc| self.title_only[doc as usize])
            .collect();
        write_list(w, &title_only)?;
        write_list(w, &self.titles)?;
        write_list(w, &self.routed)
    }

    /// Reads what [`TitleCells::write_to`] wrote for `documents` documents placed as
    /// `placement` says.
    pub(super) fn read_from(
        r: &mut impl std::io::Read,
        documents: usize,
        placement: &CellPlacement,
    ) -> std::io::Result<TitleCells> {
        let invalid = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
        let mut title_only = vec![false; documents];
        for doc in read_list(r)? {
            *title_only
                .get_mut(doc as usize)
                .ok_or_else(|| invalid("a title-only document of another run"))? = true;
        }
        let titles = read_list(r)?;
        let routed = read_list(r)?;
        let cells = placement.cells() as u32;
        if titles.iter().any(|&doc| doc as usize >= documents)
            || routed.len() != titles.len() * placement.probes()
            || routed.iter().any(|&cell| cell >= cells && cell != NO_CELL)
        {
            return Err(invalid("its titles do not fit its cells"));
        }
        Ok(TitleCells {
            title_only,
            titles,
            routed,
        })
    }
}

/// The titles of the title-only documents that are long enough to match
/// ([`TitleOnlyIndex::long_enough`]; `title-only-words.bin`), for the parts that confirm to find
/// each record's title-only copies by their words ([`TitleOnlyIndex`]).
#[derive(Default)]
pub(in crate::pipeline::split::two_stage) struct TitleOnlyWords {
    docs: Vec<u32>,
    /// How many words each title has, and their hashes one title after another.
    lengths: Vec<u32>,
    words: Vec<u32>,
}

impl TitleOnlyWords {
    fn push(&mut self, doc: u32, title: &[u32]) {
        self.docs.push(doc);
        self.lengths.push(title.len() as u32);
        self.words.extend_from_slice(title);
    }

    /// The titles indexed by their words for `rule`.
    pub(in crate::pipeline::split::two_stage) fn index(
        &self,
        rule: &ConfirmRule,
    ) -> TitleOnlyIndex {
        let mut rest = self.words.as_slice();
        let titles = self.lengths.iter().map(|&length| {
            let (title, after) = rest.split_at(length as usize);
            rest = after;
            title
        });
        TitleOnlyIndex::new(self.docs.iter().copied().zip(titles), rule)
    }

    pub(super) fn write_to(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        write_list(w, &self.docs)?;
        write_list(w, &self.lengths)?;
        write_list(w, &self.words)
    }

    /// Reads what [`TitleOnlyWords::write_to`] wrote for a run of `documents` documents.
    pub(super) fn read_from(
        r: &mut impl std::io::Read,
        documents: usize,
    ) -> std::io::Result<TitleOnlyWords> {
        let titles = TitleOnlyWords {
            docs: read_list(r)?,
            lengths: read_list(r)?,
            words: read_list(r)?,
        };
        let words: u64 = titles.lengths.iter().map(|&length| u64::from(length)).sum();
        if titles.docs.len() != titles.lengths.len()
            || words != titles.words.len() as u64
            || titles.docs.iter().any(|&doc| doc as usize >= documents)
        {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "its titles do not fit the run's documents",
            ));
        }
        Ok(titles)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_only_words_read_back_as_written_and_titles_past_the_run_are_refused() {
        let mut words = TitleOnlyWords::default();
        words.push(3, &[10, 11, 12, 13]);
        words.push(7, &[20, 21, 22, 23, 24]);
        let mut bytes = Vec::new();
        words.write_to(&mut bytes).unwrap();
        let read = TitleOnlyWords::read_from(&mut bytes.as_slice(), 8).unwrap();
        assert_eq!(
            (read.docs, read.lengths, read.words),
            (words.docs, words.lengths, words.words)
        );
        let err = TitleOnlyWords::read_from(&mut bytes.as_slice(), 7)
            .err()
            .unwrap();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
        // A title whose words the file cuts short.
        let short = &bytes[..bytes.len() - 8];
        assert!(TitleOnlyWords::read_from(&mut &short[..], 8).is_err());
    }
}
