//! Short byte strings packed into a `u128`: up to 15 bytes in order
//! (little-endian) and the length in the top byte. A packed key hashes and
//! compares in two word operations; the pre-token table and the encoder's
//! cache key on it.

pub const INLINE_MAX: usize = 15;

/// Pack a pre-token of at most 15 bytes: its bytes in order (little-endian)
/// and its length in the top byte, which keeps `b"a"` and `b"a\0"` apart.
///
/// Built from at most two overlapping word loads, shifted to drop the
/// overlap, rather than byte by byte: this runs once per pre-token of the
/// corpus and a byte loop cost an eighth of the counting time.
#[inline]
pub fn pack(bytes: &[u8]) -> Option<u128> {
    let len = bytes.len();
    let low: u64 = match len {
        0 => 0,
        1..=3 => (0..len).fold(0, |acc, i| acc | (bytes[i] as u64) << (8 * i)),
        4..=7 => {
            let first = load_u32(&bytes[..4]) as u64;
            let last = load_u32(&bytes[len - 4..]) as u64 >> (8 * (8 - len));
            first | last << 32
        }
        8..=INLINE_MAX => load_u64(&bytes[..8]),
        _ => return None,
    };
    let high_bytes = if len > 8 { load_u64(&bytes[len - 8..]) >> (8 * (16 - len)) } else { 0 };
    let high = high_bytes | (len as u64) << 56;
    Some(low as u128 | (high as u128) << 64)
}

#[inline(always)]
fn load_u32(bytes: &[u8]) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(bytes);
    u32::from_le_bytes(word)
}

#[inline(always)]
fn load_u64(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(bytes);
    u64::from_le_bytes(word)
}

/// `pack(piece)` for a `piece` that is a slice of `text`: one 16-byte load
/// from `text` and a mask instead of `pack`'s branches on the length, when
/// `text` has 16 bytes from where the piece starts (the bytes after the
/// piece are then masked off). The counter packs every pre-token this way:
/// `pack`'s length dispatch mispredicts on text and cost 3-4 ns a piece. Any
/// other `piece` (one that does not start inside `text`, or too close to its
/// end) is packed by `pack`, so the result is always `pack(piece)`.
#[inline]
pub fn pack_in(text: &[u8], piece: &[u8]) -> Option<u128> {
    // Where `piece` starts in `text`; a window found there is the piece's own
    // memory, so its first bytes are the piece.
    let start = (piece.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
    match start.checked_add(16).and_then(|end| text.get(start..end)) {
        Some(window) if piece.len() <= INLINE_MAX => Some(masked(window, piece.len())),
        _ => pack(piece),
    }
}

/// `pack(&text[start..end])`, the same way as `pack_in` (what the encoder
/// uses: its scanner gives offsets).
#[inline(always)]
pub fn pack_at(text: &[u8], start: usize, end: usize) -> Option<u128> {
    let len = end - start;
    if len > INLINE_MAX {
        return None;
    }
    match text.get(start..start + 16) {
        Some(window) => Some(masked(window, len)),
        None => pack(&text[start..end]),
    }
}

/// The packed key of the first `len` bytes of `window` (16 bytes).
///
/// The mask comes from a table: computed, it was a 128-bit variable shift,
/// ten instructions with a branch on the length, for every pre-token.
#[inline(always)]
fn masked(window: &[u8], len: usize) -> u128 {
    const LOW_BYTES: [u128; 16] = {
        let mut masks = [0u128; 16];
        let mut len = 0;
        while len < 16 {
            masks[len] = (1u128 << (8 * len)) - 1;
            len += 1;
        }
        masks
    };
    let mut word = [0u8; 16];
    word.copy_from_slice(window);
    u128::from_le_bytes(word) & LOW_BYTES[len & 15] | (len as u128) << 120
}

/// The hash of a packed key that the encoder's tables share (`encode/cache/`):
/// computed once per pre-token, so it is one multiply;
/// its high bits are the well-mixed ones (Fibonacci hashing), which is what
/// `piece_table` indexes by, and `cache` mixes further on its slower path.
#[inline]
pub fn hash_packed(key: u128) -> u64 {
    let (low, high) = (key as u64, (key >> 64) as u64);
    (low ^ high.rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

pub fn unpack(key: &u128) -> ([u8; 16], usize) {
    let buf = key.to_le_bytes();
    (buf, buf[INLINE_MAX] as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_keeps_every_byte_and_the_length() {
        let text: Vec<u8> = (1..=15).chain([0, 0xFF]).collect();
        for len in 0..=INLINE_MAX {
            for start in 0..=text.len() - len {
                let bytes = &text[start..start + len];
                let (buf, unpacked_len) = unpack(&pack(bytes).unwrap());
                assert_eq!(&buf[..unpacked_len], bytes, "len {len} start {start}");
            }
        }
        assert_ne!(pack(b"a"), pack(b"a\0"));
        for start in 0..text.len() {
            for len in 0..=(text.len() - start).min(INLINE_MAX + 1) {
                let piece = &text[start..start + len];
                assert_eq!(pack_in(&text, piece), pack(piece), "{start}+{len}");
                assert_eq!(pack_at(&text, start, start + len), pack(piece), "{start}+{len}");
            }
        }
        // A piece from elsewhere is packed as itself.
        let elsewhere = b"abcdefghijklmnopqrstuvwxyz".to_vec();
        assert_eq!(pack_in(&text, &elsewhere[3..9]), pack(b"defghi"));
        assert_eq!(pack(&[7u8; 16]), None);
    }
}
