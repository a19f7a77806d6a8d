//! The MinHash signatures' settings: length, seed and LSH banding. The `minhash` method and
//! the two-stage index share them (through [`crate::confirm::ConfirmSettings`]), and an index
//! manifest records them, so they check themselves wherever they come from.

use serde::{Deserialize, Serialize};

use super::{Hashing, LshParams};
use crate::error::{Error, Result};

/// The longest signature accepted: 4 KiB a document. Far beyond any useful accuracy (the
/// estimate's error shrinks with the square root of the length), and a guard against a
/// setting or a damaged manifest asking for gigabytes.
pub const MAX_NUM_PERM: usize = 1024;

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
    /// 128 permutations (the design card's), seed 1, the banding chosen for the rule.
    fn default() -> Self {
        MinHashParams {
            num_perm: 128,
            seed: 1,
            bands: None,
            rows: None,
            hashing: Hashing::default(),
        }
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

    /// The banding given, if both its numbers are (else the confirm stage chooses one for its
    /// rule: `ConfirmSettings::banding`).
    pub fn given_banding(&self) -> Option<LshParams> {
        Some(LshParams {
            bands: self.bands?,
            rows: self.rows?,
        })
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
            crate::settings::read(crate::settings::MethodName::Minhash, &map)
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
}
