//! The MinHash signatures' settings: length, seed and LSH banding. The `minhash` method and
//! the two-stage index share them (through [`crate::confirm::ConfirmSettings`]), and an index
//! manifest records them, so they check themselves wherever they come from.

use serde::{Deserialize, Serialize};

use super::{Hashing, LshParams};
use crate::confirm::{Confirm, ConfirmRule};
use crate::error::{Error, Result};

/// The longest signature accepted: 4 KiB a document. Far beyond any useful accuracy (the
/// estimate's error shrinks with the square root of the length), and a guard against a
/// setting or a damaged manifest asking for gigabytes.
pub const MAX_NUM_PERM: usize = 1024;

/// The Jaccard similarity the evidence rule's banding is set for when its containment rule is
/// on: the pairs that rule rescues sit below the whole-text threshold.
const CONTAINMENT_BANDING: f64 = 0.7;

/// Signature length, permutation seed and LSH banding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MinHashParams {
    /// Permutations, the signature length [default: 128].
    #[serde(default = "default_num_perm")]
    pub num_perm: usize,
    /// Seed of the permutations [default: 1].
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// LSH bands, given with `rows` [default: chosen for the threshold and rule, 20 x 6 under
    /// the evidence rule].
    #[serde(default)]
    pub bands: Option<usize>,
    /// Slots per LSH band, given with `bands`.
    #[serde(default)]
    pub rows: Option<usize>,
    /// How the slots are drawn [default: permutations].
    #[serde(default)]
    pub hashing: Hashing,
}

fn default_num_perm() -> usize {
    128
}

fn default_seed() -> u64 {
    1
}

impl Default for MinHashParams {
    fn default() -> Self {
        MinHashParams {
            num_perm: default_num_perm(),
            seed: default_seed(),
            bands: None,
            rows: None,
            hashing: Hashing::default(),
        }
    }
}

impl MinHashParams {
    /// Checks the length and that the banding fits in it.
    pub fn validate(&self) -> Result<()> {
        if !(1..=MAX_NUM_PERM).contains(&self.num_perm) {
            return Err(Error::Setting {
                key: "num_perm",
                message: format!(
                    "must be between 1 and {MAX_NUM_PERM}, not {}",
                    self.num_perm
                ),
            });
        }
        match (self.bands, self.rows) {
            (None, None) => Ok(()),
            (Some(bands), Some(rows)) if bands >= 1 && rows >= 1 => {
                if bands.saturating_mul(rows) > self.num_perm {
                    return Err(Error::Setting {
                        key: "bands",
                        message: format!(
                            "{bands} x `rows` {rows} do not fit in `num_perm` {}",
                            self.num_perm
                        ),
                    });
                }
                Ok(())
            }
            (Some(_), Some(_)) => Err(Error::Setting {
                key: "bands",
                message: "and `rows` must be at least 1 each".into(),
            }),
            _ => Err(Error::Usage("give `bands` and `rows` together".into())),
        }
    }

    /// The banding in use: the one given, or the optimum for `rule`. The plain rules take
    /// datasketch's optimum at their threshold. The evidence rule weighs every candidate
    /// again, so a missed pair costs more than an extra candidate: its banding weights misses
    /// 0.9, at its threshold (14 x 9 at 0.8) or, where its containment rule accepts pairs
    /// below that threshold, at Jaccard 0.7 at most (20 x 6: as fast as 14 x 9 at 100k
    /// documents, and the validation suite's domains all gain; docs/evaluation.md).
    pub fn banding(&self, rule: &ConfirmRule) -> LshParams {
        match (self.bands, self.rows) {
            (Some(bands), Some(rows)) => LshParams { bands, rows },
            _ if rule.confirm == Confirm::Evidence => {
                let threshold = if rule.containment > 0.0 {
                    rule.threshold.min(CONTAINMENT_BANDING)
                } else {
                    rule.threshold
                };
                LshParams::weighted_optimal(threshold, self.num_perm, 0.9)
            }
            _ => LshParams::optimal(rule.threshold, self.num_perm),
        }
    }

    /// The same settings with the banding made explicit (what an index records).
    pub fn resolved(&self, rule: &ConfirmRule) -> MinHashParams {
        let lsh = self.banding(rule);
        MinHashParams {
            bands: Some(lsh.bands),
            rows: Some(lsh.rows),
            ..*self
        }
    }

    /// The permutations these settings describe.
    pub fn hasher(&self) -> super::MinHasher {
        super::MinHasher::with_hashing(self.num_perm, self.seed, self.hashing)
    }
}

/// Checks that a similarity threshold lies in (0, 1].
pub fn check_threshold(threshold: f64) -> Result<()> {
    if threshold > 0.0 && threshold <= 1.0 {
        Ok(())
    } else {
        Err(Error::Setting {
            key: "threshold",
            message: format!("must lie in (0, 1], not {threshold}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_lengths_and_bandings_are_refused_by_name() {
        let ok = MinHashParams::default();
        assert!(ok.validate().is_ok());
        for (params, expected) in [
            (MinHashParams { num_perm: 0, ..ok }, "`num_perm`"),
            (
                MinHashParams {
                    num_perm: 1_000_000_000,
                    ..ok
                },
                "`num_perm`",
            ),
            (
                MinHashParams {
                    bands: Some(16),
                    ..ok
                },
                "together",
            ),
            (
                MinHashParams {
                    bands: Some(0),
                    rows: Some(8),
                    ..ok
                },
                "at least 1",
            ),
            (
                MinHashParams {
                    bands: Some(200),
                    rows: Some(1),
                    ..ok
                },
                "do not fit",
            ),
        ] {
            let err = params.validate().unwrap_err().to_string();
            assert!(err.contains(expected), "{params:?}: {err}");
        }
        let rule = ConfirmRule {
            threshold: 5.0,
            ..ConfirmRule::default()
        };
        assert!(rule.validate().unwrap_err().to_string().contains("(0, 1]"));
    }

    #[test]
    fn resolving_records_the_banding_chosen_for_the_rule() {
        let evidence = ConfirmRule::default();
        let plain = ConfirmRule {
            threshold: 0.7,
            confirm: Confirm::Estimate,
            ..evidence
        };
        let banding = |rule: &ConfirmRule| {
            let resolved = MinHashParams::default().resolved(rule);
            (resolved.bands.unwrap(), resolved.rows.unwrap())
        };
        assert_eq!(banding(&evidence), (20, 6), "recall-weighted at 0.7");
        let no_containment = ConfirmRule {
            containment: 0.0,
            ..evidence
        };
        assert_eq!(banding(&no_containment), (14, 9), "recall-weighted at 0.8");
        assert_eq!(banding(&plain), (14, 9), "datasketch's optimum at 0.7");
        let at_half = ConfirmRule {
            threshold: 0.5,
            ..plain
        };
        let recorded = MinHashParams::default().resolved(&plain);
        assert_eq!(
            recorded.banding(&at_half),
            recorded.banding(&plain),
            "a recorded banding is kept"
        );
    }
}
