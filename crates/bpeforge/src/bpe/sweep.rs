//! Merges inside one long pre-token, rank by rank: the path `encode_piece`
//! takes for pieces over `SWEEP_MIN` bytes when the vocabulary's ranks grow
//! (`Vocabulary::ranks_grow`, true of every merge list training writes and of
//! the merges implied by a tiktoken rank file).
//!
//! Why: on a heap of `(rank, position)` keys a piece of 1 MB (one letter,
//! random digits, CJK without spaces) took 5-8x the time of 0.25 MB: each key
//! moved down the radix heap's buckets 20-40 times, and the merge state (20 MB
//! for 1 MB) left the caches. The same merges here take about 4x, with less
//! work and less state:
//! - **Ranks in order, each over a bucket of positions.** When ranks grow, a
//!   merge of rank `r` only creates pairs of rank above `r`: nothing joins rank
//!   `r`'s bucket while it is applied. The smallest pending rank comes from a
//!   small heap of distinct ranks, not an entry per position.
//! - **No sorting inside a rank.** Pairs of rank `r` that share no token do not
//!   interact, so only a chain of consecutive rank-`r` pairs (`aaaa` under
//!   `a a`) depends on the order: the first position met in a chain walks back
//!   to the chain's first pair and resolves it left to right, every other pair
//!   merging, as leftmost first would. A merge whose right neighbour merges next
//!   in its chain does not queue the pair between them (it is about to change).
//! - **One word per byte** instead of a three-word node: at the first byte of a
//!   live token, its id (the next token starts `token_len(id)` bytes on); at its
//!   last byte, `DEAD` and the distance back to the first. The ids are the live
//!   words, in order.
//! - **Buckets are chains of 64-byte blocks from one pool**, each block given
//!   back as soon as its positions are read; the encoder keeps the scratch
//!   between calls up to `KEPT_SCRATCH_MAX` (`encode/state.rs`).
//! - **Prefetching.** A rank's positions are spread over the whole piece; the
//!   words at each are prefetched 30-50 positions before it is applied.
//!
//! The tests below check it against the heap path on random vocabularies and
//! pieces (also queued in reverse and shuffled orders), and on the worst-case
//! inputs with GPT-2's vocabulary.

use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use crate::bpe::merges::MergeEntry;
use crate::bpe::vocab::Vocabulary;
use crate::util::prefetch::prefetch;

/// Marks a byte that does not start a live token; the low bits hold the
/// distance back to the start of its token (kept at the token's last byte).
const DEAD: u32 = 1 << 31;

/// The longest piece this path takes: positions and distances fit under `DEAD`.
pub const SWEEP_MAX: usize = DEAD as usize - 1;

/// Words per block of a bucket: a link to the next block, then `ENTRIES`
/// positions (64 bytes, the size of a cache line).
const BLOCK: usize = 16;
const ENTRIES: usize = BLOCK - 1;
const NO_BLOCK: u32 = u32::MAX;

/// The bucket of one pending rank: a chain of blocks in `SweepScratch::blocks`.
#[derive(Clone, Copy)]
struct Bucket {
    head: u32,
    tail: u32,
    /// Positions in the tail block.
    filled: u32,
}

/// Reusable buffers of the sweep.
pub struct SweepScratch {
    /// One word per byte of the piece (see the module's comment).
    words: Vec<u32>,
    /// The bucket (index into `buckets`) of each pending rank.
    slots: FxHashMap<u32, u32>,
    buckets: Vec<Bucket>,
    /// Indices of `buckets` free for another rank.
    free_buckets: Vec<u32>,
    /// Blocks of `BLOCK` words, and the first of the free ones (linked
    /// through their first word).
    blocks: Vec<u32>,
    free_block: u32,
    /// The pending ranks, smallest first.
    pending: BinaryHeap<Reverse<u32>>,
    /// The rank last pushed to and its bucket (`NO_RANK`: none), so that a
    /// run of pushes to one rank (a run of one letter) skips the map.
    last: (u32, u32),
}

const NO_RANK: u32 = u32::MAX;

impl Default for SweepScratch {
    fn default() -> Self {
        Self {
            words: Vec::new(),
            slots: FxHashMap::default(),
            buckets: Vec::new(),
            free_buckets: Vec::new(),
            blocks: Vec::new(),
            free_block: NO_BLOCK,
            pending: BinaryHeap::new(),
            last: (NO_RANK, 0),
        }
    }
}

impl SweepScratch {
    /// Bytes its buffers hold.
    pub fn bytes(&self) -> usize {
        use std::mem::size_of;
        (self.words.capacity() + self.blocks.capacity() + self.free_buckets.capacity() + self.pending.capacity())
            * size_of::<u32>()
            + self.buckets.capacity() * size_of::<Bucket>()
            + self.slots.capacity() * 3 * size_of::<u32>()
    }

    /// Start on a piece of `n` bytes.
    fn reset(&mut self, n: usize) {
        self.slots.clear();
        self.buckets.clear();
        self.free_buckets.clear();
        self.blocks.clear();
        self.free_block = NO_BLOCK;
        self.pending.clear();
        self.last = (NO_RANK, 0);
        // Room for a position per byte: grown by doubling instead, the pool
        // of a 1 MB piece would take 8 MB for 4 (and be over the bound the
        // encoder keeps).
        self.blocks.reserve_exact((n / ENTRIES + 1024) * BLOCK);
    }

    /// A block with no next one, from the free list or new.
    #[inline]
    fn new_block(&mut self) -> u32 {
        let block = if self.free_block != NO_BLOCK {
            let block = self.free_block;
            self.free_block = self.blocks[block as usize * BLOCK];
            block
        } else {
            self.blocks.resize(self.blocks.len() + BLOCK, 0);
            (self.blocks.len() / BLOCK - 1) as u32
        };
        self.blocks[block as usize * BLOCK] = NO_BLOCK;
        block
    }

    /// Queue the pair that starts at `at`, of rank `rank`.
    #[inline]
    fn push(&mut self, rank: u32, at: usize) {
        let index = if self.last.0 == rank { self.last.1 as usize } else { self.bucket_of(rank) };
        let mut bucket = self.buckets[index];
        if bucket.filled as usize == ENTRIES {
            let block = self.new_block();
            self.blocks[bucket.tail as usize * BLOCK] = block;
            (bucket.tail, bucket.filled) = (block, 0);
        }
        self.blocks[bucket.tail as usize * BLOCK + 1 + bucket.filled as usize] = at as u32;
        bucket.filled += 1;
        self.buckets[index] = bucket;
    }

    /// The bucket of `rank`, made (and the rank made pending) if it has none.
    fn bucket_of(&mut self, rank: u32) -> usize {
        let index = match self.slots.entry(rank) {
            Entry::Occupied(slot) => *slot.get() as usize,
            Entry::Vacant(vacant) => {
                let index = match self.free_buckets.pop() {
                    Some(index) => index,
                    None => {
                        self.buckets.push(Bucket { head: 0, tail: 0, filled: 0 });
                        self.buckets.len() as u32 - 1
                    }
                };
                vacant.insert(index);
                self.pending.push(Reverse(rank));
                let block = self.new_block();
                self.buckets[index as usize] = Bucket { head: block, tail: block, filled: 0 };
                index as usize
            }
        };
        self.last = (rank, index as u32);
        index
    }

    /// The start of the token that ends just before `at` (`at > 0`).
    #[inline]
    fn token_before(&self, at: usize) -> usize {
        let word = self.words[at - 1];
        if word & DEAD != 0 {
            at - 1 - (word & !DEAD) as usize
        } else {
            at - 1
        }
    }

    /// The merge of the token at `at` with the next one, if there is a next.
    #[inline]
    fn pair(&self, at: usize, vocab: &Vocabulary) -> Option<MergeEntry> {
        let left = self.words[at];
        let next = at + vocab.token_len(left);
        self.words.get(next).and_then(|&right| vocab.merge(left, right))
    }
}

/// Append the ids of `piece` to `out`. `vocab.ranks_grow()` must hold, and
/// `piece` be 2 to `SWEEP_MAX` bytes long.
pub fn merge_sweep(piece: &[u8], vocab: &Vocabulary, scratch: &mut SweepScratch, out: &mut Vec<u32>) {
    merge_sweep_queued(piece, vocab, scratch, 0..piece.len() - 1, out);
}

/// `merge_sweep`, queueing the byte pairs at `order` (a permutation of
/// `0..piece.len() - 1`): the ids do not depend on it (see `resolve_chain`),
/// which the tests check with orders the encoder never uses.
fn merge_sweep_queued(
    piece: &[u8],
    vocab: &Vocabulary,
    scratch: &mut SweepScratch,
    order: impl Iterator<Item = usize>,
    out: &mut Vec<u32>,
) {
    debug_assert!(vocab.ranks_grow() && (2..=SWEEP_MAX).contains(&piece.len()));
    let n = piece.len();
    scratch.reset(n);
    scratch.words.clear();
    scratch.words.extend(piece.iter().map(|&b| vocab.byte_id(b)));
    for at in order {
        if let Some(rule) = vocab.byte_pair_merge(piece[at], piece[at + 1]) {
            scratch.push(rule.rank, at);
        }
    }
    while let Some(Reverse(rank)) = scratch.pending.pop() {
        sweep(rank, vocab, scratch);
    }
    // Every byte that is not a token's first was the right token's first in
    // a merge and marked `DEAD` then: the live words are the ids, in order
    // (a filter, not a walk from token to token whose every step waits on
    // two loads: that was most of the time of 1 MB of spaces on GPT-2).
    out.extend(scratch.words.iter().copied().filter(|&word| word & DEAD == 0));
}

/// Apply rank `rank` at its queued positions. They are copied a block at a
/// time into a small ring, each block given back at once so that the pairs
/// the merges queue can reuse it, and the words around each position are
/// prefetched as it enters the ring, some 30-50 positions before it is
/// applied: a rank's positions are spread over the whole piece (random
/// digits on GPT-2: a thousand ranks, each with a thousand positions over
/// 1 MB), and their cache misses then overlap. (Prefetching only the word at
/// the position, gpt2 random digits grew 4.3-4.4x from 0.25 to 1 MB with
/// another process on the other core; with the words before and after too,
/// 4.0-4.1x.)
fn sweep(rank: u32, vocab: &Vocabulary, scratch: &mut SweepScratch) {
    const RING: usize = 64;
    let index = scratch.slots.remove(&rank).expect("a pending rank has a bucket");
    scratch.free_buckets.push(index);
    if scratch.last.0 == rank {
        scratch.last = (NO_RANK, 0);
    }
    let bucket = scratch.buckets[index as usize];
    let mut ring = [0u32; RING];
    let (mut read, mut written) = (0usize, 0usize);
    let mut block = Some(bucket.head);
    loop {
        while let Some(current) = block.filter(|_| written - read <= RING - ENTRIES) {
            let start = current as usize * BLOCK;
            let len = if current == bucket.tail { bucket.filled as usize } else { ENTRIES };
            for &at in &scratch.blocks[start + 1..start + 1 + len] {
                // The words a merge there reads: the token before (the
                // walk back, the pair it makes) and the two of the pair.
                let at = at as usize;
                prefetch(&scratch.words[at.saturating_sub(1)]);
                prefetch(&scratch.words[(at + 8).min(scratch.words.len() - 1)]);
                ring[written % RING] = at as u32;
                written += 1;
            }
            let next = scratch.blocks[start];
            scratch.blocks[start] = scratch.free_block;
            scratch.free_block = current;
            block = (current != bucket.tail).then_some(next);
            if let Some(next) = block {
                prefetch(&scratch.blocks[next as usize * BLOCK]);
            }
        }
        if read == written {
            return;
        }
        resolve_chain(ring[read % RING] as usize, rank, vocab, scratch);
        read += 1;
    }
}

/// If the pair at `at` still has rank `rank` (a queued position goes stale
/// when one of its tokens merges first), resolve its chain of consecutive
/// rank-`rank` pairs from the chain's first pair, left to right, and queue
/// the pairs the new tokens make with their neighbours.
///
/// The walk back to the chain's first pair makes the ids independent of the
/// order of a bucket (the tests queue in reverse and shuffled orders). With
/// growing ranks the order is ascending anyway, and the walk one lookup that
/// stops at once: a token's every occurrence is made by the same merge (BPE
/// of its bytes with the merges ranked below it), so all the pairs of a
/// bucket are queued by the one sweep that makes the later of their two
/// tokens, in the order that sweep meets them, ascending by induction.
fn resolve_chain(at: usize, rank: u32, vocab: &Vocabulary, scratch: &mut SweepScratch) {
    let words = &scratch.words;
    if words[at] & DEAD != 0 {
        return;
    }
    let mut rule = match scratch.pair(at, vocab) {
        Some(rule) if rule.rank == rank => rule,
        _ => return,
    };
    let mut at = at;
    while at > 0 {
        let before = scratch.token_before(at);
        match scratch.pair(before, vocab) {
            Some(left) if left.rank == rank => (at, rule) = (before, left),
            _ => break,
        }
    }
    loop {
        let words = &mut scratch.words;
        let mid = at + vocab.token_len(words[at]);
        let end = mid + vocab.token_len(words[mid]);
        words[at] = rule.merged;
        words[mid] = DEAD | (mid - at) as u32;
        words[end - 1] = DEAD | (end - 1 - at) as u32;
        if at > 0 {
            let before = scratch.token_before(at);
            if let Some(next) = vocab.merge(scratch.words[before], rule.merged) {
                debug_assert!(next.rank > rank, "ranks grow");
                scratch.push(next.rank, before);
            }
        }
        if end == scratch.words.len() {
            return;
        }
        match scratch.pair(end, vocab) {
            // The chain goes on: the pair at `end` merges next, and the pair
            // between the two new tokens is queued then (as its "before").
            Some(next) if next.rank == rank => (at, rule) = (end, next),
            _ => {
                if let Some(next) = vocab.merge(rule.merged, scratch.words[end]) {
                    debug_assert!(next.rank > rank, "ranks grow");
                    scratch.push(next.rank, at);
                }
                return;
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::Path;

    use super::*;
    use crate::bpe::{merge_heap, Scratch};

    use crate::util::test_rng::XorShift as Rng;

    /// The ids of `piece` by the sweep and by the heap path, which must agree;
    /// and by the sweep with its byte pairs queued in reverse and in a
    /// shuffled order, which must change nothing.
    fn check(piece: &[u8], vocab: &Vocabulary, sweep: &mut SweepScratch, heap: &mut Scratch, what: &str) {
        let (mut swept, mut expected) = (Vec::new(), Vec::new());
        merge_sweep(piece, vocab, sweep, &mut swept);
        merge_heap(piece, vocab, heap, &mut expected);
        let differ = |ids: &[u32]| ids.iter().zip(&expected).position(|(a, b)| a != b);
        assert!(swept == expected, "{what}: {} bytes, first difference at id {:?}", piece.len(), differ(&swept));
        let pairs = piece.len() - 1;
        let mut shuffled: Vec<usize> = (0..pairs).collect();
        let mut rng = Rng(pairs as u64 | 1);
        for i in (1..pairs).rev() {
            shuffled.swap(i, rng.below(i + 1));
        }
        for (order, positions) in [("reverse", (0..pairs).rev().collect()), ("shuffled", shuffled)] {
            let mut ids = Vec::new();
            merge_sweep_queued(piece, vocab, sweep, positions.into_iter(), &mut ids);
            assert!(ids == expected, "{what}, {order} order: first difference at id {:?}", differ(&ids));
        }
    }

    /// A vocabulary over `alphabet` with `size` random merges, each of two
    /// tokens made before it, as training would write; a third of them join
    /// a token to itself, so that long pieces hold chains of equal pairs
    /// (`X X X`), and some make a token that an earlier merge made already
    /// (the ranks may then not grow: the caller skips those vocabularies).
    /// Also returns the tokens.
    pub(crate) fn random_vocab(rng: &mut Rng, alphabet: &[u8], size: usize) -> (Vocabulary, Vec<Vec<u8>>) {
        let mut entries: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (b as u32, vec![b])).collect();
        let mut usable: Vec<Vec<u8>> = alphabet.iter().map(|&b| vec![b]).collect();
        let mut merges = Vec::new();
        for _ in 0..size * 20 {
            if merges.len() == size {
                break;
            }
            // Recent tokens more often, as in a trained list.
            let pick = |rng: &mut Rng| {
                let back = rng.below(usable.len()) + 1;
                usable.len() - 1 - rng.below(back)
            };
            let left = usable[pick(rng)].clone();
            let right = if rng.below(3) == 0 { left.clone() } else { usable[pick(rng)].clone() };
            let token = [left.as_slice(), right.as_slice()].concat();
            if !usable.contains(&token) {
                entries.push((entries.len() as u32, token.clone()));
                usable.push(token);
            } else if merges.contains(&(left.clone(), right.clone())) || rng.below(4) != 0 {
                continue;
            }
            // (else a second merge that makes the same token)
            merges.push((left, right));
        }
        (Vocabulary::new(entries, &merges).unwrap(), usable)
    }

    #[test]
    fn same_ids_as_the_heap_on_random_vocabularies_and_pieces() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut sweep, mut heap) = (SweepScratch::default(), Scratch::default());
        let mut growing = 0;
        for round in 0..600 {
            let alphabet = &b"abcd"[..2 + rng.below(3)];
            let size = 1 + rng.below(40);
            let (vocab, tokens) = random_vocab(&mut rng, alphabet, size);
            if !vocab.ranks_grow() {
                continue;
            }
            growing += 1;
            for _ in 0..10 {
                let longest = if rng.below(10) == 0 { 3000 } else { 200 };
                let len = 2 + rng.below(longest);
                // Random bytes, runs of one byte, or runs and mixes of the
                // vocabulary's tokens.
                let mut piece = Vec::with_capacity(len + 64);
                let kind = rng.below(4);
                let first = rng.below(tokens.len());
                while piece.len() < len {
                    match kind {
                        0 => piece.push(alphabet[rng.below(alphabet.len())]),
                        1 => piece.push(alphabet[first % alphabet.len()]),
                        2 => piece.extend_from_slice(&tokens[first]),
                        _ => piece.extend_from_slice(&tokens[rng.below(tokens.len())]),
                    }
                }
                check(&piece, &vocab, &mut sweep, &mut heap, &format!("round {round}, kind {kind}"));
            }
        }
        assert!(growing > 300, "only {growing} of the vocabularies have growing ranks");
    }

    #[test]
    fn pieces_with_bytes_outside_the_merges() {
        let mut rng = Rng(7);
        let vocab = loop {
            let (vocab, _) = random_vocab(&mut rng, b"ab", 30);
            if vocab.ranks_grow() {
                break vocab;
            }
        };
        let (mut sweep, mut heap) = (SweepScratch::default(), Scratch::default());
        for piece in [&b"ab"[..], b"zz", b"abzab", b"zabababababz", b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaz"] {
            check(piece, &vocab, &mut sweep, &mut heap, "fixed");
        }
    }

    /// GPT-2's vocabulary from `BPEFORGE_TEST_DATA` (the shared data directory),
    /// or `None` after saying why the test skips: the data is not in the repository.
    pub(crate) fn gpt2_vocab_from_test_data() -> Option<Vocabulary> {
        let Some(dir) = std::env::var_os("BPEFORGE_TEST_DATA") else {
            println!("skipped: set BPEFORGE_TEST_DATA=path/to/shared/data to check GPT-2's vocabulary");
            return None;
        };
        let dir = Path::new(&dir);
        if !dir.join("cs336/gpt2_vocab.json").is_file() {
            println!("skipped: {} has no cs336/gpt2_vocab.json", dir.display());
            return None;
        }
        Some(gpt2_vocab(dir))
    }

    pub(crate) fn gpt2_vocab(dir: &Path) -> Vocabulary {
        // GPT-2's printable char for each byte: itself if printable, else 256, 257, ... in byte order.
        let mut decoder = FxHashMap::default();
        let mut extra = 0;
        for byte in 0..256u32 {
            let printable = (33..=126).contains(&byte) || (161..=172).contains(&byte) || (174..=255).contains(&byte);
            let c = if printable {
                byte
            } else {
                extra += 1;
                255 + extra
            };
            decoder.insert(char::from_u32(c).unwrap(), byte as u8);
        }
        let to_bytes = |token: &str| -> Vec<u8> { token.chars().map(|c| decoder[&c]).collect() };
        let json = std::fs::read_to_string(dir.join("cs336/gpt2_vocab.json")).unwrap();
        let mut entries = Vec::new();
        let mut chars = json.chars();
        while let Some(c) = chars.next() {
            if c != '"' {
                continue;
            }
            let mut token = String::new();
            loop {
                match chars.next().unwrap() {
                    '"' => break,
                    '\\' => match chars.next().unwrap() {
                        'u' => {
                            let hex: String = chars.by_ref().take(4).collect();
                            token.push(char::from_u32(u32::from_str_radix(&hex, 16).unwrap()).unwrap());
                        }
                        other => token.push(other),
                    },
                    other => token.push(other),
                }
            }
            let digits: String =
                chars.by_ref().skip_while(|c| !c.is_ascii_digit()).take_while(|c| c.is_ascii_digit()).collect();
            entries.push((digits.parse().unwrap(), to_bytes(&token)));
        }
        let merges: Vec<(Vec<u8>, Vec<u8>)> = std::fs::read_to_string(dir.join("cs336/gpt2_merges.txt"))
            .unwrap()
            .lines()
            .filter(|line| !line.starts_with("#version") && !line.is_empty())
            .map(|line| line.split_once(' ').map(|(a, b)| (to_bytes(a), to_bytes(b))).unwrap())
            .collect();
        Vocabulary::new(entries, &merges).unwrap()
    }

    /// The inputs of `examples/worst_cases.rs`, as single pieces, on GPT-2's
    /// vocabulary (from `BPEFORGE_TEST_DATA`, the shared data directory).
    #[test]
    fn same_ids_as_the_heap_on_the_worst_cases_with_gpt2() {
        let Some(vocab) = gpt2_vocab_from_test_data() else {
            return;
        };
        assert!(vocab.ranks_grow());
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let common: Vec<char> = "的一是不了人我在有他这为之大来以个中上们".chars().collect();
        let ideographs: Vec<char> = (0x4E00..0x9FA5).filter_map(char::from_u32).collect();
        let digits: Vec<char> = "0123456789".chars().collect();
        let inputs: [(&str, &[char]); 8] = [
            ("one letter", &['a']),
            ("random digits", &digits),
            ("spaces", &[' ']),
            ("one emoji", &['\u{1F642}']),
            ("cjk (20 common)", &common),
            ("cjk (random)", &ideographs),
            ("2-byte char run", &['é']),
            ("3-byte char run", &['中']),
        ];
        let (mut sweep, mut heap) = (SweepScratch::default(), Scratch::default());
        for (name, alphabet) in inputs {
            let text: String = (0..60_000).map(|_| alphabet[rng.below(alphabet.len())]).collect();
            check(text.as_bytes(), &vocab, &mut sweep, &mut heap, name);
        }
    }
}
