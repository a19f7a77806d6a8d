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
    /// Permutations, the signature length.
    pub num_perm: usize,
    /// Seed of the permutations.
    pub seed: u64,
    /// LSH bands, given with `rows` (`None`: chosen for the threshold and rule).
    pub bands: Option<usize>,
    /// Slots per LSH band, given with `bands`.
    pub rows: Option<usize>,
    /// How the slots are drawn.
    pub hashing: Hashing,
}

impl Default for MinHashParams {
    fn default() -> Self {
        crate::settings::default_of(crate::pipeline::MethodName::Minhash)
    }
}

impl MinHashParams {
    /// Checks that the banding fits in the signature (each value's range is checked where the
    /// settings are read).
    pub fn validate(&self) -> Result<()> {
        match (self.bands, self.rows) {
            (None, None) => Ok(()),
            (Some(bands), Some(rows)) if bands.saturating_mul(rows) > self.num_perm => {
                Err(Error::Setting {
                    key: "bands",
                    message: format!(
                        "{bands} x `rows` {rows} do not fit in `num_perm` {}",
                        self.num_perm
                    ),
                })
            }
            (Some(_), Some(_)) => Ok(()),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `given` as the `minhash` method's settings do, and checks the combination.
    fn read(given: serde_json::Value) -> std::result::Result<MinHashParams, String> {
        let map = given.as_object().expect("an object").clone();
        let params: MinHashParams =
            crate::settings::read(crate::pipeline::MethodName::Minhash, &map)
                .map_err(|e| e.to_string())?;
        params.validate().map_err(|e| e.to_string())?;
        Ok(params)
    }

    #[test]
    fn bad_lengths_and_bandings_are_refused_by_name() {
        assert_eq!(
            read(serde_json::json!({})).unwrap(),
            MinHashParams::default()
        );
        for (given, expected) in [
            (
                serde_json::json!({"num_perm": 0}),
                "`num_perm`: must lie in [1, 1024], not 0",
            ),
            (
                serde_json::json!({"num_perm": 1_000_000_000}),
                "`num_perm`: must lie in [1, 1024]",
            ),
            (serde_json::json!({"bands": 16}), "together"),
            (
                serde_json::json!({"bands": 0, "rows": 8}),
                "`bands`: must be at least 1, not 0",
            ),
            (serde_json::json!({"bands": 200, "rows": 1}), "do not fit"),
            (
                serde_json::json!({"threshold": 5.0}),
                "`threshold`: must lie in (0, 1], not 5.0",
            ),
        ] {
            let err = read(given.clone()).unwrap_err();
            assert!(err.contains(expected), "{given}: {err}");
        }
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
