//! A tiktoken rank file (`tiktoken.rs`) straight to a `Vocabulary`, its merges
//! as ids: what `get_encoding` and `Tokenizer.from_tiktoken` build without a
//! Python object per token (o200k's `{token: rank}` dict, vocabulary dict and
//! 400 K merge sides were most of loading it).
//!
//! The merges are those the ranks imply: recovered (`rank_merges.rs`), or,
//! for a rank file bpeforge ships, read from its shipped splits (one byte a
//! token of more than one byte, in rank order: the length of its merge's left
//! part; the Python layer checks the file's sha256 first). A merge's result is
//! the token of its rank, so only its two parts are looked up.
//!
//! Anything unusual (a line `tiktoken.rs` defers, a token that is no
//! merge, a missing byte, a special token spelled like a token or given a
//! token's id) gives `None`: the Python reader then builds the tokenizer its
//! own way, which decides and names the problem with the file's path.

use crate::bpe::merges::IdMerge;
use crate::bpe::token_index::TokenIndex;
use crate::bpe::vocab::Vocabulary;
use crate::error::Error;
use crate::formats::rank_merges::merge_splits;
use crate::formats::tiktoken::parse_rank_lines;

/// A special token and its id; `None`: the next id after every id before it
/// (as a list of special tokens is placed after the ranks).
pub type SpecialId = (String, Option<u32>);

/// The vocabulary of the rank file `data` with `specials` (see the top), or
/// `None` for the Python reader. `splits`: the shipped splits of this file.
pub fn rank_file_vocabulary(data: &[u8], splits: Option<&[u8]>, specials: &[SpecialId]) -> Option<Vocabulary> {
    let mut entries = parse_rank_lines(data)?;
    let ordinary = entries.len();
    place_specials(&mut entries, specials)?;
    let merges = |tokens: &[Option<Box<[u8]>>], ids: &TokenIndex| {
        // Every token spelled once (the rank file's, the specials'): as many as the index holds.
        let ranks: Vec<(&[u8], u32)> = (tokens.iter().enumerate())
            .filter_map(|(id, token)| Some((token.as_deref()?, id as u32)))
            .take(ordinary)
            .collect();
        let distinct = ids.len() == ordinary + specials.len();
        let merges = match splits {
            Some(splits) => distinct.then(|| merges_from_splits(&ranks, splits, ids)).flatten(),
            None => distinct.then(|| recovered_merges(&ranks)).flatten(),
        };
        merges.ok_or_else(|| Error::InvalidArgument("left to the Python reader".into()))
    };
    let mut vocab = Vocabulary::from_id_merges(entries, merges).ok()?;
    vocab.mark_merges_from_ranks();
    Some(vocab)
}

/// The merges of `ranks` (`(token, rank)` in rank order) from their shipped
/// `splits`, their parts found in `ids`.
fn merges_from_splits(ranks: &[(&[u8], u32)], splits: &[u8], ids: &TokenIndex) -> Option<Vec<IdMerge>> {
    let merged = ranks.iter().filter(|(token, _)| token.len() > 1);
    if merged.clone().count() != splits.len() {
        return None;
    }
    let merge = |&(token, rank): &(&[u8], u32), left: usize| {
        let (left, right) = (token.get(..left)?, token.get(left..)?);
        Some((ids.get(left)?, ids.get(right)?, rank))
    };
    merged.zip(splits).map(|(token, &left)| merge(token, left as usize)).collect()
}

/// The merges of `ranks` (`(token, rank)` in rank order) recovered from them.
fn recovered_merges(ranks: &[(&[u8], u32)]) -> Option<Vec<IdMerge>> {
    let splits = merge_splits(ranks).ok()??;
    let merged = ranks.iter().filter(|(token, _)| token.len() > 1);
    Some(merged.zip(splits).map(|((_, rank), (left, right))| (ranks[left].1, ranks[right].1, *rank)).collect())
}

/// Add `specials` to `entries` (the ranks' `(rank, token)`, in rank order),
/// or `None` when one takes an id already given. One spelled like a token is
/// found by the caller (the index then holds fewer tokens than there are).
fn place_specials(entries: &mut Vec<(u32, Vec<u8>)>, specials: &[SpecialId]) -> Option<()> {
    let ordinary = entries.len();
    let mut next = entries.last().map_or(0, |&(rank, _)| rank as u64 + 1);
    for (name, id) in specials {
        let id = match id {
            Some(id) => *id,
            None => u32::try_from(next).ok()?,
        };
        let taken = entries[..ordinary].binary_search_by_key(&id, |&(rank, _)| rank).is_ok()
            || entries[ordinary..].iter().any(|&(other, _)| other == id);
        if taken {
            return None;
        }
        next = next.max(id as u64 + 1);
        entries.push((id, name.as_bytes().to_vec()));
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::rank_merges::merges_from_ranks;

    /// The 256 bytes, then " w", "or", " wor" (ranks 256-258), as a rank file.
    fn rank_file(extra: &[&[u8]]) -> Vec<u8> {
        use base64::Engine;
        let bytes = (0..=255u8).map(|b| vec![b]);
        let tokens =
            bytes.chain([&b" w"[..], b"or", b" wor"].into_iter().chain(extra.iter().copied()).map(|t| t.to_vec()));
        let line = |(rank, token): (usize, Vec<u8>)| {
            format!("{} {rank}\n", base64::engine::general_purpose::STANDARD.encode(token))
        };
        tokens.enumerate().map(line).collect::<String>().into_bytes()
    }

    fn merges_as_bytes(vocab: &Vocabulary) -> Vec<(Vec<u8>, Vec<u8>)> {
        let bytes = |id: u32| vocab.token(id).unwrap().to_vec();
        vocab.id_merges().into_iter().map(|(left, right, _)| (bytes(left), bytes(right))).collect()
    }

    #[test]
    fn splits_and_recovery_give_the_merges_the_ranks_imply() {
        let file = rank_file(&[]);
        let ranks = crate::formats::tiktoken::parse_rank_file(&file).unwrap();
        let recovered = rank_file_vocabulary(&file, None, &[]).unwrap();
        let shipped = rank_file_vocabulary(&file, Some(&[1, 1, 2]), &[]).unwrap();
        assert_eq!(merges_as_bytes(&recovered), merges_from_ranks(&ranks).unwrap());
        assert_eq!(merges_as_bytes(&shipped), merges_as_bytes(&recovered));
        assert_eq!(recovered.id_merges(), [(b' ' as u32, b'w' as u32, 256), (111, 114, 257), (256, 257, 258)]);
        assert!(recovered.merges_from_ranks() && shipped.merges_from_ranks());
        let unpickled = crate::formats::packed_vocab::unpack_vocabulary(&crate::pack_vocabulary(&shipped)).unwrap();
        assert!(unpickled.merges_from_ranks() && unpickled.id_merges() == shipped.id_merges());
    }

    #[test]
    fn specials_go_at_their_ids_or_after_the_last() {
        let specials = [("<|a|>".to_string(), Some(300)), ("<|b|>".to_string(), None)];
        let vocab = rank_file_vocabulary(&rank_file(&[]), None, &specials).unwrap();
        assert_eq!((vocab.id(b"<|a|>"), vocab.id(b"<|b|>")), (Some(300), Some(301)));
        assert_eq!(vocab.len(), 302, "ids 259-299 are skipped");
    }

    #[test]
    fn anything_unusual_is_left_to_the_python_reader() {
        let file = rank_file(&[]);
        let special = |name: &str, id| [(name.to_string(), id)];
        assert!(rank_file_vocabulary(&file, None, &special(" wor", None)).is_none(), "spelled like a token");
        assert!(rank_file_vocabulary(&file, None, &special("<|a|>", Some(257))).is_none(), "a token's id");
        let twice = [("<|a|>".to_string(), None), ("<|a|>".to_string(), None)];
        assert!(rank_file_vocabulary(&file, None, &twice).is_none(), "given twice");
        assert!(rank_file_vocabulary(&file, Some(&[1, 1]), &[]).is_none(), "splits of another file");
        assert!(rank_file_vocabulary(&file, Some(&[1, 1, 3]), &[]).is_none(), "a split that is no token");
        // "abc" with neither "ab" nor "bc" below it is no merge.
        assert!(rank_file_vocabulary(&rank_file(&[b"abc"]), None, &[]).is_none());
        assert!(rank_file_vocabulary(b"IQ== x\n", None, &[]).is_none());
        let without_a_byte: Vec<u8> = file.split(|&b| b == b'\n').skip(1).flat_map(|l| [l, b"\n"].concat()).collect();
        assert!(rank_file_vocabulary(&without_a_byte, None, &[]).is_none());
    }
}
