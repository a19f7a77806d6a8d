//! The `neardup` binary: a thin shell over the library's command line.

/// mimalloc: reading a corpus makes and frees a few small buffers a record on every thread;
/// under the system allocator, malloc and free were about a tenth of a MinHash run's profile.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's number for its `purge_delay` option (`mi_option_purge_delay` in the mimalloc.h
/// of the version Cargo.lock pins; the crate names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// How long freed memory waits before it goes back to the system. mimalloc's own second
/// showed at a million documents as a peak 0.6 GB above what any stage holds: a two-stage run
/// frees gigabytes between stages and takes as much again at once.
const PURGE_DELAY_MS: std::ffi::c_long = 100;

/// What a SIGBUS means here. The stores check for room before they write (see
/// `neardup::io::space`), but another process can fill the disk a moment later, and a page of
/// a memory-mapped file that cannot be backed then stops the process with no error to return.
const SIGBUS_MESSAGE: &[u8] = b"error: a file neardup maps into memory could not be written: \
the disk that holds the index, or the temporary folder (TMPDIR), is probably full; free some \
space there and run again (a run's temporary files are removed by the next run)\n";

/// Says [`SIGBUS_MESSAGE`] and exits with 1, as other failures do. Only async-signal-safe
/// calls: `write` and `_exit`.
#[cfg(unix)]
extern "C" fn on_sigbus(_: libc::c_int) {
    // SAFETY: both calls are async-signal-safe and the message is static.
    unsafe {
        libc::write(2, SIGBUS_MESSAGE.as_ptr().cast(), SIGBUS_MESSAGE.len());
        libc::_exit(1);
    }
}

fn main() -> std::process::ExitCode {
    // Like other Unix tools, end quietly when the reader of our output goes away
    // (`neardup ... | head`), instead of failing to print.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE at start-up, before any thread or
    // output exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    #[cfg(unix)]
    // SAFETY: installing a handler at start-up, before any thread exists; the handler only
    // writes a static message and exits.
    unsafe {
        libc::signal(libc::SIGBUS, on_sigbus as *const () as libc::sighandler_t);
    }
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: setting an option at start-up, before any thread exists.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
    neardup::cli::run()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_option_is_the_one_mimalloc_documents() {
        // mimalloc's documented default for `purge_delay` in the pinned version (1,000 ms);
        // a different number would mean the option moved in its list.
        #[cfg(unix)]
        // SAFETY: installing a handler at start-up, before any thread exists; the handler only
        // writes a static message and exits.
        unsafe {
            libc::signal(libc::SIGBUS, on_sigbus as *const () as libc::sighandler_t);
        }
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            // SAFETY: reading an option.
            assert_eq!(
                unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) },
                1000
            );
        }
    }
}
