//! The classic tools: `jaccard`, `diff`, `overlap`, `groups`, `stream`.

use crate::common::*;

#[test]
fn jaccard_command_reproduces_the_seed() {
    let out = ok(&[
        "jaccard",
        "--text",
        "To jest pierwsze zdanie.",
        "To nie jest pierwsze zdanie, tylko drugie.",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "0.5714285714285714"
    );
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.txt");
    std::fs::write(&a, "bar bar").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(["jaccard", "-", s(&a)])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(b"Bar")?;
            child.wait_with_output()
        })
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1");
}

#[test]
fn diff_overlap_and_groups_show_what_people_read() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(
        docs.join("a.txt"),
        "Referendum w sprawie Brexitu odbędzie się w czwartek",
    )
    .unwrap();
    std::fs::write(
        docs.join("b.txt"),
        "Referendum w sprawie Brexitu odbędzie się w piątek",
    )
    .unwrap();
    std::fs::write(docs.join("c.txt"), "Zażółć gęślą jaźń").unwrap();

    let out = ok(&[
        "diff",
        s(&docs.join("a.txt")),
        s(&docs.join("b.txt")),
        "--color",
        "never",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[-czwartek-]{+piątek+}"), "{text}");
    assert!(text.contains("0.875"), "7 of 8 words shared: {text}");
    let out = ok(&[
        "diff",
        s(&docs.join("a.txt")),
        s(&docs.join("b.txt")),
        "--color",
        "always",
    ]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("\u{1b}["));

    let out = ok(&[
        "overlap",
        s(&docs.join("a.txt")),
        s(&docs.join("b.txt")),
        s(&docs.join("c.txt")),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    // a and b share 6 of their 7 distinct words, c nothing: a (first of the tie) represents.
    assert!(text.contains("a.txt (mean overlap 0.429)"), "{text}");

    // Longer articles, one word apart (Jaccard 0.9), so that MinHash's LSH banding (tuned to
    // 0.7, steep around 0.8-0.9) reliably proposes the pair.
    let news = dir.path().join("news");
    std::fs::create_dir(&news).unwrap();
    let article = "Premier zapowiedział że referendum w sprawie Brexitu odbędzie się w czwartek \
                   a wyniki zostaną ogłoszone w piątek rano przez komisję wyborczą w Londynie";
    std::fs::write(news.join("a.txt"), article).unwrap();
    std::fs::write(
        news.join("b.txt"),
        article.replace("Londynie", "Westminsterze"),
    )
    .unwrap();
    std::fs::write(news.join("c.txt"), "Zażółć gęślą jaźń").unwrap();
    for similarity in ["cosine", "jaccard", "minhash"] {
        let out = ok(&[
            "groups",
            s(&news),
            "--similarity",
            similarity,
            "--threshold",
            "0.7",
            "--matrix",
            "--json",
        ]);
        let lines: Vec<serde_json::Value> = json_lines(&out);
        assert_eq!(lines.len(), 1, "{similarity}");
        assert_eq!(
            lines[0]["members"],
            serde_json::json!(["a.txt", "b.txt"]),
            "{similarity}"
        );
        assert_eq!(lines[0]["matrix"][0][0], 1.0);
    }
}

#[test]
fn stream_keeps_first_copies_and_remembers_across_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("unique.jsonl");
    let store = dir.path().join("store");
    let dropped = dir.path().join("dropped.jsonl");
    let run = ok(&[
        "stream",
        s(&sample()),
        "--out",
        s(&out),
        "--store",
        s(&store),
        "--dropped",
        s(&dropped),
    ]);
    let summary = String::from_utf8_lossy(&run.stdout);
    let kept = std::fs::read_to_string(&out).unwrap().lines().count();
    let gone = std::fs::read_to_string(&dropped).unwrap().lines().count();
    assert_eq!(kept + gone, 1304, "{summary}");
    assert!(gone > 200 && kept > 800, "{summary}");
    // The same documents again: all resemble what the store kept.
    let again = dir.path().join("again.jsonl");
    ok(&[
        "stream",
        s(&sample()),
        "--out",
        s(&again),
        "--store",
        s(&store),
    ]);
    assert_eq!(std::fs::read_to_string(&again).unwrap(), "");
    // Other settings than the store's are refused.
    let out = neardup(&[
        "stream",
        s(&sample()),
        "--out",
        s(&again),
        "--store",
        s(&store),
        "--ngram",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(2));
}
