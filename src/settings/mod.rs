//! Reading typed settings from a key/value map, with errors that name the key.
//!
//! Pipeline files, command-line flags and index manifests all give their settings as a flat map
//! of keys, deserialised into the same types (see `pipeline::Method`). Each key is declared
//! once in [`SETTINGS`]: the methods that take it, its range, and its default, which the
//! registry reads from the type that holds the setting (each type's `Default` owns its values;
//! a test checks that every method's settings type agrees). Reading a method's settings
//! ([`read`]) refuses keys the method does not take, checks each value's range, fills in the
//! defaults, and only then hands the map to the settings type.
//!
//! The types are composed of shared parts (`#[serde(flatten)]`), which serde buffers: its
//! errors then say what is wrong but not where, and its `deny_unknown_fields` does not see
//! through nested parts. [`from_map`] therefore finds unknown keys itself (a key the value does
//! not serialise back is one nothing read), and finds the key an error is about by putting the
//! given keys back to their defaults one at a time: the key whose default cures or changes the
//! error is the one at fault (a required key outside the declared settings is named by
//! `serde_path_to_error`). Settings types serialise every key they read, `None` as `null`, for
//! this and for `summary.json`.

mod method;
mod recorded_path;
mod registry;

pub use method::MethodName;
pub use recorded_path::RecordedPath;
pub use registry::{
    Kind, Range, SETTINGS, Scope, Setting, defaults, defaults_given, keys_in, setting_of,
};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::{Error, Result};

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

/// The settings of `method` in `given` (keys as in a pipeline file), read as `T` with the
/// declared defaults for the keys not given. A key `method` does not take is refused, naming
/// the methods that take it; a value out of its declared range is refused with the range.
pub fn read<T: DeserializeOwned + Serialize>(
    method: MethodName,
    given: &Map<String, Value>,
) -> std::result::Result<T, SettingError> {
    for key in given.keys() {
        let message = match setting_of(key) {
            None => "no method has this setting".to_owned(),
            Some(setting) if !setting.applies_to(method) => format!(
                "does not apply to method {} (it is a setting of {})",
                method.as_str(),
                setting
                    .methods
                    .iter()
                    .map(|m| m.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Some(_) => continue,
        };
        return Err(SettingError {
            key: Some(key.clone()),
            message,
        });
    }
    read_among(method, given)
}

/// The settings of `method` read as `T` from `map`, which may hold other keys too (an index
/// manifest's): each declared setting is checked against its range and the declared defaults
/// fill the rest, as in [`read`]; keys that are no setting are left to `T`.
pub fn read_among<T: DeserializeOwned + Serialize>(
    method: MethodName,
    map: &Map<String, Value>,
) -> std::result::Result<T, SettingError> {
    for (key, value) in map {
        let Some(setting) = setting_of(key).filter(|s| s.applies_to(method)) else {
            continue;
        };
        setting
            .check(method, value)
            .map_err(|message| SettingError {
                key: Some(key.clone()),
                message,
            })?;
    }
    from_map(map, &defaults_given(method, map))
}

/// Checks one value of `key` given outside a method's settings (`query --top-k`), as `method`
/// would check it.
pub fn check(method: MethodName, key: &str, value: impl Into<Value>) -> Result<()> {
    let setting = setting_of(key)
        .filter(|s| s.applies_to(method))
        .expect("a declared setting of the method");
    setting
        .check(method, &value.into())
        .map_err(|message| Error::Setting {
            key: setting.key,
            message,
        })
}

/// Deserialises `given` over `defaults` into `T`, refusing given keys `T` does not have; on
/// failure, names the key at fault where one is.
pub fn from_map<T: DeserializeOwned + Serialize>(
    given: &Map<String, Value>,
    defaults: &Map<String, Value>,
) -> std::result::Result<T, SettingError> {
    let over_defaults = |given: &Map<String, Value>| {
        let mut map = defaults.clone();
        map.extend(given.iter().map(|(k, v)| (k.clone(), v.clone())));
        Value::Object(map)
    };
    let attempt = |given: &Map<String, Value>| -> std::result::Result<T, String> {
        let value: T = serde_json::from_value(over_defaults(given)).map_err(|e| e.to_string())?;
        let read = serde_json::to_value(&value).map_err(|e| e.to_string())?;
        if let Some(unknown) = given.keys().find(|key| read.get(key.as_str()).is_none()) {
            return Err(format!("unknown field `{unknown}`"));
        }
        Ok(value)
    };
    let error = match attempt(given) {
        Ok(value) => return Ok(value),
        Err(e) => e,
    };
    // A key serde itself can name (one outside the flattened parts), else the default search.
    let named = serde_path_to_error::deserialize::<_, T>(over_defaults(given))
        .err()
        .map(|e| e.path().to_string())
        .filter(|path| given.contains_key(path));
    let key = named.as_ref().or_else(|| {
        given.keys().find(|key| {
            let mut without = given.clone();
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
        let read = |value: Value| from_map::<Outer>(&map(value), &Map::new());
        let ok = read(serde_json::json!({"name": "n", "size": 3, "seed": 2})).unwrap();
        assert_eq!((ok.size, ok.inner.innermost.seed), (3, 2));

        let err = read(serde_json::json!({"name": "n", "size": 3, "seed": "x"})).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("seed"), "{err}");
        let err = read(serde_json::json!({"name": "n", "size": "big", "seed": 1})).unwrap_err();
        assert_eq!(err.key.as_deref(), Some("size"), "{err}");
        let err = read(serde_json::json!({"name": "n", "size": 3, "sede": 1})).unwrap_err();
        assert_eq!(err.message, "unknown field `sede`");
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
