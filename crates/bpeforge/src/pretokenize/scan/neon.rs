//! The block classifier on aarch64's NEON: the same masks as
//! `classify_bytes` (tested on every byte value at every position in
//! `classify.rs`), 16 bytes a compare.
//!
//! NEON has no `movemask`: each compare gives a vector of 0x00/0xFF bytes.
//! The four vectors of a block are turned into one 64-bit mask as simdjson
//! does: each byte keeps the bit of its position within its group of eight
//! (AND with 1, 2, 4, ... 128), and three rounds of pairwise additions sum
//! each group of eight into one byte, bit `i` of the result for byte `i`.

use std::arch::aarch64::{
    uint8x16_t, vandq_u8, vceqq_u8, vcgeq_u8, vcltq_u8, vdupq_n_u8, vgetq_lane_u64, vld1q_u8, vorrq_u8, vpaddq_u8,
    vreinterpretq_u64_u8, vsubq_u8,
};

use super::classify::{Classify, Masks, BLOCK};

/// 16 bytes at a time, four vectors per block.
pub(crate) struct Neon;

/// The bit of each byte's position within its group of eight.
const POSITION_BITS: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];

/// The 64-bit mask of four compare results (bytes 0x00 or 0xFF), bit `i`
/// for byte `i % 16` of vector `i / 16`.
#[inline(always)]
unsafe fn movemask(parts: [uint8x16_t; 4]) -> u64 {
    // SAFETY: the load reads the 16 bytes of `POSITION_BITS`; NEON is part
    // of every aarch64 target.
    unsafe {
        let weights = vld1q_u8(POSITION_BITS.as_ptr());
        let [a, b, c, d] = parts.map(|part| vandq_u8(part, weights));
        let ab = vpaddq_u8(a, b);
        let cd = vpaddq_u8(c, d);
        let abcd = vpaddq_u8(ab, cd);
        let sums = vpaddq_u8(abcd, abcd);
        vgetq_lane_u64::<0>(vreinterpretq_u64_u8(sums))
    }
}

/// The mask of the bytes of `block` (as four vectors) for which `test` is
/// all ones.
#[inline(always)]
unsafe fn mask_of(block: &[uint8x16_t; 4], test: impl Fn(uint8x16_t) -> uint8x16_t) -> u64 {
    // SAFETY: as for `movemask`.
    unsafe { movemask(block.map(test)) }
}

/// Bytes of `x` in `lo..lo + n`: `x - lo` wraps the bytes below `lo` to the
/// top, so one unsigned compare finds them.
#[inline(always)]
fn in_range(x: uint8x16_t, lo: u8, n: u8) -> uint8x16_t {
    // SAFETY: NEON is part of every aarch64 target.
    unsafe { vcltq_u8(vsubq_u8(x, vdupq_n_u8(lo)), vdupq_n_u8(n)) }
}

#[inline(always)]
fn equal(x: uint8x16_t, byte: u8) -> uint8x16_t {
    // SAFETY: NEON is part of every aarch64 target.
    unsafe { vceqq_u8(x, vdupq_n_u8(byte)) }
}

impl Classify for Neon {
    #[inline(always)]
    unsafe fn classify(block: &[u8; BLOCK]) -> Masks {
        // SAFETY: each load reads 16 bytes of the block; NEON is part of
        // every aarch64 target.
        unsafe {
            let at = block.as_ptr();
            let parts = [vld1q_u8(at), vld1q_u8(at.add(16)), vld1q_u8(at.add(32)), vld1q_u8(at.add(48))];
            let blank = |x| equal(x, b' ');
            Masks {
                // OR 0x20 folds A-Z onto a-z and moves no other byte into a-z.
                letter: mask_of(&parts, |x| in_range(vorrq_u8(x, vdupq_n_u8(0x20)), b'a', 26)),
                lower: mask_of(&parts, |x| in_range(x, b'a', 26)),
                digit: mask_of(&parts, |x| in_range(x, b'0', 10)),
                space: mask_of(&parts, |x| vorrq_u8(in_range(x, b'\t', 5), blank(x))),
                blank: mask_of(&parts, blank),
                newline: mask_of(&parts, |x| vorrq_u8(equal(x, b'\r'), equal(x, b'\n'))),
                apostrophe: mask_of(&parts, |x| equal(x, b'\'')),
                slash: mask_of(&parts, |x| equal(x, b'/')),
                non_ascii: mask_of(&parts, |x| vcgeq_u8(x, vdupq_n_u8(0x80))),
                cjk: 0,
            }
        }
    }
}
