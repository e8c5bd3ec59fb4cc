//! Merges inside one pre-token: the lowest-ranked adjacent pair first, the
//! leftmost of equal ones, until no pair has a merge (the same as applying the
//! merge list in creation order, left to right).
//!
//! Five implementations of the one rule, by the piece's length (and a sixth
//! by the vocabulary):
//! - up to `FLAT_MAX` bytes (almost all pieces): the flat scan (`flat.rs`),
//!   quadratic in the piece and the fastest when it is short;
//! - up to `SWEEP_MIN` bytes (CJK clauses are GPT-2 pieces of 20-130 bytes): a
//!   linked list of parts (`list.rs`) on a tournament tree (`tree.rs`,
//!   `min_tree.rs`), so no input is quadratic; for a vocabulary whose first
//!   merges never join words (SuperBPE's, whose pieces are whole lines; from
//!   16 bytes), in two phases instead (`word_phases.rs`, `phased.rs`): each
//!   word's ids under those merges, kept from piece to piece
//!   (`word_cache.rs`), then the rest of the merges from there;
//! - longer, when ranks grow: in chunks, each seam checked (`chunked.rs`), a
//!   run of one char or of a short period at the cost of comparing bytes;
//!   where a seam cannot be placed, the rank sweep (`sweep.rs`), whose time grows
//!   linearly where a heap's grew 5-8x from 0.25 to 1 MB; its fixed cost per
//!   piece is why it takes only pieces over `SWEEP_MIN`;
//! - longer than `SWEEP_MAX`, or any long piece when ranks do not grow: the
//!   linked list on a radix heap or a binary heap (`heap.rs`).
//!
//! The flat scan and the tree start a piece with its characters of 2 or 3 bytes
//! as tokens where `char_merges.rs` proves the ids unchanged.
//!
//! Their buffers are kept from piece to piece (`scratch.rs`). Below them:
//! the merge table (`merges.rs`, with its Bloom filter
//! `pair_filter.rs`), the token index (`token_index.rs`) and the vocabulary
//! that holds them (`vocab.rs`). The files import downwards only: the
//! vocabulary builds the character merges with the flat scan, and the merge
//! loops read the vocabulary's merge table.

mod char_merges;
mod chunked;
mod flat;
mod heap;
mod list;
pub(crate) mod merges;
mod min_tree;
mod pair_filter;
mod period;
mod phased;
mod scratch;
pub(crate) mod sweep;
pub(crate) mod token_index;
mod tree;
pub(crate) mod vocab;
mod word_cache;
pub(crate) mod word_phases;

use crate::bpe::chunked::merge_chunked;
pub(crate) use crate::bpe::chunked::merge_run;
use crate::bpe::flat::{merge_flat, FLAT_MAX};
use crate::bpe::heap::merge_long;
use crate::bpe::phased::merge_in_phases;
pub use crate::bpe::scratch::Scratch;
use crate::bpe::sweep::{merge_sweep, SWEEP_MAX};
use crate::bpe::tree::merge_tree;
use crate::bpe::vocab::Vocabulary;
use crate::util::packed_key::INLINE_MAX;

/// Pieces over this many bytes take the rank sweep (when ranks grow): as
/// `long_pieces::LONG_PIECE_MAX`, past which pieces are merged every time.
const SWEEP_MIN: usize = 1024;

/// Append the ids of `piece` to `out`.
pub fn encode_piece(piece: &[u8], vocab: &Vocabulary, scratch: &mut Scratch, out: &mut Vec<u32>) {
    if piece.len() > SWEEP_MIN && vocab.ranks_grow() && merge_chunked(piece, vocab, scratch, out) {
        return;
    }
    let (table, char_merges) = (vocab.merge_table(), vocab.char_merges());
    // Shorter ones are one word, or few: the encoder keeps them whole.
    if let Some(phases) = vocab.word_phases().filter(|_| piece.len() > INLINE_MAX && piece.len() <= SWEEP_MIN) {
        return merge_in_phases(piece, vocab, phases, scratch, out);
    }
    let Scratch { parts, nodes, starting_ids, heap, tree, radix, sweep, chunks: _, .. } = scratch;
    match piece.len() {
        0 => {}
        1 => out.push(vocab.byte_id(piece[0])),
        n if n <= FLAT_MAX => merge_flat(piece, table, char_merges, parts, starting_ids, out),
        n if n <= SWEEP_MIN => merge_tree(piece, table, char_merges, nodes, tree, starting_ids, out),
        _ if !vocab.ranks_grow() => merge_long(piece, table, nodes, heap, out),
        n if n <= SWEEP_MAX => merge_sweep(piece, vocab, sweep, out),
        _ => merge_long(piece, table, nodes, radix, out),
    }
}

/// The linked list on a binary heap: any vocabulary, any piece of 2 bytes or
/// more (the reference the rank sweep's tests compare with).
#[cfg(test)]
pub(crate) fn merge_heap(piece: &[u8], vocab: &Vocabulary, scratch: &mut Scratch, out: &mut Vec<u32>) {
    merge_long(piece, vocab.merge_table(), &mut scratch.nodes, &mut scratch.heap, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes as ids, then merges (a,a)->256 "aa", (aa,aa)->257 "aaaa", (a,b)->258 "ab".
    fn vocab() -> Vocabulary {
        let mut entries: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (b as u32, vec![b])).collect();
        entries.extend([(256, b"aa".to_vec()), (257, b"aaaa".to_vec()), (258, b"ab".to_vec())]);
        let merges = [(b"a".to_vec(), b"a".to_vec()), (b"aa".to_vec(), b"aa".to_vec()), (b"a".to_vec(), b"b".to_vec())];
        Vocabulary::new(entries, &merges).unwrap()
    }

    fn encode(piece: &[u8]) -> Vec<u32> {
        let mut out = Vec::new();
        encode_piece(piece, &vocab(), &mut Scratch::default(), &mut out);
        out
    }

    fn heap_encode(piece: &[u8]) -> Vec<u32> {
        let (mut out, mut scratch) = (Vec::new(), Scratch::default());
        merge_long(piece, vocab().merge_table(), &mut scratch.nodes, &mut scratch.heap, &mut out);
        out
    }

    fn sweep_encode(piece: &[u8]) -> Vec<u32> {
        let (mut out, mut scratch) = (Vec::new(), Scratch::default());
        merge_sweep(piece, &vocab(), &mut scratch.sweep, &mut out);
        out
    }

    fn radix_encode(piece: &[u8]) -> Vec<u32> {
        let (mut out, mut scratch) = (Vec::new(), Scratch::default());
        merge_long(piece, vocab().merge_table(), &mut scratch.nodes, &mut scratch.radix, &mut out);
        out
    }

    #[test]
    fn lowest_rank_first_leftmost_first() {
        // "aaab": (a,a) rank 0 merges left to right: "aa" "a" "b"; then (a,b) rank 2: "aa" "ab".
        assert_eq!(encode(b"aaab"), [256, 258]);
        // "aaaaa": "aa" "aa" "a", then (aa,aa): "aaaa" "a".
        assert_eq!(encode(b"aaaaa"), [257, b'a' as u32]);
        assert_eq!(encode(b"b"), [b'b' as u32]);
    }

    #[test]
    fn heap_radix_and_flat_agree() {
        assert!(vocab().ranks_grow());
        for piece in [&b"aaab"[..], b"aaaaa", b"abababaaab", b"xaaaay", b"a", b"ba"] {
            assert_eq!(heap_encode(piece), encode(piece), "{piece:?}");
            assert_eq!(radix_encode(piece), encode(piece), "{piece:?}");
        }
        let mut rng = crate::util::test_rng::XorShift(0x2545_f491_4f6c_dd1d);
        for _ in 0..200 {
            let len = (rng.0 % 300) as usize + 1;
            let piece: Vec<u8> = (0..len).map(|_| [b'a', b'b', b'x'][(rng.next() % 3) as usize]).collect();
            assert_eq!(radix_encode(&piece), heap_encode(&piece), "{piece:?}");
            if piece.len() > 1 {
                assert_eq!(sweep_encode(&piece), heap_encode(&piece), "{piece:?}");
            }
        }
        let long = vec![b'a'; 1000];
        // 1000 = 250 x "aaaa".
        assert_eq!(encode(&long), vec![257; 250]);
        // Over `SWEEP_MIN`: the sweep.
        let long = vec![b'a'; 4 * SWEEP_MIN];
        assert_eq!(encode(&long), vec![257; SWEEP_MIN]);
    }
}
