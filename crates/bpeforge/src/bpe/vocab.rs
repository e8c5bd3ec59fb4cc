//! Lookup tables of a trained tokenizer, built once: id -> bytes, bytes -> id,
//! and the merge table (pair of ids -> rank and the id it makes).

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::bpe::char_merges::{junction_ranks, CharMerges};
use crate::bpe::pair_filter::PairFilter;
use crate::bpe::token_index::TokenIndex;
use crate::error::Error;

/// The merge of two adjacent tokens: its rank (lower merges first) and the id
/// of the token it makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergeRule {
    pub rank: u32,
    pub merged: u32,
}

#[derive(Debug, Clone)]
pub struct Vocabulary {
    /// Token bytes by id; `None` for ids the vocabulary skips.
    tokens: Vec<Option<Box<[u8]>>>,
    /// Bytes -> id; where two ids share bytes, the lower id.
    ids: TokenIndex,
    /// Id of each single-byte token.
    byte_ids: [u32; 256],
    /// Keyed by `left << 32 | right`: one word to hash instead of a tuple.
    merges: FxHashMap<u64, MergeRule>,
    /// Answers "no merge" for most pairs without a merge before the map is
    /// read (`pair_filter.rs`).
    pair_filter: PairFilter,
    /// The merge of two single bytes, indexed by `first * 256 + second`: every
    /// pre-token starts as bytes, so its first round of lookups is an array
    /// read instead of a hash probe.
    byte_pair_merges: Box<[Option<MergeRule>]>,
    /// See `ranks_grow`.
    ranks_grow: bool,
    /// A bit for each pair of bytes (`first * 256 + second`) that occurs
    /// inside some token: see `can_cut_between`.
    pairs_in_tokens: Box<[u64; PAIR_WORDS]>,
    /// Length in bytes of each token, by id (0 for skipped ids): the long-piece
    /// merge (`rank_sweep.rs`) steps from token to token with it.
    lens: Box<[u32]>,
    /// See `char_merges`.
    char_merges: CharMerges,
}

impl Vocabulary {
    /// Build from `(id, bytes)` entries and the merges in rank order.
    /// Fails, naming the entry, when a merge uses or makes a token the
    /// vocabulary lacks, or when a byte has no token (byte-level BPE must be
    /// able to spell any text).
    /// The merges' bytes may be borrowed (the binding lends Python's `bytes`).
    pub fn new<B: AsRef<[u8]> + Sync>(entries: Vec<(u32, Vec<u8>)>, merges: &[(B, B)]) -> Result<Self, Error> {
        let tokens = token_table(entries)?;
        let ids = TokenIndex::new(&tokens);
        let byte_ids = byte_table(&ids)?;
        let junction_ranks = junction_ranks(merges);
        let merges = merge_table(&ids, merges)?;
        let byte_pair_merges = (0..256 * 256)
            .map(|pair: usize| merges.get(&pair_key(byte_ids[pair >> 8], byte_ids[pair & 0xFF])).copied())
            .collect();
        let pair_filter = PairFilter::new(merges.keys().copied());
        debug_assert!(merges.keys().all(|&key| pair_filter.may_hold(key)), "the pair filter turns away a merge");
        let ranks_grow = ranks_grow(&merges);
        let pairs_in_tokens = pairs_in_tokens(&tokens);
        let lens = tokens.iter().map(|token| token.as_ref().map_or(0, |bytes| bytes.len() as u32)).collect();
        let mut vocab = Self {
            tokens,
            ids,
            byte_ids,
            merges,
            pair_filter,
            byte_pair_merges,
            ranks_grow,
            pairs_in_tokens,
            lens,
            char_merges: CharMerges::default(),
        };
        // It merges each character's bytes with the tables above.
        vocab.char_merges = CharMerges::new(&vocab, junction_ranks);
        Ok(vocab)
    }

    /// The number of ids (one past the highest).
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    pub fn token(&self, id: u32) -> Option<&[u8]> {
        self.tokens.get(id as usize).and_then(|t| t.as_deref())
    }

    pub fn id(&self, token: &[u8]) -> Option<u32> {
        self.ids.get(token)
    }

    /// The length in bytes of token `id` (0 if the vocabulary skips it).
    /// Panics if `id` is out of range.
    #[inline]
    pub fn token_len(&self, id: u32) -> usize {
        self.lens[id as usize] as usize
    }

    #[inline]
    pub fn byte_id(&self, byte: u8) -> u32 {
        self.byte_ids[byte as usize]
    }

    /// The merge of two adjacent tokens, if any. Asks the pair filter first:
    /// for loops where most pairs asked have no merge (characters against the
    /// next one's bytes, `char_merges.rs`).
    #[inline]
    pub fn merge(&self, left: u32, right: u32) -> Option<MergeRule> {
        if !self.pair_filter.may_hold(pair_key(left, right)) {
            return None;
        }
        self.merge_direct(left, right)
    }

    /// As `merge`, straight from the merge table: for loops where most pairs
    /// asked have a merge (English words), to which the filter would only
    /// add a read.
    #[inline]
    pub fn merge_direct(&self, left: u32, right: u32) -> Option<MergeRule> {
        self.merges.get(&pair_key(left, right)).copied()
    }

    /// Whether a pre-token may be cut between these two bytes, its parts
    /// merged apart with the same ids: no token holds the pair, so no merge
    /// can make a token that spans the cut (every merge makes a token of the
    /// vocabulary). Exact for any merge list. GPT-2 holds 2,693 of the 65,536
    /// pairs: the 83 K distinct pre-tokens of over 15 bytes of 10 MB of
    /// multilingual text (CJK clauses) cut into 1.9 M parts, only 11.6 K of
    /// them distinct; o200k, whose tokens hold 10,439 pairs (CJK words),
    /// cuts them 0.23 times each.
    #[inline]
    pub fn can_cut_between(&self, first: u8, second: u8) -> bool {
        let pair = (first as usize) << 8 | second as usize;
        self.pairs_in_tokens[pair >> 6] & 1 << (pair & 63) == 0
    }

    #[inline]
    pub fn byte_pair_merge(&self, first: u8, second: u8) -> Option<MergeRule> {
        self.byte_pair_merges[(first as usize) << 8 | second as usize]
    }

    /// Every `(id, bytes)`, in id order (skipped ids left out).
    pub fn tokens(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        self.tokens.iter().enumerate().filter_map(|(id, token)| Some((id as u32, token.as_deref()?)))
    }

    /// Which characters a piece may start its merges from as tokens
    /// (`char_merges.rs`).
    #[inline]
    pub fn char_merges(&self) -> &CharMerges {
        &self.char_merges
    }

    /// The ids that merges make (each the lowest id of its bytes), in no particular order.
    pub fn merged_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.merges.values().map(|rule| rule.merged)
    }

    pub fn num_merges(&self) -> usize {
        self.merges.len()
    }

    /// Whether every merge ranks above every merge that makes one of its two
    /// parts, as in any merge list that training wrote in order. Then applying
    /// merges inside a piece only ever creates pairs of higher rank than the
    /// one just applied, so the ranks taken grow monotonically (`bpe.rs` uses a
    /// monotone queue for long pieces when this holds).
    pub fn ranks_grow(&self) -> bool {
        self.ranks_grow
    }
}

/// Words of the bit set of byte pairs (`Vocabulary::can_cut_between`): a
/// fixed size, so that a pair's word is read without a bounds check.
const PAIR_WORDS: usize = 256 * 256 / 64;

/// See `Vocabulary::can_cut_between`.
fn pairs_in_tokens(tokens: &[Option<Box<[u8]>>]) -> Box<[u64; PAIR_WORDS]> {
    let mut bits = Box::new([0u64; PAIR_WORDS]);
    for pair in tokens.iter().flatten().flat_map(|token| token.windows(2)) {
        let at = (pair[0] as usize) << 8 | pair[1] as usize;
        bits[at >> 6] |= 1 << (at & 63);
    }
    bits
}

/// See `Vocabulary::ranks_grow`.
fn ranks_grow(merges: &FxHashMap<u64, MergeRule>) -> bool {
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

fn token_table(entries: Vec<(u32, Vec<u8>)>) -> Result<Vec<Option<Box<[u8]>>>, Error> {
    let size = entries.iter().map(|&(id, _)| id as usize + 1).max().unwrap_or(0);
    // The table is indexed by id, so an id far beyond the number of tokens
    // (a corrupt file: 10^9 in a 50k vocab) would ask for gigabytes. Real
    // vocabularies are dense, with at most a few gaps (reserved special ids).
    let limit = 2 * entries.len() + (1 << 16);
    if size > limit {
        return Err(Error::InvalidArgument(format!(
            "token id {} is far beyond the {} tokens of the vocab; ids must be dense (0..{limit})",
            size - 1,
            entries.len()
        )));
    }
    let mut tokens: Vec<Option<Box<[u8]>>> = vec![None; size];
    for (id, bytes) in entries {
        let slot = &mut tokens[id as usize];
        if slot.is_some() {
            return Err(Error::InvalidArgument(format!("vocab gives id {id} to two tokens")));
        }
        *slot = Some(bytes.into_boxed_slice());
    }
    Ok(tokens)
}

fn byte_table(ids: &TokenIndex) -> Result<[u32; 256], Error> {
    let mut table = [0u32; 256];
    for (byte, slot) in table.iter_mut().enumerate() {
        *slot = ids.get([byte as u8].as_slice()).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "vocab has no token for the byte 0x{byte:02X}; a byte-level BPE vocabulary needs all 256 bytes"
            ))
        })?;
    }
    Ok(table)
}

fn merge_table<B: AsRef<[u8]> + Sync>(ids: &TokenIndex, merges: &[(B, B)]) -> Result<FxHashMap<u64, MergeRule>, Error> {
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
    let rules: Vec<Result<(u64, MergeRule), Error>> = merges
        .par_iter()
        .enumerate()
        .map_init(Vec::new, |joined, (rank, (left, right))| {
            let (left, right) = (left.as_ref(), right.as_ref());
            let pair = pair_key(lookup(left, rank, "left token")?, lookup(right, rank, "right token")?);
            joined.clear();
            joined.extend_from_slice(left);
            joined.extend_from_slice(right);
            let merged = lookup(joined, rank, "result")?;
            Ok((pair, MergeRule { rank: rank as u32, merged }))
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

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn byte_entries() -> Vec<(u32, Vec<u8>)> {
        (0..=255u8).map(|b| (b as u32, vec![b])).collect()
    }

    #[test]
    fn merges_map_to_rank_and_result() {
        let mut entries = byte_entries();
        entries.push((256, b"ab".to_vec()));
        let vocab = Vocabulary::new(entries, &[(b"a".to_vec(), b"b".to_vec())]).unwrap();
        assert_eq!(vocab.merge(b'a' as u32, b'b' as u32), Some(MergeRule { rank: 0, merged: 256 }));
        assert_eq!(vocab.merge(b'b' as u32, b'a' as u32), None);
        assert_eq!(vocab.byte_pair_merge(b'a', b'b'), Some(MergeRule { rank: 0, merged: 256 }));
        assert_eq!(vocab.byte_pair_merge(b'b', b'a'), None);
        assert_eq!(vocab.token(256), Some(b"ab".as_slice()));
        assert_eq!(vocab.id(b"ab"), Some(256));
    }

    #[test]
    fn a_huge_id_is_refused_not_allocated() {
        let mut entries = byte_entries();
        entries.push((1_000_000_000, b"ab".to_vec()));
        let err = Vocabulary::new::<Vec<u8>>(entries, &[]).unwrap_err().to_string();
        assert!(err.starts_with("token id 1000000000 is far beyond the 257 tokens"), "{err}");
    }

    #[test]
    fn errors_name_what_is_missing() {
        let err = Vocabulary::new(byte_entries(), &[(b"a".to_vec(), b"b".to_vec())]).unwrap_err();
        assert!(err.to_string().contains("merge 0 (\"a\" + \"b\"): its result \"ab\" is not in the vocab"), "{err}");
        let err = Vocabulary::new::<Vec<u8>>(byte_entries()[1..].to_vec(), &[]).unwrap_err();
        assert!(err.to_string().contains("no token for the byte 0x00"), "{err}");
    }
}
