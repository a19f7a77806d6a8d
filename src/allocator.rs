//! The allocator neardup's programs install (the command line, the Python extension), and how
//! it is tuned.
//!
//! Reading a corpus makes and frees a few small buffers a record on every thread; under the
//! system allocator, malloc and free were about a tenth of a MinHash run's profile. mimalloc
//! takes that away. A library does not choose its user's allocator: each program installs
//! [`MiMalloc`] itself (`#[global_allocator]`) and calls [`tune`] as it starts.

pub use mimalloc::MiMalloc;

/// mimalloc's number for its `purge_delay` option (`mi_option_purge_delay` in the mimalloc.h
/// of the version Cargo.lock pins; the crate names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// How long freed memory waits before it goes back to the system. mimalloc's own second
/// showed at a million documents as a peak 0.6 GB above what any stage holds: a two-stage run
/// frees gigabytes between stages and takes as much again at once.
const PURGE_DELAY_MS: std::ffi::c_long = 100;

/// Sets mimalloc's options for neardup's work, where the environment does not set them
/// (`MIMALLOC_PURGE_DELAY`). Call it as the program starts.
pub fn tune() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: an option is a plain value mimalloc reads when it next purges.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_option_is_the_one_mimalloc_documents() {
        // mimalloc's documented default for `purge_delay` in the pinned version (1,000 ms);
        // a different number would mean the option moved in its list.
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            // SAFETY: reading an option.
            assert_eq!(
                unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) },
                1000
            );
        }
    }
}
