//! The merges a tiktoken rank table implies.
//!
//! A `.tiktoken` file lists tokens by rank and no merges. For each token of
//! more than one byte, BPE over its bytes with only the lower-ranked tokens
//! (tiktoken's rule: merge the adjacent pair whose concatenation has the
//! lowest rank) must stop at exactly two parts, and they are its merge. Each
//! token is independent of the others, so they are recovered in parallel.

use rayon::prelude::*;

use crate::bpe::merges::Merge;
use crate::bpe::token_index::TokenIndex;
use crate::error::Error;

/// `(left, right)` for every token of more than one byte, in rank order.
/// `ranks` holds each token once with its rank.
pub fn merges_from_ranks<B: AsRef<[u8]> + Sync>(ranks: &[(B, u32)]) -> Result<Vec<Merge<Vec<u8>>>, Error> {
    let (splits, _) = split_tokens(ranks)?;
    Ok(splits.into_iter().map(|(token, left)| (token[..left].to_vec(), token[left..].to_vec())).collect())
}

/// `merges_from_ranks` as positions in `ranks`: for every token of more than
/// one byte, in rank order, where its left and right parts are. The binding
/// builds each merge from the `bytes` objects it was given, so that o200k's
/// 400 K merge sides are no new objects. `None` when a part is not in
/// `ranks` (a file that lacks a single byte): `merges_from_ranks` gives its
/// bytes, and building the vocabulary then names what is missing.
pub fn merge_splits<B: AsRef<[u8]> + Sync>(ranks: &[(B, u32)]) -> Result<Option<Vec<(usize, usize)>>, Error> {
    let (splits, rank_of) = split_tokens(ranks)?;
    let at = |bytes: &[u8]| rank_of.get(bytes).map(|(_, at)| at);
    Ok(splits.into_iter().map(|(token, left)| Some((at(&token[..left])?, at(&token[left..])?))).collect())
}

/// Tokens with the length of their merge's left part.
type Splits<'r> = Vec<(&'r [u8], usize)>;

/// Each token of more than one byte, in rank order, with the length of the
/// left part of its merge; and the table the parts can be found in.
fn split_tokens<B: AsRef<[u8]> + Sync>(ranks: &[(B, u32)]) -> Result<(Splits<'_>, RankTable<'_>), Error> {
    let rank_of = rank_table(ranks);
    let pair_ranks = pair_ranks(ranks);
    let lookup = Lookup { pairs: &pair_ranks, table: &rank_of };
    let mut by_rank: Vec<(&[u8], u32)> =
        ranks.iter().map(|(token, rank)| (token.as_ref(), *rank)).filter(|(token, _)| token.len() > 1).collect();
    by_rank.sort_unstable_by_key(|&(_, rank)| rank);
    let splits = by_rank
        .par_iter()
        .map(|&(token, rank)| {
            let parts = bpe_below(&lookup, token, rank);
            match parts.as_slice() {
                &[left, _] => Ok((token, left)),
                _ => Err(Error::InvalidArgument(format!(
                    "token {:?} (rank {rank}) is not a merge of two lower-ranked tokens: BPE with the lower ranks \
                     leaves {} parts",
                    String::from_utf8_lossy(token),
                    parts.len()
                ))),
            }
        })
        .collect::<Result<_, _>>()?;
    Ok((splits, rank_of))
}

/// tiktoken's BPE of `token` with the tokens ranked below `max_rank`: the
/// lengths of the parts it stops at. The rank of each adjacent pair is kept
/// and only the two pairs a merge touches are looked up again (rescanning
/// every pair after each merge hashed each token's slices quadratically:
/// 0.18 s of loading o200k on one core).
fn bpe_below(lookup: &Lookup, token: &[u8], max_rank: u32) -> Vec<usize> {
    // Part `i` is `token[starts[i]..starts[i + 1]]`; `ranks[i]` is that of parts `i` and `i + 1` joined.
    let mut starts: Vec<usize> = (0..=token.len()).collect();
    let pair_rank = |starts: &[usize], i: usize| {
        lookup.rank(&token[starts[i]..starts[i + 2]]).filter(|&rank| rank < max_rank).unwrap_or(u32::MAX)
    };
    let mut ranks: Vec<u32> = (0..token.len().saturating_sub(1)).map(|i| pair_rank(&starts, i)).collect();
    // The lowest rank, leftmost of equals, as tiktoken picks.
    while let Some((i, _)) =
        ranks.iter().enumerate().filter(|(_, &rank)| rank != u32::MAX).min_by_key(|(_, &rank)| rank)
    {
        starts.remove(i + 1);
        ranks.remove(i);
        if i < ranks.len() {
            ranks[i] = pair_rank(&starts, i);
        }
        if i > 0 {
            ranks[i - 1] = pair_rank(&starts, i - 1);
        }
    }
    starts.windows(2).map(|part| part[1] - part[0]).collect()
}

/// A rank by bytes: two-byte tokens, the first pairs of every token's BPE
/// (about a third of the lookups), from a flat table rather than hashed.
struct Lookup<'a, 'r> {
    pairs: &'a [u32],
    table: &'a RankTable<'r>,
}

impl Lookup<'_, '_> {
    #[inline]
    fn rank(&self, bytes: &[u8]) -> Option<u32> {
        match *bytes {
            [first, second] => Some(self.pairs[(first as usize) << 8 | second as usize]).filter(|&r| r != u32::MAX),
            _ => self.table.get(bytes).map(|(rank, _)| rank),
        }
    }
}

/// The rank of each two-byte token at `first * 256 + second`; `u32::MAX` where there is none.
fn pair_ranks<B: AsRef<[u8]>>(ranks: &[(B, u32)]) -> Vec<u32> {
    let mut pairs = vec![u32::MAX; 1 << 16];
    for (token, rank) in ranks {
        if let &[first, second] = token.as_ref() {
            pairs[(first as usize) << 8 | second as usize] = *rank;
        }
    }
    pairs
}

/// Token bytes -> rank, and the token's position in the table given
/// (`token_index.rs`: packed keys for short tokens, borrowed slices for long).
type RankTable<'r> = TokenIndex<&'r [u8], (u32, usize)>;

fn rank_table<B: AsRef<[u8]>>(ranks: &[(B, u32)]) -> RankTable<'_> {
    let mut table = RankTable::default();
    for (at, (token, rank)) in ranks.iter().enumerate() {
        let token = token.as_ref();
        table.insert_first(token, || token, (*rank, at));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranks(tokens: &[&[u8]]) -> Vec<(Vec<u8>, u32)> {
        let bytes = (0..=255u8).map(|b| (vec![b], b as u32));
        bytes.chain(tokens.iter().enumerate().map(|(i, t)| (t.to_vec(), 256 + i as u32))).collect()
    }

    #[test]
    fn each_token_splits_into_two_lower_ranked_tokens() {
        let merges = merges_from_ranks(&ranks(&[b"or", b" w", b" wor"])).unwrap();
        let expected: Vec<Merge<Vec<u8>>> =
            vec![(b"o".to_vec(), b"r".to_vec()), (b" ".to_vec(), b"w".to_vec()), (b" w".to_vec(), b"or".to_vec())];
        assert_eq!(merges, expected);
    }

    #[test]
    fn splits_are_the_positions_of_the_merges_parts() {
        let table = ranks(&[b"or", b" w", b" wor"]);
        let splits = merge_splits(&table).unwrap().unwrap();
        let as_bytes: Vec<Merge<Vec<u8>>> =
            splits.iter().map(|&(l, r)| (table[l].0.clone(), table[r].0.clone())).collect();
        assert_eq!(as_bytes, merges_from_ranks(&table).unwrap());
        // Without the byte "r", "or" still splits (as bytes) but has no position for its right part.
        let without_r: Vec<(Vec<u8>, u32)> = table.iter().filter(|(token, _)| token != b"r").cloned().collect();
        assert_eq!(merge_splits(&without_r).unwrap(), None);
        assert_eq!(merges_from_ranks(&without_r).unwrap()[0], (b"o".to_vec(), b"r".to_vec()));
    }

    #[test]
    fn a_token_that_is_no_merge_is_named() {
        // "abc" with no "ab" or "bc" below it: BPE leaves three parts.
        let err = merges_from_ranks(&ranks(&[b"abc"])).unwrap_err().to_string();
        assert!(err.contains("\"abc\" (rank 256) is not a merge") && err.contains("3 parts"), "{err}");
    }
}
