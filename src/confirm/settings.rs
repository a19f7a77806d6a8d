//! [`ConfirmSettings`]: what shapes a document's sketch and a pair's verdict, as a pipeline
//! file, the flags and an index's manifest name them.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::learned::LearnedModel;
use super::rule::{Confirm, ConfirmRule};
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
