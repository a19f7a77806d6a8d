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

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use confirmer::Confirmer;
pub use copies::{SignOnce, Signing};
pub use evidence::{Evidence, Facts, FactsRef, SAMPLE_SIZE, Sketch, SketchFacts, SketchRef};
pub use learned::{
    FEATURES, Features, FittedOn, LEARNED_THRESHOLD, LearnedModel, Term, Weighing, features,
};
pub use proposals::{proposed_pairs, proposed_pairs_between, title_block_pairs, title_key};
pub use rule::{Confirm, ConfirmRule, Match, NumberGuard, Rule, Standing, Verdict};

use crate::error::Result;
use crate::sketch::{LshParams, MinHashParams};
use crate::text::{Shingler, ShinglingSpec, UNIGRAMS};

/// The Jaccard similarity the evidence rule's banding is set for when its containment rule is
/// on: the pairs that rule rescues sit below the whole-text threshold.
const CONTAINMENT_BANDING: f64 = 0.7;

/// What shapes a document's sketch and a pair's verdict: the shingles, the signatures and the
/// rule. Flattened into the settings of the `minhash` method, the two-stage method and an
/// index, so a file, the flags and a manifest name its keys alike (`ngram`, `num_perm`,
/// `threshold`, `containment`, ...).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConfirmSettings {
    /// The shingles signatures are made of.
    #[serde(flatten)]
    pub shingling: ShinglingSpec,
    /// Signature length, seed and banding.
    #[serde(flatten)]
    pub minhash: MinHashParams,
    /// What confirms a candidate.
    #[serde(flatten)]
    pub rule: ConfirmRule,
    /// The learned rule's model file (`neardup train` writes one); none: the shipped one.
    pub confirm_model: Option<PathBuf>,
}

impl ConfirmSettings {
    /// Checks every part.
    pub fn validate(&self) -> Result<()> {
        self.shingling.validate()?;
        self.minhash.validate()?;
        let refuse = |key, message: &str| {
            Err(crate::error::Error::Setting {
                key,
                message: message.into(),
            })
        };
        if self.confirm_model.is_some() && !self.rule.is_learned() {
            return refuse(
                "confirm_model",
                "weighs evidence where duplicates are one meaning only: add \
                 `match = \"meaning\"` (--match meaning)",
            );
        }
        if self.rule.is_learned() && self.rule.confirm != Confirm::Evidence {
            return refuse(
                "confirm",
                "chooses how copies are confirmed; `match = \"meaning\"` weighs every piece of \
                 evidence with its model instead: leave `confirm` out",
            );
        }
        Ok(())
    }

    /// The model the learned rule weighs with, where the rule is learned: the file given, or
    /// the one fitted on the validation suite.
    pub fn learned_model(&self) -> Result<Option<LearnedModel>> {
        match (self.rule.is_learned(), &self.confirm_model) {
            (true, Some(path)) => LearnedModel::load(path).map(Some),
            (true, None) => Ok(Some(LearnedModel::shipped())),
            (false, _) => Ok(None),
        }
    }

    /// The same settings with nothing left to a default or a file: the shingling resolved and
    /// the banding made explicit (what an index manifest records).
    pub fn resolved(&self) -> Result<ConfirmSettings> {
        let banding = self.banding();
        Ok(ConfirmSettings {
            shingling: self.shingling.resolved(UNIGRAMS)?,
            minhash: MinHashParams {
                bands: Some(banding.bands),
                rows: Some(banding.rows),
                ..self.minhash
            },
            rule: self.rule,
            confirm_model: match &self.confirm_model {
                Some(path) => {
                    Some(std::path::absolute(path).map_err(|e| crate::error::Error::io(path, e))?)
                }
                None => None,
            },
        })
    }

    /// A digest of the settings that shape a stored sketch: the shingling and the hashing (not
    /// the banding or the rule, which only weigh sketches). An index keeps it beside its
    /// sketches, so that a manifest edited by hand cannot make it compare a new text's
    /// signature with stored ones made otherwise.
    pub fn sketch_digest(&self) -> String {
        use sha2::{Digest, Sha256};
        let shaping = serde_json::json!({
            "shingling": self.shingling,
            "num_perm": self.minhash.num_perm,
            "seed": self.minhash.seed,
            "hashing": self.minhash.hashing,
        });
        format!("{:x}", Sha256::digest(shaping.to_string().as_bytes()))
    }

    /// What splits texts into shingles under these settings (word 1-grams unless told).
    pub fn shingler(&self) -> Result<Shingler> {
        self.shingling.shingler(UNIGRAMS)
    }

    /// The LSH banding: the one given, or the optimum for the rule. The plain rules take
    /// datasketch's optimum at their threshold. The evidence rule weighs every candidate
    /// again, so a missed pair costs more than an extra candidate: its banding weights misses
    /// 0.9, at its threshold (14 x 9 at 0.8) or, where its containment rule accepts pairs
    /// below that threshold, at Jaccard 0.7 at most (20 x 6: as fast as 14 x 9 at 100k
    /// documents, and the validation suite's domains all gain; docs/evaluation.md).
    pub fn banding(&self) -> LshParams {
        let (rule, num_perm) = (&self.rule, self.minhash.num_perm);
        match self.minhash.given_banding() {
            Some(given) => given,
            // The learned rule's threshold is a probability: its candidates are banded as the
            // containment rule's are.
            None if rule.is_learned() => {
                LshParams::weighted_optimal(CONTAINMENT_BANDING, num_perm, 0.9)
            }
            None if rule.confirm == Confirm::Evidence => {
                let threshold = if rule.containment > 0.0 {
                    rule.threshold.min(CONTAINMENT_BANDING)
                } else {
                    rule.threshold
                };
                LshParams::weighted_optimal(threshold, num_perm, 0.9)
            }
            None => LshParams::optimal(rule.threshold, num_perm),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolving_records_the_banding_chosen_for_the_rule() {
        let with_rule = |rule: ConfirmRule| ConfirmSettings {
            rule,
            ..ConfirmSettings::default()
        };
        let evidence = ConfirmRule::default();
        let plain = ConfirmRule {
            threshold: 0.7,
            confirm: Confirm::Estimate,
            ..evidence
        };
        let banding = |rule: ConfirmRule| {
            let resolved = with_rule(rule).resolved().unwrap().minhash;
            (resolved.bands.unwrap(), resolved.rows.unwrap())
        };
        assert_eq!(banding(evidence), (20, 6), "recall-weighted at 0.7");
        let no_containment = ConfirmRule {
            containment: 0.0,
            ..evidence
        };
        assert_eq!(banding(no_containment), (14, 9), "recall-weighted at 0.8");
        assert_eq!(banding(plain), (14, 9), "datasketch's optimum at 0.7");
        let at_half = ConfirmRule {
            threshold: 0.5,
            ..plain
        };
        let recorded = with_rule(plain).resolved().unwrap();
        let recorded_at_half = ConfirmSettings {
            rule: at_half,
            ..recorded.clone()
        };
        assert_eq!(
            recorded_at_half.banding(),
            recorded.banding(),
            "a recorded banding is kept"
        );
    }
}
