//! A software prefetch hint, for loops that know the addresses they will
//! read a few iterations ahead (the encoder's piece tables, the merge loop's
//! words): the cache misses then overlap instead of queueing.

/// Into every cache level (`prefetcht0`): for an address needed a few
/// iterations later.
pub const L1: i32 = 3;
/// Into the second-level cache only (`prefetcht1`): for an address needed a
/// few hundred cycles later, early enough to cover a memory access without
/// crowding the first-level cache meanwhile.
pub const L2: i32 = 2;

/// Ask for the cache line holding `value`, into the first-level cache.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    prefetch_address::<L1, T>(value);
}

/// Ask for the cache line holding `address`, into `LEVEL` (`L1` or `L2`).
/// A hint only: it never faults and changes no result, and the address need
/// not point at anything (a hint past a table's end is only wasted). On
/// x86-64 it is `_mm_prefetch` (SSE, part of the baseline, so no CPU feature
/// check is needed); elsewhere a no-op (aarch64's prefetch intrinsic is not
/// stable yet).
#[inline(always)]
pub fn prefetch_address<const LEVEL: i32, T>(address: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching any address is allowed and has no effect on memory.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<LEVEL>(address.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    #[test]
    fn levels_are_the_sse_hints() {
        use std::arch::x86_64::{_MM_HINT_T0, _MM_HINT_T1};
        assert_eq!((super::L1, super::L2), (_MM_HINT_T0, _MM_HINT_T1));
    }
}
