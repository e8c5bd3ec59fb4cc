//! Encoding long pre-tokens with a base's merges a part at a time, each
//! part's ids kept for the next pre-token that holds it.
//!
//! SuperBPE's second stage starts from its pieces, whole lines, encoded with
//! the merges it inherits (`extend::start_from_base`). Those merges were
//! learnt inside stage 1's pieces, so no token holds a letter followed by a
//! space: a line cuts before each space that follows a non-space byte into
//! parts that merge alone (`Vocabulary::can_cut_between`: exact for any
//! merge list, as no merge can make a token that spans the cut). The parts
//! are words (` the`, ` house,`), which repeat from line to line: merging
//! each line whole on the tournament tree was 4.4 s of CPU for the distinct
//! lines of 100 MB of Gutenberg.

use rustc_hash::FxHashMap;

use crate::bpe::vocab::Vocabulary;
use crate::bpe::{encode_piece, Scratch};
use crate::util::packed_key::{pack_in, INLINE_MAX};

/// Pre-tokens up to this many bytes are encoded whole: an ordinary
/// pre-token is one word, one part.
const WHOLE_MAX: usize = 24;

/// Parts over this many bytes are encoded each time (they seldom repeat).
const PART_MAX: usize = 64;

/// Parts kept before the cache starts afresh, so that its memory stays
/// bounded on a corpus of many distinct words.
const MAX_PARTS: usize = 1 << 21;

/// The ids of the parts seen, for one thread's pre-tokens.
#[derive(Default)]
pub(super) struct PartCache<'a> {
    /// Each part of up to 15 bytes (nearly all), by its packed bytes: hashed
    /// and compared in two word operations, where a slice key cost a hash
    /// of its bytes, a `memcmp` call and a read of the line, and the
    /// look-ups were a third of the replay.
    short: FxHashMap<u128, (u32, u32)>,
    /// Each longer part's ids, as a span of `ids`.
    spans: FxHashMap<&'a [u8], (u32, u32)>,
    ids: Vec<u32>,
}

impl<'a> PartCache<'a> {
    /// Append the ids of `piece` under `vocab` to `out`: those `encode_piece`
    /// gives.
    pub fn encode(&mut self, piece: &'a [u8], vocab: &Vocabulary, scratch: &mut Scratch, out: &mut Vec<u32>) {
        if piece.len() <= WHOLE_MAX {
            return encode_piece(piece, vocab, scratch, out);
        }
        let mut start = 0;
        for at in 1..piece.len() {
            if vocab.can_cut_between(piece[at - 1], piece[at]) {
                self.encode_part(piece, start..at, vocab, scratch, out);
                start = at;
            }
        }
        self.encode_part(piece, start..piece.len(), vocab, scratch, out);
    }

    /// Append the ids of `piece[range]`.
    fn encode_part(
        &mut self,
        piece: &'a [u8],
        range: std::ops::Range<usize>,
        vocab: &Vocabulary,
        scratch: &mut Scratch,
        out: &mut Vec<u32>,
    ) {
        let part = &piece[range];
        if let &[byte] = part {
            return out.push(vocab.byte_id(byte));
        }
        if part.len() > PART_MAX {
            return encode_piece(part, vocab, scratch, out);
        }
        let packed = if part.len() <= INLINE_MAX { pack_in(piece, part) } else { None };
        let known = match packed {
            Some(key) => self.short.get(&key),
            None => self.spans.get(part),
        };
        if let Some(&(start, len)) = known {
            return out.extend_from_slice(&self.ids[start as usize..(start + len) as usize]);
        }
        let at = out.len();
        encode_piece(part, vocab, scratch, out);
        if self.short.len() + self.spans.len() >= MAX_PARTS {
            self.short.clear();
            self.spans.clear();
            self.ids.clear();
        }
        let span = (self.ids.len() as u32, (out.len() - at) as u32);
        self.ids.extend_from_slice(&out[at..]);
        match packed {
            Some(key) => self.short.insert(key, span),
            None => self.spans.insert(part, span),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::test_rng::XorShift as Rng;

    /// Bytes, then merges that join letters, a space to a letter, and
    /// (once) a letter to a space, so that some lines cut and some do not.
    fn vocab() -> Vocabulary {
        let mut entries: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (b as u32, vec![b])).collect();
        let merges: Vec<(Vec<u8>, Vec<u8>)> =
            [("a", "b"), (" ", "a"), ("b", "a"), (" a", "b"), ("ab", "ab"), ("c", " "), ("c ", "a"), ("b", "c")]
                .iter()
                .map(|(l, r)| (l.as_bytes().to_vec(), r.as_bytes().to_vec()))
                .collect();
        for (i, (l, r)) in merges.iter().enumerate() {
            entries.push((256 + i as u32, [&l[..], &r[..]].concat()));
        }
        Vocabulary::new(entries, &merges).unwrap()
    }

    #[test]
    fn encodes_as_the_whole_piece_does() {
        let vocab = vocab();
        let mut rng = Rng(0x1234_5678_9abc_def1);
        let pieces: Vec<Vec<u8>> =
            (0..3000).map(|_| (0..rng.below(120)).map(|_| b"ab c\n"[rng.below(5)]).collect()).collect();
        // Runs of "ab" (no cut inside: no token holds "aa" or "bb", all hold
        // "ab" and "ba") of 16-62 bytes: parts kept by their bytes, not packed.
        let runs = (0..300).map(|_| b"ab".repeat(8 + rng.below(24)));
        let pieces: Vec<Vec<u8>> = pieces.into_iter().chain(runs.map(|run| [&b" c"[..], &run].concat())).collect();
        let (mut cache, mut scratch) = (PartCache::default(), Scratch::default());
        for piece in &pieces {
            let (mut whole, mut parts) = (Vec::new(), Vec::new());
            encode_piece(piece, &vocab, &mut scratch, &mut whole);
            cache.encode(piece, &vocab, &mut scratch, &mut parts);
            assert_eq!(parts, whole, "{:?}", String::from_utf8_lossy(piece));
        }
        assert!(
            cache.short.len() > 10 && cache.spans.len() > 10,
            "{} short, {} long",
            cache.short.len(),
            cache.spans.len()
        );
    }
}
