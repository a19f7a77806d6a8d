//! A built index damaged or edited by hand, one file or value at a time: every case ends in a
//! clear message and exit 2, never a panic (exit 101) or a silent empty answer.

use crate::common::*;

/// Builds an index of the sample (random word vectors: no model needed) and returns the
/// temporary folder holding `idx/`.
fn built_index() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let vectors = dir.path().join("words.txt");
    random_word_vectors(&sample(), &vectors);
    index_sample_with_glove(&dir.path().join("idx"), &vectors, &[]);
    dir
}

/// `query --id` on a copy of `index` changed by `damage`; returns its stderr, checking that it
/// exited with 2.
fn query_damaged(index: &Path, damage: impl FnOnce(&Path)) -> String {
    let copy = tempfile::tempdir().unwrap();
    let target = copy.path().join("idx");
    copy_dir(index, &target);
    damage(&target);
    let out = neardup(&["query", "--index", s(&target), "--id", "stroke/id_0000010"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The one segment folder of the index's embedded store.
fn segment(index: &Path) -> PathBuf {
    let segments = index.join("edge/segments");
    std::fs::read_dir(&segments)
        .unwrap()
        .next()
        .expect("a segment")
        .unwrap()
        .path()
}

fn set_manifest(index: &Path, key: &str, value: serde_json::Value) {
    let path = index.join("neardup-index.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    manifest[key] = value;
    std::fs::write(&path, manifest.to_string()).unwrap();
}

#[test]
fn bad_manifest_values_are_named_with_the_file_and_field() {
    let dir = built_index();
    let index = dir.path().join("idx");
    for (key, value, expected) in [
        (
            "ngram",
            serde_json::json!(0),
            "field `ngram`: must be at least 1, not 0",
        ),
        (
            "num_perm",
            serde_json::json!(0),
            "field `num_perm`: must lie in [1, 1024], not 0",
        ),
        (
            "num_perm",
            serde_json::json!(1_000_000_000),
            "field `num_perm`: must lie in [1, 1024], not 1000000000",
        ),
        (
            "bands",
            serde_json::json!(0),
            "field `bands`: must be at least 1, not 0",
        ),
        ("bands", serde_json::json!(200), "do not fit in `num_perm`"),
        (
            "rows",
            serde_json::json!(0),
            "field `rows`: must be at least 1, not 0",
        ),
        (
            "threshold",
            serde_json::json!(5),
            "field `threshold`: must lie in (0, 1], not 5",
        ),
        (
            "min_cosine",
            serde_json::json!(7),
            "field `min_cosine`: must lie in [-1, 1], not 7",
        ),
        (
            "centred_on",
            serde_json::json!([0.5, 0.5]),
            "`centred_on` holds 2 numbers, and the vectors have 64 dimensions",
        ),
        (
            "seed",
            serde_json::json!("one"),
            "field `seed`: invalid type",
        ),
        (
            "shingle_size",
            serde_json::json!(2),
            "field `shingle_size`: unknown field",
        ),
        (
            "documents",
            serde_json::json!(-1),
            "field `documents`: invalid value: integer `-1`",
        ),
    ] {
        let stderr = query_damaged(&index, |idx| set_manifest(idx, key, value.clone()));
        assert!(
            stderr.contains("neardup-index.json") && stderr.contains(expected),
            "{key} = {value}: {stderr}"
        );
        assert!(stderr.contains("rebuild the index"), "{stderr}");
    }
    let stderr = query_damaged(&index, |idx| {
        set_manifest(idx, "format", serde_json::json!(1))
    });
    assert!(
        stderr.contains("index format 1, this neardup reads formats 4 to 8: rebuild the index"),
        "{stderr}"
    );
    // Settings that shape signatures, changed: stored signatures would not compare.
    for (key, value) in [
        ("seed", serde_json::json!(2)),
        ("ngram", serde_json::json!(2)),
        ("hashing", serde_json::json!("one-permutation")),
        ("stopwords", serde_json::json!(["of", "in", "human"])),
    ] {
        let stderr = query_damaged(&index, |idx| set_manifest(idx, key, value.clone()));
        assert!(
            stderr.contains("the settings that shape signatures")
                && stderr.contains("rebuild the index"),
            "{key}: {stderr}"
        );
    }
    // What shapes a vector, edited: a query would not meet the stored vectors.
    let mut centre = manifest_value(&index, "centred_on");
    centre[0] = serde_json::json!(centre[0].as_f64().unwrap() + 0.3);
    for (key, value) in [
        ("centred_on", centre),
        ("centre", serde_json::json!(false)),
        ("max_tokens", serde_json::json!(64)),
        (
            "model",
            serde_json::json!({"name": "words.txt", "sha256": "0".repeat(64)}),
        ),
    ] {
        let stderr = query_damaged(&index, |idx| set_manifest(idx, key, value.clone()));
        assert!(
            stderr.contains("what shapes its vectors") && stderr.contains("rebuild the index"),
            "{key}: {stderr}"
        );
    }
    // Other vectors than the index was built with: the model's digest differs.
    word_vectors_around(&sample(), &dir.path().join("words.txt"), 0.5);
    let stderr = query_damaged(&index, |_| {});
    assert!(
        stderr.contains("was built with the model words.txt (sha256 ")
            && stderr.contains("at the model it was built with (a static model derived on")
            && stderr.contains("or rebuild the index"),
        "{stderr}"
    );
}

fn manifest_value(index: &Path, key: &str) -> serde_json::Value {
    let path = index.join("neardup-index.json");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    manifest[key].clone()
}

#[test]
fn damaged_store_files_say_the_index_must_be_rebuilt() {
    let dir = built_index();
    let index = dir.path().join("idx");
    type Damage = Box<dyn Fn(&Path)>;
    let overwrite = |path: PathBuf, byte: Option<u8>| {
        let len = std::fs::metadata(&path).unwrap().len() as usize;
        let bytes: Vec<u8> = match byte {
            Some(byte) => vec![byte; len],
            None => (0..len as u32)
                .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                .collect(),
        };
        std::fs::write(path, bytes).unwrap();
    };
    let damages: [(&str, Damage); 10] = [
        (
            "zeroed vectors",
            Box::new(move |idx| {
                overwrite(
                    segment(idx).join("vector_storage/vectors/chunk_0.mmap"),
                    Some(0),
                )
            }),
        ),
        (
            "random vectors",
            Box::new(move |idx| {
                overwrite(
                    segment(idx).join("vector_storage/vectors/chunk_0.mmap"),
                    None,
                )
            }),
        ),
        (
            "every point flagged deleted",
            Box::new(move |idx| {
                overwrite(
                    segment(idx).join("vector_storage/deleted/flags_a.dat"),
                    Some(0xFF),
                )
            }),
        ),
        (
            "id mappings cut short",
            Box::new(|idx| {
                std::fs::File::options()
                    .write(true)
                    .open(segment(idx).join("mutable_id_tracker.mappings"))
                    .unwrap()
                    .set_len(100)
                    .unwrap();
            }),
        ),
        (
            "payloads removed",
            Box::new(|idx| std::fs::remove_dir_all(segment(idx).join("payload_storage")).unwrap()),
        ),
        (
            "truncated vectors",
            Box::new(|idx| {
                let chunk = segment(idx).join("vector_storage/vectors/chunk_0.mmap");
                std::fs::File::options()
                    .write(true)
                    .open(chunk)
                    .unwrap()
                    .set_len(1000)
                    .unwrap();
            }),
        ),
        (
            "empty status",
            Box::new(|idx| {
                std::fs::write(segment(idx).join("vector_storage/vectors/status.dat"), b"").unwrap()
            }),
        ),
        (
            "random id mappings",
            Box::new(|idx| {
                let bytes: Vec<u8> = (0..4000u32)
                    .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                    .collect();
                std::fs::write(segment(idx).join("mutable_id_tracker.mappings"), bytes).unwrap()
            }),
        ),
        (
            "store removed",
            Box::new(|idx| std::fs::remove_dir_all(idx.join("edge")).unwrap()),
        ),
        (
            "segments removed",
            Box::new(|idx| std::fs::remove_dir_all(idx.join("edge/segments")).unwrap()),
        ),
    ];
    for (what, damage) in damages {
        let stderr = query_damaged(&index, damage);
        assert!(
            stderr.contains("is damaged") && stderr.contains("rebuild it with `neardup index`"),
            "{what}: {stderr}"
        );
    }
}

#[test]
fn a_model_in_the_cache_damaged_since_it_was_made_is_refused_by_name() {
    // The cached models (fetched and derived once), copied: their damage must not touch the
    // cache the other tests share.
    ok(&["models", "fetch", "static", "-q"]);
    let cache = dirs::cache_dir().unwrap().join("neardup").join("models");
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    for name in ["all-MiniLM-L6-v2", "static-all-MiniLM-L6-v2"] {
        copy_dir(&cache.join(name), &models.join(name));
    }
    let dedup = |embedder: &str, out: &str| {
        let out = dir.path().join(out);
        neardup(&[
            "--models",
            s(&models),
            "dedup",
            s(&sample()),
            "--embedder",
            embedder,
            "--out",
            s(&out),
            "-q",
        ])
    };
    assert!(dedup("static", "before").status.success());
    let flip = |path: PathBuf| {
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 1;
        std::fs::write(&path, bytes).unwrap();
    };
    for (embedder, file, command) in [
        (
            "static",
            "static-all-MiniLM-L6-v2/static.safetensors",
            "neardup models fetch static",
        ),
        (
            "minilm",
            "all-MiniLM-L6-v2/model.safetensors",
            "neardup models fetch minilm",
        ),
    ] {
        flip(models.join(file));
        let out = dedup(embedder, "after");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("{file} is damaged")) && stderr.contains(command),
            "{stderr}"
        );
    }
}
