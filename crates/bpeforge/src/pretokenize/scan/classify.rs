//! The classes of 64 bytes at once, as bitmasks (bit `i` for byte `i`): what
//! the block scanners (`blocks.rs`) compute piece starts from with a few
//! word operations instead of a branch per char.
//!
//! Only ASCII is classified here; a byte of a multi-byte char is marked
//! `non_ascii` and in no other mask, and the block scanners leave those
//! stretches to the char-by-char scanners. Being in no other mask, such a
//! byte reads as "other" (not a letter, digit or space) in the block rules:
//! GPT-2's windows rely on that to pass the General Punctuation chars that
//! are "other" (’ “ ” — …, see `blocks.rs`) without a mask of their own.
//!
//! Several implementations give the same masks (`Classify`). On x86-64:
//! SSE2 (part of the x86-64 baseline, so always there), AVX2 and
//! AVX-512BW, the best the CPU has (capped by `BPEFORGE_SIMD`) chosen at
//! run time (`Level::active`), as the build targets plain x86-64 (no
//! `target-feature`). On aarch64: NEON (`neon.rs`), part of every aarch64
//! CPU. Everywhere: the `charclass` table a byte at a time (the baseline
//! outside x86-64), which is also the reference every other implementation
//! is tested against, on every byte value at every position.

use crate::pretokenize::charclass::{ASCII, LETTER, NUMBER, SPACE};

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
    /// Bytes of the chars a scanner passes as CJK words
    /// (`Scanner::pass_cjk_words`); none from a classifier.
    pub cjk: u64,
}

/// One way to compute the masks of a block. The scanning loop is generic
/// over it (`blocks.rs`): intrinsics are compiled inline only into a
/// function that enables their target features, so each implementation's
/// whole loop is compiled as one function with its features, and the
/// choice among them is made once per batch of pieces, not per block.
pub(crate) trait Classify {
    /// The masks of `block`.
    ///
    /// # Safety
    /// The CPU has the instructions the implementation uses (see `Level`).
    unsafe fn classify(block: &[u8; BLOCK]) -> Masks;

    /// The masks of `tail` (at most `BLOCK` bytes) followed by spaces up to
    /// a block (`blocks::tail_window`).
    ///
    /// # Safety
    /// As for `classify`.
    #[inline(always)]
    unsafe fn classify_padded(tail: &[u8]) -> Masks {
        let mut block = [b' '; BLOCK];
        block[..tail.len()].copy_from_slice(tail);
        // SAFETY: the caller vouches for the instructions.
        unsafe { Self::classify(&block) }
    }

    /// The leads of the letters of three bytes of `block` that
    /// `letters_of_three::leads_from` tells by their bytes, for the windows
    /// that pass letters; 0 (none: the windows then pass them a char at a
    /// time) but where an implementation finds them with a compare a class.
    ///
    /// # Safety
    /// As for `classify`.
    #[inline(always)]
    unsafe fn letter_leads(_block: &[u8; BLOCK]) -> u64 {
        0
    }

    /// `letter_leads` of `tail` (at most `BLOCK` bytes) followed by spaces.
    ///
    /// # Safety
    /// As for `classify`.
    #[inline(always)]
    unsafe fn letter_leads_padded(_tail: &[u8]) -> u64 {
        0
    }
}

/// The levels a CPU may have (`util::simd_level`): which one runs is
/// chosen there, capped by `BPEFORGE_SIMD`.
pub(crate) use crate::util::simd_level::SimdLevel as Level;

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

/// `classify_bytes`, the implementation where there is no other, and
/// aarch64's baseline (the reference NEON is compared with).
#[cfg(not(target_arch = "x86_64"))]
pub(crate) struct Table;

/// The implementation of `Level::Baseline`.
#[cfg(target_arch = "x86_64")]
pub(crate) type Baseline = Sse2;
#[cfg(not(target_arch = "x86_64"))]
pub(crate) type Baseline = Table;

#[cfg(not(target_arch = "x86_64"))]
impl Classify for Table {
    #[inline(always)]
    unsafe fn classify(block: &[u8; BLOCK]) -> Masks {
        classify_bytes(block)
    }
}

#[cfg(target_arch = "aarch64")]
pub(crate) use super::neon::Neon;
#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{Avx2, Avx512, Sse2};

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_add_epi8, _mm256_cmpeq_epi8, _mm256_cmpgt_epi8, _mm256_loadu_si256,
        _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8, _mm_add_epi8, _mm_cmpeq_epi8, _mm_cmpgt_epi8,
        _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };

    use super::{Classify, Masks, BLOCK};

    pub(crate) use avx512::Avx512;

    /// The SSE2 and AVX2 versions: the same steps on vectors of 16 or 32
    /// bytes, whose compares give a vector and `movemask` its bits.
    trait Lanes: Copy {
        const LANES: usize;
        unsafe fn load(at: *const u8) -> Self;
        unsafe fn splat(byte: u8) -> Self;
        unsafe fn add(self, other: Self) -> Self;
        unsafe fn or(self, other: Self) -> Self;
        /// Bytes equal to `other`'s, as a movemask.
        unsafe fn equal(self, other: Self) -> u64;
        /// Bytes less than `other`'s as signed bytes, as a movemask.
        unsafe fn less_signed(self, other: Self) -> u64;
        /// The top bit of each byte.
        unsafe fn top_bits(self) -> u64;
    }

    /// Bytes of `x` in `lo..lo + n` (`n <= 128`): adding `0x80 - lo` moves
    /// that range to `0x80..0x80 + n`, the lowest `n` values as signed
    /// bytes, and one signed compare finds them (neither SSE2 nor AVX2
    /// compares unsigned bytes).
    #[inline(always)]
    unsafe fn in_range<V: Lanes>(x: V, lo: u8, n: u8) -> u64 {
        x.add(V::splat(0x80u8.wrapping_sub(lo))).less_signed(V::splat(0x80u8.wrapping_add(n)))
    }

    /// # Safety
    /// The CPU has `V`'s instructions.
    #[inline(always)]
    unsafe fn classify_lanes<V: Lanes>(block: &[u8; BLOCK]) -> Masks {
        let mut masks = Masks::default();
        for part in 0..BLOCK / V::LANES {
            let shift = V::LANES * part;
            // SAFETY: the unaligned load reads bytes `shift..shift + LANES`
            // of the block; the caller vouches for the instructions.
            unsafe {
                let x = V::load(block.as_ptr().add(shift));
                // OR 0x20 folds A-Z onto a-z and moves no other byte into a-z.
                masks.letter |= in_range(x.or(V::splat(0x20)), b'a', 26) << shift;
                masks.lower |= in_range(x, b'a', 26) << shift;
                masks.digit |= in_range(x, b'0', 10) << shift;
                let blank = x.equal(V::splat(b' '));
                masks.space |= (in_range(x, b'\t', 5) | blank) << shift;
                masks.blank |= blank << shift;
                masks.newline |= (x.equal(V::splat(b'\r')) | x.equal(V::splat(b'\n'))) << shift;
                masks.apostrophe |= x.equal(V::splat(b'\'')) << shift;
                masks.slash |= x.equal(V::splat(b'/')) << shift;
                masks.non_ascii |= x.top_bits() << shift;
            }
        }
        masks
    }

    /// 16 bytes at a time; SSE2 is part of the x86-64 baseline, so this
    /// needs no detection.
    pub(crate) struct Sse2;

    impl Lanes for __m128i {
        const LANES: usize = 16;
        #[inline(always)]
        unsafe fn load(at: *const u8) -> Self {
            _mm_loadu_si128(at.cast())
        }
        #[inline(always)]
        unsafe fn splat(byte: u8) -> Self {
            _mm_set1_epi8(byte as i8)
        }
        #[inline(always)]
        unsafe fn add(self, other: Self) -> Self {
            _mm_add_epi8(self, other)
        }
        #[inline(always)]
        unsafe fn or(self, other: Self) -> Self {
            _mm_or_si128(self, other)
        }
        #[inline(always)]
        unsafe fn equal(self, other: Self) -> u64 {
            _mm_movemask_epi8(_mm_cmpeq_epi8(self, other)) as u16 as u64
        }
        #[inline(always)]
        unsafe fn less_signed(self, other: Self) -> u64 {
            _mm_movemask_epi8(_mm_cmpgt_epi8(other, self)) as u16 as u64
        }
        #[inline(always)]
        unsafe fn top_bits(self) -> u64 {
            _mm_movemask_epi8(self) as u16 as u64
        }
    }

    impl Classify for Sse2 {
        #[inline(always)]
        unsafe fn classify(block: &[u8; BLOCK]) -> Masks {
            // SAFETY: SSE2 is part of the x86-64 baseline.
            unsafe { classify_lanes::<__m128i>(block) }
        }
    }

    /// 32 bytes at a time, two halves per block.
    pub(crate) struct Avx2;

    impl Lanes for __m256i {
        const LANES: usize = 32;
        #[inline(always)]
        unsafe fn load(at: *const u8) -> Self {
            _mm256_loadu_si256(at.cast())
        }
        #[inline(always)]
        unsafe fn splat(byte: u8) -> Self {
            _mm256_set1_epi8(byte as i8)
        }
        #[inline(always)]
        unsafe fn add(self, other: Self) -> Self {
            _mm256_add_epi8(self, other)
        }
        #[inline(always)]
        unsafe fn or(self, other: Self) -> Self {
            _mm256_or_si256(self, other)
        }
        #[inline(always)]
        unsafe fn equal(self, other: Self) -> u64 {
            _mm256_movemask_epi8(_mm256_cmpeq_epi8(self, other)) as u32 as u64
        }
        #[inline(always)]
        unsafe fn less_signed(self, other: Self) -> u64 {
            _mm256_movemask_epi8(_mm256_cmpgt_epi8(other, self)) as u32 as u64
        }
        #[inline(always)]
        unsafe fn top_bits(self) -> u64 {
            _mm256_movemask_epi8(self) as u32 as u64
        }
    }

    impl Classify for Avx2 {
        #[inline(always)]
        unsafe fn classify(block: &[u8; BLOCK]) -> Masks {
            // SAFETY: the caller vouches for AVX2.
            opaque(unsafe { classify_lanes::<__m256i>(block) })
        }
    }

    /// `masks`, hidden from LLVM's optimizer. A mask from compares is, to
    /// LLVM, a vector of 64 booleans, and it may then carry out the block
    /// rules' shifts and selects on that vector instead of on a `u64`: with
    /// AVX2 (two 32-bit movemasks joined) it rebuilt vectors a byte at a
    /// time (gpt2 at 40% of its SSE2 speed), with AVX-512 it moved masks
    /// between mask and general registers (gpt2 10% slower). An empty
    /// `asm!` that claims to change each mask keeps them integers; SSE2
    /// needs none (LLVM leaves its four movemasks alone, and hiding them
    /// measured no faster).
    #[inline(always)]
    fn opaque(masks: Masks) -> Masks {
        let hide = |mut bits: u64| {
            // SAFETY: the template is a comment: no instruction, and no
            // memory, flags or stack touched.
            unsafe { std::arch::asm!("/* {0} */", inout(reg) bits, options(pure, nomem, nostack, preserves_flags)) };
            bits
        };
        Masks {
            letter: hide(masks.letter),
            lower: hide(masks.lower),
            digit: hide(masks.digit),
            space: hide(masks.space),
            blank: hide(masks.blank),
            newline: hide(masks.newline),
            apostrophe: hide(masks.apostrophe),
            slash: hide(masks.slash),
            non_ascii: hide(masks.non_ascii),
            cjk: masks.cjk,
        }
    }

    mod avx512 {
        use std::arch::x86_64::{
            __m512i, _mm512_cmpeq_epi8_mask, _mm512_cmplt_epu8_mask, _mm512_loadu_si512, _mm512_mask_loadu_epi8,
            _mm512_movepi8_mask, _mm512_or_si512, _mm512_set1_epi8, _mm512_sub_epi8,
        };

        use super::super::{Classify, Masks, BLOCK};
        use super::opaque;
        use crate::pretokenize::scan::letters_of_three::{leads_from, LeadBytes};

        /// The whole block in one vector: AVX-512BW compares unsigned bytes
        /// and writes each compare's 64 bits to a mask register, so a class in
        /// a range is a subtraction and one compare, and nothing is shifted or
        /// combined.
        pub(crate) struct Avx512;

        #[inline(always)]
        unsafe fn splat(byte: u8) -> __m512i {
            _mm512_set1_epi8(byte as i8)
        }

        /// Bytes of `x` in `lo..lo + n`: `x - lo` wraps the bytes below `lo` to
        /// the top, so one unsigned compare finds them.
        #[inline(always)]
        unsafe fn in_range(x: __m512i, lo: u8, n: u8) -> u64 {
            _mm512_cmplt_epu8_mask(_mm512_sub_epi8(x, splat(lo)), splat(n))
        }

        #[inline(always)]
        unsafe fn equal(x: __m512i, byte: u8) -> u64 {
            _mm512_cmpeq_epi8_mask(x, splat(byte))
        }

        impl Classify for Avx512 {
            #[inline(always)]
            unsafe fn classify(block: &[u8; BLOCK]) -> Masks {
                // SAFETY: the load reads the 64 bytes of the block; the caller
                // vouches for AVX-512F and AVX-512BW.
                unsafe { masks_of(_mm512_loadu_si512(block.as_ptr().cast())) }
            }

            /// One masked load, which reads the tail's bytes only and gives
            /// the other lanes a space. A block written on the stack and read
            /// back at once was a load the CPU could not forward from the
            /// stores that wrote it: a stall on every short text.
            #[inline(always)]
            unsafe fn classify_padded(tail: &[u8]) -> Masks {
                debug_assert!(tail.len() <= BLOCK);
                let lanes = if tail.len() >= BLOCK { u64::MAX } else { (1u64 << tail.len()) - 1 };
                // SAFETY: the masked load reads only the lanes set in `lanes`,
                // the tail's bytes; the caller vouches for AVX-512F and AVX-512BW.
                unsafe { masks_of(_mm512_mask_loadu_epi8(splat(b' '), lanes, tail.as_ptr().cast())) }
            }

            #[inline(always)]
            unsafe fn letter_leads(block: &[u8; BLOCK]) -> u64 {
                // SAFETY: as for `classify`.
                unsafe { letter_leads_of(_mm512_loadu_si512(block.as_ptr().cast())) }
            }

            #[inline(always)]
            unsafe fn letter_leads_padded(tail: &[u8]) -> u64 {
                let lanes = if tail.len() >= BLOCK { u64::MAX } else { (1u64 << tail.len()) - 1 };
                // SAFETY: as for `classify_padded`.
                unsafe { letter_leads_of(_mm512_mask_loadu_epi8(splat(b' '), lanes, tail.as_ptr().cast())) }
            }
        }

        /// `letters_of_three::leads_from` of the block `x` holds.
        #[inline(always)]
        unsafe fn letter_leads_of(x: __m512i) -> u64 {
            // SAFETY: the caller vouches for AVX-512F and AVX-512BW.
            unsafe {
                leads_from(&LeadBytes {
                    e3: equal(x, 0xE3),
                    e4: equal(x, 0xE4),
                    e5_e9: in_range(x, 0xE5, 5),
                    x80: equal(x, 0x80),
                    x81: equal(x, 0x81),
                    x82: equal(x, 0x82),
                    x83: equal(x, 0x83),
                    x97_9c: in_range(x, 0x97, 6),
                    xa0: equal(x, 0xA0),
                    xbb: equal(x, 0xBB),
                    xb8_bf: in_range(x, 0xB8, 8),
                    e9: equal(x, 0xE9),
                    xbe_bf: in_range(x, 0xBE, 2),
                })
            }
        }

        /// The masks of the block `x` holds.
        #[inline(always)]
        unsafe fn masks_of(x: __m512i) -> Masks {
            // SAFETY: the caller vouches for AVX-512F and AVX-512BW.
            unsafe {
                let blank = equal(x, b' ');
                opaque(Masks {
                    // OR 0x20 folds A-Z onto a-z and moves no other byte into a-z.
                    letter: in_range(_mm512_or_si512(x, splat(0x20)), b'a', 26),
                    lower: in_range(x, b'a', 26),
                    digit: in_range(x, b'0', 10),
                    space: in_range(x, b'\t', 5) | blank,
                    blank,
                    newline: equal(x, b'\r') | equal(x, b'\n'),
                    apostrophe: equal(x, b'\''),
                    slash: equal(x, b'/'),
                    non_ascii: _mm512_movepi8_mask(x),
                    cjk: 0,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The masks of `block` from `level`'s implementation, compiled with its
    /// features as in the scanning loop (`None` where the CPU lacks them).
    fn classify_at(level: Level, block: &[u8; BLOCK]) -> Option<Masks> {
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx2")]
            unsafe fn avx2(block: &[u8; BLOCK]) -> Masks {
                // SAFETY: as for this function.
                unsafe { Avx2::classify(block) }
            }
            #[target_feature(enable = "avx512f,avx512bw")]
            unsafe fn avx512(block: &[u8; BLOCK]) -> Masks {
                // SAFETY: as for this function.
                unsafe { Avx512::classify(block) }
            }
            if !level.is_supported() {
                return None;
            }
            // SAFETY: the CPU has the level's features (just checked).
            Some(unsafe {
                match level {
                    Level::Baseline => Sse2::classify(block),
                    Level::Avx2 => avx2(block),
                    Level::Avx512 => avx512(block),
                }
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            // SAFETY: the table needs no instructions, and NEON is part of
            // every aarch64 CPU.
            Some(unsafe {
                match level {
                    Level::Baseline => Table::classify(block),
                    #[cfg(target_arch = "aarch64")]
                    Level::Neon => Neon::classify(block),
                }
            })
        }
    }

    /// The AVX-512 masked load of a tail (`classify_padded`) gives the masks
    /// of the tail followed by spaces, at every length up to a block, and
    /// reads nothing past the tail: each tail ends a buffer of its own.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn padded_tails_are_classified_as_blocks_ending_in_spaces() {
        #[target_feature(enable = "avx512f,avx512bw")]
        unsafe fn avx512(tail: &[u8]) -> Masks {
            // SAFETY: as for this function.
            unsafe { Avx512::classify_padded(tail) }
        }
        let text: Vec<u8> = (0..BLOCK as u8).map(|i| b"aZ 0'\n\t/.\x80"[usize::from(i) % 10] ^ (i & 1)).collect();
        for len in 0..=BLOCK {
            let tail = text[..len].to_vec().into_boxed_slice();
            let mut padded = [b' '; BLOCK];
            padded[..len].copy_from_slice(&tail);
            // SAFETY: the baseline needs no feature the CPU lacks.
            assert_eq!(unsafe { Sse2::classify_padded(&tail) }, classify_bytes(&padded), "{len} bytes");
            if Level::Avx512.is_supported() {
                // SAFETY: the CPU has AVX-512 (just checked).
                assert_eq!(unsafe { avx512(&tail) }, classify_bytes(&padded), "{len} bytes");
            }
        }
    }

    #[test]
    fn simd_masks_equal_the_table_for_every_byte_at_every_position() {
        let mut tested = 0;
        for &level in Level::ALL {
            for b in 0..=255u8 {
                for filler in [b'a', b' ', 0x80, b'\''] {
                    // Every third byte, at each of the three offsets, so
                    // that `b` is at every position next to each filler.
                    for offset in 0..3 {
                        let mut block = [filler; BLOCK];
                        for i in (offset..BLOCK).step_by(3) {
                            block[i] = b;
                        }
                        let Some(masks) = classify_at(level, &block) else { continue };
                        assert_eq!(masks, classify_bytes(&block), "{level:?}: byte {b:#x} among {filler:#x}");
                        tested += 1;
                    }
                }
            }
        }
        assert!(tested > 0);
    }

    #[test]
    fn the_best_level_is_the_last_the_cpu_has() {
        let best = Level::best();
        assert!(best.is_supported());
        assert!(Level::ALL.iter().skip_while(|&&level| level != best).skip(1).all(|level| !level.is_supported()));
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
