//! Asking the processor for memory before it is read.
//!
//! The confirm stage and the writing of candidates visit tens of millions of pairs whose
//! documents lie anywhere in gigabytes: each visit waits on several cache misses in turn. Asking
//! for the memory of the pairs a few places ahead lets those waits overlap (the figures are in
//! docs/decisions/0006-writing-at-the-disks-pace.md).

/// How many places ahead a loop asks for memory a link at a time: far enough to cover a miss
/// behind the work of that many items, near enough that what is loaded stays cached.
pub(crate) const AHEAD: usize = 8;

/// Starts loading the cache line that holds `at`. A hint: it changes no result, and on other
/// processors it does nothing.
pub(crate) fn prefetch<T>(at: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing and cannot fault, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}
