//! Lookup tables of a trained tokenizer, built once: id -> bytes, bytes -> id,
//! and the merge table (pair of ids -> rank and the id it makes).

use crate::bpe::char_merges::{junction_ranks, CharMerges};
use crate::bpe::flat::merge_into_one;
use crate::bpe::merges::{IdMerge, Merge, MergeEntry, MergeTable};
use crate::bpe::token_index::TokenIndex;
use crate::bpe::word_phases::WordPhases;
use crate::error::Error;

#[derive(Debug, Clone)]
pub struct Vocabulary {
    /// Token bytes by id; `None` for ids the vocabulary skips.
    tokens: Vec<Option<Box<[u8]>>>,
    /// Bytes -> id; where two ids share bytes, the lower id.
    ids: TokenIndex,
    /// The merges by pair of ids, and each byte's id (`merges.rs`).
    table: MergeTable,
    /// A bit for each pair of bytes (`first * 256 + second`) that occurs
    /// inside some token: see `can_cut_between`.
    pairs_in_tokens: Box<[u64; PAIR_WORDS]>,
    /// Length in bytes of each token, by id (0 for skipped ids): the long-piece
    /// merge (`sweep.rs`) steps from token to token with it.
    lens: Box<[u32]>,
    /// See `char_merges`.
    char_merges: CharMerges,
    /// See `word_phases`.
    word_phases: Option<WordPhases>,
    /// See `merges_from_ranks`.
    merges_from_ranks: bool,
    /// One past the highest id the caller gave; the ids from here on are
    /// stand-ins (see `stand_in_for_bytes_utf8_never_holds`).
    given_len: usize,
}

impl Vocabulary {
    /// Build from `(id, bytes)` entries and the merges in rank order.
    /// Fails, naming the entry, when a merge uses or makes a token the
    /// vocabulary lacks, or when a byte UTF-8 text can hold has no token
    /// (byte-level BPE must be able to spell any text). The bytes UTF-8 never
    /// holds may be missing: HF's trainer keeps only the bytes it saw, and
    /// the released SuperBPE vocabularies lack them; they get stand-in ids
    /// (`stand_in_for_bytes_utf8_never_holds`).
    /// The merges' bytes may be borrowed (the binding lends Python's `bytes`).
    pub fn new<B: AsRef<[u8]> + Sync>(entries: Vec<(u32, Vec<u8>)>, merges: &[Merge<B>]) -> Result<Self, Error> {
        let mut tokens = token_table(entries)?;
        let given_len = tokens.len();
        stand_in_for_bytes_utf8_never_holds(&mut tokens);
        let ids = TokenIndex::new(&tokens);
        let table = MergeTable::new(&ids, merges)?;
        let mut vocab = Self::assemble(tokens, ids, table, junction_ranks(merges));
        vocab.given_len = given_len;
        Ok(vocab)
    }

    /// As `new` (stand-ins too), with the merges given as ids (`IdMerge`, in
    /// rank order) by `merges`, from the tokens by id and their index: for a tiktoken rank
    /// file, whose merges' parts are known by id or found in that index
    /// (`formats/rank_vocab.rs`), so that no second index is built. Fails,
    /// naming the merge, when an id is no token.
    pub fn from_id_merges(
        entries: Vec<(u32, Vec<u8>)>,
        merges: impl FnOnce(&[Option<Box<[u8]>>], &TokenIndex) -> Result<Vec<IdMerge>, Error>,
    ) -> Result<Self, Error> {
        let mut tokens = token_table(entries)?;
        let given_len = tokens.len();
        stand_in_for_bytes_utf8_never_holds(&mut tokens);
        let ids = TokenIndex::new(&tokens);
        let merges = merges(&tokens, &ids)?;
        let bytes_of = |id: u32| tokens.get(id as usize).and_then(|token| token.as_deref());
        let as_bytes = merges
            .iter()
            .enumerate()
            .map(|(rank, &(left, right, merged))| match (bytes_of(left), bytes_of(right), bytes_of(merged)) {
                (Some(left), Some(right), Some(_)) => Ok((left, right)),
                _ => Err(Error::InvalidArgument(format!(
                    "merge {rank} (ids {left} + {right} -> {merged}) names an id that is no token"
                ))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let junction = junction_ranks(&as_bytes);
        let table = MergeTable::from_ids(&ids, &merges)?;
        let mut vocab = Self::assemble(tokens, ids, table, junction);
        vocab.given_len = given_len;
        Ok(vocab)
    }

    fn assemble(tokens: Vec<Option<Box<[u8]>>>, ids: TokenIndex, table: MergeTable, junction: Box<[u32]>) -> Self {
        let pairs_in_tokens = pairs_in_tokens(&tokens);
        let lens = tokens.iter().map(|token| token.as_ref().map_or(0, |bytes| bytes.len() as u32)).collect();
        let mut parts = Vec::new();
        let word_phases = WordPhases::new(&table, &junction, &pairs_in_tokens, tokens.len());
        let token_bytes = tokens.iter().flatten().map(|token| &token[..]);
        let char_merges = CharMerges::new(token_bytes, junction, |bytes| merge_into_one(bytes, &table, &mut parts));
        let given_len = tokens.len();
        Self {
            tokens,
            ids,
            table,
            pairs_in_tokens,
            lens,
            char_merges,
            word_phases,
            merges_from_ranks: false,
            given_len,
        }
    }

    /// Whether the merges are those a tiktoken rank table implies
    /// (`formats/rank_merges.rs`). Then every token a merge makes encodes to
    /// itself (`encode/cache/seeds.rs` says why), so its seeds need no BPE.
    pub fn merges_from_ranks(&self) -> bool {
        self.merges_from_ranks
    }

    /// Record that the merges are a rank table's (see `merges_from_ranks`):
    /// only for merges recovered from the ranks, or known to equal them.
    pub(crate) fn mark_merges_from_ranks(&mut self) {
        self.merges_from_ranks = true;
    }

    /// The number of ids the tables hold (one past the highest), stand-ins
    /// included.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// The number of ids the caller gave (one past the highest): `len`
    /// without the stand-ins, which no text of valid UTF-8 is encoded to.
    pub fn given_len(&self) -> usize {
        self.given_len
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// A token's bytes; `None` for an id that is no token (a stand-in is none).
    pub fn token(&self, id: u32) -> Option<&[u8]> {
        self.tokens[..self.given_len].get(id as usize).and_then(|t| t.as_deref())
    }

    pub fn id(&self, token: &[u8]) -> Option<u32> {
        self.ids.get(token).filter(|&id| (id as usize) < self.given_len)
    }

    /// The length in bytes of token `id` (0 if the vocabulary skips it).
    /// Panics if `id` is out of range.
    #[inline]
    pub fn token_len(&self, id: u32) -> usize {
        self.lens[id as usize] as usize
    }

    #[inline]
    pub fn byte_id(&self, byte: u8) -> u32 {
        self.table.byte_id(byte)
    }

    /// The merges by pair of ids (`merges.rs`): what the merge loops read.
    #[inline]
    pub fn merge_table(&self) -> &MergeTable {
        &self.table
    }

    /// The merge of two adjacent tokens, if any (`MergeTable::merge`).
    #[inline]
    pub fn merge(&self, left: u32, right: u32) -> Option<MergeEntry> {
        self.table.merge(left, right)
    }

    /// As `merge`, without the pair filter (`MergeTable::merge_direct`).
    #[inline]
    pub fn merge_direct(&self, left: u32, right: u32) -> Option<MergeEntry> {
        self.table.merge_direct(left, right)
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
    pub fn byte_pair_merge(&self, first: u8, second: u8) -> Option<MergeEntry> {
        self.table.byte_pair_merge(first, second)
    }

    /// Every `(id, bytes)`, in id order (skipped ids left out).
    pub fn tokens(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        self.tokens[..self.given_len].iter().enumerate().filter_map(|(id, token)| Some((id as u32, token.as_deref()?)))
    }

    /// Which characters a piece may start its merges from as tokens
    /// (`char_merges.rs`).
    #[inline]
    pub fn char_merges(&self) -> &CharMerges {
        &self.char_merges
    }

    /// Where long pieces cut for the early merges, when the early merges
    /// never join words (SuperBPE's, `word_phases.rs`).
    #[inline]
    pub fn word_phases(&self) -> Option<&WordPhases> {
        self.word_phases.as_ref()
    }

    /// The merges as ids, in rank order (`MergeTable::id_merges`).
    pub fn id_merges(&self) -> Vec<IdMerge> {
        self.table.id_merges()
    }

    /// The ids that merges make (each the lowest id of its bytes), in no particular order.
    pub fn merged_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.table.merged_ids()
    }

    pub fn num_merges(&self) -> usize {
        self.table.len()
    }

    /// Whether every merge ranks above every merge that makes one of its two
    /// parts, as in any merge list that training wrote in order. Then applying
    /// merges inside a piece only ever creates pairs of higher rank than the
    /// one just applied, so the ranks taken grow monotonically (long pieces then
    /// take the rank sweep or a radix heap, `bpe/mod.rs`).
    pub fn ranks_grow(&self) -> bool {
        self.table.ranks_grow()
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

/// 0xC0, 0xC1 and 0xF5-0xFF: bytes no UTF-8 text holds.
pub(crate) fn utf8_never_holds(byte: u8) -> bool {
    matches!(byte, 0xC0 | 0xC1 | 0xF5..=0xFF)
}

/// Give each byte UTF-8 never holds that `tokens` lacks a stand-in id past all
/// others. The merge tables want every byte's id, and text of valid UTF-8
/// (every entry point checks it) never reaches a stand-in; `token`, `id` and
/// `tokens` do not show them, so decoding one is an unknown id.
fn stand_in_for_bytes_utf8_never_holds(tokens: &mut Vec<Option<Box<[u8]>>>) {
    let mut held = [false; 256];
    for token in tokens.iter().flatten().filter(|token| token.len() == 1) {
        held[usize::from(token[0])] = true;
    }
    let lacking = (0..=255u8).filter(|&byte| utf8_never_holds(byte) && !held[usize::from(byte)]);
    tokens.extend(lacking.map(|byte| Some(Box::from([byte]))));
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
        assert_eq!(vocab.merge(b'a' as u32, b'b' as u32), Some(MergeEntry { rank: 0, merged: 256 }));
        assert_eq!(vocab.merge(b'b' as u32, b'a' as u32), None);
        assert_eq!(vocab.byte_pair_merge(b'a', b'b'), Some(MergeEntry { rank: 0, merged: 256 }));
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

    #[test]
    fn bytes_utf8_never_holds_may_be_missing_and_stay_hidden() {
        // HF's trainer keeps the bytes it saw: ids 0..243 for the others, then a merge.
        let held: Vec<u8> = (0..=255u8).filter(|&byte| !utf8_never_holds(byte)).collect();
        let mut entries: Vec<(u32, Vec<u8>)> = held.iter().zip(0..).map(|(&byte, id)| (id, vec![byte])).collect();
        entries.push((243, "é".as_bytes().to_vec()));
        let vocab = Vocabulary::new(entries, &[(vec![0xC3], vec![0xA9])]).unwrap();
        assert_eq!((vocab.given_len(), vocab.len()), (244, 257), "13 stand-ins past the given ids");
        assert_eq!(vocab.byte_pair_merge(0xC3, 0xA9).map(|m| m.merged), Some(243));
        for byte in [0xC0u8, 0xC1, 0xF5, 0xFF] {
            assert!(vocab.id(&[byte]).is_none(), "a stand-in is no token for id()");
            assert_ne!(vocab.byte_id(byte), vocab.byte_id(0), "but the tables give it an id of its own");
        }
        assert!((244..257).all(|id| vocab.token(id).is_none()));
        assert_eq!(vocab.tokens().count(), 244);
    }
}
