//! The method flags of `neardup dedup`, `neardup index` and `neardup serve`.
//!
//! The flags are collected as given (an unset flag is absent, not a default) and read through
//! [`Method::from_settings`], the same function that reads a pipeline file's `[method]` table.
//! So a flag means what the key of the same name means in a file, takes the same default, and a
//! flag that does not apply to the method is refused with the same message. The flags are
//! built from the settings' declarations ([`crate::settings::SETTINGS`]): each is named after
//! its key (`--num-perm` is `num_perm`), and its help gives the defaults the methods take; a
//! test checks that every key of every method is declared.

use std::path::PathBuf;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::pipeline::{Method, MethodConfig};
use crate::settings::MethodName;
use crate::settings::{Kind, SETTINGS, Setting, SettingError};

/// A setting's flag.
fn arg(setting: &Setting) -> clap::Arg {
    use clap::builder::{PossibleValuesParser, ValueParser};
    let default = setting.default_in_words();
    let help = match default {
        Some(default) => format!("{} [default: {default}]", setting.help),
        None => format!("{}.", setting.help),
    };
    let arg = clap::Arg::new(setting.key)
        .long(setting.key.replace('_', "-"))
        .value_name(setting.key.to_uppercase())
        .help(help)
        .help_heading(setting.heading);
    match setting.kind {
        Kind::Count => arg.value_parser(clap::value_parser!(usize)),
        Kind::Count32 => arg.value_parser(clap::value_parser!(u32)),
        Kind::Count64 => arg.value_parser(clap::value_parser!(u64)),
        Kind::Number => arg
            .allow_negative_numbers(true)
            .value_parser(super::finite::<f64>),
        Kind::Number32 => arg
            .allow_negative_numbers(true)
            .value_parser(super::finite::<f32>),
        Kind::Path => arg.value_parser(ValueParser::new(crate::settings::RecordedPath)),
        Kind::Text => arg.value_parser(clap::value_parser!(String)),
        Kind::Words => arg
            .value_delimiter(',')
            .action(clap::ArgAction::Append)
            .value_parser(clap::value_parser!(String)),
        Kind::Switch => arg
            .num_args(0..=1)
            .default_missing_value("true")
            .value_parser(clap::value_parser!(bool)),
        Kind::Choice(values) => arg.value_parser(PossibleValuesParser::new(values())),
    }
}

/// Whether `setting` is a switch some method turns on by default: it gets a `--no-` flag.
fn switched_on(setting: &Setting) -> bool {
    matches!(setting.kind, Kind::Switch)
        && setting
            .methods
            .iter()
            .any(|&m| setting.default_for(m) == Value::Bool(true))
}

/// The `--no-KEY` flag of a switch on by default (`--no-centre`): the same as `--KEY false`.
fn off_arg(setting: &Setting) -> clap::Arg {
    let flag = setting.key.replace('_', "-");
    clap::Arg::new(off_id(setting))
        .long(format!("no-{flag}"))
        .action(clap::ArgAction::SetTrue)
        .conflicts_with(setting.key)
        .help(format!("Turn --{flag} off"))
        .help_heading(setting.heading)
}

fn off_id(setting: &Setting) -> String {
    format!("no_{}", setting.key)
}

/// The value of `setting` given on the command line, as its JSON value.
fn given(setting: &Setting, m: &clap::ArgMatches) -> Option<Value> {
    let key = setting.key;
    if switched_on(setting) && m.get_flag(&off_id(setting)) {
        return Some(false.into());
    }
    match setting.kind {
        Kind::Count => m.get_one::<usize>(key).map(|v| (*v).into()),
        Kind::Count32 => m.get_one::<u32>(key).map(|v| (*v).into()),
        Kind::Count64 => m.get_one::<u64>(key).map(|v| (*v).into()),
        Kind::Number => m.get_one::<f64>(key).map(|v| (*v).into()),
        Kind::Number32 => m.get_one::<f32>(key).map(|v| f64::from(*v).into()),
        Kind::Path => m
            .get_one::<PathBuf>(key)
            .map(|p| p.to_string_lossy().into_owned().into()),
        Kind::Text | Kind::Choice(_) => m.get_one::<String>(key).map(|v| v.clone().into()),
        Kind::Switch => m.get_one::<bool>(key).map(|v| (*v).into()),
        Kind::Words => m
            .get_many::<String>(key)
            .map(|words| words.cloned().collect::<Vec<_>>().into()),
    }
}

/// Every method setting as a flag; each method takes the ones that apply to it. The flags
/// come from [`SETTINGS`]; what was given is kept as setting keys and JSON values.
#[derive(Clone, Debug, Default)]
pub struct MethodFlags {
    given: serde_json::Map<String, Value>,
}

impl clap::FromArgMatches for MethodFlags {
    fn from_arg_matches(matches: &clap::ArgMatches) -> std::result::Result<Self, clap::Error> {
        let mut flags = MethodFlags::default();
        flags.update_from_arg_matches(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(
        &mut self,
        matches: &clap::ArgMatches,
    ) -> std::result::Result<(), clap::Error> {
        for setting in SETTINGS {
            if let Some(value) = given(setting, matches) {
                self.given.insert(setting.key.to_owned(), value);
            }
        }
        Ok(())
    }
}

impl clap::Args for MethodFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let cmd = SETTINGS.iter().fold(cmd, |cmd, s| cmd.arg(arg(s)));
        let cmd = SETTINGS
            .iter()
            .filter(|s| switched_on(s))
            .fold(cmd, |cmd, s| cmd.arg(off_arg(s)));
        // Two pairs of settings belong together.
        cmd.mut_arg("char_ngram", |a| a.conflicts_with("ngram"))
            .mut_arg("bands", |a| a.requires("rows"))
            .mut_arg("rows", |a| a.requires("bands"))
            .mut_arg("part", |a| a.value_name("I/N"))
            .mut_arg("against", |a| a.value_name("INDEX"))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl MethodFlags {
    /// The flags given, as setting keys and values.
    fn given(&self) -> serde_json::Map<String, Value> {
        self.given.clone()
    }

    /// The folder given with `--index`.
    pub fn index_dir(&self) -> Option<PathBuf> {
        self.given
            .get("index")
            .and_then(Value::as_str)
            .map(PathBuf::from)
    }

    /// Refuses the flags that only `neardup dedup` takes (`--part`, `--against`, `--add`) in
    /// `command`.
    pub fn refuse_dedup_only(&self, command: &str) -> Result<()> {
        let what = [
            ("part", "splits `neardup dedup` over machines"),
            (
                "against",
                "checks a new batch in `neardup dedup` against an index",
            ),
            (
                "add",
                "adds what `neardup dedup --against` kept to the index",
            ),
        ];
        match what.iter().find(|(key, _)| self.given.contains_key(*key)) {
            Some((key, does)) => Err(Error::Usage(format!(
                "--{key} {does}; `neardup {command}` takes no --{key}"
            ))),
            None => Ok(()),
        }
    }

    /// The setting keys of the flags given (`num_perm` for `--num-perm`).
    pub fn given_keys(&self) -> Vec<String> {
        self.given.keys().cloned().collect()
    }

    /// The method `name` with the flags given, read like a pipeline file's `[method]` table.
    pub fn method(&self, name: MethodName) -> Result<Method> {
        Method::from_settings(name, self.given()).map_err(as_flag_error)
    }

    /// The settings of the one method a command runs (`index`, `serve`: two-stage), from the
    /// flags given.
    pub fn config<T: MethodConfig>(&self) -> Result<T> {
        Method::config(self.given()).map_err(as_flag_error)
    }
}

/// A setting's error as the flags' error: `--num-perm: ...`.
fn as_flag_error(SettingError { key, message }: SettingError) -> Error {
    let message = as_flags(&message);
    Error::Usage(match key {
        Some(key) => format!("{}: {message}", flag(&key)),
        None => message,
    })
}

/// The flag of a setting key: `num_perm` is `--num-perm`.
pub(super) fn flag(key: &str) -> String {
    format!("--{}", key.replace('_', "-"))
}

/// A message about settings, with each quoted key (`` `num_perm` ``) written as its flag.
fn as_flags(message: &str) -> String {
    static KEY: LazyLock<Regex> =
        LazyLock::new(|| Regex::new("`([a-z][a-z_]*)`").expect("valid regex"));
    KEY.replace_all(message, |c: &regex::Captures<'_>| flag(&c[1]))
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        flags: MethodFlags,
    }

    /// The keys of every method, from their settings at defaults.
    fn method_keys() -> std::collections::BTreeSet<String> {
        let mut keys = std::collections::BTreeSet::new();
        for &name in <MethodName as clap::ValueEnum>::value_variants() {
            let Value::Object(map) = serde_json::to_value(Method::defaults(name)).unwrap() else {
                panic!("a method serialises to an object")
            };
            keys.extend(map.into_iter().map(|(k, _)| k).filter(|k| k != "name"));
        }
        keys
    }

    #[test]
    fn every_setting_has_its_flag_and_every_flag_a_setting() {
        let (off, flags): (std::collections::BTreeSet<String>, _) = Flags::command()
            .get_arguments()
            .map(|a| a.get_id().to_string())
            .partition(|id| id.starts_with("no_"));
        assert_eq!(flags, method_keys());
        // A switch on by default also has its `--no-` flag.
        assert_eq!(off, ["no_centre".to_owned()].into());
    }

    #[test]
    fn a_flag_takes_every_name_its_setting_takes_and_its_help_the_methods_defaults() {
        for setting in SETTINGS {
            let Kind::Choice(values) = setting.kind else {
                continue;
            };
            let owners: Vec<MethodName> = <MethodName as clap::ValueEnum>::value_variants()
                .iter()
                .copied()
                .filter(|&name| {
                    serde_json::to_value(Method::defaults(name))
                        .unwrap()
                        .get(setting.key)
                        .is_some()
                })
                .collect();
            for value in values() {
                let map = serde_json::Map::from_iter([(
                    setting.key.to_owned(),
                    Value::from(value.get_name()),
                )]);
                // A name the settings type does not know is an error about this key with every
                // method; other errors (a store without its URL, a rule another method has no
                // evidence for) are about the combination.
                let errors: Vec<_> = owners
                    .iter()
                    .filter_map(|&owner| Method::from_settings(owner, map.clone()).err())
                    .collect();
                assert!(
                    errors.len() < owners.len()
                        || errors.iter().any(|e| e.key.as_deref() != Some(setting.key)),
                    "{}: {errors:?}",
                    value.get_name()
                );
            }
        }
        let help = Flags::command().render_long_help().to_string();
        assert!(
            help.contains(
                "[default: 0.8 for minhash, two-stage; 0.7 for jaccard; 0.2 for resemblance]"
            ),
            "{help}"
        );
        assert!(help.contains("--num-perm <NUM_PERM>") && help.contains("[default: 128]"));
    }

    #[test]
    fn flags_take_the_file_defaults_and_are_refused_by_methods_they_do_not_fit() {
        let parse = |args: &[&str]| {
            Flags::try_parse_from([&["x"], args].concat())
                .unwrap()
                .flags
        };
        assert_eq!(
            parse(&[]).method(MethodName::Minhash).unwrap(),
            Method::defaults(MethodName::Minhash)
        );
        let err = parse(&["--num-perm", "64"])
            .method(MethodName::Jaccard)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--num-perm: does not apply to method jaccard (it is a setting of minhash, two-stage)"),
            "{err}"
        );
        let err = parse(&["--ngram", "0"])
            .method(MethodName::Minhash)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "--ngram: must be at least 1, not 0");
        let Method::TwoStage(config) = parse(&["--top-k", "5", "--threshold", "0.8"])
            .method(MethodName::TwoStage)
            .unwrap()
        else {
            panic!("two-stage")
        };
        assert_eq!(
            (config.top_k, config.settings.confirm.rule.threshold),
            (5, 0.8)
        );
    }
}
