//! Embedder tests on models built here: a tiny BERT with random weights and a WordPiece
//! tokenizer, driven through the real loading, pooling and deriving code; and a GloVe file.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::{VarBuilder, VarMap};
use candle_transformers::models::bert::{BertModel, Config};
use rand::{RngExt, SeedableRng};

use super::*;

/// Words of the tiny vocabulary (after the five special tokens).
pub(crate) const TINY_WORDS: [&str; 12] = [
    "stroke", "aspirin", "trial", "risk", "patients", "blood", "pressure", "care", "##s", "the",
    "of", "study",
];

/// Writes a tiny BERT sentence model (config.json, tokenizer.json, model.safetensors) into
/// `dir`: two layers of width 16, random weights from a fixed seed.
pub(crate) fn tiny_bert(dir: &Path) {
    let mut vocab = serde_json::Map::new();
    for (i, token) in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        .into_iter()
        .chain(TINY_WORDS)
        .enumerate()
    {
        vocab.insert(token.into(), i.into());
    }
    let special = |id: u32, content: &str| {
        serde_json::json!({"id": id, "content": content, "single_word": false, "lstrip": false,
            "rstrip": false, "normalized": false, "special": true})
    };
    let tokenizer = serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [special(0, "[PAD]"), special(1, "[UNK]"), special(2, "[CLS]"),
            special(3, "[SEP]"), special(4, "[MASK]")],
        "normalizer": {"type": "BertNormalizer", "clean_text": true,
            "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
        "decoder": null,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": vocab}
    });
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).unwrap();
    let config = serde_json::json!({
        "vocab_size": 5 + TINY_WORDS.len(), "hidden_size": 16, "num_hidden_layers": 2,
        "num_attention_heads": 2, "intermediate_size": 32, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.0, "max_position_embeddings": 64, "type_vocab_size": 2,
        "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": 0,
        "model_type": "bert"
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    let config: Config = serde_json::from_value(config).unwrap();
    let device = Device::Cpu;
    let vars = VarMap::new();
    BertModel::load(VarBuilder::from_varmap(&vars, DType::F32, &device), &config).unwrap();
    // candle cannot seed its CPU generator: overwrite every weight from a generator seeded by
    // the weight's name, so that the model is the same on every call.
    for (name, var) in vars.data().lock().unwrap().iter() {
        let mut rng =
            rand_chacha::ChaCha8Rng::seed_from_u64(xxhash_rust::xxh3::xxh3_64(name.as_bytes()));
        let values: Vec<f32> = (0..var.elem_count())
            .map(|_| rng.random::<f32>() - 0.5)
            .collect();
        var.set(&Tensor::from_vec(values, var.shape(), &device).unwrap())
            .unwrap();
    }
    vars.save(dir.join("model.safetensors")).unwrap();
}

/// A static model derived from [`tiny_bert`], in `dir`.
pub(crate) fn tiny_static(dir: &Path) {
    let bert = tempfile::tempdir().unwrap();
    tiny_bert(bert.path());
    let model = MiniLm::open(bert.path(), 32, 4).unwrap();
    let reference: Vec<String> = [
        "the risk of stroke",
        "aspirin trial",
        "blood pressure of patients",
        "the study",
    ]
    .map(String::from)
    .to_vec();
    derive_static(&model, &reference, 16, dir).unwrap();
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

#[test]
fn minilm_pools_over_real_tokens_only_so_padding_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    tiny_bert(dir.path());
    let model = MiniLm::open(dir.path(), 32, 8).unwrap();
    assert_eq!(model.dimensions(), 16);
    let short = "aspirin trial";
    let long = "the risk of stroke in patients with high blood pressure care study";
    let alone = model.embed(&[short]).unwrap();
    let padded = model.embed(&[long, short]).unwrap();
    for v in alone.iter().chain(&padded) {
        assert!((norm(v) - 1.0).abs() < 1e-5);
    }
    let gap: f32 = alone[0]
        .iter()
        .zip(&padded[1])
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max);
    assert!(gap < 1e-5, "padding moved the short text's vector by {gap}");
    assert!(
        cosine(&padded[0], &padded[1]) < 0.9999,
        "different texts, different vectors"
    );
}

#[test]
fn minilm_truncates_to_max_tokens() {
    let dir = tempfile::tempdir().unwrap();
    tiny_bert(dir.path());
    let model = MiniLm::open(dir.path(), 4, 8).unwrap();
    // [CLS] stroke aspirin [SEP]: everything after the second word is cut.
    let a = model.embed(&["stroke aspirin trial risk"]).unwrap();
    let b = model
        .embed(&["stroke aspirin blood care patients"])
        .unwrap();
    assert!(cosine(&a[0], &b[0]) > 0.99999);
}

#[test]
fn static_vectors_are_derived_per_token_and_pooled_by_weight() {
    let dir = tempfile::tempdir().unwrap();
    tiny_static(dir.path());
    let embedder = StaticEmbedder::open(dir.path()).unwrap();
    assert_eq!(embedder.dimensions(), 16);
    let v = embedder
        .embed(&[
            "Stroke aspirin",
            "aspirin stroke",
            "blood pressure care",
            "",
        ])
        .unwrap();
    for x in &v {
        assert!((norm(x) - 1.0).abs() < 1e-5);
    }
    // A bag of tokens: order does not matter, case is folded by the tokenizer.
    assert!(cosine(&v[0], &v[1]) > 0.99999);
    assert!(cosine(&v[0], &v[2]) < 0.999);

    // One token: its derived vector (the model's pooled output for [CLS] token [SEP]) minus
    // the mean, whatever its weight.
    let bert = tempfile::tempdir().unwrap();
    tiny_bert(bert.path());
    let model = MiniLm::open(bert.path(), 32, 4).unwrap();
    let stroke = model.tokenizer().token_to_id("stroke").unwrap();
    let pooled = model.pooled(&[&[2, stroke, 3]]).unwrap();
    let mut expected: Vec<f32> = pooled[0]
        .iter()
        .zip(&embedder.mean)
        .map(|(x, m)| x - m)
        .collect();
    normalize(&mut expected);
    let got = embedder.embed(&["stroke"]).unwrap();
    assert!(cosine(&got[0], &expected) > 0.99999);
}

#[test]
fn refilled_vectors_are_the_vectors_made_anew() {
    let dir = tempfile::tempdir().unwrap();
    tiny_static(dir.path());
    let embedder = StaticEmbedder::open(dir.path()).unwrap();
    let first = ["blood pressure care", "stroke", "", "aspirin stroke trial"];
    let second = ["aspirin", "care of the blood"];
    // A list longer than the batch, holding another batch's vectors and one of another length.
    let mut out = embedder.embed(&first).unwrap();
    out[1] = vec![7.0; 3];
    embedder.embed_into(&second, &mut out).unwrap();
    assert_eq!(out, embedder.embed(&second).unwrap());
    // And shorter: the new texts get lists of their own.
    embedder.embed_into(&first, &mut out).unwrap();
    assert_eq!(out, embedder.embed(&first).unwrap());
}

#[test]
fn pca_keeps_the_directions_with_the_most_variance() {
    // Points spread along (1, 1, 0) with a little noise on the third axis: one component keeps
    // the spread, so distances along the line survive.
    let vectors: Vec<f32> = (0..50)
        .flat_map(|i| {
            let t = i as f32 - 25.0;
            [t, t, 0.01 * (i % 3) as f32]
        })
        .collect();
    let projected = static_model::pca(&vectors, 3, 1);
    assert_eq!(projected.len(), 50);
    let step = (projected[1] - projected[0]).abs();
    assert!((step - 2f32.sqrt()).abs() < 1e-3, "{step}");
    let spread = projected.iter().copied().fold(f32::MIN, f32::max)
        - projected.iter().copied().fold(f32::MAX, f32::min);
    assert!((spread - 49.0 * 2f32.sqrt()).abs() < 1e-2, "{spread}");
}

#[test]
fn idf_weights_rare_tokens_above_common_ones() {
    let docs = vec![vec![5, 6], vec![5, 7], vec![5]];
    let w = static_model::idf(&docs, 8);
    assert!(w[6] > w[5] && w[0] > w[6], "{w:?}");
    assert!(w.iter().all(|&x| x >= 1.0));
}

#[test]
fn missing_model_files_say_what_to_run() {
    let dir = tempfile::tempdir().unwrap();
    let Err(err) = MiniLm::open(dir.path(), 128, 8) else {
        panic!("an empty folder is not a model")
    };
    assert!(
        err.to_string().contains("neardup models fetch minilm"),
        "{err}"
    );
    assert_eq!(err.exit_code(), 2);
    let Err(err) = StaticEmbedder::open(dir.path()) else {
        panic!("an empty folder is not a static model")
    };
    assert!(
        err.to_string().contains("neardup models fetch static"),
        "{err}"
    );
}

#[test]
fn glove_averages_known_words_and_caches_the_parsed_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vectors.txt");
    std::fs::write(&path, "stroke 1 0 0\naspirin 0 1 0\ntrial 0 0 2\n").unwrap();
    let glove = GloveEmbedder::open(&path).unwrap();
    assert_eq!(glove.dimensions(), 3);
    let v = glove
        .embed(&["Stroke, aspirin and unknown words", "nothing known"])
        .unwrap();
    let h = std::f32::consts::FRAC_1_SQRT_2;
    assert!(cosine(&v[0], &[h, h, 0.0]) > 0.99999, "{:?}", v[0]);
    assert_eq!(
        v[1],
        vec![1.0, 0.0, 0.0],
        "no known word: the fixed unit vector"
    );
    assert!(dir.path().join("vectors.txt.neardup").is_file());
    let again = GloveEmbedder::open(&path).unwrap();
    assert_eq!(again.embed(&["trial"]).unwrap(), vec![vec![0.0, 0.0, 1.0]]);
}

#[test]
fn a_ragged_glove_file_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.txt");
    std::fs::write(&path, "a 1 2 3\nb 1 2\n").unwrap();
    let Err(err) = GloveEmbedder::open(&path) else {
        panic!("ragged rows must be refused")
    };
    assert!(
        err.to_string().contains("bad.txt:2") && err.to_string().contains("2 values"),
        "{err}"
    );
    std::fs::write(&path, b"a 1 2 3\r\nb 4 5 6\r\nc\xff 1 2 3\n").unwrap();
    let Err(err) = GloveEmbedder::open(&path) else {
        panic!("a line that is not UTF-8 must be refused")
    };
    assert!(
        err.to_string().contains("bad.txt:3") && err.to_string().contains("not UTF-8"),
        "Windows line ends are read, the bad byte is named by its line: {err}"
    );
}

/// Checks `model` against the reference vectors in `reference` (texts and vectors written by
/// eval/minilm_reference.py, a NumPy implementation of the same forward pass): a cosine above
/// 0.9999 and no coordinate further than `tolerance`.
fn assert_matches_reference(model: &MiniLm, reference: &Path, tolerance: f32) {
    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(reference).unwrap()).unwrap();
    let cases = reference.as_array().unwrap();
    assert!(cases.len() >= 5);
    for case in cases {
        let text = case["text"].as_str().unwrap();
        let expected: Vec<f32> = case["vector"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        let got = model.embed(&[text]).unwrap().remove(0);
        assert_eq!(got.len(), expected.len(), "{text:?}");
        assert!(cosine(&got, &expected) > 0.9999, "{text:?}");
        let off = got
            .iter()
            .zip(&expected)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max);
        assert!(off < tolerance, "{text:?}: a coordinate is {off} off");
    }
}

/// The tiny model these tests build, against the vectors the NumPy forward pass computed for
/// it (checked in): candle's path is checked on every run, with no download. Random weights
/// put every text's vector within a cosine of 0.9999 of the others, so the coordinates are
/// compared too (texts differ by 1e-3, float32 from float64 by 1e-6). To write them
/// again, keep the model with `NEARDUP_KEEP_TINY_BERT=DIR cargo test tiny_bert_matches`, then
/// `python3 eval/minilm_reference.py DIR src/embed/testdata/tiny-bert-reference.json 32`.
#[test]
fn tiny_bert_matches_its_numpy_reference() {
    let dir = tempfile::tempdir().unwrap();
    tiny_bert(dir.path());
    if let Some(keep) = std::env::var_os("NEARDUP_KEEP_TINY_BERT") {
        std::fs::create_dir_all(&keep).unwrap();
        for file in ["config.json", "tokenizer.json", "model.safetensors"] {
            std::fs::copy(dir.path().join(file), Path::new(&keep).join(file)).unwrap();
        }
    }
    let model = MiniLm::open(dir.path(), 32, 4).unwrap();
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert_matches_reference(
        &model,
        &here.join("src/embed/testdata/tiny-bert-reference.json"),
        2e-5,
    );
}

/// The real all-MiniLM-L6-v2 (fetched where neardup keeps its models, as the two-stage tests
/// fetch it) against its reference vectors.
#[test]
fn minilm_matches_reference_vectors() {
    let dir = models::ensure_minilm(&models::default_root()).unwrap();
    let model = MiniLm::open(&dir, 128, 8).unwrap();
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert_matches_reference(&model, &here.join("eval/minilm-reference.json"), 1e-3);
}

#[test]
fn a_static_model_can_be_derived_narrower_than_its_source() {
    let bert = tempfile::tempdir().unwrap();
    tiny_bert(bert.path());
    let model = MiniLm::open(bert.path(), 32, 4).unwrap();
    let dir = tempfile::tempdir().unwrap();
    derive_static(&model, &["stroke trial".to_string()], 6, dir.path()).unwrap();
    let embedder = StaticEmbedder::open(dir.path()).unwrap();
    assert_eq!(embedder.dimensions(), 6);
    let v = embedder.embed(&["aspirin trial", "trial aspirin"]).unwrap();
    assert!(
        v.iter()
            .all(|x| x.len() == 6 && (norm(x) - 1.0).abs() < 1e-5)
    );
    assert!(cosine(&v[0], &v[1]) > 0.99999);
}

#[test]
fn a_long_text_is_read_only_as_far_as_it_is_embedded() {
    let dir = tempfile::tempdir().unwrap();
    tiny_static(dir.path());
    let embedder = StaticEmbedder::open(dir.path()).unwrap();
    // 1.2 MB of eight words repeated: the static mean is taken a piece at a time, and must
    // equal the mean of the eight words once.
    let words = TINY_WORDS[..8].join(" ");
    let long = vec![words.as_str(); 20_000].join(" ");
    let streamed = embedder.embed(&[&long]).unwrap().remove(0);
    let once = embedder.embed(&[&words]).unwrap().remove(0);
    assert!(
        cosine(&streamed, &once) > 0.99999,
        "{}",
        cosine(&streamed, &once)
    );

    // MiniLM reads the first max_tokens tokens: appending a megabyte changes nothing.
    let bert = tempfile::tempdir().unwrap();
    tiny_bert(bert.path());
    let model = MiniLm::open(bert.path(), 8, 4).unwrap();
    let start = "stroke aspirin trial risk patients blood pressure care the study";
    let a = model.embed(&[start]).unwrap();
    let b = model.embed(&[&format!("{start} {long}")]).unwrap();
    assert!(cosine(&a[0], &b[0]) > 0.99999);
}

/// Rows added a block at a time, in registers, on every kernel this CPU has, give the sums of
/// adding each token's weighted row in turn, bit for bit: at widths of whole register chunks,
/// with a tail, and narrower than one chunk, for no token, one, and many with repeats.
#[test]
fn a_block_of_rows_sums_as_adding_each_token_in_turn() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let vocabulary = 50;
    for d in [384, 200, 64, 3] {
        let vectors: Vec<f32> = (0..vocabulary * d)
            .map(|_| rng.random_range(-1.0f32..1.0))
            .collect();
        let weights: Vec<f32> = (0..vocabulary)
            .map(|_| rng.random_range(0.1f32..12.0))
            .collect();
        for tokens in [0, 1, 7, 256] {
            let ids: Vec<u32> = (0..tokens)
                .map(|_| rng.random_range(0..vocabulary as u32))
                .collect();
            let start: Vec<f32> = (0..d).map(|_| rng.random_range(-3.0f32..3.0)).collect();
            let mut expected = start.clone();
            for &id in &ids {
                let row = &vectors[id as usize * d..][..d];
                for (s, &x) in expected.iter_mut().zip(row) {
                    *s += weights[id as usize] * x;
                }
            }
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let mut chosen = start.clone();
            static_model::add_rows(&mut chosen, &vectors, &weights, &ids);
            assert_eq!(bits(&chosen), bits(&expected), "{d} wide, {tokens} tokens");
            for (name, kernel) in static_model::row_kernels() {
                let Some(kernel) = kernel else {
                    eprintln!("this CPU has no {name}: its kernel is not checked");
                    continue;
                };
                let mut block = start.clone();
                kernel(&mut block, &vectors, &weights, &ids);
                assert_eq!(
                    bits(&block),
                    bits(&expected),
                    "{name}: {d} wide, {tokens} tokens"
                );
            }
        }
    }
}

/// The word cache must give the tokenizer's own ids for whole texts: real records, and words
/// where normalizing or pre-tokenizing could reach across a word (accents, punctuation, CJK,
/// control characters, odd whitespace).
#[test]
fn cached_word_ids_are_the_tokenizers_ids() {
    let dir = tempfile::tempdir().unwrap();
    tiny_static(dir.path());
    let cached = StaticEmbedder::open(dir.path()).unwrap();
    let plain = StaticEmbedder::open(dir.path())
        .unwrap()
        .without_word_cache();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/bibdedupe-sample.jsonl");
    let mut texts: Vec<String> = std::fs::read_to_string(sample)
        .unwrap()
        .lines()
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            {
                let field = |name: &str| record[name].as_str().unwrap_or_default().to_owned();
                field("original_title") + " " + &field("original_abstract")
            }
        })
        .collect();
    texts.extend(
        [
            "Stroke,aspirin; (trial) patients'risk",
            "Ståål cafe\u{301} naïve STROKES",
            "东京stroke 大学 blood\u{3000}pressure\u{a0}care\u{2003}study",
            "x\u{0}y\u{7}z a\tb\nc\r\nd \u{200b}the\u{feff}of \u{fffd}risk",
            "ﬁnal ΣΟΦΟΣ",
            &"aspirin,".repeat(30),
            "",
            "   ",
        ]
        .map(String::from),
    );
    let ids = |embedder: &StaticEmbedder, text: &str| {
        let mut all = Vec::new();
        embedder
            .each_token_run(text, |run| all.extend_from_slice(run))
            .unwrap();
        all
    };
    // Twice: the second pass answers from the cache.
    for _ in 0..2 {
        for text in &texts {
            assert_eq!(ids(&cached, text), ids(&plain, text), "{text:?}");
        }
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    assert_eq!(cached.embed(&refs).unwrap(), plain.embed(&refs).unwrap());
    // What the cache compares against is not trivially empty.
    assert!(ids(&plain, &texts[0]).iter().any(|&id| id > 4));
}

#[test]
fn a_sentence_model_pooled_otherwise_than_by_the_mean_is_refused_by_file_and_field() {
    let bert = tempfile::tempdir().unwrap();
    tiny_bert(bert.path());
    let pooling = bert.path().join("1_Pooling");
    std::fs::create_dir(&pooling).unwrap();
    let write = |json: &str| std::fs::write(pooling.join("config.json"), json).unwrap();
    write(r#"{"word_embedding_dimension": 32, "pooling_mode_mean_tokens": true}"#);
    assert!(MiniLm::open(bert.path(), 32, 4).is_ok());
    write(r#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#);
    let Err(err) = MiniLm::open(bert.path(), 32, 4) else {
        panic!("a model read by its first token is refused")
    };
    let err = err.to_string();
    assert!(
        err.contains("1_Pooling") && err.contains("pooling_mode_cls_token"),
        "{err}"
    );
}

#[test]
fn models_derive_makes_a_static_model_of_the_width_asked_from_the_folder_given() {
    let bert = tempfile::tempdir().unwrap();
    tiny_bert(bert.path());
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("static-4");
    super::models::derive_static_into(root.path(), Some(bert.path()), 4, &out).unwrap();
    let embedder = StaticEmbedder::open(&out).unwrap();
    assert_eq!(embedder.dimensions(), 4);
    let v = embedder.embed(&["aspirin trial"]).unwrap();
    assert!((norm(&v[0]) - 1.0).abs() < 1e-5);
    // A folder is made whole or not at all: an existing one is refused, and so is a width
    // the model does not have.
    let again = super::models::derive_static_into(root.path(), Some(bert.path()), 4, &out);
    assert!(again.unwrap_err().to_string().contains("exists"));
    let wide = root.path().join("wide");
    let err = super::models::derive_static_into(root.path(), Some(bert.path()), 4096, &wide);
    assert!(err.unwrap_err().to_string().contains("--dimensions 4096"));
    assert!(!wide.exists());
}
