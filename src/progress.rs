//! Progress bars for long work: drawn on a terminal, silent when stderr is piped or `--quiet`
//! is given, so logs and machine-readable output stay clean.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

static QUIET: AtomicBool = AtomicBool::new(false);

/// Silences every bar created afterwards.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether bars are drawn: stderr is a terminal and `--quiet` was not given.
pub fn visible() -> bool {
    !QUIET.load(Ordering::Relaxed) && std::io::stderr().is_terminal()
}

fn bar(total: u64, template: &str, message: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if !visible() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template(template)
            .expect("valid template")
            .with_key(
                "rate",
                |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.0}/s", state.per_sec());
                },
            )
            .progress_chars("=> "),
    );
    bar.set_message(message.to_owned());
    bar
}

/// A bar over `total` bytes of input, with rate and ETA.
pub fn bytes(total: u64, message: &str) -> ProgressBar {
    bar(
        total,
        "{msg:>10} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
        message,
    )
}

/// A bar over `total` items, with rate and ETA.
pub fn items(total: u64, message: &str) -> ProgressBar {
    bar(
        total,
        "{msg:>10} [{bar:30}] {human_pos}/{human_len} {rate} ETA {eta}",
        message,
    )
}

/// A spinner for work that has no count (building a graph, learning cells): it shows that
/// the work goes on, and how long it has taken. Cleared when dropped.
pub fn spinner(message: &str) -> Spinner {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if !visible() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} ({elapsed})").expect("valid template"),
    );
    bar.set_message(message.to_owned());
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    Spinner(bar)
}

/// A running [`spinner`].
pub struct Spinner(ProgressBar);

impl Drop for Spinner {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
