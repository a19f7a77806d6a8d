//! MinHash in stages that split over machines: sign, band, confirm, join.
//!
//! One MinHash run holds every signature at once (512 bytes a document: 51 GB at a hundred
//! million). Split into `N` parts, each stage is `N` jobs that need no more than a share or
//! two, except the last:
//!
//! 1. **sign** (`neardup dedup --method minhash --part I/N --out signedI/`, [`sign`]): reads
//!    share `I` of the input, the records that start in the `I`th of `N` equal byte ranges
//!    ([`ByteRange`](crate::io::ByteRange); JSON Lines is entered mid-file, other formats are
//!    read from the start and the records before passed over), signs them, and writes their
//!    sketches, and each of their band keys (and, under the evidence rule, title keys) into
//!    the file of the part the key hashes to. Every document of one bucket is so in one file
//!    of every signed part. A part numbers its documents from 0; since shares follow each
//!    other in input order, a document's number in the run is its number in its part plus
//!    the documents of the parts before ([`SignedParts`](super::stage::SignedParts)), as one run numbers it.
//! 2. **band** (`neardup merge signed*/ --part J/N --out bandedJ/`, [`band()`]): reads the keys
//!    routed to `J` from every signed part; documents that share a key are candidates, exactly
//!    as one run proposes them. Each candidate goes to the part that signed one of its two
//!    documents, chosen by a hash of the pair.
//! 3. **confirm** (`neardup merge banded*/ --part I/N --out confirmedI/`, [`confirm`]): the
//!    candidates routed to `I`: part `I`'s sketches are held, and each other share is read a
//!    block at a time, for the candidates whose other document the block holds.
//! 4. **join** (`neardup merge confirmed*/ --out out/`): every candidate once, grouped by the
//!    confirmed pairs; the run's files, byte for byte those of one run (`summary.json` but for
//!    its timings and run id). Like one run's writing stage, it reads the corpus again and
//!    holds every id; it checks that each part's share holds the ids the part signed (an id
//!    repeated in two parts, or an input changed since, is refused). It holds the confirmed
//!    pairs, not the candidates: it merges the confirmed parts' sorted files as it reads them,
//!    once for the pairs, once for the scores grouping asks, and once to deal the candidates
//!    into a spill file for each slice of the candidates' file, each then sorted and written on
//!    its own. Of the signatures it reads only those of the few documents whose similarity
//!    grouping asks and no part scored.
//!
//! `neardup merge` given the folders of an earlier stage and no `--part` runs the stages left
//! in one process, one part at a time: the way on one machine. Stage folders are run folders
//! ([`RunWriter`]): their files are written atomically and read back checked against the
//! summary, whose settings say which stage wrote them and where the signed parts are.
//!
//! A two-stage run in stages (`split::two_stage`: `staged`, `by_cell`, `by_share`)
//! has stages of its own: `embedded`, signed parts that also hold their queries' codes, opened,
//! checked and numbered here as signed parts are; `cells`, learned once from them (one folder,
//! no part); and `searched`, the parts that searched the cells they own and banded a share of
//! the keys. Its `confirmed` parts are this module's: each share's candidates judged here, with
//! their cosines, and joined here, a pair found by two parts kept once with its highest cosine.

mod advance;
mod band;
mod join;
mod judge;
mod sign;

pub(in crate::pipeline) use advance::advance;
pub(in crate::pipeline) use band::{Routed, band, routed_to, write_routed};
pub(in crate::pipeline) use join::{check_signed, join};
pub(in crate::pipeline) use judge::{confirm, write_scored};
pub(in crate::pipeline) use sign::{KeyFiles, route_keys, sign_part};
