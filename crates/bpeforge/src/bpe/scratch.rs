//! The buffers the merge loops reuse from piece to piece (`Scratch`), kept by
//! each encoding state between calls.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::bpe::chunked::ChunkScratch;
use crate::bpe::flat::Part;
use crate::bpe::heap::RadixHeap;
use crate::bpe::list::Node;
use crate::bpe::min_tree::MinTree;
use crate::bpe::sweep::SweepScratch;
use crate::bpe::vocab::Vocabulary;
use crate::bpe::word_cache::{Word, WordCache, FINAL};
use crate::util::packed_key::{hash_packed, pack};

/// Reusable buffers, so that encoding allocates per call, not per piece.
#[derive(Default)]
pub struct Scratch {
    pub(super) parts: Vec<Part>,
    pub(super) nodes: Vec<Node>,
    /// The ids a non-ASCII piece starts from (`char_merges.rs`).
    pub(super) starting_ids: Vec<u32>,
    pub(super) heap: BinaryHeap<Reverse<u64>>,
    pub(super) tree: MinTree,
    pub(super) radix: RadixHeap,
    pub(super) sweep: SweepScratch,
    pub(super) chunks: ChunkScratch,
    /// The early merges' ids of words (`word_phases.rs`).
    pub(super) words: WordCache,
    /// A piece's words (`phased.rs`).
    pub(super) word_list: Vec<Word>,
    /// A piece's words' early ids, end to end.
    pub(super) early_ids: Vec<u32>,
}

impl Scratch {
    /// Start the word cache (`word_phases.rs`, `phased.rs`) with `seeds`,
    /// tokens of up to 15 bytes that encode to themselves (those the encoder
    /// plants in its table, `encode/cache/seeds.rs`): each is its own final
    /// ids as a short run, and its own early ids as a word when no late merge
    /// makes it (then every merge that makes it is early). A first call on
    /// SuperBPE's lines merged a third of its new words from their bytes only
    /// to find one of these.
    pub fn plant_words(&mut self, vocab: &Vocabulary, seeds: &[u32]) {
        let Some(phases) = vocab.word_phases() else { return };
        self.words.serve(phases.id());
        self.words.reserve_for(2 * seeds.len());
        for &id in seeds {
            let Some(key) = vocab.token(id).and_then(pack) else { continue };
            self.words.put(key | FINAL, hash_packed(key | FINAL), &[id]);
            if !phases.is_late(id) {
                self.words.put(key, hash_packed(key), &[id]);
            }
        }
    }

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
            + self.word_list.capacity() * size_of::<Word>()
            + self.early_ids.capacity() * size_of::<u32>()
    }
}
