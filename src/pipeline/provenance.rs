//! What a run's summary records of the models it used, so that a run, a part or an index
//! made with one model is never read as made with another: the embedder's identity (which the
//! parts of a split run must share) and the sha256 of the confirm model's file.

use std::path::{Path, PathBuf};

use crate::embed::ModelIdentity;
use crate::error::{Error, Result};

/// The key of a run summary's settings that names the model its vectors came from.
pub(in crate::pipeline) const MODEL: &str = "model";

/// Names `model`, where the run embedded with one, in its summary's `settings`.
pub(in crate::pipeline) fn record_model(
    settings: &mut serde_json::Value,
    model: Option<&ModelIdentity>,
) {
    if let Some(model) = model {
        settings[MODEL] = serde_json::to_value(model).expect("a model's identity serialises");
    }
}

/// The key of a run's settings that holds the sha256 of the learned rule's model file, where
/// one was given: a path says where the model was, not which one it was.
pub(in crate::pipeline) const CONFIRM_MODEL_SHA256: &str = "confirm_model_sha256";

/// Records in `settings` the sha256 of the model file its method confirms by, if any (the
/// file was read by the run; one gone since is left unrecorded, with a warning).
pub(in crate::pipeline) fn record_confirm_model(settings: &mut serde_json::Value) {
    let Some(path) = settings["method"]["confirm_model"]
        .as_str()
        .map(PathBuf::from)
    else {
        return;
    };
    match crate::embed::file_sha256(&path) {
        Ok(digest) => settings[CONFIRM_MODEL_SHA256] = serde_json::Value::from(digest),
        Err(e) => tracing::warn!(%e, "the confirm model's sha256 is not recorded"),
    }
}

/// The model that every one of `parts` (each a folder and its summary's settings) embedded
/// with, if they name one; refuses parts that name different models, or some one and some
/// none, since their vectors would not compare.
pub(in crate::pipeline) fn common_model<'a>(
    parts: impl IntoIterator<Item = (&'a Path, &'a serde_json::Value)>,
) -> Result<Option<ModelIdentity>> {
    let mut first: Option<(&Path, Option<ModelIdentity>)> = None;
    for (dir, settings) in parts {
        let model = match settings.get(MODEL) {
            None => None,
            Some(named) => Some(serde_json::from_value(named.clone()).map_err(|e| {
                Error::Usage(format!(
                    "{}: its summary's `{MODEL}` is not a model's name and sha256 ({e}): give \
                     the folders neardup wrote",
                    dir.display()
                ))
            })?),
        };
        let Some((first_dir, first_model)) = &first else {
            first = Some((dir, model));
            continue;
        };
        if model == *first_model {
            continue;
        }
        let (Some(theirs), Some(ours)) = (first_model, &model) else {
            let unnamed = if model.is_none() { dir } else { first_dir };
            return Err(Error::Usage(format!(
                "{} names no model, as neardup did before it recorded one: embed that part \
                 again with this neardup",
                unnamed.display()
            )));
        };
        return Err(Error::Usage(format!(
            "{} was embedded with the model {} (sha256 {}) and {} with {} (sha256 {}), so their \
             vectors do not compare. The static model is derived on the machine that first \
             needs it, and its bits follow that machine's processor: derive it once \
             (`neardup models fetch static --models DIR`), give every part that folder \
             (`--models DIR` or NEARDUP_MODELS) and embed again the parts that had another",
            first_dir.display(),
            theirs.name,
            theirs.sha256,
            dir.display(),
            ours.name,
            ours.sha256
        )));
    }
    Ok(first.and_then(|(_, model)| model))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_that_embedded_with_different_models_are_refused() {
        let model = |sha256: &str| ModelIdentity {
            name: "static-all-MiniLM-L6-v2".into(),
            sha256: sha256.into(),
        };
        let named = |model: Option<&ModelIdentity>| {
            let mut settings = serde_json::json!({"stage": "embedded"});
            record_model(&mut settings, model);
            settings
        };
        let (one, other) = (model("6f0c15"), model("cae9ce"));
        let (a, b) = (Path::new("embedded1"), Path::new("embedded2"));

        let same = [named(Some(&one)), named(Some(&one))];
        let found = common_model([(a, &same[0]), (b, &same[1])]).unwrap();
        assert_eq!(found, Some(one.clone()));
        let unnamed = [named(None), named(None)];
        assert_eq!(
            common_model([(a, &unnamed[0]), (b, &unnamed[1])]).unwrap(),
            None
        );

        let differ = [named(Some(&one)), named(Some(&other))];
        let err = common_model([(a, &differ[0]), (b, &differ[1])]).unwrap_err();
        let err = err.to_string();
        for said in ["embedded1", "embedded2", "6f0c15", "cae9ce", "--models DIR"] {
            assert!(err.contains(said), "{said} not in: {err}");
        }
        for mixed in [
            [named(None), named(Some(&one))],
            [named(Some(&one)), named(None)],
        ] {
            let err = common_model([(a, &mixed[0]), (b, &mixed[1])]).unwrap_err();
            let unnamed = if mixed[0].get(MODEL).is_none() { a } else { b };
            let expected = format!("{} names no model", unnamed.display());
            assert!(err.to_string().contains(&expected), "{err}");
        }
        let garbled = [named(Some(&one)), serde_json::json!({"model": "static"})];
        let err = common_model([(a, &garbled[0]), (b, &garbled[1])]).unwrap_err();
        assert!(
            err.to_string().contains("embedded2: its summary's `model`"),
            "{err}"
        );
    }
}
