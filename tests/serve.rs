//! `neardup serve` end to end: a real server process on loopback, a real HTTP client.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rand::{RngExt, SeedableRng};

#[path = "support/server.rs"]
mod server;
#[path = "support/stores.rs"]
mod stores;

const WORDS: usize = 300;

fn word(i: usize) -> String {
    format!("w{i}")
}

/// A GloVe file in `dir` with random 32-dimensional vectors for `WORDS` words.
fn word_vectors(dir: &Path) -> PathBuf {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let mut vectors = String::new();
    for i in 0..WORDS {
        vectors.push_str(&word(i));
        for _ in 0..32 {
            vectors.push_str(&format!(" {:.4}", rng.random::<f32>() - 0.5));
        }
        vectors.push('\n');
    }
    let glove = dir.join("words.txt");
    std::fs::write(&glove, vectors).unwrap();
    glove
}

/// An index over no documents, with [`word_vectors`], in the store `store` names.
fn empty_index(dir: &Path, store: &[String]) -> PathBuf {
    let glove = word_vectors(dir);
    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let index = dir.join("idx");
    let out = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args([
            "index",
            empty.to_str().unwrap(),
            "--index",
            index.to_str().unwrap(),
        ])
        .args([
            "--embedder",
            "glove",
            "--glove",
            glove.to_str().unwrap(),
            "-q",
        ])
        .args(store)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    index
}

/// A running server and its base URL.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(index: &Path, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_neardup"))
            .args([
                "serve",
                "--index",
                index.to_str().unwrap(),
                "--addr",
                "127.0.0.1:0",
            ])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let url = server::listening_url(&mut child);
        Server { child, url }
    }

    fn kill(mut self) {
        self.child.kill().unwrap(); // SIGKILL on Unix: no shutdown code runs
        self.child.wait().unwrap();
    }

    /// SIGTERM, and waits for the server to shut down cleanly.
    fn stop(mut self) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(sent.success());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "serve exited with {status} after SIGTERM");
    }
}

/// (status, JSON body) of a request; 4xx and 5xx are answers too.
fn call(request: ureq::Request, body: Option<&str>) -> Result<(u16, serde_json::Value), String> {
    let response = match body {
        Some(body) => request
            .set("Content-Type", "application/json")
            .send_string(body),
        None => request.call(),
    };
    let response = match response {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => return Err(e.to_string()),
    };
    let status = response.status();
    let text = response.into_string().map_err(|e| e.to_string())?;
    let json = if text.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?
    };
    Ok((status, json))
}

fn text(rng: &mut impl rand::Rng) -> String {
    (0..20)
        .map(|_| word(rng.random_range(0..WORDS)))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn kill_dash_nine_never_loses_an_acknowledged_write() {
    for store in stores::stores("serve-kill") {
        eprintln!("store flags: {store:?}");
        let dir = tempfile::tempdir().unwrap();
        kill_dash_nine_rounds(&empty_index(dir.path(), &store));
    }
}

/// Rounds of writing to a server over `index` from several writers at once (so that writes
/// share flushes) and killing it with SIGKILL; then every acknowledged document must be there.
fn kill_dash_nine_rounds(index: &Path) {
    const ROUNDS: usize = 8;
    const WRITERS: usize = 4;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let mut acknowledged = Vec::new();
    for round in 0..ROUNDS {
        let server = Server::start(index, &[]);
        let deadline = Instant::now() + Duration::from_millis(rng.random_range(100..600));
        // Write until the deadline, then kill the server with no warning, possibly mid-write.
        let writers: Vec<_> = (0..WRITERS)
            .map(|writer| {
                let url = server.url.clone();
                let texts: Vec<String> = (0..2000).map(|_| text(&mut rng)).collect();
                std::thread::spawn(move || {
                    let mut done = Vec::new();
                    for (i, text) in texts.iter().enumerate() {
                        let id = format!("doc-{round}-{writer}-{i}");
                        let body = serde_json::json!({"id": id, "text": text}).to_string();
                        match call(ureq::post(&format!("{url}/documents")), Some(&body)) {
                            Ok((201, _)) => done.push(id),
                            Ok((status, body)) => panic!("{status}: {body}"),
                            // The server died under us: this write is not acknowledged.
                            Err(_) => break,
                        }
                    }
                    done
                })
            })
            .collect();
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        server.kill();
        let before = acknowledged.len();
        for writer in writers {
            acknowledged.extend(writer.join().unwrap());
        }
        assert!(
            acknowledged.len() > before || round > 0,
            "no write got through before the kill"
        );
    }
    let server = Server::start(index, &[]);
    for id in &acknowledged {
        let (status, body) = call(
            ureq::get(&format!("{}/documents/{id}/duplicates", server.url)),
            None,
        )
        .unwrap();
        assert_eq!(status, 200, "{id} was acknowledged but is gone: {body}");
    }
    let (_, stats) = call(ureq::get(&format!("{}/stats", server.url)), None).unwrap();
    let stored = stats["documents"].as_u64().unwrap() as usize;
    assert!(
        stored >= acknowledged.len(),
        "{stored} stored, {} acknowledged",
        acknowledged.len()
    );
    assert!(
        acknowledged.len() > 20,
        "only {} writes in {ROUNDS} rounds",
        acknowledged.len()
    );
    server.kill();
}

/// Writes after the store's last flush live in the index's journal: a killed server's
/// successor redoes them (removals too), and a server stopped with SIGTERM leaves none.
#[test]
fn a_restarted_server_redoes_its_journal_and_a_clean_stop_empties_it() {
    let dir = tempfile::tempdir().unwrap();
    let index = empty_index(dir.path(), &[]);
    let journal = index.join("journal.jsonl");
    let server = Server::start(&index, &[]);
    let url = |path: &str| format!("{}{path}", server.url);
    for (id, text) in [("a", "w1 w2 w3 w4 w5 w6"), ("b", "w7 w8 w9 w10 w11 w12")] {
        let body = serde_json::json!({"id": id, "text": text}).to_string();
        let (status, body) = call(ureq::post(&url("/documents")), Some(&body)).unwrap();
        assert_eq!(status, 201, "{body}");
    }
    let (status, _) = call(ureq::delete(&url("/documents/a")), None).unwrap();
    assert_eq!(status, 204);
    let lines = std::fs::read_to_string(&journal).unwrap().lines().count();
    assert_eq!(lines, 3, "two inserts and a removal in the journal");
    server.kill();

    let server = Server::start(&index, &[]);
    let url = |path: &str| format!("{}{path}", server.url);
    let (status, _) = call(ureq::get(&url("/documents/a/duplicates")), None).unwrap();
    assert_eq!(status, 404, "a was removed before the kill");
    let body = r#"{"text": "w7 w8 w9 w10 w11 w12"}"#;
    let (status, found) = call(ureq::post(&url("/similar")), Some(body)).unwrap();
    assert_eq!(status, 200);
    assert_eq!(found["duplicates"][0]["id"], "b", "{found}");
    assert_eq!(
        std::fs::read_to_string(&journal).unwrap(),
        "",
        "redone and emptied"
    );

    let body = r#"{"id": "c", "text": "w20 w21 w22 w23 w24"}"#;
    assert_eq!(
        call(ureq::post(&url("/documents")), Some(body)).unwrap().0,
        201
    );
    assert!(!std::fs::read_to_string(&journal).unwrap().is_empty());
    server.stop();
    assert_eq!(
        std::fs::read_to_string(&journal).unwrap(),
        "",
        "a clean stop flushes the store"
    );
    let server = Server::start(&index, &[]);
    let (status, _) = call(
        ureq::get(&format!("{}/documents/c/duplicates", server.url)),
        None,
    )
    .unwrap();
    assert_eq!(status, 200);
    server.kill();
}

#[test]
fn an_index_of_format_4_is_served_and_says_8_from_its_first_write() {
    let dir = tempfile::tempdir().unwrap();
    let index = empty_index(dir.path(), &[]);
    let manifest = index.join("neardup-index.json");
    let read = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap()
    };
    assert_eq!(read()["format"], 8);
    let mut old = read();
    old["format"] = 4.into();
    std::fs::write(&manifest, old.to_string()).unwrap();

    let server = Server::start(&index, &[]);
    let url = |path: &str| format!("{}{path}", server.url);
    assert_eq!(call(ureq::get(&url("/stats")), None).unwrap().0, 200);
    assert_eq!(read()["format"], 4, "opening alone leaves the manifest");
    let body = r#"{"id": "a", "text": "w1 w2 w3 w4 w5 w6"}"#;
    assert_eq!(
        call(ureq::post(&url("/documents")), Some(body)).unwrap().0,
        201
    );
    assert_eq!(read()["format"], 8, "an older neardup must now refuse it");
    let body = r#"{"text": "w1 w2 w3 w4 w5 w6"}"#;
    let (status, found) = call(ureq::post(&url("/similar")), Some(body)).unwrap();
    assert_eq!(status, 200);
    assert_eq!(found["duplicates"][0]["id"], "a", "{found}");
    server.stop();
    assert_eq!(read()["format"], 8);
}

#[test]
fn an_index_whose_documents_were_all_deleted_is_empty_not_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let index = empty_index(dir.path(), &[]);
    let server = Server::start(&index, &[]);
    let url = |path: &str| format!("{}{path}", server.url);
    for id in ["a", "b", "c"] {
        let body = serde_json::json!({"id": id, "text": "w1 w2 w3 w4 w5 w6"}).to_string();
        assert_eq!(
            call(ureq::post(&url("/documents")), Some(&body)).unwrap().0,
            201
        );
    }
    for id in ["a", "b", "c"] {
        assert_eq!(
            call(ureq::delete(&url(&format!("/documents/{id}"))), None)
                .unwrap()
                .0,
            204
        );
    }
    server.stop();
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(index.join("neardup-index.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["documents"], 0, "a clean stop records the count");
    let server = Server::start(&index, &[]);
    let (status, stats) = call(ureq::get(&format!("{}/stats", server.url)), None).unwrap();
    assert_eq!(
        (status, &stats["documents"]),
        (200, &serde_json::json!(0)),
        "{stats}"
    );
    server.stop();
}

#[test]
fn an_idle_connection_is_closed_and_a_slow_body_gets_408() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let index = empty_index(dir.path(), &[]);
    let server = Server::start(&index, &[]);
    let address = server.url.trim_start_matches("http://").to_owned();
    let mut idle = std::net::TcpStream::connect(&address).unwrap();
    let mut slow = std::net::TcpStream::connect(&address).unwrap();
    slow.write_all(
        b"POST /similar HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
          Content-Length: 100\r\n\r\n{\"te",
    )
    .unwrap();
    let clock = Instant::now();
    idle.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut answer = Vec::new();
    idle.read_to_end(&mut answer).unwrap();
    assert!(answer.is_empty(), "closed without an answer");
    let waited = clock.elapsed();
    assert!(waited < Duration::from_secs(30), "closed after {waited:?}");
    slow.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut answer = String::new();
    slow.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive within"), "{answer}");
    server.stop();
}

#[test]
fn client_mistakes_get_json_4xx_and_writes_need_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let index = empty_index(dir.path(), &[]);
    let server = Server::start(&index, &["--token", "s3cret", "--max-body", "2000"]);
    let url = |path: &str| format!("{}{path}", server.url);
    let auth = |r: ureq::Request| r.set("Authorization", "Bearer s3cret");
    let doc = r#"{"id": "a", "title": "w1 w2 w3 w4", "abstract": "w5 w6 w7 w8 w9"}"#;

    let (status, body) = call(ureq::post(&url("/documents")), Some(doc)).unwrap();
    assert_eq!(status, 401, "{body}");
    assert!(body["error"].as_str().unwrap().contains("Bearer"));
    let (status, body) = call(auth(ureq::post(&url("/documents"))), Some(doc)).unwrap();
    assert_eq!((status, body["id"].as_str()), (201, Some("a")), "{body}");
    let (status, _) = call(auth(ureq::post(&url("/documents"))), Some(doc)).unwrap();
    assert_eq!(status, 409);
    let copy = r#"{"id": "b", "text": "w1 w2 w3 w4 w5 w6 w7 w8 w9"}"#;
    let (status, body) = call(auth(ureq::post(&url("/documents"))), Some(copy)).unwrap();
    assert_eq!(status, 201);
    assert_eq!(
        body["duplicates"][0]["id"], "a",
        "found at insert time: {body}"
    );
    let query = Some(r#"{"text": "w9 w8 w7 w6 w5 w4 w3 w2 w1"}"#);
    let (status, _) = call(ureq::post(&url("/similar")), query).unwrap();
    assert_eq!(status, 401, "reads need the token too");
    let lower = ureq::post(&url("/similar")).set("Authorization", "bearer s3cret");
    let (status, body) = call(lower, query).unwrap();
    assert_eq!(status, 200, "the scheme is case-insensitive");
    assert_eq!(body["duplicates"].as_array().unwrap().len(), 2, "{body}");
    let (status, _) = call(ureq::get(&url("/health")), None).unwrap();
    assert_eq!(status, 200, "health is open");

    for (body, status, needle) in [
        ("{not json", 400, "request body"),
        (r#"{"id": "c"}"#, 422, "give `text`"),
        (r#"{"id": "", "text": "w1"}"#, 422, "`id` is empty"),
        (r#"{"id": "  ", "text": "w1"}"#, 422, "`id` is empty"),
        (
            r#"{"id": "a\u0000b", "text": "w1"}"#,
            422,
            "control character",
        ),
        (r#"{"id": 5, "text": "w1"}"#, 422, "invalid type"),
    ] {
        let (got, answer) = call(auth(ureq::post(&url("/documents"))), Some(body)).unwrap();
        assert_eq!(got, status, "{body}: {answer}");
        assert!(
            answer["error"].as_str().unwrap().contains(needle),
            "{body}: {answer}"
        );
    }
    let long = format!(r#"{{"id": "{}", "text": "w1"}}"#, "i".repeat(1025));
    let (status, answer) = call(auth(ureq::post(&url("/documents"))), Some(&long)).unwrap();
    assert_eq!(status, 422, "{answer}");
    assert!(answer["error"].as_str().unwrap().contains("limit is 1024"));
    let big = format!(r#"{{"text": "{}"}}"#, "w1 ".repeat(1000));
    let (status, answer) = call(auth(ureq::post(&url("/similar"))), Some(&big)).unwrap();
    assert_eq!(status, 413, "{answer}");
    assert!(answer["error"].is_string());
    let (status, answer) = call(ureq::get(&url("/no/such/route")), None).unwrap();
    assert_eq!((status, answer["error"].is_string()), (404, true));
    let (status, _) = call(auth(ureq::get(&url("/documents/zzz/duplicates"))), None).unwrap();
    assert_eq!(status, 404);
    let (status, _) = call(auth(ureq::delete(&url("/documents/a"))), None).unwrap();
    assert_eq!(status, 204);
    let (status, _) = call(auth(ureq::delete(&url("/documents/a"))), None).unwrap();
    assert_eq!(status, 404);
    // One rule with `neardup dedup`: an empty text is a document, and matches nothing.
    let blank = r#"{"id": "blank", "text": "  "}"#;
    let (status, body) = call(auth(ureq::post(&url("/documents"))), Some(blank)).unwrap();
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["duplicates"], serde_json::json!([]));
    let (status, body) = call(auth(ureq::post(&url("/similar"))), Some(r#"{"text": ""}"#)).unwrap();
    assert_eq!(
        (status, &body["duplicates"]),
        (200, &serde_json::json!([])),
        "{body}"
    );
    let (status, spec) = call(auth(ureq::get(&url("/openapi.json"))), None).unwrap();
    assert_eq!(status, 200);
    assert!(spec["paths"]["/documents"]["post"].is_object(), "{spec}");
    assert!(
        spec["paths"]["/documents/{id}"]["get"].is_object(),
        "{spec}"
    );

    // An indexed document reads back; another id is 404, not 405.
    let (status, body) = call(auth(ureq::get(&url("/documents/b"))), None).unwrap();
    assert_eq!((status, body["id"].as_str()), (200, Some("b")), "{body}");
    assert_eq!(body["shingles"], 9, "{body}");
    let (status, _) = call(auth(ureq::get(&url("/documents/zzz"))), None).unwrap();
    assert_eq!(status, 404);
    let (status, _) = call(ureq::get(&url("/documents/b")), None).unwrap();
    assert_eq!(status, 401, "a document is a read, guarded like the others");

    // An array adds every document in order, each checked against those before it.
    let batch = r#"[{"id": "c1", "text": "w20 w21 w22 w23 w24 w25"},
                    {"id": "c2", "text": "w25 w24 w23 w22 w21 w20"}]"#;
    let (status, body) = call(auth(ureq::post(&url("/documents"))), Some(batch)).unwrap();
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        (body[0]["id"].as_str(), body[1]["id"].as_str()),
        (Some("c1"), Some("c2"))
    );
    assert_eq!(body[1]["duplicates"][0]["id"], "c1", "{body}");
    // All or nothing before the first write: one existing id adds none of the array.
    let clash = r#"[{"id": "c3", "text": "w30 w31 w32 w33"}, {"id": "c1", "text": "w1"}]"#;
    let (status, body) = call(auth(ureq::post(&url("/documents"))), Some(clash)).unwrap();
    assert_eq!(status, 409, "{body}");
    let (status, _) = call(auth(ureq::get(&url("/documents/c3"))), None).unwrap();
    assert_eq!(status, 404, "nothing of a refused array is added");
    let twice = r#"[{"id": "d", "text": "w1"}, {"id": "d", "text": "w2"}]"#;
    let (status, body) = call(auth(ureq::post(&url("/documents"))), Some(twice)).unwrap();
    assert_eq!(status, 422);
    assert!(
        body["error"].as_str().unwrap().contains("given twice"),
        "{body}"
    );
    let missing = r#"[{"id": "e", "text": "w1"}, {"id": "f"}]"#;
    let (status, body) = call(auth(ureq::post(&url("/documents"))), Some(missing)).unwrap();
    assert_eq!(status, 422);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("document 1: give `text`"),
        "{body}"
    );
    server.kill();
}

#[test]
fn a_missing_index_folder_gets_a_new_index_and_heavy_work_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let glove = word_vectors(dir.path());
    let index = dir.path().join("new-index");
    let glove_args = ["--embedder", "glove", "--glove", glove.to_str().unwrap()];
    let extra = [
        &glove_args[..],
        &[
            "--max-text-bytes",
            "300000",
            "--max-concurrent",
            "1",
            "--max-body",
            "1000000",
        ],
    ]
    .concat();
    let server = Server::start(&index, &extra);
    let url = |path: &str| format!("{}{path}", server.url);
    let (status, stats) = call(ureq::get(&url("/stats")), None).unwrap();
    assert_eq!(
        (status, stats["documents"].as_u64()),
        (200, Some(0)),
        "{stats}"
    );
    assert!(
        stats["embedder"].as_str().unwrap().contains("glove"),
        "{stats}"
    );

    let too_long = format!(r#"{{"text": "{}"}}"#, "w1 ".repeat(100_001));
    let (status, answer) = call(ureq::post(&url("/similar")), Some(&too_long)).unwrap();
    assert_eq!(status, 413, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("--max-text-bytes"),
        "{answer}"
    );

    // Sixteen long texts at once through one permit: the ones that find it taken get 503
    // with Retry-After, the others their answer.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let heavy = format!(
        r#"{{"text": "{}"}}"#,
        (0..40_000)
            .map(|_| word(rng.random_range(0..WORDS)))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let start = std::sync::Barrier::new(16);
    let answers: Vec<(u16, Option<String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..16)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    match ureq::post(&url("/similar")).send_string(&heavy) {
                        Ok(r) => (r.status(), None),
                        Err(ureq::Error::Status(code, r)) => {
                            (code, r.header("Retry-After").map(str::to_owned))
                        }
                        Err(e) => panic!("{e}"),
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(
        answers.iter().all(|(code, _)| *code == 200 || *code == 503),
        "{answers:?}"
    );
    assert!(answers.iter().any(|(code, _)| *code == 200), "{answers:?}");
    let busy: Vec<_> = answers.iter().filter(|(code, _)| *code == 503).collect();
    assert!(
        !busy.is_empty(),
        "one permit and sixteen at once: {answers:?}"
    );
    assert!(
        busy.iter().all(|(_, retry)| retry.as_deref() == Some("1")),
        "{busy:?}"
    );
    server.kill();

    // Now the folder holds an index: settings of a new one are refused, serving ones are not.
    let out = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args([
            "serve",
            "--index",
            index.to_str().unwrap(),
            "--threshold",
            "0.9",
            "--top-k",
            "5",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--threshold: settings of a new index"),
        "{stderr}"
    );
    let server = Server::start(&index, &["--top-k", "5"]);
    let (status, _) = call(ureq::get(&format!("{}/stats", server.url)), None).unwrap();
    assert_eq!(status, 200);
    server.kill();
}

#[test]
fn an_array_killed_halfway_is_stored_whole_or_not_at_all_and_can_be_sent_again() {
    let dir = tempfile::tempdir().unwrap();
    let index = empty_index(dir.path(), &[]);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let mut cut_short = 0;
    for round in 0..6u64 {
        let ids: Vec<String> = (0..300).map(|i| format!("r{round}-{i}")).collect();
        let body = serde_json::to_string(
            &ids.iter()
                .map(|id| serde_json::json!({"id": id, "text": text(&mut rng)}))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let server = Server::start(&index, &[]);
        let url = format!("{}/documents", server.url);
        let sent = {
            let (url, body) = (url.clone(), body.clone());
            std::thread::spawn(move || call(ureq::post(&url), Some(&body)))
        };
        // Killed at a different point of the array each round.
        std::thread::sleep(Duration::from_millis(20 + 60 * round));
        server.kill();
        let answered = sent.join().unwrap().map(|(status, _)| status).ok();

        let server = Server::start(&index, &[]);
        let stored = ids
            .iter()
            .filter(|id| {
                let url = format!("{}/documents/{id}", server.url);
                call(ureq::get(&url), None).unwrap().0 == 200
            })
            .count();
        match answered {
            Some(201) => assert_eq!(stored, ids.len(), "round {round}: acknowledged"),
            _ => {
                assert!(
                    stored == 0 || stored == ids.len(),
                    "round {round}: {stored} of {} stored",
                    ids.len()
                );
                cut_short += usize::from(stored == 0);
            }
        }
        // Sent again: added whole, or refused whole because it is all there.
        let (status, answer) = call(
            ureq::post(&format!("{}/documents", server.url)),
            Some(&body),
        )
        .unwrap();
        match stored {
            0 => assert_eq!(status, 201, "round {round}: {answer}"),
            _ => assert_eq!(status, 409, "round {round}: {answer}"),
        }
        server.stop();
    }
    assert!(cut_short > 0, "no round killed the server inside an array");
}

#[test]
fn a_body_declared_too_large_gets_413_at_once_and_a_bad_path_json() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let index = empty_index(dir.path(), &[]);
    let server = Server::start(&index, &["--max-body", "2000"]);
    let address = server.url.trim_start_matches("http://").to_owned();
    let mut stream = std::net::TcpStream::connect(&address).unwrap();
    // Declared, not sent: the answer must not wait for it.
    stream
        .write_all(
            b"POST /similar HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
              Content-Length: 5000\r\n\r\n{\"te",
        )
        .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let clock = Instant::now();
    let mut answer = [0u8; 512];
    let n = stream.read(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        clock.elapsed() < Duration::from_secs(5),
        "{:?}",
        clock.elapsed()
    );

    let (status, body) = call(ureq::get(&format!("{}/documents/%ff", server.url)), None).unwrap();
    assert_eq!(status, 400);
    assert!(
        body["error"].as_str().unwrap().contains("percent-encode"),
        "{body}"
    );
    let (status, body) = call(
        ureq::post(&format!("{}/documents", server.url)),
        Some(r#"[{"id": "a", "text": "w1 w2 w3 w4"}, {"id": "b", "text": 5}]"#),
    )
    .unwrap();
    assert_eq!(status, 422);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("document 1, field text"),
        "{body}"
    );
    server.stop();
}
