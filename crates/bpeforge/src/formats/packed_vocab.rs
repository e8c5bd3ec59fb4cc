//! A vocabulary as bytes, for pickling a tokenizer: its tokens by id and its
//! merges as ids, so that unpickling (a Ray worker's load) builds the
//! vocabulary with no parse, no Python object per token and no lookup of a
//! merge's parts (o200k through its Python dict and merge list: 0.36 s).
//!
//! Layout, little-endian: `MAGIC`, a flags byte (bit 0: the merges are a
//! rank table's, `Vocabulary::merges_from_ranks`), the number of tokens, then
//! each as `id`, `length`, bytes; the number of merges, then each as `left`,
//! `right`, `merged` ids, in rank order. Read back only by the same version
//! (the magic holds it): anything else gives `None`.

use crate::bpe::merges::IdMerge;
use crate::bpe::vocab::Vocabulary;

const MAGIC: &[u8; 8] = b"bpefv001";
const FROM_RANKS: u8 = 1;

/// `vocab` as bytes (see the top).
pub fn pack_vocabulary(vocab: &Vocabulary) -> Vec<u8> {
    let tokens: Vec<(u32, &[u8])> = vocab.tokens().collect();
    let merges = vocab.id_merges();
    let token_bytes: usize = tokens.iter().map(|(_, token)| 8 + token.len()).sum();
    let mut out = Vec::with_capacity(MAGIC.len() + 9 + token_bytes + 12 * merges.len());
    out.extend_from_slice(MAGIC);
    out.push(if vocab.merges_from_ranks() { FROM_RANKS } else { 0 });
    out.extend_from_slice(&(tokens.len() as u32).to_le_bytes());
    for (id, token) in tokens {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&(token.len() as u32).to_le_bytes());
        out.extend_from_slice(token);
    }
    out.extend_from_slice(&(merges.len() as u32).to_le_bytes());
    for (left, right, merged) in merges {
        [left, right, merged].iter().for_each(|id| out.extend_from_slice(&id.to_le_bytes()));
    }
    out
}

/// The vocabulary `pack_vocabulary` wrote, or `None` for anything else.
pub fn unpack_vocabulary(data: &[u8]) -> Option<Vocabulary> {
    let mut reader = Reader(data.strip_prefix(MAGIC.as_slice())?);
    let flags = reader.take(1)?[0];
    let tokens = reader.u32()? as usize;
    let mut entries = Vec::with_capacity(tokens.min(data.len() / 8));
    for _ in 0..tokens {
        let id = reader.u32()?;
        let len = reader.u32()? as usize;
        entries.push((id, reader.take(len)?.to_vec()));
    }
    let count = reader.u32()? as usize;
    let mut merges: Vec<IdMerge> = Vec::with_capacity(count.min(data.len() / 12));
    for _ in 0..count {
        merges.push((reader.u32()?, reader.u32()?, reader.u32()?));
    }
    if !reader.0.is_empty() {
        return None;
    }
    let mut vocab = Vocabulary::from_id_merges(entries, |_, _| Ok(merges)).ok()?;
    if flags & FROM_RANKS != 0 {
        vocab.mark_merges_from_ranks();
    }
    Some(vocab)
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Option<&'a [u8]> {
        let (taken, rest) = (self.0.get(..len)?, self.0.get(len..)?);
        self.0 = rest;
        Some(taken)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::cache::seeds::vocabulary_with_a_token_bpe_never_makes;

    #[test]
    fn unpacks_what_it_packed() {
        let vocab = vocabulary_with_a_token_bpe_never_makes();
        let packed = pack_vocabulary(&vocab);
        let back = unpack_vocabulary(&packed).unwrap();
        assert_eq!(back.tokens().collect::<Vec<_>>(), vocab.tokens().collect::<Vec<_>>());
        assert_eq!(back.id_merges(), vocab.id_merges());
        assert!(!back.merges_from_ranks());
        for cut in [0, 8, 9, packed.len() / 2, packed.len() - 1] {
            assert!(unpack_vocabulary(&packed[..cut]).is_none(), "cut at {cut}");
        }
        assert!(unpack_vocabulary(&[packed.as_slice(), b"x"].concat()).is_none(), "a byte too many");
        let other_version = [b"bpefv000".as_slice(), &packed[8..]].concat();
        assert!(unpack_vocabulary(&other_version).is_none());
    }
}
