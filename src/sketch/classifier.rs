//! The MinHash classifier's settings: the signatures (length, seed, LSH banding) and the rule
//! that confirms a candidate pair. The `minhash` method and the two-stage index share them,
//! and an index manifest records them, so they check themselves wherever they come from.

use serde::{Deserialize, Serialize};

use super::{LshParams, share_band};
use crate::error::{Error, Result};

/// The longest signature accepted: 4 KiB a document. Far beyond any useful accuracy (the
/// estimate's error shrinks with the square root of the length), and a guard against a
/// setting or a damaged manifest asking for gigabytes.
pub const MAX_NUM_PERM: usize = 1024;

/// Signature length, permutation seed and LSH banding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MinHashParams {
    /// Permutations, the signature length [default: 128].
    #[serde(default = "default_num_perm")]
    pub num_perm: usize,
    /// Seed of the permutations [default: 1].
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// LSH bands, given with `rows` [default: chosen for the threshold, 14 x 9 at 0.7].
    #[serde(default)]
    pub bands: Option<usize>,
    /// Slots per LSH band, given with `bands`.
    #[serde(default)]
    pub rows: Option<usize>,
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
        }
    }
}

impl MinHashParams {
    /// Checks the length and that the banding fits in it.
    pub fn validate(&self) -> Result<()> {
        if !(1..=MAX_NUM_PERM).contains(&self.num_perm) {
            return Err(Error::Usage(format!(
                "`num_perm` must be between 1 and {MAX_NUM_PERM}, not {}",
                self.num_perm
            )));
        }
        match (self.bands, self.rows) {
            (None, None) => Ok(()),
            (Some(bands), Some(rows)) if bands >= 1 && rows >= 1 => {
                if bands.saturating_mul(rows) > self.num_perm {
                    return Err(Error::Usage(format!(
                        "`bands` {bands} x `rows` {rows} do not fit in `num_perm` {}",
                        self.num_perm
                    )));
                }
                Ok(())
            }
            (Some(_), Some(_)) => Err(Error::Usage(
                "`bands` and `rows` must be at least 1 each".into(),
            )),
            _ => Err(Error::Usage("give `bands` and `rows` together".into())),
        }
    }

    /// The banding in use: the one given, or datasketch's optimum for `threshold`.
    pub fn banding(&self, threshold: f64) -> LshParams {
        match (self.bands, self.rows) {
            (Some(bands), Some(rows)) => LshParams { bands, rows },
            _ => LshParams::optimal(threshold, self.num_perm),
        }
    }

    /// The same settings with the banding made explicit (what an index records).
    pub fn resolved(&self, threshold: f64) -> MinHashParams {
        let lsh = self.banding(threshold);
        MinHashParams {
            bands: Some(lsh.bands),
            rows: Some(lsh.rows),
            ..*self
        }
    }

    /// The permutations these settings describe.
    pub fn hasher(&self) -> super::MinHasher {
        super::MinHasher::new(self.num_perm, self.seed)
    }
}

/// How a candidate pair is confirmed.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Confirm {
    /// The signatures' Jaccard estimate must reach the threshold.
    #[default]
    Estimate,
    /// Sharing one LSH band is enough (datasketch's `MinHashLSH.query`).
    Band,
}

/// The rule a candidate must pass: a Jaccard threshold, reached by the estimate or by a
/// shared band.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfirmRule {
    /// Jaccard similarity of a duplicate [default: 0.7].
    #[serde(default = "default_threshold")]
    pub threshold: f64,
    /// How candidates are confirmed [default: estimate].
    #[serde(default)]
    pub confirm: Confirm,
}

fn default_threshold() -> f64 {
    0.7
}

impl Default for ConfirmRule {
    fn default() -> Self {
        ConfirmRule {
            threshold: default_threshold(),
            confirm: Confirm::default(),
        }
    }
}

impl ConfirmRule {
    /// Checks the threshold lies in (0, 1].
    pub fn validate(&self) -> Result<()> {
        check_threshold(self.threshold)
    }

    /// Whether two signatures whose Jaccard estimate is `estimate` pass under `banding`.
    pub fn accepts(&self, a: &[u32], b: &[u32], estimate: f64, banding: LshParams) -> bool {
        match self.confirm {
            Confirm::Estimate => estimate >= self.threshold,
            Confirm::Band => share_band(a, b, banding),
        }
    }
}

/// Checks that a similarity threshold lies in (0, 1].
pub fn check_threshold(threshold: f64) -> Result<()> {
    if threshold > 0.0 && threshold <= 1.0 {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "`threshold` must lie in (0, 1], not {threshold}"
        )))
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
    fn resolving_records_the_banding_chosen_for_the_threshold() {
        let chosen = LshParams::optimal(0.7, 128);
        let resolved = MinHashParams::default().resolved(0.7);
        assert_eq!(
            (resolved.bands, resolved.rows),
            (Some(chosen.bands), Some(chosen.rows))
        );
        assert_eq!(resolved.banding(0.2), chosen, "a recorded banding is kept");
    }
}
