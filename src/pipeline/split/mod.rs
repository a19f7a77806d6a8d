//! Runs split over machines: the work shared out in parts, the run cut into stages, each
//! stage's output a folder the next one reads.
//!
//! One run holds every signature (and, for two-stage, every vector) at once. A split run gives
//! each of `N` machines a part of the work (`--part I/N`, [`Part`]) and cuts the run into
//! stages: each stage is `N` jobs, each job writes a folder (a run folder whose summary names
//! its stage, its part and the pipeline of the whole run), and the next stage reads the folders
//! of the one before. The last stage, the join, writes the files one run writes, byte for byte.
//!
//! What every split run shares lives here, bottom first:
//! - `part`: which slice of the work a part takes, and the check that folders are every part
//!   of one run;
//! - `stage`: the stages, their folders, the signed parts whose counts number the documents of
//!   the whole run, and a stage's summary;
//! - `share`: a signed part's sketches, read a block at a time.
//!
//! Its children are the methods that split, each a folder: `minhash` (sign, band, confirm,
//! join) and `two_stage` (sign and embed; learn the cells, search them, confirm each share's
//! candidates; join). Above them, `merge` is `neardup merge`: it reads a stage's folders and
//! runs the next stage, or joins; it also joins the parts of a two-stage run over one shared
//! index.

mod merge;
mod minhash;
mod part;
mod share;
mod sketches;
mod stage;
mod two_stage;

pub use merge::{Merged, advance, check_out, learn_cells, merge};
pub(super) use minhash::sign_part;
pub use part::Part;
pub use stage::PartWritten;
pub(super) use two_stage::embed_part;
