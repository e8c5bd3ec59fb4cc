//! Applying merges inside one pre-token: the lowest-ranked adjacent pair
//! first, the leftmost of equal ones, until no pair has a merge. This is the
//! same as applying the merge list in creation order, left to right.
//!
//! Four implementations of the one rule:
//! - short pieces (almost all): a flat array of parts with the rank of the pair
//!   each part starts, scanned for the minimum; only the two neighbours of a
//!   merge are looked up again. Quadratic in the piece, fastest when it is short.
//! - longer pieces, up to `SWEEP_MIN` bytes (CJK clauses of 20-130 bytes are
//!   GPT-2 pieces): a linked list and a tournament tree of `(rank, position)`
//!   (`min_tree.rs`, since the thirteenth session; a binary heap with lazy
//!   invalidation before, which stays for vocabularies whose ranks do not
//!   grow, past `SWEEP_MIN`), so no input is quadratic (tiktoken was, before
//!   0.13). A radix heap took these until the tenth session: its 65 buckets
//!   cleared and scanned per piece made the distinct pieces of 33-255 bytes
//!   of 10 MB of multilingual text cost 1,457-1,516 ns each against
//!   1,147-1,210 on the binary heap (a third of that corpus's first call).
//!
//! The flat scan and the tree start a piece with characters of 2 or 3 bytes
//! from the ids `char_merges.rs` gives: each character the rule there allows
//! as its token, the rest as bytes.
//! - pieces over `SWEEP_MIN` bytes with growing ranks (a 1 MB run of one
//!   letter is one piece): `rank_sweep.rs`, the ranks in order, each over a
//!   bucket of positions, on one word per byte. On the radix heap the time of
//!   1 MB was 5-8x that of 0.25 MB on the worst inputs (issue 12 asks at most
//!   4.5x): its keys moved down 20-40 buckets each, and the 20 MB of state of
//!   a 1 MB piece left the caches. The sweep grows about 4x and is up to 7x
//!   faster there (`examples/worst_cases.rs`; docs/design.md, "Seventh
//!   session"), but its fixed costs per piece (a hash map of pending ranks, a
//!   block per rank) made multilingual text, whose CJK sentences are pieces
//!   of 20-130 bytes, 12% slower when it took every piece over `FLAT_MAX`.
//! - pieces over `SWEEP_MAX` bytes when ranks grow: the same list on a radix
//!   heap (when the merge list only ever creates pairs of higher rank than
//!   the one applied: any list training wrote, and the merges a tiktoken rank
//!   file implies, `Vocabulary::ranks_grow`), whose pushes are appends and
//!   whose pops scan small buckets in order, where a binary heap's random
//!   accesses over a megabyte-sized piece miss the caches (1 MB of random
//!   digits as one piece: binary heap 305-324 ms, radix heap 215-222 ms).

pub(crate) mod char_merges;
mod min_tree;
mod pair_filter;
mod rank_sweep;
pub(crate) mod token_index;
pub(crate) mod vocab;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::bpe::min_tree::MinTree;
use crate::bpe::rank_sweep::{merge_sweep, SweepScratch, SWEEP_MAX};
use crate::bpe::vocab::{MergeRule, Vocabulary};

/// Pieces up to this many bytes use the flat scan. Its every merge rescans
/// the piece (a chain of dependent compares), so past a few dozen bytes the
/// heap wins: on 10 MB of multilingual text (CJK sentences are GPT-2 pieces of
/// 20-130 bytes) 32 encoded 16% faster than 128 (median of 7, the
/// `encode_file` example), English unchanged within noise.
const FLAT_MAX: usize = 32;
/// Pieces over this many bytes take the rank sweep (when ranks grow): as
/// `long_pieces::LONG_PIECE_MAX`, past which pieces are merged every time.
const SWEEP_MIN: usize = 1024;
const NONE: u32 = u32::MAX;

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
    }
}

/// A min-queue of `(rank, position)` keys (see `heap_key`).
trait MinQueue {
    /// Empty the queue, then hold `keys`.
    fn refill(&mut self, keys: impl Iterator<Item = u64>);
    fn push(&mut self, key: u64);
    fn pop(&mut self) -> Option<u64>;
}

impl MinQueue for BinaryHeap<Reverse<u64>> {
    fn refill(&mut self, keys: impl Iterator<Item = u64>) {
        // One O(n) heapify rather than n pushes.
        let mut entries = std::mem::take(self).into_vec();
        entries.clear();
        entries.extend(keys.map(Reverse));
        *self = BinaryHeap::from(entries);
    }

    fn push(&mut self, key: u64) {
        BinaryHeap::push(self, Reverse(key));
    }

    fn pop(&mut self) -> Option<u64> {
        BinaryHeap::pop(self).map(|Reverse(key)| key)
    }
}

/// A radix heap: a min-queue for keys that never go below the last one
/// popped (a monotone queue). Bucket `b > 0` holds keys whose highest bit
/// differing from `last` is bit `b - 1`; bucket 0 holds `last` itself. A pop
/// from an empty bucket 0 takes the first non-empty bucket, makes its minimum
/// the new `last` and spreads it into lower buckets: each key moves down at
/// most 64 times, all of it sequential reads and appends. Hand-written: no
/// crate offers one for this small need without a dependency; it is checked
/// against the binary heap in the tests below and in every long piece the
/// tiktoken-equality tests encode.
struct RadixHeap {
    last: u64,
    buckets: [Vec<u64>; 65],
}

impl Default for RadixHeap {
    fn default() -> Self {
        Self { last: 0, buckets: std::array::from_fn(|_| Vec::new()) }
    }
}

impl RadixHeap {
    #[inline]
    fn bucket(&self, key: u64) -> usize {
        64 - (key ^ self.last).leading_zeros() as usize
    }
}

impl MinQueue for RadixHeap {
    fn refill(&mut self, keys: impl Iterator<Item = u64>) {
        self.buckets.iter_mut().for_each(Vec::clear);
        self.last = 0;
        keys.for_each(|key| self.push(key));
    }

    #[inline]
    fn push(&mut self, key: u64) {
        debug_assert!(key >= self.last, "radix heap: key {key} pushed below the last popped {}", self.last);
        let bucket = self.bucket(key);
        self.buckets[bucket].push(key);
    }

    fn pop(&mut self) -> Option<u64> {
        if self.buckets[0].is_empty() {
            let from = (1..self.buckets.len()).find(|&b| !self.buckets[b].is_empty())?;
            let spread = std::mem::take(&mut self.buckets[from]);
            self.last = *spread.iter().min().expect("a non-empty bucket");
            for &key in &spread {
                let bucket = self.bucket(key);
                self.buckets[bucket].push(key);
            }
            // Keep the emptied bucket's allocation for the next time it fills.
            let mut spread = spread;
            spread.clear();
            self.buckets[from] = spread;
        }
        self.buckets[0].pop()
    }
}

#[derive(Clone, Copy)]
struct Part {
    id: u32,
    /// Rank of the merge of this part with the next one, or `NONE`.
    rank: u32,
    merged: u32,
}

/// Append the ids of `piece` to `out`.
pub fn encode_piece(piece: &[u8], vocab: &Vocabulary, scratch: &mut Scratch, out: &mut Vec<u32>) {
    match piece.len() {
        0 => {}
        1 => out.push(vocab.byte_id(piece[0])),
        n if n <= FLAT_MAX => merge_flat(piece, vocab, scratch, out),
        n if n <= SWEEP_MIN => merge_tree(piece, vocab, scratch, out),
        _ if !vocab.ranks_grow() => merge_long(piece, vocab, &mut scratch.nodes, &mut scratch.heap, out),
        n if n <= SWEEP_MAX => merge_sweep(piece, vocab, &mut scratch.sweep, out),
        _ => merge_long(piece, vocab, &mut scratch.nodes, &mut scratch.radix, out),
    }
}

/// As `merge_tree`, pieces with characters of 2 or 3 bytes start with those
/// `char_merges.rs` allows already merged.
fn merge_flat(piece: &[u8], vocab: &Vocabulary, scratch: &mut Scratch, out: &mut Vec<u32>) {
    let Scratch { parts, starting_ids, .. } = scratch;
    parts.clear();
    if piece.is_ascii() {
        byte_parts(piece, vocab, parts);
        // English words: most pairs asked have a merge, so the pair filter
        // would only add a read to each lookup.
        merge_parts(parts, |left, right| vocab.merge_direct(left, right));
    } else {
        starting_ids.clear();
        vocab.char_merges().starting_ids(piece, vocab, starting_ids);
        parts.extend(starting_ids.windows(2).map(|w| part_with(w[0], vocab.merge(w[0], w[1]))));
        parts.push(part_with(starting_ids[starting_ids.len() - 1], None));
        merge_parts(parts, |left, right| vocab.merge(left, right));
    }
    out.extend(parts.iter().map(|p| p.id));
}

/// A character's bytes merged on their own, as the flat scan merges a piece:
/// the token they become and the highest rank taken, if they become one
/// (`char_merges.rs` builds its table with this).
pub(crate) fn merge_into_one(piece: &[u8], vocab: &Vocabulary, scratch: &mut Scratch) -> Option<(u32, u32)> {
    let parts = &mut scratch.parts;
    parts.clear();
    byte_parts(piece, vocab, parts);
    let highest_rank = merge_parts(parts, |left, right| vocab.merge(left, right));
    (parts.len() == 1).then(|| (parts[0].id, highest_rank))
}

/// The parts a piece of 2 bytes or more starts as: its bytes, with the merge
/// of each byte and the next.
#[inline]
fn byte_parts(piece: &[u8], vocab: &Vocabulary, parts: &mut Vec<Part>) {
    parts.extend(piece.windows(2).map(|w| part_with(vocab.byte_id(w[0]), vocab.byte_pair_merge(w[0], w[1]))));
    parts.push(part_with(vocab.byte_id(piece[piece.len() - 1]), None));
}

/// The flat scan's merges, looking pairs up with `merge`; the highest rank
/// applied (0 if none).
#[inline(always)]
fn merge_parts(parts: &mut Vec<Part>, merge: impl Fn(u32, u32) -> Option<MergeRule>) -> u32 {
    let mut highest_rank = 0;
    while let Some(i) = lowest_rank(parts) {
        highest_rank = highest_rank.max(parts[i].rank);
        let merged = parts[i].merged;
        parts.remove(i + 1);
        let after = parts.get(i + 1).and_then(|next| merge(merged, next.id));
        parts[i] = part_with(merged, after);
        if i > 0 {
            parts[i - 1] = part_with(parts[i - 1].id, merge(parts[i - 1].id, merged));
        }
    }
    highest_rank
}

#[inline]
fn part_with(id: u32, rule: Option<MergeRule>) -> Part {
    match rule {
        Some(rule) => Part { id, rank: rule.rank, merged: rule.merged },
        None => Part { id, rank: NONE, merged: NONE },
    }
}

/// Position of the lowest-ranked merge, the leftmost of equals; `None` if no
/// part has one.
#[inline]
fn lowest_rank(parts: &[Part]) -> Option<usize> {
    let mut best = (NONE, 0);
    for (i, p) in parts.iter().enumerate() {
        if p.rank < best.0 {
            best = (p.rank, i);
        }
    }
    (best.0 != NONE).then_some(best.1)
}

/// A node of the doubly linked list of parts; `id == NONE` once merged away.
/// `rank` and `merged` are the merge of this part with the next one (`NONE`
/// if none), kept up to date as parts merge: a queue entry `(rank, at)` is
/// current exactly when `nodes[at]` is alive with that rank (ranks are
/// unique, so an equal rank is the same pair), which a pop checks without
/// a lookup (it was a third of the merge table's lookups).
#[derive(Clone, Copy)]
struct Node {
    id: u32,
    prev: u32,
    next: u32,
    rank: u32,
    merged: u32,
}

/// A queue entry: rank in the high half, position in the low half, so that
/// one integer comparison orders by rank and then leftmost first.
#[inline]
fn heap_key(rank: u32, at: u32) -> u64 {
    (rank as u64) << 32 | at as u64
}

/// The linked list on a binary heap: any vocabulary, any piece of 2 bytes or
/// more (the reference the rank sweep's tests compare with).
#[cfg(test)]
pub(crate) fn merge_heap(piece: &[u8], vocab: &Vocabulary, scratch: &mut Scratch, out: &mut Vec<u32>) {
    merge_long(piece, vocab, &mut scratch.nodes, &mut scratch.heap, out);
}

fn merge_long<Q: MinQueue>(piece: &[u8], vocab: &Vocabulary, nodes: &mut Vec<Node>, heap: &mut Q, out: &mut Vec<u32>) {
    nodes.clear();
    byte_nodes(piece, vocab, nodes);
    nodes[piece.len() - 1].next = NONE;
    heap.refill(
        nodes.iter().enumerate().filter(|(_, node)| node.rank != NONE).map(|(at, node)| heap_key(node.rank, at as u32)),
    );
    // Look up the merge of part `at` with its next one, and queue it.
    let update = |heap: &mut Q, nodes: &mut [Node], at: u32| {
        let (rank, merged) = merge_after(nodes, at, vocab);
        (nodes[at as usize].rank, nodes[at as usize].merged) = (rank, merged);
        if rank != NONE {
            heap.push(heap_key(rank, at));
        }
    };
    while let Some(key) = heap.pop() {
        let (rank, at) = ((key >> 32) as u32, key as u32);
        let node = nodes[at as usize];
        if node.id == NONE || node.rank != rank {
            continue; // stale: the pair at `at` changed since this entry was pushed
        }
        merge_with_next(nodes, at);
        if node.prev != NONE {
            update(heap, nodes, node.prev);
        }
        update(heap, nodes, at);
    }
    out.extend(nodes.iter().filter(|node| node.id != NONE).map(|node| node.id));
}

/// Merge part `at` with the part after it (into its `merged`), unlinking
/// that one; returns part `at` as it was.
#[inline(always)]
fn merge_with_next(nodes: &mut [Node], at: u32) -> Node {
    let node = nodes[at as usize];
    let right = nodes[node.next as usize];
    nodes[at as usize].id = node.merged;
    nodes[at as usize].next = right.next;
    nodes[node.next as usize].id = NONE;
    if right.next != NONE {
        nodes[right.next as usize].prev = at;
    }
    node
}

/// The merge of part `at` with the part after it: `(rank, merged)`, or
/// `(NONE, NONE)` if there is none.
#[inline(always)]
fn merge_after(nodes: &[Node], at: u32, vocab: &Vocabulary) -> (u32, u32) {
    let node = nodes[at as usize];
    let rule = (node.next != NONE).then(|| vocab.merge(node.id, nodes[node.next as usize].id)).flatten();
    rule.map_or((NONE, NONE), |rule| (rule.rank, rule.merged))
}

/// The linked list on a tournament tree of `(rank, position)` keys, one leaf
/// per part (`min_tree.rs`): each merge rewrites three leaves instead of
/// pushing onto a heap and skipping stale entries. Pieces with characters of 2 or 3 bytes start with those the rule of
/// `char_merges.rs` allows already merged.
fn merge_tree(piece: &[u8], vocab: &Vocabulary, scratch: &mut Scratch, out: &mut Vec<u32>) {
    let Scratch { nodes, tree, starting_ids, .. } = scratch;
    nodes.clear();
    if piece.is_ascii() {
        byte_nodes(piece, vocab, nodes);
    } else {
        starting_ids.clear();
        vocab.char_merges().starting_ids(piece, vocab, starting_ids);
        let ids = &starting_ids[..];
        nodes.extend(
            (0..ids.len()).map(|i| node_at(i, ids[i], ids.get(i + 1).and_then(|&next| vocab.merge(ids[i], next)))),
        );
    }
    let n = nodes.len();
    nodes[n - 1].next = NONE;
    tree.refill(nodes.iter().enumerate().map(|(at, node)| tree_key(node.rank, at as u32)));
    // Look up the merge of part `at` with its next one, and set its leaf.
    let update = |tree: &mut MinTree, nodes: &mut [Node], at: u32| {
        let (rank, merged) = merge_after(nodes, at, vocab);
        nodes[at as usize].merged = merged;
        tree.set(at as usize, tree_key(rank, at));
    };
    loop {
        let key = tree.min();
        if key == u64::MAX {
            break;
        }
        let at = key as u32;
        let node = merge_with_next(nodes, at);
        tree.set(node.next as usize, u64::MAX);
        if node.prev != NONE {
            update(tree, nodes, node.prev);
        }
        update(tree, nodes, at);
    }
    out.extend(nodes.iter().filter(|node| node.id != NONE).map(|node| node.id));
}

/// The list's nodes for a piece's bytes, with the merge of each byte and the
/// next (the last one's `next` is set after).
#[inline]
fn byte_nodes(piece: &[u8], vocab: &Vocabulary, nodes: &mut Vec<Node>) {
    nodes.extend((0..piece.len()).map(|i| {
        let rule = piece.get(i + 1).and_then(|&next| vocab.byte_pair_merge(piece[i], next));
        node_at(i, vocab.byte_id(piece[i]), rule)
    }));
}

/// Node `i` of a list being built: linked to `i - 1` and `i + 1` (the last
/// one's `next` is set after).
#[inline]
fn node_at(i: usize, id: u32, rule: Option<MergeRule>) -> Node {
    let (rank, merged) = rule.map_or((NONE, NONE), |rule| (rule.rank, rule.merged));
    let prev = if i == 0 { NONE } else { i as u32 - 1 };
    Node { id, prev, next: i as u32 + 1, rank, merged }
}

/// `heap_key`, or "no key" (`u64::MAX`) when there is no merge.
#[inline]
fn tree_key(rank: u32, at: u32) -> u64 {
    if rank == NONE {
        u64::MAX
    } else {
        heap_key(rank, at)
    }
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
        merge_long(piece, &vocab(), &mut scratch.nodes, &mut scratch.heap, &mut out);
        out
    }

    fn sweep_encode(piece: &[u8]) -> Vec<u32> {
        let (mut out, mut scratch) = (Vec::new(), Scratch::default());
        merge_sweep(piece, &vocab(), &mut scratch.sweep, &mut out);
        out
    }

    fn radix_encode(piece: &[u8]) -> Vec<u32> {
        let (mut out, mut scratch) = (Vec::new(), Scratch::default());
        merge_long(piece, &vocab(), &mut scratch.nodes, &mut scratch.radix, &mut out);
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
    fn radix_heap_pops_in_order_while_keys_grow() {
        let mut queue = RadixHeap::default();
        queue.refill([9u64, 3, 7, 3, 1 << 40].into_iter());
        let mut popped = vec![queue.pop().unwrap(), queue.pop().unwrap()];
        queue.push(5); // not below the last popped (3)
        queue.push(u64::MAX);
        while let Some(key) = queue.pop() {
            popped.push(key);
        }
        assert_eq!(popped, [3, 3, 5, 7, 9, 1 << 40, u64::MAX]);
        queue.refill([2u64].into_iter()); // a refill starts over from 0
        assert_eq!((queue.pop(), queue.pop()), (Some(2), None));
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
