//! The `neardup` binary: a thin shell over the library's command line.

/// mimalloc: reading a corpus makes and frees a few small buffers a record on every thread;
/// under the system allocator, malloc and free were about a tenth of a MinHash run's profile.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // Like other Unix tools, end quietly when the reader of our output goes away
    // (`neardup ... | head`), instead of failing to print.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE at start-up, before any thread or
    // output exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    neardup::cli::run()
}
