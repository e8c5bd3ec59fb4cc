//! The classes of 64 bytes at once, as bitmasks (bit `i` for byte `i`): what
//! the block scanners (`blocks.rs`) compute piece starts from with a few
//! word operations instead of a branch per char.
//!
//! Only ASCII is classified here; a byte of a multi-byte char is marked
//! `non_ascii` and in no other mask, and the block scanners leave those
//! stretches to the char-by-char scanners. On x86-64 the masks come from
//! SSE2 compares (part of the x86-64 baseline: no feature to detect, and no
//! `target-feature` for the build); elsewhere from the `charclass` table a
//! byte at a time, which is also the reference the SSE2 version is tested
//! against on every byte value at every position.

use crate::charclass::{ASCII, LETTER, NUMBER, SPACE};

pub(crate) const BLOCK: usize = 64;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Masks {
    /// `[A-Za-z]`: the ASCII `\p{L}`.
    pub letter: u64,
    /// `[a-z]`, o200k's lower case.
    pub lower: u64,
    /// `[0-9]`: the ASCII `\p{N}`.
    pub digit: u64,
    /// The ASCII `\s`: `[\t\n\x0B\x0C\r ]`.
    pub space: u64,
    /// U+0020 alone, the optional prefix of the presets' runs.
    pub blank: u64,
    /// CR and LF, which the cl100k and o200k families treat apart.
    pub newline: u64,
    pub apostrophe: u64,
    /// `/`, which o200k's punctuation pieces take after their CR/LF.
    pub slash: u64,
    /// Bytes of 0x80 and above.
    pub non_ascii: u64,
}

/// The masks of `block`.
#[inline(always)]
pub(crate) fn classify(block: &[u8; BLOCK]) -> Masks {
    #[cfg(target_arch = "x86_64")]
    {
        sse2::classify(block)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        classify_bytes(block)
    }
}

/// One byte at a time from `charclass::ASCII`.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
pub(crate) fn classify_bytes(block: &[u8; BLOCK]) -> Masks {
    let mut masks = Masks::default();
    for (i, &b) in block.iter().enumerate() {
        let bit = 1u64 << i;
        if b >= 0x80 {
            masks.non_ascii |= bit;
            continue;
        }
        let flags = ASCII[b as usize];
        let mark = |mask: &mut u64, on: bool| *mask |= if on { bit } else { 0 };
        mark(&mut masks.letter, flags & LETTER != 0);
        mark(&mut masks.lower, b.is_ascii_lowercase());
        mark(&mut masks.digit, flags & NUMBER != 0);
        mark(&mut masks.space, flags & SPACE != 0);
        mark(&mut masks.blank, b == b' ');
        mark(&mut masks.newline, b == b'\r' || b == b'\n');
        mark(&mut masks.apostrophe, b == b'\'');
        mark(&mut masks.slash, b == b'/');
    }
    masks
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi8, _mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };

    use super::{Masks, BLOCK};

    /// Bytes of `x` in `lo..lo + n` (`n <= 128`), as a movemask: adding
    /// `0x80 - lo` moves that range to `0x80..0x80 + n`, the lowest `n`
    /// values as signed bytes, and one signed compare finds them.
    #[inline(always)]
    unsafe fn in_range(x: __m128i, lo: u8, n: u8) -> u64 {
        let shifted = _mm_add_epi8(x, _mm_set1_epi8(0x80u8.wrapping_sub(lo) as i8));
        _mm_movemask_epi8(_mm_cmplt_epi8(shifted, _mm_set1_epi8(0x80u8.wrapping_add(n) as i8))) as u16 as u64
    }

    #[inline(always)]
    unsafe fn equal(x: __m128i, byte: u8) -> u64 {
        _mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8(byte as i8))) as u16 as u64
    }

    #[inline(always)]
    pub(super) fn classify(block: &[u8; BLOCK]) -> Masks {
        let mut masks = Masks::default();
        for part in 0..BLOCK / 16 {
            let shift = 16 * part;
            // SAFETY: SSE2 is part of the x86-64 baseline; the unaligned load
            // reads bytes `shift..shift + 16` of the 64-byte block.
            unsafe {
                let x = _mm_loadu_si128(block.as_ptr().add(shift) as *const __m128i);
                // OR 0x20 folds A-Z onto a-z and moves no other byte into a-z.
                masks.letter |= in_range(_mm_or_si128(x, _mm_set1_epi8(0x20)), b'a', 26) << shift;
                masks.lower |= in_range(x, b'a', 26) << shift;
                masks.digit |= in_range(x, b'0', 10) << shift;
                let blank = equal(x, b' ');
                masks.space |= (in_range(x, b'\t', 5) | blank) << shift;
                masks.blank |= blank << shift;
                masks.newline |= (equal(x, b'\r') | equal(x, b'\n')) << shift;
                masks.apostrophe |= equal(x, b'\'') << shift;
                masks.slash |= equal(x, b'/') << shift;
                masks.non_ascii |= (_mm_movemask_epi8(x) as u16 as u64) << shift;
            }
        }
        masks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simd_masks_equal_the_table_for_every_byte_at_every_position() {
        for b in 0..=255u8 {
            for filler in [b'a', b' ', 0x80, b'\''] {
                let mut block = [filler; BLOCK];
                for i in (0..BLOCK).step_by(3) {
                    block[i] = b;
                }
                assert_eq!(classify(&block), classify_bytes(&block), "byte {b:#x} among {filler:#x}");
            }
        }
    }

    #[test]
    fn the_table_marks_the_ascii_classes() {
        let mut block = [b'.'; BLOCK];
        block[..13].copy_from_slice(b"aZ0 \t\n\r\x0B\x0C'\xC3\xA9/");
        let masks = classify_bytes(&block);
        assert_eq!(masks.letter, 0b11);
        assert_eq!(masks.lower, 0b1);
        assert_eq!(masks.slash, 1 << 12);
        assert_eq!(masks.digit, 0b100);
        assert_eq!(masks.space, 0b1_1111_1000);
        assert_eq!(masks.blank, 0b1000);
        assert_eq!(masks.newline, 0b110_0000);
        assert_eq!(masks.apostrophe, 1 << 9);
        assert_eq!(masks.non_ascii, 0b11 << 10);
    }
}
