//! Progress bars for long work: drawn on a terminal, silent when stderr is piped or `--quiet`
//! is given, so logs and machine-readable output stay clean.
//!
//! Where no terminal shows them (a notebook), a caller can watch the bars instead
//! ([`watch`]): the newest one made is kept where [`watched`] reads it, and the caller draws it
//! its own way (the Python package, with tqdm).

use std::io::IsTerminal;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

static QUIET: AtomicBool = AtomicBool::new(false);
/// Whether a caller watches the bars, and the newest one made while it does.
static WATCHING: AtomicBool = AtomicBool::new(false);
static NEWEST: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Keeps the newest bar made from now on where [`watched`] reads it (`false`: no longer).
pub fn watch(on: bool) {
    WATCHING.store(on, Ordering::Relaxed);
    if !on {
        *NEWEST.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// The newest bar made while watched, unless it is done: its message, position and length
/// (none for a spinner).
pub fn watched() -> Option<(String, u64, Option<u64>)> {
    let newest = NEWEST.lock().unwrap_or_else(|e| e.into_inner());
    let bar = newest.as_ref().filter(|bar| !bar.is_finished())?;
    Some((bar.message(), bar.position(), bar.length()))
}

fn offer(bar: &ProgressBar) {
    if WATCHING.load(Ordering::Relaxed) {
        *NEWEST.lock().unwrap_or_else(|e| e.into_inner()) = Some(bar.clone());
    }
}

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
    offer(&bar);
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
    offer(&bar);
    Spinner(bar)
}

/// A running [`spinner`].
pub struct Spinner(ProgressBar);

impl Drop for Spinner {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
