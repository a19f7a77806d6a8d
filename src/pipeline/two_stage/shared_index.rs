//! The shared index a part of a split two-stage run searches its slice in (and the collection
//! a new batch is checked against), opened only if it was built as the run asks.

use std::path::Path;

use crate::error::{Error, Result};
use crate::index::{Collection, DocumentIndex, IndexSettings, Manifest};
use crate::settings::Scope;

/// Opens the index that the parts of a split run share, and checks that it was built with
/// the settings this part was given (an embedder, shingling or rule of its own would make its
/// candidates unlike the other parts').
pub(super) fn open_shared(
    dir: &Path,
    settings: &IndexSettings,
    models: &Path,
) -> Result<DocumentIndex> {
    open_matching(dir, settings, models, "this part")
}

/// Opens the index in `dir`, refusing it unless it was built with `settings` (those that
/// shape an index); `asker` names who asks, in the message.
pub(super) fn open_matching(
    dir: &Path,
    settings: &IndexSettings,
    models: &Path,
    asker: &str,
) -> Result<DocumentIndex> {
    let index = DocumentIndex::open(dir, models, settings.store.qdrant_url.as_deref())?;
    check_built_with(dir, index.manifest(), settings, asker)?;
    Ok(index)
}

/// The collection in `dir` a new batch is checked against, refused unless it was built with
/// `settings`; its store is not opened ([`Collection`]).
pub(super) fn open_collection(dir: &Path, settings: &IndexSettings) -> Result<Collection> {
    let collection = Collection::open(dir)?;
    check_built_with(dir, collection.manifest(), settings, "this run")?;
    Ok(collection)
}

/// Refuses the index in `dir`, built as `manifest` says, unless it was built with `settings`.
fn check_built_with(
    dir: &Path,
    manifest: &Manifest,
    settings: &IndexSettings,
    asker: &str,
) -> Result<()> {
    // Where the model files and the server are may differ between machines (the model itself
    // is checked by its digest when the index opens), and how the existing collection is laid
    // out is the index's to say.
    let as_map = |s: &IndexSettings| match serde_json::to_value(s) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => unreachable!("settings serialise to a JSON object"),
    };
    let wanted = as_map(&settings.resolved()?);
    let built = as_map(&manifest.settings);
    // The banding follows from the threshold and rule: name those first.
    let derived = |key: &str| matches!(key, "bands" | "rows");
    let mut keys: Vec<&String> = wanted
        .keys()
        .filter(|k| !crate::settings::keys_in(Scope::Local).any(|local| local == k.as_str()))
        .collect();
    keys.sort_by_key(|k| derived(k));
    for key in keys {
        let value = &wanted[key];
        let theirs = built.get(key).unwrap_or(&serde_json::Value::Null);
        if theirs != value {
            return Err(Error::Usage(format!(
                "the index in {} was built with `{key}` {theirs}, and {asker} asks for {value}: \
                 give the settings the index was built with (see {})",
                dir.display(),
                dir.join(crate::index::MANIFEST).display()
            )));
        }
    }
    Ok(())
}
