//! Confirmation: deciding whether a candidate pair is a duplicate, and saying why.
//!
//! Every method that proposes candidates hands each pair here: the `minhash` method's LSH
//! bands, the two-stage method's nearest neighbours, a query or a write against an index,
//! `neardup explain` on two records. So a pair gets the same verdict whichever way it was found.
//!
//! # What a document keeps
//!
//! Confirmation never sees the texts, only a [`Sketch`] of each, made once when the document is
//! read and stored with it in an index:
//! - the MinHash signature of its word set (128 slots), whose agreement with another signature
//!   estimates the Jaccard similarity of the two whole texts;
//! - its number of distinct words;
//! - a few exact [`Facts`]: its title's words with bracketed notes removed, its number-like
//!   words (`2009`, `iii`), whether it has a body beyond the title, and a bottom-k sample (the
//!   128 smallest word hashes). The sample answers what the signature cannot: how much of a
//!   short text a long one contains. Two samples estimate that share whatever the two sizes
//!   (exactly, when both texts have at most 128 distinct words).
//!
//! A record whose text another had before takes that one's sketch and shares its storage
//! ([`SignOnce`]): a corpus of many copies is signed once per distinct text.
//!
//! [`Evidence`] is what two sketches say of a pair: the Jaccard estimate, the containment of
//! the smaller text in the larger, the titles' Jaccard, whether numbers differ (in the titles
//! and in the whole texts), the smaller text's size, whether both have a body.
//!
//! # The evidence rule
//!
//! [`ConfirmRule`] turns the evidence into a [`Verdict`] that names the [`Rule`] that decided.
//! The default, [`Confirm::Evidence`], reads in order, and the first that applies decides:
//!
//! 1. **short text**: fewer than 4 distinct words is never a duplicate (`editorial` would match
//!    every other `editorial`);
//! 2. **numbers**: where each title has a number the other lacks, the records differ
//!    (`phase ii` / `phase iii`, two years of an annual report). Numbers in an abstract do not
//!    count where both records have a title: a version, page or section number differs
//!    between copies of one paper. Without titles the whole texts' numbers count;
//! 3. **jaccard**: a Jaccard estimate of at least 0.8 is a duplicate;
//! 4. **containment**: so are two records that both have a body when the smaller's words are
//!    at least 70% found in the larger (at least 10 words) and their titles, where both have
//!    one, share half their words: a truncated abstract, a glued prefix ("abstractthe"),
//!    added boilerplate, a different stop-word processing of the same text;
//! 5. **title**: so are a record and a copy with its title only, when their titles (notes
//!    removed, at least 4 words, 5 where they differ) reach a Jaccard of 0.8: four words and
//!    a fifth is another title ("letter to the editor" and its "reply").
//!
//! Anything else is **below**; a two-stage neighbour under `min_cosine` is **distant**.
//! `--confirm estimate --threshold 0.7` is the design card's plain rule (the Jaccard estimate
//! alone); `--confirm band` accepts any pair that shares an LSH band (datasketch's query).
//!
//! # Why these rules
//!
//! Every threshold was chosen leaving one domain out of the validation suite in
//! `eval/domains/` (bibliographic records, citation strings, CD catalogue entries, the same
//! papers in two digital libraries, generated repository noise): for each domain, the
//! settings best on the others were scored on it, and no default may score below the plain
//! rule on any domain. docs/evaluation.md gives the tables.
//!
//! # Settings
//!
//! [`ConfirmSettings`] gathers what shapes a sketch and a verdict (shingles, signatures, rule);
//! the `minhash` method, the two-stage method and an index manifest all embed it, and a
//! [`Confirmer`] applies it.

mod confirmer;
mod copies;
mod evidence;
mod learned;
mod proposals;
#[cfg(any(feature = "edge", feature = "qdrant", test))]
pub(crate) use evidence::base64_words;
mod rule;
mod settings;
mod title_only;

pub use confirmer::Confirmer;
pub use copies::{SignOnce, Signing};
pub use evidence::{Evidence, Facts, FactsRef, SAMPLE_SIZE, Sketch, SketchFacts, SketchRef};
pub use learned::{
    FEATURES, Features, FittedOn, LEARNED_THRESHOLD, LearnedModel, Term, Weighing, features,
};
pub use proposals::{proposed_pairs, proposed_pairs_between, title_block_pairs, title_key};
pub use rule::{Confirm, ConfirmRule, Match, NumberGuard, Rule, Standing, Verdict};
pub use settings::ConfirmSettings;
pub use title_only::TitleOnlyIndex;
