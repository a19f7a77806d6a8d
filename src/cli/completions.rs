//! `neardup completions`: shell completion scripts.

use clap::Args;
use clap_complete::Shell;

use crate::error::Result;

/// Print a completion script for a shell.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  neardup completions bash > ~/.local/share/bash-completion/completions/neardup\n  \
    neardup completions zsh > ~/.zfunc/_neardup\n  \
    neardup completions fish > ~/.config/fish/completions/neardup.fish"
)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: Shell,
}

/// Prints the script for the command line `command` (all of `neardup`'s).
pub fn run(args: CompletionsArgs, mut command: clap::Command) -> Result<()> {
    // clap_complete panics on a failed write: it writes into memory, and the script goes out
    // as any other result.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "neardup", &mut script);
    out!("{}", String::from_utf8_lossy(&script));
    Ok(())
}
