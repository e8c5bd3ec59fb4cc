//! A software prefetch hint, for loops that know the addresses they will
//! read a few iterations ahead (the encoder's piece tables, the merge loop's
//! words): the cache misses then overlap instead of queueing.

/// Ask for the cache line holding `value`. A hint only: it never faults and
/// changes no result. On x86-64 it is `prefetcht0` (SSE, part of the
/// baseline, so no CPU feature check is needed); elsewhere a no-op (aarch64's
/// prefetch intrinsic is not stable yet).
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching any address is allowed and has no effect on memory.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(value as *const T as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// `prefetch` into the second-level cache only (`prefetcht1`): for an
/// address needed a few hundred cycles later, early enough to cover a
/// memory access without crowding the first-level cache meanwhile.
#[inline(always)]
pub fn prefetch_l2<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching any address is allowed and has no effect on memory.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
        _mm_prefetch::<_MM_HINT_T1>(value as *const T as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
