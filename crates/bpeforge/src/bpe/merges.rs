//! The merge table: which pair of adjacent token ids merges, at which rank,
//! into which id.
//!
//! A merge is given as the two byte strings it joins (`Merge`), in rank
//! order. The table keys it by `left << 32 | right` (one word to hash
//! instead of a tuple), answers "no merge" for most pairs from a Bloom filter
//! before the map is read (`pair_filter.rs`), and keeps the merges of two
//! single bytes in an array: every pre-token starts as bytes, so its first
//! round of lookups is an array read instead of a hash probe.

use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::bpe::pair_filter::PairFilter;
use crate::bpe::token_index::TokenIndex;
use crate::error::Error;

/// A merge as the two byte strings it joins, left then right: as training
/// learns it (`Arc<[u8]>`, shared with the vocabulary it lays out), or as a
/// file gives it (`Merge<Vec<u8>>`).
pub type Merge<B = Arc<[u8]>> = (B, B);

/// A merge as ids: the left and right tokens it joins, and the token it makes.
pub type IdMerge = (u32, u32, u32);

/// "None" in the merge loops: no merge, no rank, no part.
pub(super) const NONE: u32 = u32::MAX;

/// An entry of the merge table: the rank of merging a pair of ids (lower
/// merges first) and the id of the token it makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergeEntry {
    pub rank: u32,
    pub merged: u32,
}

#[derive(Debug, Clone)]
pub struct MergeTable {
    /// Id of each single-byte token.
    byte_ids: [u32; 256],
    /// Keyed by `pair_key(left, right)`.
    merges: FxHashMap<u64, MergeEntry>,
    /// Answers "no merge" for most pairs without a merge before the map is
    /// read.
    pair_filter: PairFilter,
    /// The merge of two single bytes, indexed by `first * 256 + second`.
    byte_pair_merges: Box<[Option<MergeEntry>]>,
    /// See `ranks_grow`.
    ranks_grow: bool,
}

impl MergeTable {
    /// The table of `merges` (in rank order) over the tokens of `ids`. Fails,
    /// naming the byte or the merge, when a byte has no token or a merge uses
    /// or makes a token `ids` lacks.
    pub fn new<B: AsRef<[u8]> + Sync>(ids: &TokenIndex, merges: &[Merge<B>]) -> Result<Self, Error> {
        let byte_ids = byte_table(ids)?;
        Ok(Self::from_map(byte_ids, merge_table(ids, merges)?))
    }

    /// The table of merges given as ids (`IdMerge`, in rank order), for a
    /// vocabulary whose merges' parts are known by id (a tiktoken rank file's,
    /// `formats/rank_vocab.rs`): no lookup of the parts' bytes, which was most
    /// of building o200k's table. The caller checks that the ids are tokens.
    pub fn from_ids(ids: &TokenIndex, merges: &[IdMerge]) -> Result<Self, Error> {
        let byte_ids = byte_table(ids)?;
        let mut table = FxHashMap::default();
        table.reserve(merges.len());
        for (rank, &(left, right, merged)) in merges.iter().enumerate() {
            // A pair listed twice keeps its first (lowest) rank.
            table.entry(pair_key(left, right)).or_insert(MergeEntry { rank: rank as u32, merged });
        }
        Ok(Self::from_map(byte_ids, table))
    }

    fn from_map(byte_ids: [u32; 256], merges: FxHashMap<u64, MergeEntry>) -> Self {
        let byte_pair_merges = (0..256 * 256)
            .map(|pair: usize| merges.get(&pair_key(byte_ids[pair >> 8], byte_ids[pair & 0xFF])).copied())
            .collect();
        let pair_filter = PairFilter::new(merges.keys().copied());
        debug_assert!(merges.keys().all(|&key| pair_filter.may_hold(key)), "the pair filter turns away a merge");
        let ranks_grow = ranks_grow(&merges);
        Self { byte_ids, merges, pair_filter, byte_pair_merges, ranks_grow }
    }

    #[inline]
    pub fn byte_id(&self, byte: u8) -> u32 {
        self.byte_ids[byte as usize]
    }

    /// The merge of two adjacent tokens, if any. Asks the pair filter first:
    /// for loops where most pairs asked have no merge (characters against the
    /// next one's bytes, `char_merges.rs`).
    #[inline]
    pub fn merge(&self, left: u32, right: u32) -> Option<MergeEntry> {
        if !self.pair_filter.may_hold(pair_key(left, right)) {
            return None;
        }
        self.merge_direct(left, right)
    }

    /// As `merge`, straight from the map: for loops where most pairs asked
    /// have a merge (English words), to which the filter would only add a
    /// read.
    #[inline]
    pub fn merge_direct(&self, left: u32, right: u32) -> Option<MergeEntry> {
        self.merges.get(&pair_key(left, right)).copied()
    }

    #[inline]
    pub fn byte_pair_merge(&self, first: u8, second: u8) -> Option<MergeEntry> {
        self.byte_pair_merges[(first as usize) << 8 | second as usize]
    }

    /// Every merge as ids (`IdMerge`), in rank order: placed at their ranks
    /// (distinct, below the number of merges given) rather than sorted.
    pub fn id_merges(&self) -> Vec<IdMerge> {
        let ranks = self.merges.values().map(|entry| entry.rank as usize + 1).max().unwrap_or(0);
        let mut by_rank = vec![(NONE, NONE, NONE); ranks];
        for (&pair, entry) in &self.merges {
            by_rank[entry.rank as usize] = ((pair >> 32) as u32, pair as u32, entry.merged);
        }
        by_rank.retain(|&(left, _, _)| left != NONE);
        by_rank
    }

    /// The ids that merges make, in no particular order.
    pub fn merged_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.merges.values().map(|entry| entry.merged)
    }

    /// Every merge's rank and result, in no particular order.
    pub fn entries(&self) -> impl Iterator<Item = &MergeEntry> + '_ {
        self.merges.values()
    }

    pub fn len(&self) -> usize {
        self.merges.len()
    }

    /// Whether every merge ranks above every merge that makes one of its two
    /// parts (`Vocabulary::ranks_grow`).
    pub fn ranks_grow(&self) -> bool {
        self.ranks_grow
    }
}

/// See `Vocabulary::ranks_grow`.
fn ranks_grow(merges: &FxHashMap<u64, MergeEntry>) -> bool {
    let mut made_at: FxHashMap<u32, u32> = FxHashMap::default();
    for rule in merges.values() {
        let rank = made_at.entry(rule.merged).or_insert(rule.rank);
        *rank = (*rank).max(rule.rank);
    }
    merges.iter().all(|(&pair, rule)| {
        let (left, right) = ((pair >> 32) as u32, pair as u32);
        [left, right].iter().all(|part| made_at.get(part).is_none_or(|&made| made < rule.rank))
    })
}

fn byte_table(ids: &TokenIndex) -> Result<[u32; 256], Error> {
    let mut table = [0u32; 256];
    for (byte, slot) in table.iter_mut().enumerate() {
        *slot = ids.get([byte as u8].as_slice()).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "vocab has no token for the byte 0x{byte:02X}; a byte-level BPE vocabulary needs a token for each byte text can hold (all but 0xC0, 0xC1 and 0xF5-0xFF)"
            ))
        })?;
    }
    Ok(table)
}

fn merge_table<B: AsRef<[u8]> + Sync>(
    ids: &TokenIndex,
    merges: &[Merge<B>],
) -> Result<FxHashMap<u64, MergeEntry>, Error> {
    let lookup = |bytes: &[u8], rank: usize, what: &str| {
        ids.get(bytes).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "merge {rank} ({}): its {what} {} is not in the vocab",
                show_pair(&merges[rank]),
                show(bytes)
            ))
        })
    };
    // The lookups (three a merge: 600k for o200k, most of building its encoder) run in parallel; the
    // table is filled in rank order after them, and an error is the lowest-ranked merge's.
    let rules: Vec<Result<(u64, MergeEntry), Error>> = merges
        .par_iter()
        .enumerate()
        .map_init(Vec::new, |joined, (rank, (left, right))| {
            let (left, right) = (left.as_ref(), right.as_ref());
            let pair = pair_key(lookup(left, rank, "left token")?, lookup(right, rank, "right token")?);
            joined.clear();
            joined.extend_from_slice(left);
            joined.extend_from_slice(right);
            let merged = lookup(joined, rank, "result")?;
            Ok((pair, MergeEntry { rank: rank as u32, merged }))
        })
        .collect();
    let mut table = FxHashMap::default();
    table.reserve(rules.len());
    for rule in rules {
        let (pair, rule) = rule?;
        // A pair listed twice keeps its first (lowest) rank.
        table.entry(pair).or_insert(rule);
    }
    Ok(table)
}

#[inline(always)]
fn pair_key(left: u32, right: u32) -> u64 {
    (left as u64) << 32 | right as u64
}

pub(crate) fn show(bytes: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(bytes))
}

fn show_pair<B: AsRef<[u8]>>((left, right): &(B, B)) -> String {
    format!("{} + {}", show(left.as_ref()), show(right.as_ref()))
}
