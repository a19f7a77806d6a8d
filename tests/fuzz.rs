//! Property tests over what users and clients hand neardup: bytes as a JSONL or CSV file, any
//! text through the tokeniser and the sketch, any body to `serve`. None may panic, drop a record
//! without an error that names it, or answer a server error.
//!
//! Each property runs 256 cases in the test suite; a long run (the README's fuzz command) sets
//! `PROPTEST_CASES`.

use std::path::Path;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use neardup::confirm::{ConfirmSettings, Confirmer};
use neardup::index::{DocumentIndex, IndexSettings};
use neardup::io::{FieldSpec, Input, InputFormat, ReadOptions};
use neardup::serve::{ServeOptions, router};
use proptest::prelude::*;
use tower::ServiceExt;

/// Bytes a corpus file might hold: mostly JSON-ish or CSV-ish text, with any byte mixed in.
fn corpus_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"{\"id\":\"".to_vec()),
        Just(b"\",\"text\":\"".to_vec()),
        Just(b"\"}\n".to_vec()),
        Just(b"\n".to_vec()),
        Just(b",".to_vec()),
        Just(b"\"".to_vec()),
        Just(b"\\u00e9\\ud800".to_vec()),
        Just("Zażółć 12 (2019) x".as_bytes().to_vec()),
        proptest::collection::vec(any::<u8>(), 0..12),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

fn fields() -> FieldSpec {
    FieldSpec {
        id: "id".into(),
        text: vec!["text".into()],
    }
}

/// A small Parquet file in the fields' columns, with a list column beside them.
fn parquet_sample() -> Vec<u8> {
    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let rows = 50;
    let batch = RecordBatch::try_from_iter([
        (
            "id",
            Arc::new(
                (0..rows)
                    .map(|i| Some(format!("r{i}")))
                    .collect::<StringArray>(),
            ) as ArrayRef,
        ),
        (
            "text",
            Arc::new(
                (0..rows)
                    .map(|i| Some(format!("words of row {i}")))
                    .collect::<StringArray>(),
            ),
        ),
        ("n", Arc::new((0..rows).map(Some).collect::<Int64Array>())),
    ])
    .unwrap();
    let mut bytes = Vec::new();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(&mut bytes, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    bytes
}

/// Reads `path` as neardup does, returning (records framed, records parsed, bad records).
fn read_all(path: &Path, format: InputFormat) -> neardup::Result<(usize, usize, usize)> {
    let read = ReadOptions {
        fields: fields(),
        skip_invalid: true,
        max_doc_bytes: 64,
    };
    let (mut framed, mut parsed, mut bad) = (0, 0, 0);
    for raw in Input::new(path, Some(format))?.open(&read.fields, read.max_record_bytes())? {
        let raw = raw?;
        framed += 1;
        match read.parse(&raw) {
            Ok(record) => {
                assert!(record.text.len() <= 64, "{record:?}");
                parsed += 1;
            }
            Err(e) => {
                let message = e.to_string();
                assert!(
                    message.contains(&path.display().to_string()),
                    "an error names its file: {message}"
                );
                bad += 1;
            }
        }
    }
    Ok((framed, parsed, bad))
}

proptest! {
    #[test]
    fn any_jsonl_file_is_read_line_by_line_without_a_panic(bytes in corpus_bytes()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.jsonl");
        std::fs::write(&path, &bytes).unwrap();
        let (framed, parsed, bad) = read_all(&path, InputFormat::JSONL).unwrap();
        // Every line with something on it is a record, good or bad: nothing is dropped.
        let bom_free = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
        let lines = bom_free
            .split(|&b| b == b'\n')
            .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
            .count();
        prop_assert_eq!(framed, lines);
        prop_assert_eq!(parsed + bad, framed);
    }

    #[test]
    fn any_csv_body_is_read_or_refused_with_its_line(body in corpus_bytes()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.csv");
        let mut bytes = b"id,text\n".to_vec();
        bytes.extend_from_slice(&body);
        std::fs::write(&path, &bytes).unwrap();
        match read_all(&path, InputFormat::named("csv").unwrap()) {
            Ok((framed, parsed, bad)) => prop_assert_eq!(parsed + bad, framed),
            // Only an over-long row stops the reader, and it is named.
            Err(e) => prop_assert!(e.to_string().contains("in.csv:"), "{}", e),
        }
    }

    #[test]
    fn a_damaged_parquet_file_is_read_or_refused_by_name(
        cuts in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        truncate in any::<prop::sample::Index>(),
        shorten in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.parquet");
        let mut bytes = parquet_sample();
        for (at, byte) in cuts {
            let at = at.index(bytes.len());
            bytes[at] = byte;
        }
        if shorten {
            bytes.truncate(truncate.index(bytes.len()));
        }
        std::fs::write(&path, &bytes).unwrap();
        match read_all(&path, InputFormat::named("parquet").unwrap()) {
            Ok((framed, parsed, bad)) => prop_assert_eq!(parsed + bad, framed),
            Err(e) => prop_assert!(e.to_string().contains("in.parquet"), "{}", e),
        }
    }

    #[test]
    fn any_text_tokenises_and_signs(text in "\\PC{0,200}", noise in proptest::collection::vec(any::<char>(), 0..20)) {
        let text: String = text.chars().chain(noise).collect();
        let words = neardup::text::words(&text);
        prop_assert!(words.iter().all(|w| !w.is_empty()));
        let mut streamed = Vec::new();
        neardup::text::for_each_word(&text, |w| streamed.push(w.to_owned()));
        prop_assert_eq!(&streamed.len(), &words.len());
        let confirmer = Confirmer::new(&ConfirmSettings::default(), 0.5).unwrap();
        let sketch = confirmer.sign(&neardup::io::Record::plain("x".into(), text.clone()));
        let (evidence, _) = confirmer.confirm(sketch.as_ref(), sketch.as_ref(), 1.0);
        prop_assert!(evidence.jaccard.is_finite());
    }
}

/// A tiny served index: random 8-dimensional vectors for a few words.
fn served() -> (tempfile::TempDir, axum::Router) {
    let dir = tempfile::tempdir().unwrap();
    let glove = dir.path().join("words.txt");
    let vectors: String = ["alpha", "beta", "gamma", "delta", "stroke", "trial"]
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let v: Vec<String> = (0..8)
                .map(|d| format!("{:.3}", ((i * 7 + d * 3) % 11) as f32 / 11.0 - 0.5))
                .collect();
            format!("{w} {}\n", v.join(" "))
        })
        .collect();
    std::fs::write(&glove, vectors).unwrap();
    let settings: IndexSettings = neardup::settings::read(
        neardup::settings::MethodName::TwoStage,
        serde_json::json!({"embedder": "glove", "glove": glove})
            .as_object()
            .unwrap(),
    )
    .unwrap();
    let mut index = DocumentIndex::create(&dir.path().join("idx"), &settings, dir.path()).unwrap();
    index.finish().unwrap();
    let options = ServeOptions {
        addr: "127.0.0.1:0".parse().unwrap(),
        token: None,
        public_reads: false,
        max_body: 4096,
        max_text_bytes: 1024,
        max_concurrent: 4,
        top_k: 5,
    };
    let app = router(index, &options);
    (dir, app)
}

/// Bodies a client might send: JSON-ish pieces and any bytes.
fn request_body() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"{".to_vec()),
        Just(b"}".to_vec()),
        Just(b"\"id\":".to_vec()),
        Just(b"\"text\":".to_vec()),
        Just(b"\"title\":".to_vec()),
        Just(b"\"abstract\":".to_vec()),
        Just(b"\"alpha beta gamma\"".to_vec()),
        Just(b"\"x\"".to_vec()),
        Just(b",".to_vec()),
        Just(b"[1, null, 2e400]".to_vec()),
        Just(vec![b'a'; 1500]),
        proptest::collection::vec(any::<u8>(), 0..8),
    ];
    proptest::collection::vec(piece, 0..12).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn any_body_gets_an_answer_and_never_a_server_error(
        body in request_body(),
        route in prop_oneof![Just("/documents"), Just("/similar")],
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (_dir, app) = served();
        let request = Request::post(route)
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap();
        let response = runtime.block_on(app.oneshot(request)).unwrap();
        let status = response.status();
        prop_assert!(!status.is_server_error(), "{}", status);
        if status != StatusCode::OK && status != StatusCode::CREATED {
            let bytes = runtime.block_on(axum::body::to_bytes(response.into_body(), 1 << 20)).unwrap();
            let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            prop_assert!(json["error"].is_string(), "{}", json);
        }
    }
}
