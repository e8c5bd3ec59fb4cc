//! Continuing training from an existing tokenizer, the base (docs/design.md,
//! "Continuing training").
//!
//! The base's merges, ids and special tokens are kept. Every distinct
//! pre-token of the corpus starts as the base's encoding of it (its merges
//! applied by rank, as `encode` does), then the merge loop goes on with the
//! CS336 tie-break. New merges get the ids after the base's largest id, and
//! new special tokens come after them.
//!
//! Why this continues training exactly: after `U` merges, the training loop's
//! words are the pre-tokens with the first `U` merges applied in creation
//! order, which is what applying them by rank gives (`bpe.rs`). So training to
//! `V`, and training to `U` then extending to `V`, learn the same merges.

use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHashSet;

use super::merge::{byte_symbols, learn_merges_from, MergeLimits, Start};
use super::part_cache::PartCache;
use super::table::PretokenCounts;
use super::word::WordStore;
use super::{check_counted_specials, stats_of, CountsFile, TrainOptions, TrainStats};
use crate::bpe::merges::{show, Merge};
use crate::bpe::vocab::Vocabulary;
use crate::bpe::Scratch;
use crate::encode::Encoder;
use crate::error::Error;
use crate::progress::Observer;

/// Pre-tokens per parallel encoding task: large enough that a task's
/// overhead vanishes, small enough to balance the threads.
const ENCODE_TASK: usize = 4096;

/// A base tokenizer extended with new merges.
#[derive(Debug, Clone)]
pub struct Extension {
    /// Every token with its id: the base's, one per new merge, then the new specials.
    pub vocab: Vec<(u32, Arc<[u8]>)>,
    /// The new merges only (the base's come before them).
    pub merges: Vec<Merge>,
    pub stats: TrainStats,
    /// The counted pre-tokens' length in tokens (sum of count x tokens) with
    /// the base and with the extension: the compression gained.
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// Check the base and the options before any work; returns how many merges to learn.
pub fn check_base(base: &Encoder, options: &TrainOptions) -> Result<usize, Error> {
    if options.tie_break != super::TieBreak::Cs336 {
        // HF's trainer starts from an alphabet, never from a base's merges.
        return Err(Error::InvalidArgument(
            "tie_break=\"hf\" trains from scratch; continuing a base tokenizer takes tie_break=\"cs336\"".into(),
        ));
    }
    for token in base.special_tokens() {
        if !options.special_tokens.contains(token) {
            return Err(Error::InvalidArgument(format!(
                "the base's special token {token:?} is not among the special tokens; \
                 an extension keeps the base's special tokens (add it)"
            )));
        }
    }
    check_merges_make_every_token(base)?;
    let base_tokens = base.vocab().tokens().count();
    let new_specials = new_special_tokens(base, &options.special_tokens).count();
    let kept = base_tokens + new_specials;
    match options.vocab_size.checked_sub(kept) {
        Some(wanted) if wanted > 0 => Ok(wanted),
        _ => Err(Error::InvalidArgument(format!(
            "vocab_size {} must be larger than the base's {base_tokens} tokens{}: \
             an extension adds merges to them",
            options.vocab_size,
            if new_specials > 0 { format!(" plus {new_specials} new special tokens") } else { String::new() },
        ))),
    }
}

/// A base whose merges do not build one of its tokens is not a BPE that
/// training could continue: that token could never appear in an encoding.
fn check_merges_make_every_token(base: &Encoder) -> Result<(), Error> {
    let vocab = base.vocab();
    let made: FxHashSet<u32> = vocab.merged_ids().chain((0..=255u8).map(|b| vocab.byte_id(b))).collect();
    let specials: FxHashSet<u32> = base.special_ids().iter().copied().collect();
    for (id, bytes) in vocab.tokens() {
        // Ids that repeat another token's bytes are made as that token (the lowest id).
        let made_as = vocab.id(bytes).unwrap_or(id);
        if !specials.contains(&id) && !made.contains(&made_as) {
            return Err(Error::InvalidArgument(format!(
                "the base's merges do not make its token {} (id {id}): every token of a base \
                 that is not a special token must be a byte or the result of a merge; if it is a special \
                 token the base's files do not record, declare it (special_tokens=, --special-token)",
                show(bytes)
            )));
        }
    }
    Ok(())
}

fn new_special_tokens<'a>(base: &'a Encoder, specials: &'a [String]) -> impl Iterator<Item = &'a String> + 'a {
    specials.iter().filter(|token| !base.special_tokens().contains(token))
}

/// Learn merges from `counted` on top of `base`. `options.special_tokens`
/// must be the ones the table was counted with.
pub fn extend_from_counts(
    counted: CountsFile,
    options: &TrainOptions,
    base: &Encoder,
    pool: &rayon::ThreadPool,
    observer: &dyn Observer,
) -> Result<Extension, Error> {
    let wanted = check_base(base, options)?;
    check_counted_specials(&counted, options)?;
    let mut stats = stats_of(&counted);
    let started = std::time::Instant::now();
    let start = start_from_base(&counted.counts, base.vocab(), pool);
    drop(counted);
    let limits = MergeLimits { min_frequency: options.min_frequency, max_token_length: options.max_token_length };
    let learned = learn_merges_from(start, wanted, limits, observer)?;
    stats.merge_time = started.elapsed();
    let vocab = layout_extension(base, &learned.merges, &options.special_tokens);
    Ok(Extension {
        vocab,
        merges: learned.merges,
        stats,
        tokens_before: learned.tokens_before,
        tokens_after: learned.tokens_after,
    })
}

/// The merge loop's starting point: each pre-token as the base encodes it.
/// Symbols are the bytes, then one per token a base merge makes; every
/// distinct pre-token is encoded once, in parallel, a long one a part at a
/// time (`part_cache.rs`).
pub(super) fn start_from_base(counts: &PretokenCounts, vocab: &Vocabulary, pool: &rayon::ThreadPool) -> Start {
    const NONE: u32 = u32::MAX;
    let mut symbols = byte_symbols();
    let mut symbol_of_id = vec![NONE; vocab.len()];
    for byte in 0..=255u8 {
        symbol_of_id[vocab.byte_id(byte) as usize] = byte as u32;
    }
    let mut merged: Vec<u32> = vocab.merged_ids().collect();
    merged.sort_unstable();
    for id in merged {
        // Merged ids are the lowest id of their bytes, so their bytes are distinct.
        symbol_of_id[id as usize] = symbols.len() as u32;
        symbols.push(Arc::from(vocab.token(id).expect("a merge makes a token of the vocab")));
    }

    let short = ShortPretokens::from(counts);
    let pretokens = short.with_long(counts);
    let encoded: Vec<EncodedChunk> = pool.install(|| {
        pretokens
            .par_chunks(ENCODE_TASK)
            .map_init(
                || (PartCache::default(), Scratch::default(), Vec::new()),
                |(parts, scratch, ids), pretokens| {
                    let mut chunk = EncodedChunk::default();
                    for &(pretoken, count) in pretokens {
                        ids.clear();
                        parts.encode(pretoken, vocab, scratch, ids);
                        chunk.push(ids, &symbol_of_id, count);
                    }
                    chunk
                },
            )
            .collect()
    });

    let words = encoded.iter().map(|chunk| chunk.lens.len()).sum();
    let symbols_in_words = encoded.iter().map(|chunk| chunk.symbols.len()).sum();
    let mut start = Start { symbols, words: WordStore::with_capacity(words, symbols_in_words), ..Start::default() };
    start.word_counts.reserve_exact(words);
    for chunk in encoded {
        start.fixed_tokens += chunk.fixed_tokens;
        let mut at = 0;
        for (&len, &count) in chunk.lens.iter().zip(&chunk.counts) {
            start.words.push_symbols(&chunk.symbols[at..at + len as usize]);
            start.word_counts.push(count);
            at += len as usize;
        }
    }
    start
}

/// The short pre-tokens of a count table in one byte arena (the table
/// holds them packed and hands them out one at a time, unpacked), so that
/// threads can share them out with the long ones, which are borrowed from
/// the table as they are: a copy of every pre-token's bytes was 0.8 s and
/// 600 MB at 1 GB of SuperBPE's lines.
struct ShortPretokens {
    bytes: Vec<u8>,
    /// Per pre-token: its end in `bytes` and its count.
    ends: Vec<(usize, u64)>,
}

impl From<&PretokenCounts> for ShortPretokens {
    fn from(counts: &PretokenCounts) -> Self {
        let mut short = Self { bytes: Vec::new(), ends: Vec::new() };
        counts.for_each_short(|bytes, count| {
            short.bytes.extend_from_slice(bytes);
            short.ends.push((short.bytes.len(), count));
        });
        short
    }
}

impl ShortPretokens {
    /// Every pre-token of `counts` with its count, in `for_each`'s order.
    fn with_long<'a>(&'a self, counts: &'a PretokenCounts) -> Vec<(&'a [u8], u64)> {
        let mut pretokens = Vec::with_capacity(counts.len());
        let mut start = 0;
        for &(end, count) in &self.ends {
            pretokens.push((&self.bytes[start..end], count));
            start = end;
        }
        pretokens.extend(counts.long());
        pretokens
    }
}

/// The words of one encoding task, back to back.
#[derive(Default)]
struct EncodedChunk {
    symbols: Vec<u32>,
    lens: Vec<u32>,
    counts: Vec<u64>,
    /// Tokens of the pre-tokens that are one token already (they cannot merge).
    fixed_tokens: u64,
}

impl EncodedChunk {
    fn push(&mut self, ids: &[u32], symbol_of_id: &[u32], count: u64) {
        if ids.len() < 2 {
            self.fixed_tokens += count * ids.len() as u64;
            return;
        }
        self.symbols.extend(ids.iter().map(|&id| symbol_of_id[id as usize]));
        self.lens.push(ids.len() as u32);
        self.counts.push(count);
    }
}

/// The base's tokens with their ids, then the new merges from the id after
/// the base's largest, then the new special tokens.
fn layout_extension(base: &Encoder, merges: &[Merge], specials: &[String]) -> Vec<(u32, Arc<[u8]>)> {
    let vocab = base.vocab();
    let mut layout: Vec<(u32, Arc<[u8]>)> = vocab.tokens().map(|(id, bytes)| (id, Arc::from(bytes))).collect();
    let merged = merges.iter().map(|(left, right)| Arc::from([&**left, &**right].concat()));
    let special = new_special_tokens(base, specials).map(|token| Arc::from(token.as_bytes()));
    layout.extend((vocab.len() as u32..).zip(merged.chain(special)));
    layout
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretokenize::pattern::Pattern;
    use crate::progress::Silent;
    use crate::train::train_from_counts;

    const SPECIAL: &str = "<|endoftext|>";

    /// A small corpus with repeats, long words, digits and non-ASCII text.
    fn corpus() -> String {
        let words = ["low", "lower", "newest", "widest", "über", "naïve", "12345", "aaaa", "the", "then", "それ"];
        let mut text = String::new();
        let mut state = 7u64;
        for _ in 0..3000 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            text.push(' ');
            text.push_str(words[(state >> 33) as usize % words.len()]);
            if state.is_multiple_of(5) {
                text.push_str(words[(state >> 40) as usize % words.len()]);
            }
        }
        text
    }

    fn counted(text: &str) -> CountsFile {
        let mut counts = PretokenCounts::default();
        Pattern::new("gpt2").unwrap().for_each_piece(text, |piece| counts.insert(piece.as_bytes(), 1)).unwrap();
        CountsFile {
            pattern: "gpt2".into(),
            special_tokens: vec![SPECIAL.into()],
            bytes_counted: text.len() as u64,
            unmatched_bytes: 0,
            counts,
        }
    }

    fn options(vocab_size: usize) -> TrainOptions {
        TrainOptions { num_threads: Some(2), ..TrainOptions::new(vocab_size, vec![SPECIAL.into()]) }
    }

    fn encoder(result: &crate::TrainResult) -> Encoder {
        let entries = result.vocab.iter().enumerate().map(|(id, bytes)| (id as u32, bytes.to_vec())).collect();
        let merges: Vec<(Vec<u8>, Vec<u8>)> = result.merges.iter().map(|(l, r)| (l.to_vec(), r.to_vec())).collect();
        let vocab = Vocabulary::new(entries, &merges).unwrap();
        Encoder::new(vocab, &[SPECIAL.into()], Pattern::new("gpt2").unwrap()).unwrap()
    }

    #[test]
    fn training_to_u_then_extending_to_v_is_training_to_v() {
        let text = corpus();
        let pool = crate::train::build_pool(Some(2)).unwrap();
        let whole = train_from_counts(counted(&text), &options(400), &Silent).unwrap();
        for u in [257, 260, 300, 399] {
            let base = train_from_counts(counted(&text), &options(u), &Silent).unwrap();
            let extended = extend_from_counts(counted(&text), &options(400), &encoder(&base), &pool, &Silent).unwrap();
            let merges: Vec<Merge> = base.merges.iter().chain(&extended.merges).cloned().collect();
            assert_eq!(merges, whole.merges, "base of {u} tokens");
            // The same tokens; only the special token's id differs (it stays where the base had it).
            let mut tokens: Vec<&[u8]> = extended.vocab.iter().map(|(_, bytes)| &**bytes).collect();
            let mut expected: Vec<&[u8]> = whole.vocab.iter().map(|bytes| &**bytes).collect();
            tokens.sort();
            expected.sort();
            assert_eq!(tokens, expected);
            let base_ids: Vec<(u32, &[u8])> = base.vocab.iter().enumerate().map(|(id, b)| (id as u32, &**b)).collect();
            let kept: Vec<(u32, &[u8])> =
                extended.vocab[..base.vocab.len()].iter().map(|(id, b)| (*id, &**b)).collect();
            assert_eq!(kept, base_ids, "the base's ids are kept");
            assert_eq!(extended.vocab.last().unwrap().0 as usize, whole.vocab.len() - 1);
            assert!(extended.tokens_after < extended.tokens_before || extended.merges.is_empty());
        }
    }

    #[test]
    fn vocab_size_not_above_the_base_is_refused() {
        let text = corpus();
        let base = train_from_counts(counted(&text), &options(300), &Silent).unwrap();
        let err = check_base(&encoder(&base), &options(300)).unwrap_err().to_string();
        assert!(err.contains("must be larger than the base's 300 tokens"), "{err}");
        assert_eq!(check_base(&encoder(&base), &options(301)).unwrap(), 1);
    }

    #[test]
    fn a_missing_base_special_token_is_refused() {
        let base = train_from_counts(counted(&corpus()), &options(300), &Silent).unwrap();
        let options = TrainOptions { special_tokens: vec![], ..options(400) };
        let err = check_base(&encoder(&base), &options).unwrap_err().to_string();
        assert!(err.contains("<|endoftext|>") && err.contains("keeps the base's special tokens"), "{err}");
    }

    #[test]
    fn a_token_no_merge_makes_is_refused() {
        let mut entries: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (b as u32, vec![b])).collect();
        entries.push((256, b"ab".to_vec()));
        entries.push((257, b"xyz".to_vec()));
        let vocab = Vocabulary::new(entries, &[(b"a".to_vec(), b"b".to_vec())]).unwrap();
        let base = Encoder::new(vocab, &[], Pattern::new("gpt2").unwrap()).unwrap();
        let options = TrainOptions::new(300, vec![]);
        let err = check_base(&base, &options).unwrap_err().to_string();
        assert!(err.contains("\"xyz\" (id 257)"), "{err}");
    }
}
