//! Long pieces merged a chunk at a time, each seam checked: the path
//! `encode_piece` tries first for pieces over `SWEEP_MIN` bytes when the
//! vocabulary's ranks grow; where a seam cannot be placed it gives up and the
//! piece takes the rank sweep as before.
//!
//! Why: a run of one letter, of digits or of spaces is one pre-token, and a
//! 1 MB one took the rank sweep 10-65 ms under GPT-2 (gigatoken: 0.3-0.8 ms).
//! Chunks of `CHUNK` bytes take the tree, whose state stays in L1, and a chunk
//! whose bytes equal the previous chunk's (a run of one char, or of any short
//! period in phase) reuses its ids: a long run costs a comparison of bytes per
//! chunk.
//!
//! Exactness rests on one fact. Call tokens `a`, `b` *compatible* when
//! merging the bytes of `a` then `b` as a piece gives `[a, b]`. When ranks
//! grow (merges are taken in rank order), a sequence of tokens whose
//! concatenation is the piece is the piece's merge result if (1) each token
//! is its own bytes' result and (2) every two neighbours are compatible.
//! Proof: run the merge loop on the piece, and look at the first merge that
//! joins parts of two of the tokens, `x` ending the span of `t_i` and `y`
//! starting `t_{i+1}`, of rank `r`. Until then, inside each token's span the
//! loop has taken exactly the merges that token's bytes take alone, in the
//! same order (the pairs inside a span are the same as alone, and the loop
//! takes the lowest rank first); so merging the bytes of `t_i t_{i+1}` alone
//! reaches the same parts below rank `r`, then meets the same rank-`r` pairs
//! left of `(x, y)` in the same state, and merges `(x, y)`: against (2). So no
//! merge crosses a seam, every span ends as its token by (1), and no pair
//! across a seam has a merge left, by (2) again.
//!
//! Both hold for the ids kept here: every token of a chunk's result and every
//! neighbour pair inside it satisfy (1) and (2), since the merges inside a
//! token's span (or a pair's) were never offered a part outside it; and each
//! seam between chunks is checked for (2) by merging the two tokens' bytes.
//! The tests compare this path with the heap on generated runs and vocabularies.

use crate::bpe::period::short_period;
use crate::bpe::vocab::Vocabulary;
use crate::bpe::{encode_piece, Scratch};

/// Bytes a chunk is merged over (the tree path).
const CHUNK: usize = 512;
/// A chunk's last tokens over these bytes are merged again in the next chunk:
/// next to the chunk's cut they are what the cut left, not what the piece has,
/// and a seam there would mostly fail its check.
const MARGIN: usize = 64;
/// Seams tried per chunk, each one token further back, before the piece takes
/// the rank sweep.
const SEAM_TRIES: usize = 8;

/// The buffers of one chunked merge, kept in `Scratch`.
#[derive(Default)]
pub(crate) struct ChunkScratch {
    /// The ids of the chunk last merged.
    ids: Vec<u32>,
    /// The last seam checked, and its verdict: a periodic run checks the same
    /// pair at each seam.
    checked: Option<(u32, u32, bool)>,
    pair_bytes: Vec<u8>,
    pair_ids: Vec<u32>,
}

impl ChunkScratch {
    pub(crate) fn bytes(&self) -> usize {
        (self.ids.capacity() + self.pair_ids.capacity()) * 4 + self.pair_bytes.capacity()
    }
}

/// Append the ids of `piece` to `out` and return true where it is longer
/// than `CHUNK` bytes, repeats a short period (`period.rs`), the
/// vocabulary's ranks grow and every seam can be placed; else return false
/// with `out` as it was.
pub(crate) fn merge_run(piece: &[u8], vocab: &Vocabulary, scratch: &mut Scratch, out: &mut Vec<u32>) -> bool {
    piece.len() > CHUNK
        && vocab.ranks_grow()
        && short_period(piece).is_some()
        && merge_chunked(piece, vocab, scratch, out)
}

/// Append the ids of `piece` (longer than `CHUNK`; the vocabulary's ranks
/// grow) to `out` and return true; or return false with `out` as it was,
/// where a seam could not be placed.
pub(crate) fn merge_chunked(piece: &[u8], vocab: &Vocabulary, scratch: &mut Scratch, out: &mut Vec<u32>) -> bool {
    debug_assert!(vocab.ranks_grow() && piece.len() > CHUNK);
    let base = out.len();
    let mut chunks = std::mem::take(&mut scratch.chunks);
    chunks.checked = None;
    let placed = place_chunks(piece, vocab, scratch, &mut chunks, out, base);

    scratch.chunks = chunks;
    if !placed {
        out.truncate(base);
    }
    placed
}

/// `merge_chunked`'s loop; the piece's ids go to `out` after `base`.
fn place_chunks(
    piece: &[u8],
    vocab: &Vocabulary,
    scratch: &mut Scratch,
    chunks: &mut ChunkScratch,
    out: &mut Vec<u32>,
    base: usize,
) -> bool {
    // `start` is a seam: the ids of `piece[..start]` are in `out`, and the
    // chunk merged next begins there. A seam moves back only to `floor`, the
    // end of the first token the last chunk placed, so it moves on.
    let (mut start, mut floor) = (0, 0);
    let mut previous: Option<&[u8]> = None;
    // What `kept_tokens` gave for the ids in `chunks.ids`: a run's chunks
    // repeat, and its ids are walked once, not once a chunk (1 MB of
    // spaces is a million ids under GPT-2).
    let mut kept_memo = None;
    loop {
        let mut tries = 0;
        let end = loop {
            let end = (start + CHUNK).min(piece.len());
            let chunk = &piece[start..end];
            // The ids of a chunk equal to the last one are still there.
            if previous != Some(chunk) {
                chunks.ids.clear();
                encode_piece(chunk, vocab, scratch, &mut chunks.ids);
                (previous, kept_memo) = (Some(chunk), None);
            }
            let first = chunks.ids[0];
            if out.len() == base || compatible(out[out.len() - 1], first, vocab, scratch, chunks) {
                break end;
            }
            // Move the seam back by the last token placed.
            tries += 1;
            let last = out[out.len() - 1];
            if tries == SEAM_TRIES || start - vocab.token_len(last) < floor {
                return false;
            }
            out.pop();
            start -= vocab.token_len(last);
        };
        if end == piece.len() {
            out.extend_from_slice(&chunks.ids);
            return true;
        }
        let (kept, kept_bytes) = *kept_memo.get_or_insert_with(|| kept_tokens(&chunks.ids, end - start, vocab));
        floor = start + vocab.token_len(chunks.ids[0]);
        out.extend_from_slice(&chunks.ids[..kept]);
        start += kept_bytes;
    }
}

/// How many of a chunk's first tokens to keep, and their bytes: those that
/// end at least `MARGIN` bytes before the chunk's cut, and the first
/// whatever its end.
fn kept_tokens(ids: &[u32], chunk_len: usize, vocab: &Vocabulary) -> (usize, usize) {
    let (mut kept, mut bytes) = (0, 0);
    for &id in ids {
        let token_end = bytes + vocab.token_len(id);
        if kept > 0 && token_end + MARGIN > chunk_len {
            break;
        }
        (kept, bytes) = (kept + 1, token_end);
    }
    (kept, bytes)
}

/// Whether merging the bytes of `left` then `right` gives `[left, right]`.
fn compatible(left: u32, right: u32, vocab: &Vocabulary, scratch: &mut Scratch, chunks: &mut ChunkScratch) -> bool {
    if let Some((l, r, verdict)) = chunks.checked {
        if (l, r) == (left, right) {
            return verdict;
        }
    }
    chunks.pair_bytes.clear();
    chunks.pair_bytes.extend_from_slice(vocab.token(left).expect("a token of the vocabulary"));
    chunks.pair_bytes.extend_from_slice(vocab.token(right).expect("a token of the vocabulary"));
    chunks.pair_ids.clear();
    encode_piece(&chunks.pair_bytes, vocab, scratch, &mut chunks.pair_ids);
    let verdict = chunks.pair_ids == [left, right];
    chunks.checked = Some((left, right, verdict));
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpe::merge_heap;
    use crate::bpe::period::PERIOD_MAX;
    use crate::bpe::sweep::tests::{gpt2_vocab_from_test_data, random_vocab};
    use crate::util::test_rng::XorShift as Rng;

    /// Whether the chunked path took `piece`; where it did, its ids must be
    /// the heap's.
    fn check(piece: &[u8], vocab: &Vocabulary, scratch: &mut Scratch, what: &str) -> bool {
        let (mut chunked, mut expected) = (vec![7], vec![7]);
        merge_heap(piece, vocab, scratch, &mut expected);
        if !merge_chunked(piece, vocab, scratch, &mut chunked) {
            assert_eq!(chunked, [7], "{what}: a piece it gives up on leaves `out` as it was");
            return false;
        }
        let differ = chunked.iter().zip(&expected).position(|(a, b)| a != b);
        assert!(chunked == expected, "{what}: {} bytes, first difference at id {differ:?}", piece.len());
        true
    }

    /// Generated runs on random vocabularies whose ranks grow: one byte, a
    /// short period (a few bytes, or tokens), a period with a different
    /// start or end, and random bytes and tokens.
    #[test]
    fn same_ids_as_the_heap_on_generated_runs() {
        let mut rng = Rng(0x51_7cc1_b727_220a);
        let mut scratch = Scratch::default();
        let (mut taken, mut runs_taken, mut runs) = (0, 0, 0);
        for round in 0..400 {
            let alphabet = &b"abcd"[..2 + rng.below(3)];
            let size = 1 + rng.below(60);
            let (vocab, tokens) = random_vocab(&mut rng, alphabet, size);
            if !vocab.ranks_grow() {
                continue;
            }
            for kind in 0..6 {
                let len = CHUNK + 1 + rng.below(6 * CHUNK);
                let period: Vec<u8> = match kind {
                    0 => vec![alphabet[rng.below(alphabet.len())]],
                    1 => (0..1 + rng.below(5)).map(|_| alphabet[rng.below(alphabet.len())]).collect(),
                    2 => tokens[rng.below(tokens.len())].clone(),
                    _ => Vec::new(),
                };
                let mut piece: Vec<u8> = match kind {
                    3 => (0..len).map(|_| alphabet[rng.below(alphabet.len())]).collect(),
                    4 => tokens.iter().cycle().skip(rng.below(tokens.len())).flatten().copied().take(len).collect(),
                    5 => {
                        let prefix = vec![alphabet[0]; rng.below(9)];
                        let unit = &tokens[rng.below(tokens.len())];
                        prefix.iter().chain(unit.iter().cycle().take(len)).copied().collect()
                    }
                    _ => period.iter().cycle().take(len).copied().collect(),
                };
                if kind == 5 {
                    piece.extend(std::iter::repeat_n(alphabet[1], rng.below(5)));
                }
                let took = check(&piece, &vocab, &mut scratch, &format!("round {round}, kind {kind}"));
                taken += took as usize;
                if kind == 0 {
                    runs += 1;
                    runs_taken += took as usize;
                }
            }
        }
        assert!(taken > 800, "the chunked path took only {taken} pieces");
        assert!(runs_taken * 10 >= runs * 9, "it took {runs_taken} of {runs} runs of one byte");
    }

    /// `merge_run` on a run of `period` cut to `len` bytes: whether it took
    /// the run, and if it did, that its ids are the heap's.
    fn check_run(period: &[u8], len: usize, vocab: &Vocabulary, scratch: &mut Scratch, what: &str) -> bool {
        let piece: Vec<u8> = period.iter().cycle().take(len).copied().collect();
        let (mut run, mut expected) = (vec![7], vec![7]);
        merge_heap(&piece, vocab, scratch, &mut expected);
        if !merge_run(&piece, vocab, scratch, &mut run) {
            assert_eq!(run, [7], "{what}: a run it leaves leaves `out` as it was");
            return false;
        }
        let differ = run.iter().zip(&expected).position(|(a, b)| a != b);
        assert!(run == expected, "{what}: period {period:?}, {len} bytes, first difference at id {differ:?}");
        true
    }

    /// Runs of a random period of 1 to `PERIOD_MAX` bytes (random bytes, or
    /// tokens end to end), random lengths, on random vocabularies: the
    /// shortcut (a chunk equal to the last one takes its ids) against the
    /// plain merge. A run one byte off is not a run: left to the other paths.
    #[test]
    fn runs_of_a_short_period_give_the_heaps_ids_on_random_vocabularies() {
        let mut rng = Rng(0x3c6e_f372_fe94_f82b);
        let mut scratch = Scratch::default();
        let (mut taken, mut tried) = (0, 0);
        for round in 0..300 {
            let alphabet = &b"abcd"[..2 + rng.below(3)];
            let size = 1 + rng.below(60);
            let (vocab, tokens) = random_vocab(&mut rng, alphabet, size);
            if !vocab.ranks_grow() {
                continue;
            }
            for kind in 0..3 {
                let mut period: Vec<u8> = match kind {
                    0 => (0..1 + rng.below(PERIOD_MAX)).map(|_| alphabet[rng.below(alphabet.len())]).collect(),
                    _ => (0..1 + rng.below(3)).flat_map(|_| tokens[rng.below(tokens.len())].clone()).collect(),
                };
                period.truncate(PERIOD_MAX);
                let len = CHUNK + 1 + rng.below(8 * CHUNK);
                tried += 1;
                taken += check_run(&period, len, &vocab, &mut scratch, &format!("round {round}, kind {kind}")) as usize;
            }
            let mut off: Vec<u8> = alphabet[..1].iter().cycle().take(2 * CHUNK).copied().collect();
            off[CHUNK] = alphabet[1];
            assert!(!merge_run(&off, &vocab, &mut scratch, &mut Vec::new()), "round {round}: not a run");
        }
        assert!(taken * 10 >= tried * 8, "merge_run took {taken} of {tried} runs");
    }

    /// Runs of chars that stay one pre-token (letters, digits, spaces,
    /// symbols, multi-byte chars and mixes of them) on GPT-2's vocabulary
    /// (from `BPEFORGE_TEST_DATA`): every one taken, with the heap's ids.
    #[test]
    fn runs_of_a_short_period_give_the_heaps_ids_with_gpt2() {
        let Some(vocab) = gpt2_vocab_from_test_data() else {
            return;
        };
        let chars: Vec<char> = "a zZ09=-_.*#é中🙂ñ\u{3000}".chars().collect();
        let mut rng = Rng(0xbb67_ae85_84ca_a73b);
        let mut scratch = Scratch::default();
        for round in 0..150 {
            let mut period = String::new();
            for _ in 0..1 + rng.below(6) {
                let c = chars[rng.below(chars.len())];
                if period.len() + c.len_utf8() <= PERIOD_MAX {
                    period.push(c);
                }
            }
            let len = CHUNK + 1 + rng.below(30 * CHUNK);
            let what = format!("round {round}");
            assert!(check_run(period.as_bytes(), len, &vocab, &mut scratch, &what), "{what}: {period:?} not taken");
        }
    }

    /// The worst cases of `benchmarks/bench_encode.py` on GPT-2's vocabulary
    /// (from `BPEFORGE_TEST_DATA`), as `encode_piece` takes them, and which of
    /// them the chunked path must take.
    #[test]
    fn same_ids_as_the_heap_on_the_worst_cases_with_gpt2() {
        let Some(vocab) = gpt2_vocab_from_test_data() else {
            return;
        };
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let common: Vec<char> = "的一是不了人我在有他这为之大来以个中上们".chars().collect();
        let digits: Vec<char> = "0123456789".chars().collect();
        let inputs: [(&str, &[char]); 7] = [
            ("one letter", &['a']),
            ("random digits", &digits),
            ("spaces", &[' ']),
            ("one emoji", &['\u{1F642}']),
            ("cjk (20 common)", &common),
            ("2-byte char run", &['é']),
            ("3-byte char run", &['中']),
        ];
        let mut scratch = Scratch::default();
        for (name, alphabet) in inputs {
            for len in [1500, 20_000, 100_001] {
                let text: String = (0..len).map(|_| alphabet[rng.below(alphabet.len())]).collect();
                assert!(check(text.as_bytes(), &vocab, &mut scratch, name), "{name}: the chunked path gave up");
                let (mut encoded, mut expected) = (Vec::new(), Vec::new());
                encode_piece(text.as_bytes(), &vocab, &mut scratch, &mut encoded);
                merge_heap(text.as_bytes(), &vocab, &mut scratch, &mut expected);
                assert!(encoded == expected, "{name}, encode_piece");
            }
        }
    }
}
