//! The settings an index is built with: its embedder, store and confirmation, and the
//! two-stage settings that outlive a run.

use serde::{Deserialize, Serialize};

use crate::confirm::{ConfirmSettings, Confirmer};
use crate::embed::{self, EmbedderSpec, ModelIdentity};
use crate::error::{Error, Result};
use crate::store::StoreSpec;

/// How an index embeds, stores and confirms: the two-stage settings that outlive a run, as a
/// pipeline file, the flags and the manifest give them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexSettings {
    /// The embedder.
    #[serde(flatten)]
    pub embedder: EmbedderSpec,
    /// Which engine holds the vectors.
    #[serde(flatten)]
    pub store: StoreSpec,
    /// Shingles, signatures and the rule that confirms a candidate.
    #[serde(flatten)]
    pub confirm: ConfirmSettings,
    /// Neighbours below this cosine are not candidates.
    pub min_cosine: f32,
    /// Centre every vector on the mean of the first documents embedded (see [`Centre`](crate::embed::Centre)) before
    /// it is stored or searched, and build the graph on int8 codes
    /// ([`GraphSettings::for_vectors`](crate::store::GraphSettings::for_vectors)).
    pub centre: bool,
}

impl Default for IndexSettings {
    fn default() -> Self {
        IndexSettings {
            embedder: EmbedderSpec::default(),
            store: StoreSpec::default(),
            confirm: ConfirmSettings::default(),
            min_cosine: crate::search::DEFAULT_MIN_COSINE,
            centre: embed::CENTRE_BY_DEFAULT,
        }
    }
}

impl IndexSettings {
    /// Checks every part (each value's range is checked where the settings are read).
    pub fn validate(&self) -> Result<()> {
        self.embedder.validate()?;
        self.store.validate()?;
        self.confirm.validate()
    }

    /// What signs records and confirms candidates under these settings.
    pub fn confirmer(&self) -> Result<Confirmer> {
        Confirmer::new(&self.confirm, self.min_cosine)
    }

    /// [`IndexSettings::confirmer`] for cosines of the vectors the model `embedder` makes: a
    /// learned rule's model must have been fitted on that model's cosines. The same model
    /// derived on another machine may differ in its last bits, and is taken with a warning.
    pub fn confirmer_for(&self, embedder: &ModelIdentity) -> Result<Confirmer> {
        let confirmer = self.confirmer()?;
        let Some(model) = confirmer.learned() else {
            return Ok(confirmer);
        };
        let file = self.confirm.confirm_model.as_ref().map_or_else(
            || "the shipped learned model".to_owned(),
            |path| path.display().to_string(),
        );
        if model.embedder != embedder.name {
            return Err(Error::Usage(format!(
                "{file} was fitted on the cosines of {}, and this run embeds with {}: give the \
                 embedder it was fitted with, or fit a model on this one (`neardup train`)",
                model.embedder, embedder.name
            )));
        }
        if model.embedder_sha256 != embedder.sha256 {
            tracing::warn!(
                "{file} was fitted on {} with weights of sha256 {}, and this run's have sha256 \
                 {} (derived on another machine?): its cosines may differ slightly",
                model.embedder,
                model.embedder_sha256,
                embedder.sha256
            );
        }
        Ok(confirmer)
    }

    /// The same settings for an index that lives one run (see [`StoreSpec::for_one_run`]).
    pub fn for_one_run(&self) -> IndexSettings {
        IndexSettings {
            store: self.store.for_one_run(),
            ..self.clone()
        }
    }

    /// The same settings with nothing left to a default, a file or the current folder: what
    /// the manifest records.
    pub fn resolved(&self) -> Result<IndexSettings> {
        self.validate()?;
        Ok(IndexSettings {
            embedder: self.embedder.resolved()?,
            store: self.store.resolved(),
            confirm: self.confirm.resolved()?,
            ..self.clone()
        })
    }
}
