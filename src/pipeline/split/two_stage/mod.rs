//! Two-stage split over machines: parts that sign and embed their share of the input, then
//! the search and the confirming in one process or split by part.
//!
//! In the order a run goes through them:
//! - `staged`: each part signs and embeds its share (`neardup dedup --part I/N`); one process
//!   can then search, confirm and write as one run does (`neardup merge embedded*/`);
//! - `by_cell`: the cells learned once from the embedded parts, then each part searches the
//!   queries that probe the cells it owns;
//! - `by_share`: each embedded part's candidates gathered from the searched parts and
//!   confirmed by it, for the MinHash join (`super::minhash`) to write.
//!
//! Each reuses the whole run's steps (`pipeline::two_stage`): loading, the search within
//! cells, the MinHash proposals and the classifier.

mod by_cell;
mod by_share;
mod staged;

pub(in crate::pipeline) use by_cell::{
    join as join_searched, join_cells, learn as learn_cells_once, search_part as search_cells_part,
};
pub(in crate::pipeline) use by_share::confirm_part as confirm_searched_part;
pub(in crate::pipeline) use staged::{embed_part, join as join_embedded};
