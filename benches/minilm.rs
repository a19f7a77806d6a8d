//! MiniLM through candle, the neardup side of `eval/minilm-vs-torch.sh`, which runs
//! sentence-transformers on PyTorch over the same texts and compares speed and vectors.
//!
//! Two text sets from bib-dedupe (`../shared/data/bibdedupe-core.jsonl`), since length decides
//! a transformer's cost: the first 1,000 records with an abstract (title and abstract joined as
//! the pipeline joins them; nearly all fill the 128 tokens) and the first 1,000 without one
//! (titles). Each set is embedded once to warm up and once timed, with the embedder's own
//! batching (64 texts, sorted by length) and max length 128; threads come from
//! `RAYON_NUM_THREADS`; the model from `NEARDUP_MODELS` or the cache folder. Writes, under
//! `NEARDUP_MINILM_OUT` (default `target/minilm-vs-torch`): `SET.texts.jsonl` (one JSON
//! string a line), `SET.candle.jsonl` (one vector a line) and `candle.json` (seconds of wall
//! and CPU time per set).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::Instant;

use neardup::embed::{Embedder, MiniLm, models};
use neardup::output::{write_json_lines, write_json_pretty};

/// The allocator the `neardup` binary runs with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TEXTS: usize = 1000;
const MAX_TOKENS: usize = 128;
const BATCH: usize = 64;

fn main() {
    let out = PathBuf::from(
        std::env::var("NEARDUP_MINILM_OUT").unwrap_or_else(|_| "target/minilm-vs-torch".into()),
    );
    std::fs::create_dir_all(&out).expect("output folder");
    let (abstracts, titles) = text_sets();
    let root = std::env::var_os("NEARDUP_MODELS").map_or_else(models::default_root, PathBuf::from);
    let dir = models::ensure_minilm(&root).expect("MiniLM model");
    let model = MiniLm::open(&dir, MAX_TOKENS, BATCH).expect("MiniLM");
    let mut timings = serde_json::Map::new();
    for (set, texts) in [("abstracts", &abstracts), ("titles", &titles)] {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        model.embed(&refs).expect("warm-up pass");
        let (wall, cpu) = (Instant::now(), cpu_seconds());
        let vectors = model.embed(&refs).expect("embed");
        let (wall, cpu) = (wall.elapsed().as_secs_f64(), cpu_seconds() - cpu);
        println!(
            "candle {set}: {} texts in {wall:.2} s ({:.1} texts/s), {cpu:.1} s CPU",
            refs.len(),
            refs.len() as f64 / wall
        );
        timings.insert(set.into(), serde_json::json!({"wall": wall, "cpu": cpu}));
        write_json_lines(&out.join(format!("{set}.texts.jsonl")), texts.iter()).expect("texts");
        write_json_lines(&out.join(format!("{set}.candle.jsonl")), &vectors).expect("vectors");
    }
    write_json_pretty(&out.join("candle.json"), &timings).expect("candle.json");
}

/// The first [`TEXTS`] records with an abstract (title and abstract joined with a space) and
/// the first [`TEXTS`] without one.
fn text_sets() -> (Vec<String>, Vec<String>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/bibdedupe-core.jsonl");
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (mut abstracts, mut titles) = (Vec::new(), Vec::new());
    for line in BufReader::new(file).lines() {
        let record: serde_json::Value =
            serde_json::from_str(&line.expect("read")).expect("a JSON record");
        let field = |name: &str| record[name].as_str().unwrap_or("").trim().to_owned();
        let (title, abstract_) = (field("processed_title"), field("processed_abstract"));
        if abstract_.is_empty() {
            if titles.len() < TEXTS && !title.is_empty() {
                titles.push(title);
            }
        } else if abstracts.len() < TEXTS {
            abstracts.push(format!("{title} {abstract_}"));
        }
    }
    assert_eq!(
        (abstracts.len(), titles.len()),
        (TEXTS, TEXTS),
        "too few records"
    );
    (abstracts, titles)
}

/// User and system CPU seconds of this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
