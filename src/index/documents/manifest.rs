//! The manifest (`neardup-index.json`): what an index was built with, so that a later process
//! embeds and signs exactly as the builder did, checked when read (digests of what shaped the
//! sketches and the vectors), and rewritten in the current format before the first write.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{DocumentIndex, IndexSettings};
use crate::embed::ModelIdentity;
use crate::error::{Error, Location, Result};
use crate::output::write_json_pretty;
use crate::settings::{MethodName, SettingError, read_among};

/// The manifest's file name inside an index folder.
pub const MANIFEST: &str = "neardup-index.json";
/// Version 2 records the settings through the same types a pipeline file uses; version 5
/// stores signatures as base64 strings; version 6 may record a corpus centre; version 7 records
/// the digest of the settings that shaped its sketches; version 8 the digest of what shaped its
/// vectors.
pub(super) const FORMAT: u64 = 8;
/// The oldest format this version opens: format 4 differs only in its points' signatures,
/// which are read either way, formats 4 and 5 have no centre, and formats before 7 no sketch
/// digest, formats before 8 no vector digest. Its manifest says 8 from the first write on, so that an older neardup refuses the
/// index instead of failing on a new point.
const OLDEST_FORMAT: u64 = 4;

/// What the manifest records: everything needed to embed and sign like the builder did.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    pub(super) format: u64,
    /// The embedder's own description (model and where it was loaded from).
    pub embedder_source: String,
    /// The model the vectors were made with; opening with another is refused.
    pub model: ModelIdentity,
    /// Length of every vector.
    pub dimensions: usize,
    /// Documents in the store when it was last flushed (built, or closed after writes).
    pub documents: usize,
    /// [`ConfirmSettings::sketch_digest`](crate::confirm::ConfirmSettings::sketch_digest) of the settings the stored sketches were made with;
    /// absent before format 7.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) sketch_digest: Option<String>,
    /// The mean every vector was centred on, with `centre` set and enough documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub centred_on: Option<Vec<f32>>,
    /// [`Manifest::vector_digest`] as written; absent before format 8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) vector_digest: Option<String>,
    /// The sha256 of the learned rule's model file (`confirm_model`), where one was given: a
    /// file changed since would change every verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) confirm_model_sha256: Option<String>,
    /// The settings, resolved.
    #[serde(flatten)]
    pub settings: IndexSettings,
}

impl Manifest {
    /// SHA-256 of everything that shapes a stored vector: the embedder, its model's identity,
    /// the dimensions and the centre. A query vector made under other values would not be
    /// comparable with the stored ones, and every search would quietly miss.
    fn vector_digest(&self) -> String {
        use sha2::{Digest, Sha256};
        let shaping = serde_json::json!({
            "embedder": self.settings.embedder.embedder,
            "max_tokens": self.settings.embedder.max_tokens,
            "model": self.model,
            "dimensions": self.dimensions,
            "centre": self.settings.centre,
            "centred_on": self.centred_on,
        });
        format!("{:x}", Sha256::digest(shaping.to_string().as_bytes()))
    }

    /// The same manifest with its vector digest computed.
    pub(super) fn with_vector_digest(self) -> Manifest {
        Manifest {
            vector_digest: Some(self.vector_digest()),
            ..self
        }
    }

    /// Reads and checks the manifest of the index in `dir`.
    pub(super) fn read(dir: &Path) -> Result<Manifest> {
        let path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::Usage(format!(
                    "{} is not a neardup index (no {MANIFEST}); build one with `neardup index INPUT --index {}`",
                    dir.display(),
                    dir.display()
                ))
            } else {
                Error::io(&path, e)
            }
        })?;
        let bad = |key: Option<&str>, problem: String| {
            Error::input(
                Location::file(&path),
                key,
                problem,
                "the manifest was changed or damaged: rebuild the index with `neardup index`",
            )
        };
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(None, e.to_string()))?;
        let map = value
            .as_object()
            .ok_or_else(|| bad(None, "not a JSON object".into()))?;
        match map.get("format").and_then(|f| f.as_u64()) {
            Some(OLDEST_FORMAT..=FORMAT) => {}
            format => {
                return Err(Error::Usage(format!(
                    "{} has index format {}, this neardup reads formats {OLDEST_FORMAT} to {FORMAT}: rebuild the index with `neardup index`",
                    path.display(),
                    format.map_or("unknown".into(), |f| f.to_string()),
                )));
            }
        }
        // A manifest written before a setting existed takes its declared default.
        let manifest: Manifest = read_among(MethodName::TwoStage, map)
            .map_err(|SettingError { key, message }| bad(key.as_deref(), message))?;
        manifest
            .settings
            .validate()
            .map_err(|e| bad(None, e.to_string()))?;
        let digest = manifest.settings.confirm.sketch_digest();
        match &manifest.sketch_digest {
            Some(recorded) if *recorded != digest => {
                return Err(bad(
                    None,
                    "the settings that shape signatures (`ngram`, `char_ngram`, `stopwords`, \
                     `num_perm`, `seed`, `hashing`) are not those its documents were signed \
                     with: they were changed after the build"
                        .into(),
                ));
            }
            None if manifest.format >= 7 => {
                return Err(bad(Some("sketch_digest"), "missing".into()));
            }
            _ => {}
        }
        if let Some(centre) = &manifest.centred_on {
            let problem = if centre.len() != manifest.dimensions {
                Some(format!(
                    "`centred_on` holds {} numbers, and the vectors have {} dimensions",
                    centre.len(),
                    manifest.dimensions
                ))
            } else if !centre.iter().all(|x| x.is_finite()) {
                Some("`centred_on` holds a number that is not finite".to_owned())
            } else {
                None
            };
            if let Some(problem) = problem {
                return Err(bad(Some("centred_on"), problem));
            }
        }
        match &manifest.vector_digest {
            Some(recorded) if *recorded != manifest.vector_digest() => {
                return Err(bad(
                    None,
                    "what shapes its vectors (`embedder`, `max_tokens`, `model`, `dimensions`, \
                     `centre`, `centred_on`) is not what its documents were embedded with: it \
                     was changed after the build"
                        .into(),
                ));
            }
            None if manifest.format >= 8 => {
                return Err(bad(Some("vector_digest"), "missing".into()));
            }
            _ => {}
        }
        Ok(manifest)
    }
}

impl DocumentIndex {
    /// Rewrites an older format's manifest as [`FORMAT`], once, before the first write.
    pub(super) fn upgrade_manifest(&self) -> Result<()> {
        let mut current = self
            .manifest_current
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if !*current {
            self.write_manifest(self.manifest.documents)?;
            *current = true;
        }
        Ok(())
    }

    /// The manifest as this version writes it, with `documents` in the store.
    pub(super) fn current_manifest(&self, documents: usize) -> Manifest {
        Manifest {
            format: FORMAT,
            documents,
            sketch_digest: Some(self.manifest.settings.confirm.sketch_digest()),
            centred_on: self.centre.get().map(|c| c.as_slice().to_vec()),
            ..self.manifest.clone()
        }
        .with_vector_digest()
    }

    /// Writes [`DocumentIndex::current_manifest`] (atomically).
    pub(super) fn write_manifest(&self, documents: usize) -> Result<()> {
        write_json_pretty(&self.dir.join(MANIFEST), &self.current_manifest(documents))
    }
}
