//! [`TwoStageConfig`]: the two-stage method's settings, as a pipeline file, the flags and a
//! manifest give them.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::group::Linkage;
use crate::index::IndexSettings;
use crate::pipeline::Part;
use crate::search::cells_for;

/// Settings of the two-stage method.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TwoStageConfig {
    /// Embedder, vector store and MinHash confirmation: what an index records.
    #[serde(flatten)]
    pub settings: IndexSettings,
    /// Nearest neighbours per document taken as candidates.
    pub top_k: usize,
    /// Search every document's true top-k by a full scan of the store instead of the cells:
    /// the same candidates on every run and engine (up to which of several identical vectors
    /// tied at the k-th place is kept), one query at a time.
    pub exact_search: bool,
    /// K-means cells each document is searched within (`Some(0)`: none, the whole index is
    /// searched through its graph; `None`: as many as [`cells_for`] the corpus, where neither
    /// `exact_search` nor `part` asks for a search of the whole index).
    pub cells: Option<usize>,
    /// The nearest cells each document is searched in.
    pub cell_probes: usize,
    /// How pairs become groups.
    pub linkage: Linkage,
    /// Keep the vector index in this folder, for `neardup query` later; a temporary one
    /// otherwise. With `part`, the index `neardup index` built, which the parts share.
    #[serde(rename = "index")]
    pub index_dir: Option<PathBuf>,
    /// Split the run (`I/N`; `None`: run whole). With `index`: search and confirm only this
    /// slice of the documents in the shared index, and write its candidates for `neardup
    /// merge`. Without: sign and embed this share of the input for `neardup merge` to search
    /// (`pipeline::split::two_stage`).
    pub part: Option<Part>,
    /// Check the documents, a new batch, against the collection kept in this index folder too
    /// (`pipeline::two_stage::against`).
    #[serde(default)]
    pub against: Option<PathBuf>,
    /// With `against`: add the batch's records that are kept to the collection afterwards.
    #[serde(default)]
    pub add: bool,
}

impl TwoStageConfig {
    /// The cells a run over `documents` documents searches within: as many as asked, else as
    /// many as the corpus's size gives ([`cells_for`]).
    pub(in crate::pipeline) fn cells_of(&self, documents: usize) -> usize {
        match self.cells {
            Some(count) if count > 0 => count,
            _ => cells_for(documents),
        }
    }

    /// Checks the index settings, and that a part can be searched as it is split.
    pub fn validate(&self) -> Result<()> {
        self.settings.validate()?;
        let in_stages = self.part.is_some() && self.index_dir.is_none();
        if in_stages && (self.exact_search || self.cells == Some(0)) {
            return Err(Error::Usage(
                "a `part` without `index` signs and embeds its share, and the merge searches \
                 every share within cells: drop `exact_search` and `cells` 0, or build a shared \
                 index first with `neardup index INPUT --index DIR` and give each part `index`"
                    .into(),
            ));
        }
        if self.cells.is_some_and(|n| n > 0) && self.exact_search {
            return Err(Error::Usage(
                "`cells` compares each document with a few cells and `exact_search` with every \
                 document: give one of them"
                    .into(),
            ));
        }
        if self.cells.is_some_and(|n| n > 0) && self.part.is_some() && self.index_dir.is_some() {
            return Err(Error::Usage(
                "`cells` is learned over a whole run; a `part` searches the shared index as it \
                 was built: drop `cells`"
                    .into(),
            ));
        }
        if self.add && self.against.is_none() {
            return Err(Error::Usage(
                "`add` adds a batch's new records to the collection given by `against`: give \
                 `against` too"
                    .into(),
            ));
        }
        if self.against.is_some() && (self.part.is_some() || self.index_dir.is_some()) {
            return Err(Error::Usage(
                "`against` checks a new batch against a kept index; `index` and `part` build or \
                 split one: give `against` alone"
                    .into(),
            ));
        }
        Ok(())
    }
}

impl Default for TwoStageConfig {
    /// The index's defaults, searched within as many cells as the corpus asks for.
    fn default() -> Self {
        TwoStageConfig {
            settings: IndexSettings::default(),
            top_k: crate::search::DEFAULT_TOP_K,
            exact_search: false,
            cells: None,
            cell_probes: crate::search::DEFAULT_CELL_PROBES,
            linkage: Linkage::default(),
            index_dir: None,
            part: None,
            against: None,
            add: false,
        }
    }
}
