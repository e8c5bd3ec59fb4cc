//! UTF-8 from code points (UTF-32), for Python `str`s the binding reads a chunk
//! at a time as code points (`PyUnicode_AsUCS4`, the stable ABI's only way to
//! the characters of a `str` without CPython's UTF-8 encoder).
//!
//! Why by hand: CPython's encoder goes one character at a time (12 ms of a
//! 61 ms first call on 10 MB of English with curly quotes). Here a block of 16
//! code points is tested and narrowed in a few SSE2 instructions (part of
//! every x86-64), its ASCII prefix kept, and the run of other code points
//! after it encoded one at a time; the tests check the result against std's
//! `char::encode_utf8` on every code point.

use std::mem::MaybeUninit;

/// Code points tested and narrowed together when all are ASCII.
const BLOCK: usize = 16;

/// Append the UTF-8 of `code_points` to `out`, or `Err(index)` of the first
/// one that is not a Unicode scalar value (a surrogate, or over U+10FFFF);
/// on an error `out` is as it was.
pub fn push_utf8(code_points: &[u32], out: &mut Vec<u8>) -> Result<(), usize> {
    // At most 4 bytes a code point, written into the spare capacity: no
    // capacity check, no length update, per byte. The block of ASCII bytes
    // is written whole and may end past the last code point's bytes: 16
    // slots more.
    out.reserve(code_points.len() * 4 + BLOCK);
    let room = &mut out.spare_capacity_mut()[..code_points.len() * 4 + BLOCK];
    let (mut read, mut written) = (0, 0);
    while read < code_points.len() {
        // The ASCII code points from `read` on, 16 at a time, then the
        // others up to the next ASCII one: text with a curly quote now and
        // then (10 MB of Gutenberg) pays one step per quote, not 16.
        let ascii = match code_points[read..].first_chunk::<BLOCK>() {
            Some(block) => {
                let (bytes, ascii) = ascii_prefix(block);
                for (slot, byte) in room[written..written + BLOCK].iter_mut().zip(bytes) {
                    slot.write(byte);
                }
                ascii
            }
            // The last few: ASCII ones one at a time below.
            None => 0,
        };
        if ascii == BLOCK {
            // Constant steps on the common path: the next load's address
            // does not wait for this block's mask.
            read += BLOCK;
            written += BLOCK;
            continue;
        }
        read += ascii;
        written += ascii;
        // Then the run of other code points (a CJK sentence) one at a time;
        // past the last whole block, every code point.
        let tail = code_points.len() - read < BLOCK;
        while let Some(&code_point) = code_points.get(read).filter(|&&code_point| tail || code_point >= 0x80) {
            if char::from_u32(code_point).is_none() {
                return Err(read);
            }
            written += write_utf8(code_point, &mut room[written..]);
            read += 1;
        }
    }
    // SAFETY: the first `written` bytes of the spare capacity were written above.
    unsafe { out.set_len(out.len() + written) };
    Ok(())
}

/// The 16 code points of `block` narrowed to bytes, and how many of them,
/// from the first, are ASCII (the bytes of the others are meaningless).
/// SSE2, which every x86-64 has: LLVM left the portable form below scalar,
/// 0.33 ns a character on ASCII text against 0.10 here.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn ascii_prefix(block: &[u32; BLOCK]) -> ([u8; BLOCK], usize) {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of x86-64; the loads read the 64 bytes of `block`
    // and the store writes the 16 of `bytes` (unaligned forms).
    unsafe {
        let quarter = |at: usize| _mm_loadu_si128(block.as_ptr().add(at).cast());
        let (a, b, c, d) = (quarter(0), quarter(4), quarter(8), quarter(12));
        // All ones in the lanes below 0x80, narrowed to a byte a lane.
        let high_bits = _mm_set1_epi32(!0x7F);
        let is_ascii = |lanes| _mm_cmpeq_epi32(_mm_and_si128(lanes, high_bits), _mm_setzero_si128());
        let ascii_lanes =
            _mm_packs_epi16(_mm_packs_epi32(is_ascii(a), is_ascii(b)), _mm_packs_epi32(is_ascii(c), is_ascii(d)));
        let not_ascii = !_mm_movemask_epi8(ascii_lanes) as u32 & 0xFFFF;
        // The saturating packs keep every value below 0x80.
        let packed = _mm_packus_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d));
        let mut bytes = [0u8; BLOCK];
        _mm_storeu_si128(bytes.as_mut_ptr().cast(), packed);
        (bytes, (not_ascii.trailing_zeros() as usize).min(BLOCK))
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn ascii_prefix(block: &[u32; BLOCK]) -> ([u8; BLOCK], usize) {
    (block.map(|code_point| code_point as u8), block.iter().take_while(|&&code_point| code_point < 0x80).count())
}

/// Write the UTF-8 of one scalar value (the caller has checked it is one)
/// at the start of `room` (4 bytes or more); the number of bytes.
#[inline(always)]
fn write_utf8(c: u32, room: &mut [MaybeUninit<u8>]) -> usize {
    let low6 = |shift: u32| 0x80 | (c >> shift & 0x3F);
    // The first byte lowest (written little-endian), and the width.
    let (word, width) = match c {
        0..=0x7F => (c, 1),
        0x80..=0x7FF => ((0xC0 | c >> 6) | low6(0) << 8, 2),
        0x800..=0xFFFF => ((0xE0 | c >> 12) | low6(6) << 8 | low6(0) << 16, 3),
        _ => ((0xF0 | c >> 18 & 0x7) | low6(12) << 8 | low6(6) << 16 | low6(0) << 24, 4),
    };
    // All four bytes written, the width kept: the next code point writes over the rest.
    for (slot, byte) in room[..4].iter_mut().zip(word.to_le_bytes()) {
        slot.write(byte);
    }
    width
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::test_rng::XorShift;

    fn utf8_of(code_points: &[u32]) -> Result<Vec<u8>, usize> {
        let mut out = Vec::new();
        push_utf8(code_points, &mut out).map(|()| out)
    }

    #[test]
    fn every_scalar_value_as_std_encodes_it() {
        // All 1,112,064 scalar values, in blocks that mix ASCII and not.
        let scalars: Vec<u32> = (0..=0x10FFFF).filter(|&c| char::from_u32(c).is_some()).collect();
        let expected: String = scalars.iter().map(|&c| char::from_u32(c).unwrap()).collect();
        assert_eq!(utf8_of(&scalars).unwrap(), expected.as_bytes());
    }

    #[test]
    fn random_text_of_every_width_as_std_encodes_it() {
        let mut rng = XorShift(7);
        let widths = [0x7F, 0x7FF, 0xFFFF, 0x10FFFF];
        for round in 0..2_000 {
            let len = rng.below(70);
            let text: String = (0..len)
                .map(|_| {
                    // Mostly ASCII, as real text, with some of every width.
                    let top = if rng.below(4) == 0 { widths[rng.below(4)] } else { 0x7F };
                    loop {
                        if let Some(c) = char::from_u32(rng.below(top as usize + 1) as u32) {
                            break c;
                        }
                    }
                })
                .collect();
            let code_points: Vec<u32> = text.chars().map(u32::from).collect();
            assert_eq!(utf8_of(&code_points).unwrap(), text.as_bytes(), "round {round}: {text:?}");
        }
    }

    #[test]
    fn the_first_surrogate_or_out_of_range_code_point_is_reported() {
        for bad in [0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0x110000, u32::MAX] {
            for at in [0, 5, 15, 16, 17, 31, 40] {
                let mut code_points = vec![u32::from('a'); 41];
                code_points[at] = bad;
                code_points[40] = 0xD800; // a later one is not the one reported
                assert_eq!(utf8_of(&code_points), Err(at), "{bad:#x} at {at}");
            }
        }
        assert_eq!(utf8_of(&[0xE9, 0xDFFF]), Err(1));
    }
}
