//! Reading typed settings from a key/value map, with errors that name the key.
//!
//! Pipeline files, command-line flags and index manifests all give their settings as a flat map
//! of keys, deserialised into the same types (see [`crate::pipeline::Method`]). Those types are
//! composed of shared parts (`#[serde(flatten)]`), which serde buffers: its errors then say what
//! is wrong but not where, and its `deny_unknown_fields` does not see through nested parts.
//! [`from_map`] therefore finds unknown keys itself (a key the value does not serialise back
//! is one nothing read), and finds the key an error is about by taking keys out one at a time:
//! the key whose removal cures or changes the error is the one at fault (a required key,
//! whose removal is an error of its own, is named by `serde_path_to_error`). Settings types
//! serialise every key they read, `None` as `null`, for this and for `summary.json`.

mod registry;

pub use registry::{Kind, SETTINGS, Scope, Setting, keys_in};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// A setting that cannot be read: the key, when one is to blame, and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingError {
    /// The key at fault (`None`: the combination, or a required key that is missing).
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for SettingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.key {
            Some(key) => write!(f, "`{key}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Deserialises `map` into `T`, refusing keys `T` does not have; on failure, names the key at
/// fault where one is (a defaulted key: one whose absence is not itself an error).
pub fn from_map<T: DeserializeOwned + Serialize>(
    map: &Map<String, Value>,
) -> Result<T, SettingError> {
    let attempt = |map: &Map<String, Value>| -> Result<T, String> {
        let value: T =
            serde_json::from_value(Value::Object(map.clone())).map_err(|e| e.to_string())?;
        let read = serde_json::to_value(&value).map_err(|e| e.to_string())?;
        if let Some(unknown) = map.keys().find(|key| read.get(key.as_str()).is_none()) {
            return Err(format!("unknown field `{unknown}`"));
        }
        Ok(value)
    };
    let error = match attempt(map) {
        Ok(value) => return Ok(value),
        Err(e) => e,
    };
    // A key serde itself can name (one outside the flattened parts), else the removal search.
    let named = serde_path_to_error::deserialize::<_, T>(Value::Object(map.clone()))
        .err()
        .map(|e| e.path().to_string())
        .filter(|path| map.contains_key(path));
    let key = named.as_ref().or_else(|| {
        map.keys().find(|key| {
            let mut without = map.clone();
            without.remove(*key);
            match attempt(&without) {
                Ok(_) => true,
                Err(e) => e != error && e != format!("missing field `{key}`"),
            }
        })
    });
    Err(SettingError {
        key: key.cloned(),
        message: error,
    })
}

/// The 1-based line of `key = ...` in TOML `text`, searching from the line of `[table]`.
pub fn toml_line_of_key(text: &str, table: &str, key: &str) -> Option<u64> {
    let header = format!("[{table}]");
    let start = text.lines().position(|line| line.trim() == header)?;
    text.lines()
        .enumerate()
        .skip(start + 1)
        .take_while(|(_, line)| !line.trim_start().starts_with('['))
        .find(|(_, line)| {
            line.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|(i, _)| i as u64 + 1)
}

/// The key an "unknown field" error is about, if it is one.
pub fn unknown_key(error: &SettingError) -> Option<&str> {
    let rest = error.message.strip_prefix("unknown field `")?;
    rest.split('`').next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde::Serialize;

    #[derive(Debug, Deserialize, Serialize)]
    struct Outer {
        #[serde(flatten)]
        inner: Inner,
        #[serde(default)]
        size: usize,
        name: String,
    }

    #[derive(Debug, Deserialize, Serialize)]
    struct Inner {
        #[serde(flatten)]
        innermost: Innermost,
    }

    #[derive(Debug, Deserialize, Serialize)]
    struct Innermost {
        #[serde(default)]
        seed: u64,
    }

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn the_key_at_fault_is_named_even_inside_flattened_parts() {
        let read = |value: Value| from_map::<Outer>(&map(value));
        let ok = read(serde_json::json!({"name": "n", "size": 3, "seed": 2})).unwrap();
        assert_eq!((ok.size, ok.inner.innermost.seed), (3, 2));

        let err = read(serde_json::json!({"name": "n", "size": 3, "seed": "x"})).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("seed"), "{err}");
        let err = read(serde_json::json!({"name": "n", "size": "big", "seed": 1})).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("size"), "{err}");
        let err = read(serde_json::json!({"name": "n", "size": 3, "sede": 1})).unwrap_err();
        assert_eq!(unknown_key(&err), Some("sede"), "{err}");
        assert_eq!(err.key.as_deref(), Some("sede"), "{err}");
        let err = read(serde_json::json!({"name": 7})).unwrap_err();
        assert_eq!(
            err.key.as_deref(),
            Some("name"),
            "a required key of the wrong type is named too: {err}"
        );
        let err = read(serde_json::json!({"seed": 1})).unwrap_err();
        assert_eq!(err.key, None, "a missing key is nobody's fault: {err}");
        assert!(err.message.contains("name"), "{err}");
    }

    #[test]
    fn toml_keys_are_found_in_their_table() {
        let text = "[input]\nthreshold = 1\n[method]\nname = \"x\"\n  threshold = 2\n[output]\n";
        assert_eq!(toml_line_of_key(text, "method", "threshold"), Some(5));
        assert_eq!(toml_line_of_key(text, "method", "thresh"), None);
        assert_eq!(toml_line_of_key(text, "output", "threshold"), None);
    }
}
