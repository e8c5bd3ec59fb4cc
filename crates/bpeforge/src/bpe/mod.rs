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
//!   merges never join words (SuperBPE's, whose pieces are whole lines), in
//!   two phases instead (`word_phases.rs`): each word's ids under those
//!   merges, kept from piece to piece (`word_cache.rs`), then the rest of
//!   the merges from there;
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
//! Below them: the merge table (`merges.rs`, with its Bloom filter
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
pub(crate) mod sweep;
pub(crate) mod token_index;
mod tree;
pub(crate) mod vocab;
mod word_cache;
pub(crate) mod word_phases;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

pub(crate) use crate::bpe::chunked::merge_run;
use crate::bpe::chunked::{merge_chunked, ChunkScratch};
use crate::bpe::flat::{merge_flat, merge_flat_below, merge_flat_ids, Part};
use crate::bpe::heap::{merge_long, RadixHeap};
use crate::bpe::list::Node;
use crate::bpe::min_tree::MinTree;
use crate::bpe::sweep::{merge_sweep, SweepScratch, SWEEP_MAX};
use crate::bpe::tree::{merge_tree, merge_tree_ids};
use crate::bpe::vocab::Vocabulary;
use crate::bpe::word_cache::WordCache;
use crate::bpe::word_phases::WordPhases;
use crate::util::packed_key::{hash_packed, pack_at};

/// Pieces up to this many bytes use the flat scan. Its every merge rescans
/// the piece (a chain of dependent compares), so past a few dozen bytes the
/// heap wins: on 10 MB of multilingual text (CJK sentences are GPT-2 pieces of
/// 20-130 bytes) 32 encoded 16% faster than 128 (median of 7, the
/// `encode_file` example), English unchanged within noise.
const FLAT_MAX: usize = 32;
/// Pieces over this many bytes take the rank sweep (when ranks grow): as
/// `long_pieces::LONG_PIECE_MAX`, past which pieces are merged every time.
const SWEEP_MIN: usize = 1024;

/// Reusable buffers, so that encoding allocates per call, not per piece.
#[derive(Default)]
pub struct Scratch {
    parts: Vec<Part>,
    nodes: Vec<Node>,
    /// The ids a non-ASCII piece starts from (`char_merges.rs`).
    starting_ids: Vec<u32>,
    heap: BinaryHeap<Reverse<u64>>,
    tree: MinTree,
    radix: RadixHeap,
    sweep: SweepScratch,
    chunks: ChunkScratch,
    /// The early merges' ids of words (`word_phases.rs`).
    words: WordCache,
    /// A piece's words: where each ends, its packed key (0 if too long to
    /// pack) and the key's hash.
    word_list: Vec<(usize, u128, u64)>,
    /// A piece's words' early ids, end to end.
    early_ids: Vec<u32>,
}

impl Scratch {
    /// Bytes its buffers hold (they grow with the longest piece encoded).
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        let radix: usize = self.radix.buckets.iter().map(Vec::capacity).sum();
        self.parts.capacity() * size_of::<Part>()
            + self.nodes.capacity() * size_of::<Node>()
            + self.starting_ids.capacity() * size_of::<u32>()
            + (self.heap.capacity() + radix) * size_of::<u64>()
            + self.tree.bytes()
            + self.sweep.bytes()
            + self.chunks.bytes()
            + self.words.bytes()
            + self.word_list.capacity() * size_of::<(usize, u128, u64)>()
            + self.early_ids.capacity() * size_of::<u32>()
    }
}

/// Append the ids of `piece` to `out`.
pub fn encode_piece(piece: &[u8], vocab: &Vocabulary, scratch: &mut Scratch, out: &mut Vec<u32>) {
    if piece.len() > SWEEP_MIN && vocab.ranks_grow() && merge_chunked(piece, vocab, scratch, out) {
        return;
    }
    let (table, char_merges) = (vocab.merge_table(), vocab.char_merges());
    if let Some(phases) = vocab.word_phases().filter(|_| piece.len() > FLAT_MAX && piece.len() <= SWEEP_MIN) {
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

/// A piece of a vocabulary whose early merges never join words, merged in
/// the two phases of `word_phases.rs`: each word's early ids (kept in
/// `Scratch::words`), then every merge on them. Pieces of up to `SWEEP_MIN`
/// bytes.
fn merge_in_phases(piece: &[u8], vocab: &Vocabulary, phases: &WordPhases, scratch: &mut Scratch, out: &mut Vec<u32>) {
    scratch.words.serve(phases.id());
    // The words first, each one's bucket asked for, so that the lookups below do not wait one by one.
    let mut word_list = std::mem::take(&mut scratch.word_list);
    word_list.clear();
    let mut word_start = 0;
    for end in phases.part_ends(piece) {
        let key = pack_at(piece, word_start, end).unwrap_or(0);
        let hash = hash_packed(key);
        scratch.words.prefetch(hash);
        word_list.push((end, key, hash));
        word_start = end;
    }
    // The first phase into `early_ids`, the second from there into `out`.
    let mut early_ids = std::mem::take(&mut scratch.early_ids);
    early_ids.clear();
    word_start = 0;
    for &(end, key, hash) in &word_list {
        let word = &piece[word_start..end];
        word_start = end;
        if let &[byte] = word {
            early_ids.push(vocab.byte_id(byte));
        } else if key == 0 {
            merge_early(word, vocab, phases, scratch, &mut early_ids);
        } else if !scratch.words.get(key, hash, &mut early_ids) {
            let at = early_ids.len();
            merge_early(word, vocab, phases, scratch, &mut early_ids);
            scratch.words.put(key, hash, &early_ids[at..]);
        }
    }
    let table = vocab.merge_table();
    let merge = |left, right| table.merge(left, right);
    let Scratch { parts, nodes, tree, .. } = scratch;
    match early_ids.len() {
        0 => {}
        n if n <= FLAT_MAX => merge_flat_ids(&early_ids, merge, parts, out),
        _ => merge_tree_ids(&early_ids, merge, nodes, tree, out),
    }
    (scratch.word_list, scratch.early_ids) = (word_list, early_ids);
}

/// Append the ids of `word` under the early merges alone (`word_phases.rs`).
fn merge_early(word: &[u8], vocab: &Vocabulary, phases: &WordPhases, scratch: &mut Scratch, out: &mut Vec<u32>) {
    let (table, late_from) = (vocab.merge_table(), phases.late_from());
    let early = |left, right| table.merge(left, right).filter(|rule| rule.rank < late_from);
    let Scratch { parts, nodes, starting_ids, tree, .. } = scratch;
    match word.len() {
        0 => {}
        1 => out.push(table.byte_id(word[0])),
        n if n <= FLAT_MAX => merge_flat_below(word, table, late_from, parts, out),
        _ => {
            starting_ids.clear();
            starting_ids.extend(word.iter().map(|&byte| table.byte_id(byte)));
            merge_tree_ids(starting_ids, early, nodes, tree, out);
        }
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
