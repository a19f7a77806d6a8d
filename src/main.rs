//! The `neardup` binary: a thin shell over the library's command line.

/// mimalloc, tuned as `neardup::allocator` says.
#[global_allocator]
static ALLOCATOR: neardup::allocator::MiMalloc = neardup::allocator::MiMalloc;

/// What a SIGBUS means here. The stores check for room before they write (see
/// `neardup::io::space`), but another process can fill the disk a moment later, and a page of
/// a memory-mapped file that cannot be backed then stops the process with no error to return;
/// so does a mapped file another program cut short (an index's `snapshot.bin`).
const SIGBUS_MESSAGE: &[u8] = b"error: a file neardup maps into memory could not be written \
or read: the disk that holds the index, or the temporary folder (TMPDIR), is probably full; \
free some space there and run again (a run's temporary files are removed by the next run). \
If another program was changing the index folder, run again once it is done\n";

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
    neardup::allocator::tune();
    neardup::cli::run()
}
