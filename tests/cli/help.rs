//! Help, examples and completions of every command.

use crate::common::*;

#[test]
fn every_command_has_help_with_an_example_and_completions_exist() {
    use clap::CommandFactory;
    let cli = neardup::cli::Cli::command();
    let commands: Vec<&str> = cli
        .get_subcommands()
        .map(|c| c.get_name())
        .filter(|&name| name != "help")
        .collect();
    assert!(commands.len() >= 17, "{commands:?}");
    for command in commands {
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

#[test]
fn commands_other_than_dedup_do_not_offer_part_against_or_add() {
    for command in ["serve", "explain", "index"] {
        let text = String::from_utf8_lossy(&ok(&[command, "--help"]).stdout).into_owned();
        for flag in ["--part <I/N>", "--against <INDEX>", "--add [<ADD>]"] {
            assert!(
                !text.contains(flag),
                "`neardup {command} --help` offers {flag}"
            );
        }
    }
    let text = String::from_utf8_lossy(&ok(&["dedup", "--help"]).stdout).into_owned();
    assert!(
        text.contains("--part <I/N>") && text.contains("--against <INDEX>") && !text.contains("[`"),
        "{text}"
    );
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("idx");
    let stderr = rejected(&[
        "index",
        s(&sample()),
        "--index",
        s(&index),
        "--against",
        "x",
    ]);
    assert!(
        stderr.contains("`neardup index` takes no --against"),
        "{stderr}"
    );
}
