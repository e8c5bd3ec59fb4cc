//! Merging a pre-token's multi-byte characters before anything else, where
//! that provably gives the same ids.
//!
//! Why: a CJK clause of 58 bytes under o200k takes 44 merges, 39 of them
//! inside characters (three bytes into one token), each a lookup and an update
//! of the merge loop. Its tokens hold CJK words, so the clause does not cut
//! (`Vocabulary::can_cut_between`); but most of its characters can start the
//! merge loop as their token (83% of the characters of CJK runs under o200k).
//!
//! The rule, for a character `C` of 2 or 3 bytes inside a piece: merged on its
//! own, `C`'s bytes become one token `T` through merges of ranks up to `I`.
//! Let `J(b)` be the lowest rank of any merge `(L, R)` whose `L` ends with the
//! byte before boundary `b` and whose `R` starts with the byte after it. If
//! `I < J(b)` at both of `C`'s boundaries, the piece's ids are the same when
//! `C` starts as `T`. Proof: the first merge to make a token across `b` joins
//! an `L` that ends at `b` with an `R` that starts there, so its rank is at
//! least `J(b)`. Until one of `C`'s boundaries is crossed, `C`'s bytes merge
//! exactly as they do alone, and their next merge (rank at most `I`) is always
//! on offer; the loop takes the lowest rank first, so nothing crosses a
//! boundary of `C` (rank at least `J > I`) before `C` is `T`. Meanwhile every
//! other merge the loop takes ranks below `C`'s pending one, hence below
//! anything `T` could join with, so starting from `T` the loop takes the same
//! merges outside `C`, in the same order, and then the same ones after. The
//! argument holds for each such character whatever its neighbours start as,
//! and needs nothing of the merge list.
//!
//! Built with the vocabulary (`Vocabulary::new`, 1.8 ms for o200k).

use crate::bpe::merges::{Merge, MergeTable};

/// Code points below this have a table entry (the Basic Multilingual Plane:
/// 2- and 3-byte characters). Four-byte characters start as bytes.
const TABLE_CHARS: usize = 0x1_0000;
const NONE: u64 = u64::MAX;

#[derive(Debug, Clone, Default)]
pub struct CharMerges {
    /// By code point: `I << 32 | T` for a character whose bytes merge on
    /// their own into one token `T` through merges ranked at most `I`, else
    /// `NONE`.
    chars: Box<[u64]>,
    /// `J` for every pair of bytes (`junction_ranks`).
    junction: Box<[u32]>,
}

/// `J` for every pair of bytes: `junction[x << 8 | y]` is the lowest rank of
/// a merge whose left token ends with byte `x` and whose right token starts
/// with byte `y` (`u32::MAX` if none). From the merge list as the vocabulary
/// is given it, in rank order: one pass over it, where the same from the merge
/// table's ids took 4 of the 7 ms of o200k's first non-ASCII piece.
pub fn junction_ranks<B: AsRef<[u8]>>(merges: &[Merge<B>]) -> Box<[u32]> {
    let mut junction = vec![u32::MAX; 256 * 256];
    for (rank, (left, right)) in merges.iter().enumerate() {
        if let (Some(&last), Some(&first)) = (left.as_ref().last(), right.as_ref().first()) {
            let at = (last as usize) << 8 | first as usize;
            junction[at] = junction[at].min(rank as u32);
        }
    }
    junction.into()
}

impl CharMerges {
    /// From the vocabulary's tokens, `junction_ranks` of its merge list, and
    /// `merge_alone`: a token's bytes merged on their own as the flat scan
    /// merges them, the token they become and the highest rank taken, if
    /// they become one.
    pub fn new<'t>(
        tokens: impl Iterator<Item = &'t [u8]>,
        junction: Box<[u32]>,
        mut merge_alone: impl FnMut(&[u8]) -> Option<(u32, u32)>,
    ) -> Self {
        let mut chars = vec![NONE; TABLE_CHARS];
        for bytes in tokens {
            let Some(code) = single_char(bytes) else { continue };
            if let Some((token, highest_rank)) = merge_alone(bytes) {
                chars[code as usize] = (highest_rank as u64) << 32 | token as u64;
            }
        }
        Self { chars: chars.into(), junction }
    }

    /// Append to `out` the ids `piece` starts its merges from: its bytes'
    /// tokens, except that each character the rule allows is its token.
    pub fn starting_ids(&self, piece: &[u8], table: &MergeTable, out: &mut Vec<u32>) {
        let mut at = 0;
        while at < piece.len() {
            let (len, code) = char_at(piece, at);
            if len > 1 {
                let entry = self.chars[code as usize];
                if entry != NONE && self.may_start_merged(piece, at, len, (entry >> 32) as u32) {
                    out.push(entry as u32);
                    at += len;
                    continue;
                }
            }
            out.extend(piece[at..at + len].iter().map(|&byte| table.byte_id(byte)));
            at += len;
        }
    }

    /// The rule at both boundaries of the character `piece[at..at + len]`.
    #[inline]
    fn may_start_merged(&self, piece: &[u8], at: usize, len: usize, highest_rank: u32) -> bool {
        let end = at + len;
        let before = at == 0 || highest_rank < self.junction_rank(piece[at - 1], piece[at]);
        before && (end == piece.len() || highest_rank < self.junction_rank(piece[end - 1], piece[end]))
    }

    #[inline]
    fn junction_rank(&self, last: u8, first: u8) -> u32 {
        self.junction[(last as usize) << 8 | first as usize]
    }
}

/// The length of the character at `piece[at]` and its code point, where it is
/// a well-formed character of 2 or 3 bytes (overlong forms and surrogates
/// excluded, so a code point names one byte sequence); otherwise `(1, 0)`:
/// the byte starts as itself.
#[inline]
fn char_at(piece: &[u8], at: usize) -> (usize, u32) {
    let lead = piece[at];
    let tail = |i: usize| piece.get(at + i).copied().filter(|&b| b & 0xC0 == 0x80).map(|b| (b & 0x3F) as u32);
    match lead {
        0xC2..=0xDF => match tail(1) {
            Some(t1) => (2, ((lead & 0x1F) as u32) << 6 | t1),
            None => (1, 0),
        },
        0xE0..=0xEF => match (tail(1), tail(2)) {
            (Some(t1), Some(t2)) => {
                let code = ((lead & 0x0F) as u32) << 12 | t1 << 6 | t2;
                if code < 0x800 || (0xD800..0xE000).contains(&code) {
                    (1, 0)
                } else {
                    (3, code)
                }
            }
            _ => (1, 0),
        },
        _ => (1, 0),
    }
}

/// The code point of `bytes` when they are exactly one character of 2 or 3
/// bytes.
fn single_char(bytes: &[u8]) -> Option<u32> {
    if !(2..=3).contains(&bytes.len()) {
        return None; // (and an empty token, which a vocabulary may hold, has no character)
    }
    let (len, code) = char_at(bytes, 0);
    (len == bytes.len()).then_some(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpe::vocab::Vocabulary;
    use crate::bpe::{encode_piece, merge_heap, Scratch};
    use crate::util::test_rng::XorShift as Rng;

    /// Characters of 1, 2 and 3 bytes, two of them sharing a lead byte.
    const ALPHABET: [&str; 6] = ["a", "é", "ü", "中", "文", "ß"];

    /// Bytes that start or continue a character but are not one here: a
    /// piece of bytes (not text) may hold them.
    const STRAY_BYTES: [u8; 4] = [0x80, 0xB8, 0xC3, 0xE4];

    /// Characters of `ALPHABET`, and one time in 16 a stray byte.
    fn random_text(rng: &mut Rng, chars: usize) -> Vec<u8> {
        let mut text = Vec::new();
        for _ in 0..chars {
            if rng.below(16) == 0 {
                text.push(STRAY_BYTES[rng.below(STRAY_BYTES.len())]);
            } else {
                text.extend_from_slice(ALPHABET[rng.below(ALPHABET.len())].as_bytes());
            }
        }
        text
    }

    /// A vocabulary learned from random text the way training learns one,
    /// but taking a random adjacent pair each time instead of the most
    /// frequent: merges inside characters, across them and of partial
    /// characters come in every order, so the rule both holds and fails.
    fn random_vocab(rng: &mut Rng, size: usize) -> Vocabulary {
        let mut entries: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (b as u32, vec![b])).collect();
        let mut text: Vec<Vec<u8>> = random_text(rng, 400).into_iter().map(|b| vec![b]).collect();
        let mut merges: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        while merges.len() < size && text.len() > 1 {
            let at = rng.below(text.len() - 1);
            let (left, right) = (text[at].clone(), text[at + 1].clone());
            let token = [left.as_slice(), right.as_slice()].concat();
            if merges.contains(&(left.clone(), right.clone())) {
                continue;
            }
            if !entries.iter().any(|(_, bytes)| *bytes == token) {
                entries.push((entries.len() as u32, token.clone()));
            }
            merges.push((left.clone(), right.clone()));
            let mut merged = Vec::with_capacity(text.len());
            let mut i = 0;
            while i < text.len() {
                if i + 1 < text.len() && text[i] == left && text[i + 1] == right {
                    merged.push(token.clone());
                    i += 2;
                } else {
                    merged.push(text[i].clone());
                    i += 1;
                }
            }
            text = merged;
        }
        Vocabulary::new(entries, &merges).unwrap()
    }

    #[test]
    fn pieces_starting_from_characters_give_the_byte_merges_ids() {
        let mut rng = Rng(0x5851_f42d_4c95_7f2d);
        let mut scratch = Scratch::default();
        let (mut chars_merged_ahead, mut chars_left_as_bytes) = (0, 0);
        for round in 0..400 {
            let size = 1 + rng.below(120);
            let vocab = random_vocab(&mut rng, size);
            for _ in 0..20 {
                // Up to 100 characters: both of `encode_piece`'s paths that
                // start from characters (the flat scan up to 32 bytes, the
                // tournament tree past that).
                let chars = 1 + rng.below(100);
                let piece = random_text(&mut rng, chars);
                let (mut ids, mut expected) = (Vec::new(), Vec::new());
                encode_piece(&piece, &vocab, &mut scratch, &mut ids);
                merge_heap(&piece, &vocab, &mut scratch, &mut expected);
                assert_eq!(ids, expected, "round {round}: {:?}", String::from_utf8_lossy(&piece));
                // Which way the rule went for each character (for the count below only).
                for at in 0..piece.len() {
                    let (len, code) = char_at(&piece, at);
                    if len > 1 {
                        let entry = vocab.char_merges().chars[code as usize];
                        let rules = vocab.char_merges();
                        match entry != NONE && rules.may_start_merged(&piece, at, len, (entry >> 32) as u32) {
                            true => chars_merged_ahead += 1,
                            false => chars_left_as_bytes += 1,
                        }
                    }
                }
            }
        }
        // Both outcomes of the rule, many times over.
        assert!(
            chars_merged_ahead > 10_000 && chars_left_as_bytes > 10_000,
            "{chars_merged_ahead} / {chars_left_as_bytes}"
        );
    }

    #[test]
    fn only_well_formed_two_and_three_byte_characters_are_characters() {
        assert_eq!(char_at("é".as_bytes(), 0), (2, 0xE9));
        assert_eq!(char_at("中".as_bytes(), 0), (3, 0x4E2D));
        assert_eq!(single_char(b""), None);
        assert_eq!(single_char("中".as_bytes()), Some(0x4E2D));
        assert_eq!(single_char("中a".as_bytes()), None);
        for bad in [
            &b"\xC0\x80"[..],
            b"\xE0\x82\x80",
            b"\xED\xA0\x80",
            b"\xE4\xB8",
            b"\xE4\x41\x80",
            b"\xF0\x9F\x98\x80",
            b"a",
        ] {
            assert_eq!(char_at(bad, 0), (1, 0), "{bad:?}");
        }
    }
}
