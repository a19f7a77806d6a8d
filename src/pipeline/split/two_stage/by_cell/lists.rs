//! The nearest lists between the search by cells and the join: each searched part writes, for
//! every embedded part, the best hits its cells gave that part's documents and title queries,
//! a block of queries at a time; the parts that confirm read them back and merge them.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::io::{read_list, write_list};
use crate::output::run::{RunFile, RunWriter};
use crate::pipeline::Part;
use crate::pipeline::split::stage::{SignedParts, StageFolder};
use crate::pipeline::two_stage::nearest::FoundInParts;
use crate::search::{Code, Codes, NearestLists};

/// A searched part's lists of the documents of embedded part `signer`: blocks of each one's
/// best within the part's cells.
pub(super) fn nearest_file(signer: Part) -> String {
    format!("nearest-{}.bin", signer.number)
}

/// A searched part's lists of the title queries of embedded part `signer`: blocks of each
/// one's best among the title-only members of the part's cells.
pub(super) fn nearest_titles_file(signer: Part) -> String {
    format!("nearest-titles-{}.bin", signer.number)
}

/// Queries (documents, or titles) searched at a time by a part.
const SEARCH_BLOCK: usize = 1 << 16;

/// The queries a searched part has yet to search, and the files their lists go to, one for
/// each embedded part (the query's): a block of [`SEARCH_BLOCK`] queries at a time, each
/// written as its document, how many hits, and each hit's cosine (as bits) and document.
pub(super) struct Lists<'s> {
    signed: &'s SignedParts,
    files: Vec<RunFile>,
    docs: Vec<u32>,
    codes: Codes,
    pub(super) searched: usize,
}

impl<'s> Lists<'s> {
    /// Lists into the files `name` gives each embedded part of `signed`, in the folder `run`
    /// writes.
    pub(super) fn new(
        run: &RunWriter,
        name: fn(Part) -> String,
        signed: &'s SignedParts,
        width: usize,
    ) -> Result<Lists<'s>> {
        let signers = signed.folders[0].part;
        Ok(Lists {
            signed,
            files: (signers.all().map(|to| run.create(&name(to)))).collect::<Result<_>>()?,
            docs: Vec::new(),
            codes: Codes::new(width),
            searched: 0,
        })
    }

    /// Adds the query of document `doc` to the block.
    pub(super) fn push(&mut self, doc: u32, code: Code<'_>) {
        self.docs.push(doc);
        self.codes.push_code(code);
    }

    pub(super) fn full(&self) -> bool {
        self.docs.len() == SEARCH_BLOCK
    }

    /// Searches the block with `search` (its documents and codes) and writes the lists.
    pub(super) fn write(
        &mut self,
        search: impl FnOnce(&[u32], &Codes) -> Vec<Vec<(f32, u32)>>,
    ) -> Result<()> {
        if self.docs.is_empty() {
            return Ok(());
        }
        let found = search(&self.docs, &self.codes);
        let mut words = vec![Vec::new(); self.files.len()];
        for (&doc, found) in self.docs.iter().zip(found) {
            let words = &mut words[self.signed.signer_of(doc) as usize - 1];
            words.extend([doc, found.len() as u32]);
            let hits = found
                .iter()
                .flat_map(|&(cosine, other)| [cosine.to_bits(), other]);
            words.extend(hits);
        }
        for (file, words) in self.files.iter_mut().zip(words) {
            if !words.is_empty() {
                write_list(file, &words).map_err(|e| Error::io(file.target(), e))?;
            }
        }
        self.searched += self.docs.len();
        self.docs.clear();
        self.codes = Codes::new(self.codes.width());
        Ok(())
    }

    /// Ends the files and commits them.
    pub(super) fn finish(self, run: &mut RunWriter) -> Result<()> {
        for mut file in self.files {
            write_list(&mut file, &[]).map_err(|e| Error::io(file.target(), e))?;
            run.commit(file)?;
        }
        Ok(())
    }
}

/// Offers `found` the lists every searched part in `parts` wrote of the queries of embedded
/// part `signer`, whose documents are `docs`: `found` holds a list for each of them, from the
/// first (a share's lists, or the run's).
pub(in crate::pipeline::split::two_stage) fn read_lists(
    parts: &[StageFolder],
    signer: Part,
    docs: Range<u32>,
    found: &mut FoundInParts,
) -> Result<()> {
    for part in parts {
        read_nearest(part, &nearest_file(signer), &docs, &mut found.documents)?;
        read_nearest(part, &nearest_titles_file(signer), &docs, &mut found.titles)?;
    }
    Ok(())
}

/// Offers `found` every list a searched part wrote into its file `name`, each of a document
/// of `docs`, which `found` numbers from the first.
fn read_nearest(
    part: &StageFolder,
    name: &str,
    docs: &Range<u32>,
    found: &mut NearestLists,
) -> Result<()> {
    let documents = part.folder.summary.documents as u32;
    let invalid =
        |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    part.folder.read_with(name, |r| {
        loop {
            let words = read_list(r)?;
            if words.is_empty() {
                return Ok(());
            }
            let mut words = words.as_slice();
            while let [doc, count, rest @ ..] = words {
                let count = *count as usize;
                if !docs.contains(doc) || rest.len() < 2 * count {
                    return Err(invalid("a list of another run's documents"));
                }
                let hits: Vec<(f32, u32)> = (rest[..2 * count].chunks_exact(2))
                    .map(|w| (f32::from_bits(w[0]), w[1]))
                    .collect();
                if hits.iter().any(|&(_, other)| other >= documents) {
                    return Err(invalid("a list of another run's documents"));
                }
                found.offer(doc - docs.start, hits);
                words = &rest[2 * count..];
            }
            if !words.is_empty() {
                return Err(invalid("a list cut short"));
            }
        }
    })
}
