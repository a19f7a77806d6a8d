//! Declarative pipelines: everything a run needs (inputs, fields, method and its settings,
//! output, optional scoring) in one TOML file, so a run can be repeated and reviewed.
//!
//! `neardup dedup` builds the same [`PipelineSpec`] from its flags, so a file and the command
//! line can never disagree on what a setting means. Relative paths in a file are read from
//! the file's folder (as `make` and Cargo read theirs), so a pipeline runs the same from any
//! folder; on the command line they are the current folder's. Unknown keys are errors, so a
//! typo cannot silently fall back to a default.
//!
//! ```toml
//! [input]
//! paths = ["../data/bibdedupe-sample.jsonl"]
//! id_field = "core_id"
//! text_fields = ["processed_title", "processed_abstract"]
//!
//! [method]
//! name = "minhash"
//! threshold = 0.7
//!
//! [output]
//! dir = "../out/minhash"
//! keep = "field:year:max"   # optional: which member of a group is kept
//!
//! [eval]
//! truth = "../data/bibdedupe-sample.jsonl"
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Method;
use crate::error::{Error, Location, Result};
use crate::eval::Predicted;
use crate::group::KeepPolicy;
use crate::io::{DEFAULT_MAX_DOC_BYTES, FieldSpec, Input, InputFormat, ReadOptions};
use crate::output::records::OutputFormat;
use crate::output::run::CandidatesFormat;
use crate::settings::MethodName;
use crate::settings::{RecordedPath, SettingError, toml_line_of_key};

/// A whole run.
#[derive(Clone, Debug, Serialize)]
pub struct PipelineSpec {
    /// What to read.
    pub input: InputSpec,
    /// How to find duplicates.
    pub method: Method,
    /// Where results go.
    pub output: OutputSpec,
    /// Optional scoring against labelled duplicates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eval: Option<EvalSpec>,
}

/// A pipeline file as written: the method's table is read through [`Method::from_settings`],
/// like the command line's flags, once its name is known.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PipelineFile {
    input: InputSpec,
    method: toml::Table,
    output: OutputSpec,
    #[serde(default)]
    eval: Option<EvalSpec>,
}

/// Inputs and their fields: the `[input]` table of a pipeline file and the input flags of
/// every command that reads a corpus, declared once (a key is its flag with dashes; the
/// defaults are the reader's own, [`FieldSpec::default`] and [`DEFAULT_MAX_DOC_BYTES`]).
#[derive(Clone, Debug, Serialize, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    /// Files or folders (each command takes its own as arguments).
    #[arg(skip)]
    pub paths: Vec<PathBuf>,
    /// Input format, if the file names do not tell.
    #[arg(long, value_enum)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<InputFormat>,
    /// Field (or column) holding the document id.
    #[arg(long, default_value_t = default_id_field())]
    #[serde(default = "default_id_field")]
    pub id_field: String,
    /// Field(s) joined with a space to make the text.
    #[arg(long = "text-field", default_values_t = default_text_fields())]
    #[serde(default = "default_text_fields")]
    pub text_fields: Vec<String>,
    /// Skip bad records (reporting how many and where) instead of stopping at the first.
    #[arg(long)]
    #[serde(default)]
    pub skip_invalid: bool,
    /// The longest document text, in bytes; a longer one is a bad record (see --skip-invalid).
    #[arg(long, default_value_t = DEFAULT_MAX_DOC_BYTES)]
    #[serde(default = "default_max_doc_bytes")]
    pub max_doc_bytes: usize,
}

fn default_max_doc_bytes() -> usize {
    DEFAULT_MAX_DOC_BYTES
}

impl InputSpec {
    /// `paths`, read with the default options.
    pub fn new(paths: Vec<PathBuf>) -> InputSpec {
        InputSpec {
            paths,
            format: None,
            id_field: default_id_field(),
            text_fields: default_text_fields(),
            skip_invalid: false,
            max_doc_bytes: DEFAULT_MAX_DOC_BYTES,
        }
    }

    /// The same options over `paths`.
    pub fn over(&self, paths: &[PathBuf]) -> InputSpec {
        InputSpec {
            paths: paths.to_vec(),
            ..self.clone()
        }
    }

    /// The inputs, checked to exist.
    pub fn inputs(&self) -> Result<Vec<Input>> {
        if self.paths.is_empty() {
            return Err(Error::Usage("no input paths are given".into()));
        }
        self.paths
            .iter()
            .map(|p| Input::new(p, self.format))
            .collect()
    }

    /// How records are read.
    pub fn read_options(&self) -> ReadOptions {
        ReadOptions {
            fields: FieldSpec {
                id: self.id_field.clone(),
                text: self.text_fields.clone(),
            },
            skip_invalid: self.skip_invalid,
            max_doc_bytes: self.max_doc_bytes,
        }
    }

    /// The inputs over `paths`, checked, and how to read them.
    pub fn open(&self, paths: &[PathBuf]) -> Result<(Vec<Input>, ReadOptions)> {
        let spec = self.over(paths);
        Ok((spec.inputs()?, spec.read_options()))
    }
}

fn default_id_field() -> String {
    FieldSpec::default().id
}

fn default_text_fields() -> Vec<String> {
    FieldSpec::default().text
}

/// Where results go: the `[output]` table of a pipeline file and `neardup dedup`'s output
/// flags, declared once (`dir` is `--out`, `format` is `--out-format`, `annotate = false` is
/// `--no-annotate`, `candidates = "jsonl"` is `--candidates jsonl`).
#[derive(Clone, Debug, Serialize, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Output folder (created if missing).
    #[arg(long = "out", value_name = "OUT", required = true, value_parser = RecordedPath)]
    pub dir: PathBuf,
    /// Format of unique.* and annotated.*: jsonl, csv or tsv (CSV/TSV inputs), parquet
    /// (Parquet inputs) [default: the inputs' own; JSONL for folders, zips and mixed inputs].
    #[arg(
        id = "out_format",
        long = "out-format",
        value_name = "OUT_FORMAT",
        value_enum,
        help_heading = "Output"
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<OutputFormat>,
    /// Which member of each group unique.* keeps: representative (the most similar to the
    /// others), first (read first), longest (longest text), field:NAME:max or field:NAME:min
    /// (largest or smallest value of a field, e.g. field:year:max).
    #[arg(long, default_value_t = KeepPolicy::default(), help_heading = "Output")]
    #[serde(default)]
    pub keep: KeepPolicy,
    /// Write annotated.*, the copy of the input with each record's group and fate.
    #[arg(
        id = "no_annotate",
        long = "no-annotate",
        action = clap::ArgAction::SetFalse,
        help = "Do not write annotated.*, the copy of the input with each record's group and fate",
        help_heading = "Output"
    )]
    #[serde(default = "yes")]
    pub annotate: bool,
    /// File of every candidate the method scored (two-stage scores about 36 a document), read
    /// by `neardup sweep` and the report: parquet (candidates.parquet, about a tenth of the
    /// JSON), jsonl (candidates.jsonl) or none (they then see the confirmed pairs alone).
    #[arg(
        long,
        value_name = "FORMAT",
        value_enum,
        default_value_t = CandidatesFormat::default(),
        help_heading = "Output"
    )]
    #[serde(default, deserialize_with = "CandidatesFormat::deserialize_or_bool")]
    pub candidates: CandidatesFormat,
}

fn yes() -> bool {
    true
}

impl OutputSpec {
    /// Results written into `dir` with the default format, keep policy and annotated copy.
    pub fn new(dir: PathBuf) -> Self {
        OutputSpec {
            dir,
            format: None,
            keep: KeepPolicy::default(),
            annotate: true,
            candidates: CandidatesFormat::default(),
        }
    }

    /// The format records go out in, checked against the inputs.
    pub fn format(&self, inputs: &[Input]) -> Result<OutputFormat> {
        let format = self
            .format
            .unwrap_or_else(|| OutputFormat::of_inputs(inputs));
        format.check(inputs)?;
        Ok(format)
    }
}

/// Scoring after the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalSpec {
    /// Ground truth in the CORE layout (JSONL, Parquet, or CSV/TSV).
    pub truth: PathBuf,
    /// Which predicted set to score.
    #[serde(default = "default_predicted")]
    pub predicted: Predicted,
}

fn default_predicted() -> Predicted {
    Predicted::Groups
}

impl PipelineSpec {
    /// Checks that every input the file at `path` names exists, naming the line that gives
    /// it: the file's comments say where such data comes from (the CORE 2020 pipelines need a
    /// download).
    pub fn check_inputs_exist(&self, path: &Path) -> Result<()> {
        let Some(missing) = self
            .input
            .paths
            .iter()
            .find(|p| *p != Path::new("-") && !p.exists())
        else {
            return Ok(());
        };
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let location = match toml_line_of_key(&text, "input", "paths") {
            Some(line) => Location::line(path, line),
            None => Location::file(path),
        };
        Err(Error::input(
            location,
            Some("paths"),
            format!("{} does not exist", missing.display()),
            "paths are read from the pipeline file's folder; its comments say where the data \
             comes from",
        ))
    }

    /// Reads a pipeline file. An error names the line and key at fault.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let hint = "see pipelines/ for examples of every setting";
        let file: PipelineFile = toml::from_str(&text).map_err(|e| {
            let line = e
                .span()
                .map(|span| 1 + text[..span.start].matches('\n').count() as u64);
            let location = match line {
                Some(line) => Location::line(path, line),
                None => Location::file(path),
            };
            Error::input(location, None, e.message().to_owned(), hint)
        })?;
        let at = |key: Option<&str>| match key.and_then(|k| toml_line_of_key(&text, "method", k)) {
            Some(line) => Location::line(path, line),
            None => Location::file(path),
        };
        // JSON has no NaN or infinity: they would become `null`, read as "not given".
        if let Some((key, number)) = file.method.iter().find_map(|(key, value)| match value {
            toml::Value::Float(number) if !number.is_finite() => Some((key, number)),
            _ => None,
        }) {
            return Err(Error::input(
                at(Some(key)),
                Some(key),
                format!("{number} is not a finite number"),
                "give a number, such as 0.8",
            ));
        }
        let mut settings = serde_json::to_value(&file.method)
            .ok()
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default();
        let folder = path.parent().unwrap_or(Path::new(""));
        for (key, value) in settings.iter_mut() {
            if let (Some(setting), serde_json::Value::String(text)) =
                (crate::settings::setting_of(key), &*value)
                && matches!(setting.kind, crate::settings::Kind::Path)
            {
                *value = from_folder(folder, Path::new(text))
                    .to_string_lossy()
                    .into();
            }
        }
        let name = match settings.remove("name") {
            Some(serde_json::Value::String(name)) => {
                <MethodName as clap::ValueEnum>::from_str(&name, false).map_err(|_| {
                    Error::input(
                        at(Some("name")),
                        Some("name"),
                        format!("unknown method {name:?}"),
                        "one of minhash, jaccard, resemblance, simhash, two-stage",
                    )
                })?
            }
            _ => {
                return Err(Error::input(
                    Location::file(path),
                    Some("name"),
                    "the [method] table needs `name`",
                    "one of minhash, jaccard, resemblance, simhash, two-stage",
                ));
            }
        };
        let method =
            Method::from_settings(name, settings).map_err(|SettingError { key, message }| {
                Error::input(at(key.as_deref()), key.as_deref(), message, hint)
            })?;
        let mut input = file.input;
        for input_path in &mut input.paths {
            *input_path = from_folder(folder, input_path);
        }
        let mut output = file.output;
        output.dir = from_folder(folder, &output.dir);
        let eval = file.eval.map(|eval| EvalSpec {
            truth: from_folder(folder, &eval.truth),
            ..eval
        });
        Ok(PipelineSpec {
            input,
            method,
            output,
            eval,
        })
    }
}

/// `path` as a pipeline file in `folder` means it: relative paths are the file's folder's,
/// with `folder/..` taken away as written (`pipelines/../out` is `out`), so that messages and
/// the summary show the path a person would write. `-` (standard input) stays as it is.
fn from_folder(folder: &Path, path: &Path) -> PathBuf {
    use std::path::Component;
    if path.is_absolute() || path == Path::new("-") {
        return path.to_owned();
    }
    let mut joined = PathBuf::new();
    for part in folder.join(path).components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(joined.components().next_back(), Some(Component::Normal(_))) =>
            {
                joined.pop();
            }
            other => joined.push(other),
        }
    }
    if joined.as_os_str().is_empty() {
        joined.push(".");
    }
    joined
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The input and output options as a command line gives them.
    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        input: InputSpec,
        #[command(flatten)]
        output: OutputSpec,
    }

    fn json(value: &impl Serialize) -> serde_json::Value {
        serde_json::to_value(value).unwrap()
    }

    #[test]
    fn flags_and_pipeline_files_read_alike() {
        let flags = Flags::try_parse_from(["neardup", "--out", "o"]).unwrap();
        let file: PipelineFile = toml::from_str(
            "[input]\npaths = []\n[method]\nname = \"minhash\"\n[output]\ndir = \"o\"\n",
        )
        .unwrap();
        assert_eq!(json(&flags.input), json(&file.input));
        assert_eq!(json(&flags.output), json(&file.output));
        assert_eq!(
            json(&OutputSpec::new(PathBuf::from("o"))),
            json(&file.output)
        );
        let given = Flags::try_parse_from([
            "neardup",
            "--out",
            "o",
            "--id-field",
            "id",
            "--text-field",
            "title",
            "--text-field",
            "body",
            "--skip-invalid",
            "--max-doc-bytes",
            "9",
            "--out-format",
            "csv",
            "--keep",
            "first",
            "--no-annotate",
            "--candidates",
            "jsonl",
        ])
        .unwrap();
        let file: PipelineFile = toml::from_str(
            "[input]\npaths = []\nid_field = \"id\"\ntext_fields = [\"title\", \"body\"]\n\
             skip_invalid = true\nmax_doc_bytes = 9\n[method]\nname = \"minhash\"\n\
             [output]\ndir = \"o\"\nformat = \"csv\"\nkeep = \"first\"\nannotate = false\n\
             candidates = \"jsonl\"\n",
        )
        .unwrap();
        assert_eq!(json(&given.input), json(&file.input));
        assert_eq!(json(&given.output), json(&file.output));
    }

    #[test]
    fn relative_paths_are_read_from_the_pipelines_folder() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("pipelines");
        std::fs::create_dir(&folder).unwrap();
        let path = folder.join("p.toml");
        std::fs::write(
            &path,
            "[input]\npaths = [\"../data/x.jsonl\", \"/abs/y.jsonl\", \"-\"]\n\
             [method]\nname = \"minhash\"\nstoplist = \"stop.txt\"\n\
             [output]\ndir = \"../out/run\"\n[eval]\ntruth = \"./truth.jsonl\"\n",
        )
        .unwrap();
        let spec = PipelineSpec::load(&path).unwrap();
        assert_eq!(
            spec.input.paths,
            [
                dir.path().join("data/x.jsonl"),
                "/abs/y.jsonl".into(),
                "-".into()
            ]
        );
        assert_eq!(spec.output.dir, dir.path().join("out/run"));
        assert_eq!(spec.eval.unwrap().truth, folder.join("truth.jsonl"));
        let settings = serde_json::to_value(&spec.method).unwrap();
        assert_eq!(
            settings["stoplist"].as_str().map(PathBuf::from),
            Some(folder.join("stop.txt")),
            "{settings}"
        );
        assert_eq!(
            from_folder(Path::new("pipelines"), Path::new("../out")),
            Path::new("out")
        );
        assert_eq!(
            from_folder(Path::new(""), Path::new("out")),
            Path::new("out")
        );
    }

    #[test]
    fn shipped_pipelines_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("pipelines");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                PipelineSpec::load(&path).unwrap_or_else(|e| panic!("{e}"));
                seen += 1;
            }
        }
        assert!(seen >= 2);
    }

    fn write(dir: &Path, method: &str) -> PathBuf {
        let path = dir.join("p.toml");
        std::fs::write(
            &path,
            format!(
                "[input]\npaths = [\"x.jsonl\"]\n[method]\n{method}\n[output]\ndir = \"out\"\n"
            ),
        )
        .unwrap();
        path
    }

    #[test]
    fn the_output_table_takes_a_format_a_keep_policy_and_the_annotated_copy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        let file = |output: &str| {
            format!(
                "[input]\npaths = [\"x.csv\"]\n[method]\nname = \"minhash\"\n[output]\n{output}\n"
            )
        };
        std::fs::write(
            &path,
            file("dir = \"out\"\nformat = \"csv\"\nkeep = \"field:year:max\"\nannotate = false"),
        )
        .unwrap();
        let spec = PipelineSpec::load(&path).unwrap();
        assert_eq!(spec.output.format, Some(OutputFormat::Csv));
        assert_eq!(spec.output.keep.to_string(), "field:year:max");
        assert!(!spec.output.annotate);
        std::fs::write(&path, file("dir = \"out\"")).unwrap();
        let spec = PipelineSpec::load(&path).unwrap();
        assert_eq!(
            (
                spec.output.format,
                spec.output.keep,
                spec.output.annotate,
                spec.output.candidates
            ),
            (
                None,
                KeepPolicy::Representative,
                true,
                CandidatesFormat::default()
            )
        );
        std::fs::write(&path, file("dir = \"out\"\nkeep = \"newest\"")).unwrap();
        let err = PipelineSpec::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("keep") && err.contains("unknown keep policy"),
            "{err}"
        );
    }

    #[test]
    fn settings_of_another_method_are_refused_and_defaults_differ_by_method() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "name = \"jaccard\"\nnum_perm = 64");
        let err = PipelineSpec::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("p.toml:5")
                && err.contains("`num_perm`")
                && err.contains("does not apply to method jaccard")
                && err.contains("minhash, two-stage"),
            "{err}"
        );
        let Method::Resemblance(r) = Method::defaults(MethodName::Resemblance) else {
            panic!("resemblance")
        };
        assert_eq!(
            (
                r.shingling.kind(crate::similarity::RESEMBLANCE_NGRAM),
                r.threshold
            ),
            (crate::text::ShingleKind::Words(5), 0.2)
        );
        let Method::SimHash(s) = Method::defaults(MethodName::Simhash) else {
            panic!("simhash")
        };
        assert_eq!((s.max_distance, s.probes), (3, None));
    }

    #[test]
    fn defaults_fill_in_and_typos_are_named_with_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "name = \"minhash\"");
        let spec = PipelineSpec::load(&path).unwrap();
        let Method::MinHash(config) = &spec.method else {
            panic!("a minhash pipeline gives the minhash method")
        };
        assert_eq!(
            (
                config.confirm.minhash.num_perm,
                config.confirm.rule.threshold
            ),
            (128, 0.8)
        );
        assert_eq!(spec.input.read_options().fields, FieldSpec::default());

        let path = write(dir.path(), "name = \"minhash\"\nthreshhold = 0.8");
        let err = PipelineSpec::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("p.toml:5")
                && err.contains("threshhold")
                && err.contains("no method has this setting"),
            "{err}"
        );
        let path = write(dir.path(), "name = \"minhash\"\nseed = \"x\"");
        let err = PipelineSpec::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("p.toml:5") && err.contains("field `seed`"),
            "{err}"
        );
        let path = write(dir.path(), "name = \"two-stage\"\nthreshold = 5.0");
        let err = PipelineSpec::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("p.toml:5: field `threshold`: must lie in (0, 1], not 5"),
            "a value out of range names its line: {err}"
        );
        let path = write(dir.path(), "name = \"minhash-lsh\"");
        let err = PipelineSpec::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("p.toml:4") && err.contains("unknown method"),
            "{err}"
        );
    }
}
