//! Help, examples and completions of every command.

use crate::common::*;

#[test]
fn every_command_has_help_with_an_example_and_completions_exist() {
    for command in [
        "dedup",
        "eval",
        "run",
        "gen",
        "stream",
        "groups",
        "jaccard",
        "diff",
        "explain",
        "overlap",
        "sweep",
        "completions",
        "index",
        "query",
        "models",
        "serve",
    ] {
        let out = ok(&[command, "--help"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Example"),
            "`neardup {command} --help` has no example"
        );
    }
    let out = ok(&["--help"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Exit codes: 0 success, 1 failure"));
    for shell in ["bash", "zsh", "fish"] {
        let out = ok(&["completions", shell]);
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(
            script.contains("dedup") && script.contains("threshold"),
            "{shell}"
        );
    }
    let out = neardup(&["dedup"]);
    assert_eq!(out.status.code(), Some(2), "bad usage exits 2");
}
