//! Which tokens encode to themselves (BPE over a token's bytes ends at that
//! token), for every token at once from the merge list: what `seeds.rs`
//! needs of a vocabulary whose merges are not known to be a rank table's
//! (GPT-2's `merges.txt`), without a BPE of each token (8 ms of loading
//! GPT-2's 50 K on one core, a fifth of it).
//!
//! Exact when every merge ranks above the merges that make its parts
//! (`Vocabulary::ranks_grow`: BPE then takes merges in rank order) and no
//! token is made twice; otherwise `None`, and the caller runs the BPEs.
//!
//! Why it holds: let merge m join L and R into T. BPE over T's bytes ends at
//! [T] exactly when it reaches [L, R] (m is the only merge that makes T), that
//! is when L's bytes and R's bytes each merge into their token and no merge
//! ever joins a part of L's bytes with a part of R's (a crossing). Until a
//! crossing the two sides merge on their own, as BPE of L and of R alone do.
//! So T encodes to itself iff L and R do and no crossing happens. The only
//! parts that can cross are the rightmost part of L's side and the leftmost
//! of R's: over time the rightmost is the last byte of L, then the tokens
//! down L's chain of right parts (L's right part's right part, ...) back up
//! to L, each from the rank that made it until the rank that joined it to its
//! left neighbour (m for L itself); the leftmost of R's side likewise. A
//! crossing merge of rank c between a (until rank ea) and b (until rank eb)
//! happens iff c < ea (at c = ea the same pair sits left of it, and the
//! leftmost goes first) and c <= eb (at c = eb the crossing is the leftmost).
//! The pairs of a and b that coexist are found by walking both chains down
//! together, as two sorted lists are merged.

use crate::bpe::vocab::Vocabulary;

/// "Made before every merge" (the bytes), in `made`'s units (rank + 1).
const AT_START: u32 = 0;
/// Made by no merge, and no byte.
const NEVER: u32 = u32::MAX;

/// For each id, whether BPE over its bytes gives exactly that id; `None` when
/// the merges do not allow the shortcut (see the top).
pub fn tokens_that_encode_to_themselves(vocab: &Vocabulary) -> Option<Vec<bool>> {
    if !vocab.ranks_grow() {
        return None;
    }
    let tokens = vocab.len();
    let (mut made, mut parts, mut whole) = (vec![NEVER; tokens], vec![(0, 0); tokens], vec![false; tokens]);
    for byte in 0..=255u8 {
        let id = vocab.byte_id(byte) as usize;
        (made[id], whole[id]) = (AT_START, true);
    }
    for (rank, (left, right, merged)) in vocab.id_merges().into_iter().enumerate() {
        let (at, merged) = (rank as u32 + 1, merged as usize);
        if made[merged] != NEVER {
            return None; // made twice
        }
        (made[merged], parts[merged]) = (at, (left, right));
        whole[merged] =
            whole[left as usize] && whole[right as usize] && !crosses(vocab, &made, &parts, left, right, at);
    }
    Some(whole)
}

/// Whether BPE over the bytes of `left` + `right`, both tokens that encode
/// to themselves, ever merges across their boundary before `at` (the rank +
/// 1 of the merge that joins them). See the top.
fn crosses(vocab: &Vocabulary, made: &[u32], parts: &[(u32, u32)], left: u32, right: u32, at: u32) -> bool {
    let (mut a, mut a_end, mut b, mut b_end) = (left, at, right, at);
    loop {
        let (a_start, b_start) = (made[a as usize], made[b as usize]);
        let coexist = a_start.max(b_start) < a_end.min(b_end);
        if coexist && (a, b) != (left, right) {
            if let Some(entry) = vocab.merge(a, b) {
                let c = entry.rank + 1;
                if c < a_end && c <= b_end {
                    return true;
                }
            }
        }
        // Down the chain whose part was made later: the one before it covers the earlier ranks.
        if a_start == AT_START && b_start == AT_START {
            return false;
        } else if a_start >= b_start {
            (a, a_end) = (parts[a as usize].1, a_start);
        } else {
            (b, b_end) = (parts[b as usize].0, b_start);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpe::sweep::tests::{gpt2_vocab_from_test_data, random_vocab};
    use crate::bpe::{encode_piece, Scratch};
    use crate::util::test_rng::XorShift as Rng;

    /// What `tokens_that_encode_to_themselves` finds, found by a BPE of each token.
    fn by_bpe(vocab: &Vocabulary) -> Vec<bool> {
        let (mut scratch, mut ids) = (Scratch::default(), Vec::new());
        (0..vocab.len() as u32)
            .map(|id| {
                let Some(token) = vocab.token(id) else { return false };
                ids.clear();
                encode_piece(token, vocab, &mut scratch, &mut ids);
                ids[..] == [id]
            })
            .collect()
    }

    #[test]
    fn the_same_tokens_as_a_bpe_of_each_on_random_vocabularies() {
        let mut rng = Rng(0x51ed_270b_2f3e_4c1d);
        let (mut checked, mut not_whole) = (0, 0);
        // 600 vocabularies: each is checked against a BPE of its every token,
        // which the debug build of `cargo test` takes tens of milliseconds for.
        for round in 0..600 {
            let alphabet = &b"abcd"[..1 + rng.below(4)];
            let size = 1 + rng.below(60);
            let (vocab, _) = random_vocab(&mut rng, alphabet, size);
            let Some(whole) = tokens_that_encode_to_themselves(&vocab) else { continue };
            assert_eq!(whole, by_bpe(&vocab), "round {round}");
            checked += 1;
            not_whole += whole.iter().zip(0..).filter(|&(&w, id)| !w && vocab.token(id).is_some()).count();
        }
        assert!(checked > 200 && not_whole > 200, "{checked} vocabularies, {not_whole} tokens BPE never makes");
    }

    #[test]
    fn the_same_tokens_as_a_bpe_of_each_on_gpt2() {
        let Some(vocab) = gpt2_vocab_from_test_data() else { return };
        assert_eq!(tokens_that_encode_to_themselves(&vocab), Some(by_bpe(&vocab)));
    }

    #[test]
    fn no_shortcut_for_a_token_made_twice() {
        let vocab = crate::encode::cache::seeds::vocabulary_with_a_token_bpe_never_makes();
        assert_eq!(tokens_that_encode_to_themselves(&vocab), Some(by_bpe(&vocab)));
        let entries: Vec<(u32, Vec<u8>)> =
            (0..=255u8).map(|b| (b as u32, vec![b])).chain([(256, b"ab".to_vec()), (257, b"abb".to_vec())]).collect();
        let merges = [(&b"a"[..], &b"b"[..]), (b"ab", b"b"), (b"a", b"bb")];
        let entries = [entries, vec![(258, b"bb".to_vec())]].concat();
        let merges = [&merges[..2], &[(&b"b"[..], &b"b"[..])], &merges[2..]].concat();
        let vocab = Vocabulary::new(entries, &merges).unwrap();
        assert_eq!(tokens_that_encode_to_themselves(&vocab), None, "\"abb\" is made by two merges");
    }
}
