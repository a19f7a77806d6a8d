//! A method and its settings: which of the ways to find duplicates a run takes.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::dedup::Found;
use super::{
    JaccardConfig, MinHashConfig, Part, ResemblanceConfig, SimHashConfig, TwoStageConfig, exact,
    minhash, simhash, two_stage,
};
use crate::error::Result;
use crate::group::Linkage;
use crate::io::{Input, ReadOptions};
use crate::settings::{MethodName, SettingError};

/// One method's settings as their own type ([`Method::config`]).
pub trait MethodConfig: serde::de::DeserializeOwned + Serialize {
    /// The method these settings are for.
    const NAME: MethodName;

    /// Checks the settings, naming the one that is off.
    fn validate(&self) -> Result<()>;
}

macro_rules! method_configs {
    ($($config:ty => $name:ident),* $(,)?) => {
        $(impl MethodConfig for $config {
            const NAME: MethodName = MethodName::$name;

            fn validate(&self) -> Result<()> {
                <$config>::validate(self)
            }
        })*
    };
}

method_configs!(
    MinHashConfig => Minhash,
    JaccardConfig => Jaccard,
    ResemblanceConfig => Resemblance,
    SimHashConfig => Simhash,
    TwoStageConfig => TwoStage,
);

/// A deduplication method with its settings. Each method's settings are one type, in the
/// method's own file, with the checks that involve several settings (each setting's default
/// and range are declared in [`crate::settings::SETTINGS`]); pipeline files, command-line flags,
/// `summary.json` and index manifests all go through these types.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case")]
pub enum Method {
    /// MinHash + LSH.
    #[serde(rename = "minhash")]
    MinHash(MinHashConfig),
    /// Exact Jaccard.
    Jaccard(JaccardConfig),
    /// Exact n-gram resemblance.
    Resemblance(ResemblanceConfig),
    /// SimHash + Hamming distance.
    #[serde(rename = "simhash")]
    SimHash(SimHashConfig),
    /// Embeddings + vector index top-k, confirmed by MinHash.
    TwoStage(Box<TwoStageConfig>),
}

impl Method {
    /// The method `name` with every setting at its default.
    pub fn defaults(name: MethodName) -> Method {
        Method::from_settings(name, Map::new()).expect("every method has defaults")
    }

    /// The method `name` with `settings` (keys as in a pipeline file), checked. An error names
    /// the key at fault; a key of another method says which methods it belongs to.
    pub fn from_settings(
        name: MethodName,
        settings: Map<String, Value>,
    ) -> Result<Method, SettingError> {
        Ok(match name {
            MethodName::Minhash => Method::MinHash(Self::config(settings)?),
            MethodName::Jaccard => Method::Jaccard(Self::config(settings)?),
            MethodName::Resemblance => Method::Resemblance(Self::config(settings)?),
            MethodName::Simhash => Method::SimHash(Self::config(settings)?),
            MethodName::TwoStage => Method::TwoStage(Box::new(Self::config(settings)?)),
        })
    }

    /// The settings of the method `T` is for, from `settings`, checked as
    /// [`Method::from_settings`] checks them: for a command that runs one method only.
    pub fn config<T: MethodConfig>(settings: Map<String, Value>) -> Result<T, SettingError> {
        let config: T = crate::settings::read(T::NAME, &settings)?;
        config.validate().map_err(|e| match e {
            crate::error::Error::Setting { key, message } => SettingError {
                key: Some(key.to_owned()),
                message,
            },
            e => SettingError {
                key: None,
                message: e.to_string(),
            },
        })?;
        Ok(config)
    }

    /// The method's name as a user writes it.
    pub fn name(&self) -> MethodName {
        match self {
            Method::MinHash(_) => MethodName::Minhash,
            Method::Jaccard(_) => MethodName::Jaccard,
            Method::Resemblance(_) => MethodName::Resemblance,
            Method::SimHash(_) => MethodName::Simhash,
            Method::TwoStage(_) => MethodName::TwoStage,
        }
    }

    /// Checks the settings, naming the one that is off.
    pub fn validate(&self) -> Result<()> {
        match self {
            Method::MinHash(c) => c.validate(),
            Method::Jaccard(c) => c.validate(),
            Method::Resemblance(c) => c.validate(),
            Method::SimHash(c) => c.validate(),
            Method::TwoStage(c) => c.validate(),
        }
    }

    /// The part of a split run this method's settings name, if any.
    pub fn part(&self) -> Option<Part> {
        match self {
            Method::MinHash(c) => c.part,
            Method::TwoStage(c) => c.part,
            _ => None,
        }
    }

    /// Names `part` (a method that splits) or none.
    pub fn set_part(&mut self, part: Option<Part>) {
        match self {
            Method::MinHash(c) => c.part = part,
            Method::TwoStage(c) => c.part = part,
            _ => debug_assert!(part.is_none(), "only MinHash and two-stage split"),
        }
    }

    /// The score a pair must reach to be confirmed, on the scale of [`Method::score_name`]
    /// (SimHash: `1 − max_distance/64`; MinHash with band confirmation: its threshold).
    pub fn threshold(&self) -> f64 {
        match self {
            Method::MinHash(c) => c.confirm.rule.threshold,
            Method::Jaccard(c) => c.threshold,
            Method::Resemblance(c) => c.threshold,
            Method::SimHash(c) => 1.0 - f64::from(c.max_distance) / 64.0,
            Method::TwoStage(c) => c.settings.confirm.rule.threshold,
        }
    }

    /// This method with `threshold` as [`Method::threshold`] gives it (SimHash: the largest
    /// Hamming distance whose similarity reaches it).
    pub fn with_threshold(&self, threshold: f64) -> Method {
        let mut method = self.clone();
        match &mut method {
            Method::MinHash(c) => c.confirm.rule.threshold = threshold,
            Method::Jaccard(c) => c.threshold = threshold,
            Method::Resemblance(c) => c.threshold = threshold,
            Method::SimHash(c) => c.max_distance = ((1.0 - threshold) * 64.0 + 1e-9).floor() as u32,
            Method::TwoStage(c) => c.settings.confirm.rule.threshold = threshold,
        }
        method
    }

    /// How pairs become groups.
    pub fn linkage(&self) -> Linkage {
        match self {
            Method::MinHash(c) => c.linkage,
            Method::Jaccard(c) => c.linkage,
            Method::Resemblance(c) => c.linkage,
            Method::SimHash(c) => c.linkage,
            Method::TwoStage(c) => c.linkage,
        }
    }

    /// The name of the score written for each pair.
    pub fn score_name(&self) -> &'static str {
        match self {
            Method::TwoStage(c) if c.settings.confirm.rule.is_learned() => "probability",
            Method::MinHash(_) | Method::TwoStage(_) => "jaccard_estimate",
            Method::Jaccard(_) => "jaccard",
            Method::Resemblance(_) => "resemblance",
            Method::SimHash(_) => "simhash_similarity",
        }
    }

    /// Whether each pair's score is the similarity groups are formed by (for MinHash and
    /// two-stage, the Jaccard estimate of the signatures), so that a join of parts may answer
    /// grouping from the scores the parts wrote; a learned rule's probability is not.
    pub fn scores_are_similarities(&self) -> bool {
        !matches!(self, Method::TwoStage(c) if c.settings.confirm.rule.is_learned())
    }

    pub(super) fn find(
        &self,
        inputs: &[Input],
        read: &ReadOptions,
        models: &Path,
    ) -> Result<Found> {
        match self {
            Method::MinHash(c) => minhash::run(inputs, read, c),
            Method::Jaccard(c) => exact::run(inputs, read, &c.shingling, c.threshold, false),
            Method::Resemblance(c) => exact::run(inputs, read, &c.shingling, c.threshold, true),
            Method::SimHash(c) => simhash::run(inputs, read, c),
            Method::TwoStage(c) => two_stage::run(inputs, read, c, models),
        }
    }
}
