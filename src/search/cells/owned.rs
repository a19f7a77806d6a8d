//! The cells one part of a run in stages searches: a share of the cells, with the codes of
//! their members, and the merge of what every part found into each document's best.

use super::{CellPlacement, NO_CELL, Ranked, probing, search_cells};
use crate::search::codes::{Code, Codes};

/// Each searching document's best `k + 1` (itself among them) over the cells it probes, as
/// [`Cells::neighbours`] finds them, by document number: what the parts that own the cells
/// found, merged. A document's best over its cells is its best over the best of each part's,
/// whatever the parts, so the merge is one run's search.
pub(crate) struct NearestLists(pub(super) Ranked);

impl NearestLists {
    /// No hits yet for `documents` documents, each keeping its best `k + 1`.
    pub(crate) fn new(documents: usize, k: usize) -> NearestLists {
        NearestLists(Ranked::new(documents, k + 1))
    }

    /// Offers document `doc` the best `(cosine, document)` a part found for it, best first.
    pub(crate) fn offer(&mut self, doc: u32, hits: Vec<(f32, u32)>) {
        self.0.offer(doc, hits);
    }

    /// Document `doc`'s best, best first.
    pub(crate) fn list(&self, doc: u32) -> &[(f32, u32)] {
        self.0.list(doc as usize)
    }
}

/// The cells of a placement that one part of a run in stages searches, with the codes of
/// their members: a share of the corpus, not all of it. Each document that probes one of them
/// gets its best there ([`OwnedCells::search`]); merged over the parts ([`NearestLists`]),
/// those are its best over every cell it probes.
pub(crate) struct OwnedCells<'p> {
    placement: &'p CellPlacement,
    /// The members of each cell held; the others empty.
    members: Vec<Vec<u32>>,
    /// Those of them that are a title and nothing else, among which titles are searched.
    title_only: Vec<Vec<u32>>,
    /// Every member, ascending, and its code in the same order.
    held: Vec<u32>,
    codes: Codes,
    /// Whether each cell is held.
    owned: Vec<bool>,
}

impl<'p> OwnedCells<'p> {
    /// The cells of `placement` that `owned` says, their members' codes to be given
    /// ([`OwnedCells::held`], [`OwnedCells::hold`]), `width` wide; `title_only` says which
    /// documents are a title and nothing else (by document number).
    pub(crate) fn new(
        placement: &'p CellPlacement,
        owned: impl Fn(usize) -> bool,
        width: usize,
        title_only: &[bool],
    ) -> OwnedCells<'p> {
        let owned: Vec<bool> = (0..placement.cells()).map(owned).collect();
        let members = placement.members(|cell| owned[cell]);
        let title_only = (members.iter())
            .map(|docs| {
                docs.iter()
                    .copied()
                    .filter(|&d| title_only[d as usize])
                    .collect()
            })
            .collect();
        let mut held: Vec<u32> = members.concat();
        held.sort_unstable();
        let codes = Codes::new(width);
        OwnedCells {
            placement,
            members,
            title_only,
            held,
            codes,
            owned,
        }
    }

    /// The documents whose codes the cells need, ascending.
    pub(crate) fn held(&self) -> &[u32] {
        &self.held
    }

    /// Takes the code of the next document of [`OwnedCells::held`].
    pub(crate) fn hold(&mut self, code: Code<'_>) {
        self.codes.push_code(code);
    }

    /// Whether document `doc` probes a cell held here.
    pub(crate) fn probes_here(&self, doc: u32) -> bool {
        self.placement
            .probed(doc)
            .any(|cell| self.owned[cell as usize])
    }

    /// Whether a title routed to `cells` ([`CellPlacement::route`]) probes a cell held here.
    pub(crate) fn routed_here(&self, cells: &[u32]) -> bool {
        cells
            .iter()
            .any(|&cell| cell != NO_CELL && self.owned[cell as usize])
    }

    /// Each of `docs`' best `k + 1` (itself among them) among the members of the cells held
    /// here that it probes, `codes` being their codes in the same order: `(cosine, document)`,
    /// best first; none for a document that probes none.
    pub(crate) fn search(&self, docs: &[u32], codes: &Codes, k: usize) -> Vec<Vec<(f32, u32)>> {
        let probing = probing(
            self.members.len(),
            docs.iter().map(|&doc| {
                let probed = self.placement.probed(doc);
                probed.filter(|&cell| self.owned[cell as usize])
            }),
        );
        self.search_among(&probing, &self.members, codes, k)
    }

    /// Each title's best `k + 1` among the title-only members of the cells held here that it
    /// was routed to, as [`Cells::nearest_among`] finds them within every cell: `routed` holds
    /// each title's cells ([`CellPlacement::route`]), `codes` their codes in the same order.
    pub(crate) fn search_titles(
        &self,
        routed: &[u32],
        codes: &Codes,
        k: usize,
    ) -> Vec<Vec<(f32, u32)>> {
        let probing = probing(
            self.members.len(),
            routed.chunks_exact(self.placement.probes).map(|cells| {
                let cells = cells.iter().copied();
                cells.filter(|&cell| cell != NO_CELL && self.owned[cell as usize])
            }),
        );
        self.search_among(&probing, &self.title_only, codes, k)
    }

    /// Each query of `probing` (a row of `codes`) with its best `k + 1` among `members`.
    fn search_among(
        &self,
        probing: &[Vec<u32>],
        members: &[Vec<u32>],
        codes: &Codes,
        k: usize,
    ) -> Vec<Vec<(f32, u32)>> {
        assert_eq!(
            self.codes.len(),
            self.held.len(),
            "every member's code held"
        );
        let member = |doc: u32| {
            let row = self.held.binary_search(&doc).expect("a member's code held");
            self.codes.row(row)
        };
        let mut best = Ranked::new(codes.len(), k + 1);
        search_cells(
            probing,
            members,
            member,
            |query| codes.row(query as usize),
            &mut best,
            |_| {},
        );
        best.lists().map(<[_]>::to_vec).collect()
    }
}
