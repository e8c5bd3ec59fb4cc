//! Letters of three bytes (CJK ideographs, kana, Hangul, ...) passed by the
//! windows of the cl100k family as three letter bytes
//! (`Scanner::BLOCKS_PASS_LETTERS`), instead of stopping them.
//!
//! Why: a window stops at its first non-ASCII byte, and where windows stop
//! early the char-by-char scanner takes ever longer turns (`blocks.rs`), so
//! a line of Japanese went char by char, ASCII words and all, two
//! mispredicted branches a piece (the class of its first char, the end of
//! its run): with Llama 3, half of a warm call on `bench_hf.py`'s lines went
//! to its 2,972 Japanese ones, and the char-by-char scanner was a quarter of
//! that.
//!
//! Exact in that family: its pattern asks of a letter only that it is
//! `\p{L}`, but in a contraction, which takes ASCII letters (`'s`, `'T`, ...;
//! no char of three bytes folds to one of them), so a letter of three bytes
//! cuts as three ASCII letters that begin no contraction would. A window
//! passes such chars up to its first other non-ASCII char (punctuation such
//! as `、` and `。`, which may lead a letter run and so cannot be read a byte
//! at a time), and only those that end inside its block, so that the
//! look-ahead byte is never a letter's.

use std::sync::LazyLock;

use super::classify::{Masks, BLOCK};
use crate::pretokenize::charclass::{flags_beyond_ascii, LETTER, NUMBER, SPACE};

/// One bit a code point below U+10000 (8 KiB each, which stay in L1 where
/// the 128 KiB table of every char's flags does not): whether it is `\p{L}`,
/// and whether it is "other" (neither `\p{L}`, `\p{N}` nor `\s`).
struct Bitmaps {
    letters: [u64; 1024],
    others: [u64; 1024],
}

static BITMAPS: LazyLock<Box<Bitmaps>> = LazyLock::new(|| {
    let mut bitmaps = Box::new(Bitmaps { letters: [0; 1024], others: [0; 1024] });
    for cp in 0x80..0x1_0000u32 {
        if char::from_u32(cp).is_none() {
            continue;
        }
        let flags = flags_beyond_ascii(cp);
        if flags & LETTER != 0 {
            bitmaps.letters[cp as usize / 64] |= 1 << (cp % 64);
        }
        if flags & (LETTER | NUMBER | SPACE) == 0 {
            bitmaps.others[cp as usize / 64] |= 1 << (cp % 64);
        }
    }
    bitmaps
});

fn bit(bits: &[u64; 1024], cp: usize) -> bool {
    bits[cp / 64] >> (cp % 64) & 1 == 1
}

/// The code point of the char of three bytes at `i` (`bytes[i]` its lead).
#[inline(always)]
fn code_point(bytes: &[u8], i: usize) -> usize {
    (usize::from(bytes[i]) & 0x0F) << 12 | (usize::from(bytes[i + 1]) & 0x3F) << 6 | usize::from(bytes[i + 2]) & 0x3F
}

/// Byte classes of a block (bit `i` for byte `i`) that tell the letters of
/// three bytes that matter most (CJK ideographs and kana) by their bytes:
/// a classifier finds them with a compare each (`Classify::letter_leads`),
/// and `leads_from` combines them, with no loop over the chars.
#[derive(Clone, Copy, Default)]
pub(super) struct LeadBytes {
    pub e3: u64,
    pub e4: u64,
    /// `E5..=E9`: leads of U+5000..U+9FFF, all CJK ideographs (letters).
    pub e5_e9: u64,
    pub x80: u64,
    pub x81: u64,
    pub x82: u64,
    pub x83: u64,
    /// `97..=9C`: U+3097..U+309C (unassigned, combining marks, symbols) after `E3 82`.
    pub x97_9c: u64,
    pub xa0: u64,
    pub xbb: u64,
    /// `B8..=BF`: U+4E00..U+4FFF after `E4`.
    pub xb8_bf: u64,
    pub e9: u64,
    /// `BE..=BF`: U+9F80..U+9FFF after `E9`.
    pub xbe_bf: u64,
}

/// The lead bytes of the letters `LeadBytes` tells, each with its two
/// other bytes in the block (so a lead at byte 62 or 63 is not one): the
/// CJK ideographs U+4E00..U+9F7F, and the kana U+3041..U+30FF but for
/// U+3097..U+309C, U+30A0 and U+30FB (not letters). A lead byte (E3..E9)
/// never continues a char, so each is a char's start. The ideographs stop
/// short of U+9FFF so that every one is also in DeepSeek's CJK class
/// (`一-龥`, up to U+9FA5), whose windows take these leads as CJK words
/// (`hf/deepseek_blocks.rs`); the few past it are passed a char at a time.
#[inline(always)]
pub(super) fn leads_from(b: &LeadBytes) -> u64 {
    let (second, third) = (|mask: u64| mask >> 1, |mask: u64| mask >> 2);
    let hiragana = second(b.x81) & !third(b.x80);
    let kana = second(b.x82) & !third(b.x97_9c | b.xa0);
    let katakana = second(b.x83) & !third(b.xbb);
    let kana = b.e3 & (hiragana | kana | katakana);
    let ideographs = (b.e5_e9 & !(b.e9 & second(b.xbe_bf))) | (b.e4 & second(b.xb8_bf));
    (kana | ideographs) & ((1 << (BLOCK - 2)) - 1)
}

/// Pass the chars of three bytes of the window at `start` that the rules
/// may read a byte at a time: the letters of `leads` (`leads_from`), then a
/// char at a time from the first non-ASCII byte left, any other letter, and
/// an "other" char (`、`, `。`, `「`) whose next char's lead is in the block,
/// up to the first char it cannot pass. A letter's three bytes become
/// letters in `masks`. An "other" char's bytes read as three "other"
/// bytes (what a byte of no class is), which cut as three ASCII
/// punctuation bytes would, but where the char leads a letter run
/// (`[^\r\n\p{L}\p{N}]?\p{L}+`: a run of its own, after no U+0020,
/// before a letter): there its last two bytes become letters, so that the
/// rules see an "other" byte leading a run of letters. The passed bytes
/// leave `masks.non_ascii`; what is left of it is returned (the bits from
/// the first char not passed on).
#[inline(always)]
pub(super) fn pass_letters(bytes: &[u8], start: usize, masks: &mut Masks, leads: u64) -> u64 {
    let bitmaps: &Bitmaps = &BITMAPS;
    let led = leads | leads << 1 | leads << 2;
    masks.letter |= led;
    let mut non_ascii = masks.non_ascii & !led;
    // Whether the ASCII char at `at` of the window, or the char of three bytes there, is a letter
    // (past the end of the text, a tail's window has spaces).
    let letter_at = |masks: &Masks, at: usize| {
        let lead = bytes.get(start + at).copied().unwrap_or(b' ');
        masks.letter >> at & 1 == 1
            || lead & 0xF0 == 0xE0 && at + 3 <= BLOCK && bit(&bitmaps.letters, code_point(bytes, start + at))
    };
    while non_ascii != 0 {
        let at = non_ascii.trailing_zeros() as usize;
        // A window begins at a char boundary and passes whole chars, so this is a lead byte.
        if at + 3 > BLOCK || bytes[start + at] & 0xF0 != 0xE0 {
            break;
        }
        let cp = code_point(bytes, start + at);
        if bit(&bitmaps.letters, cp) {
            masks.letter |= 0b111 << at;
        } else if bit(&bitmaps.others, cp) && at + 3 < BLOCK {
            let other_or_blank = !(masks.letter | masks.digit | masks.space) | masks.blank;
            let own_run = at == 0 || other_or_blank >> (at - 1) & 1 == 0;
            if own_run && letter_at(masks, at + 3) {
                masks.letter |= 0b110 << at;
            }
        } else {
            break;
        }
        non_ascii &= !(0b111 << at);
    }
    masks.non_ascii = non_ascii;
    non_ascii
}

/// `LeadBytes` a byte at a time: the reference the classifiers are tested against.
#[cfg(test)]
pub(super) fn lead_bytes_of(block: &[u8; BLOCK]) -> LeadBytes {
    let mask = |holds: &dyn Fn(u8) -> bool| (0..BLOCK).filter(|&i| holds(block[i])).fold(0u64, |m, i| m | 1 << i);
    LeadBytes {
        e3: mask(&|b| b == 0xE3),
        e4: mask(&|b| b == 0xE4),
        e5_e9: mask(&|b| (0xE5..=0xE9).contains(&b)),
        x80: mask(&|b| b == 0x80),
        x81: mask(&|b| b == 0x81),
        x82: mask(&|b| b == 0x82),
        x83: mask(&|b| b == 0x83),
        x97_9c: mask(&|b| (0x97..=0x9C).contains(&b)),
        xa0: mask(&|b| b == 0xA0),
        xbb: mask(&|b| b == 0xBB),
        xb8_bf: mask(&|b| (0xB8..=0xBF).contains(&b)),
        e9: mask(&|b| b == 0xE9),
        xbe_bf: mask(&|b| (0xBE..=0xBF).contains(&b)),
    }
}

#[cfg(test)]
mod tests {
    use super::{bit, lead_bytes_of, leads_from, BITMAPS};
    use crate::pretokenize::charclass::{flags, LETTER, NUMBER, SPACE};
    use crate::pretokenize::scan::classify::BLOCK;

    fn is_letter(cp: u32) -> bool {
        bit(&BITMAPS.letters, cp as usize)
    }

    /// Every char of three bytes led by E3..E9 (all their continuation
    /// bytes) at each place in a block: the byte rules find only letters,
    /// and every CJK ideograph and kana letter that ends inside the block.
    #[test]
    fn the_byte_rules_find_only_letters() {
        for cp in 0x3000..0xA000u32 {
            let Some(ch) = char::from_u32(cp) else { continue };
            let mut encoded = [0; 4];
            let encoded = ch.encode_utf8(&mut encoded).as_bytes();
            let expected = is_letter(cp) && (0x3041..0x3100).contains(&cp) || (0x4E00..0x9F80).contains(&cp);
            for at in [0, 30, 61, 62] {
                let mut block = [b'a'; BLOCK];
                block[at..(at + 3).min(BLOCK)].copy_from_slice(&encoded[..(BLOCK - at).min(3)]);
                let found = leads_from(&lead_bytes_of(&block));
                assert!(found & !(1 << at) == 0, "U+{cp:04X} at {at}: no other lead");
                if found != 0 {
                    assert!(is_letter(cp), "U+{cp:04X} is no letter");
                }
                assert_eq!(found != 0, expected && at + 3 <= BLOCK, "U+{cp:04X} at {at}");
            }
        }
    }

    #[test]
    fn the_bitmaps_hold_the_letters_and_others_of_up_to_three_bytes() {
        for cp in 0x80..0x1_0000u32 {
            let valid = char::from_u32(cp).is_some();
            let letter = valid && flags(cp) & LETTER != 0;
            let other = valid && flags(cp) & (LETTER | NUMBER | SPACE) == 0;
            assert_eq!(is_letter(cp), letter, "U+{cp:04X}");
            assert_eq!(bit(&BITMAPS.others, cp as usize), other, "U+{cp:04X}");
        }
        assert!(is_letter(0x65E5), "日 is a letter");
        assert!(!is_letter(0x3002) && bit(&BITMAPS.others, 0x3002), "。 is other");
        assert!(!bit(&BITMAPS.others, 0x3000), "U+3000 is a space");
    }
}
