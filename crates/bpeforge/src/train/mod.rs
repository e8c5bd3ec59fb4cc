//! Byte-level BPE training with the exact CS336 semantics (DESIGN §1.1).
//!
//! `train` runs in numbered phases, one helper each:
//! 1. check the arguments and build the thread pool;
//! 2. read, pre-tokenize and count the corpus (`count.rs`), in parallel;
//! 3. learn merges over the distinct pre-tokens (`merge.rs`);
//! 4. lay out the vocabulary: bytes 0..=255, one id per merge, then specials.
//!
//! Phase 2 alone is `count` (its table can be saved, see `counts_file.rs`, and
//! added up across machines); phases 3-4 alone are `train_from_counts`.

pub mod count;
pub mod counts_file;
mod deltas;
pub mod extend;
mod hf_ids;
mod hf_loop;
pub mod hf_merge;
mod hf_occurrences;
mod holder_walk;
pub mod merge;
pub mod modes;
mod occurrences;
mod pair_build;
mod pairs;
mod part_cache;
mod positions;
pub mod profile;
pub mod queue;
pub mod short_counts;
mod step_changes;
pub mod superword;
mod superword_cs336;
pub mod table;
mod tiered_queue;
pub mod word;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bpe::merges::Merge;
use crate::encode::Encoder;
use crate::error::Error;
use crate::io::chunking::Source;
use crate::pretokenize::pattern::Pattern;
use crate::pretokenize::specials::SpecialSplitter;
use crate::progress::Observer;
use crate::util::threads::CallPool;

pub use counts_file::CountsFile;
pub use extend::Extension;
pub use modes::{Documents, TieBreak};
pub use profile::CountProfile;

/// The default pre-tokenizer (CS336's); count files record the one used.
pub const PATTERN: &str = "gpt2";

/// Default read chunk: big enough that per-chunk overhead vanishes, small
/// enough that a batch of `2 x threads` chunks stays a few tens of MB.
pub const DEFAULT_CHUNK_SIZE: usize = 4 << 20;

#[derive(Debug, Clone)]
pub struct TrainOptions {
    pub vocab_size: usize,
    pub special_tokens: Vec<String>,
    /// The pre-tokenizer (`Pattern::new`): "gpt2", "cl100k", "o200k", "llama3", "qwen2" or a regex.
    pub pattern: String,
    /// Worker threads for pre-tokenization; `None` means all cores.
    pub num_threads: Option<usize>,
    /// Bytes per read chunk; the result never depends on it.
    pub chunk_size: usize,
    /// Stop when the best pair occurs fewer times than this (0 or 1: never).
    pub min_frequency: u64,
    /// Never make a token longer than this many bytes (`None`: no limit).
    pub max_token_length: Option<usize>,
    /// Split counting's time into pre-tokenizing and counting (a little slower).
    pub profile: bool,
    /// Which pair wins a tie, and what `vocab_size` counts (`modes.rs`).
    pub tie_break: TieBreak,
    /// What a document is: a whole file, or each line of it (`modes.rs`).
    pub documents: Documents,
}

impl TrainOptions {
    /// The CS336 semantics: no frequency floor, no length limit.
    pub fn new(vocab_size: usize, special_tokens: Vec<String>) -> Self {
        Self {
            vocab_size,
            special_tokens,
            pattern: PATTERN.to_string(),
            num_threads: None,
            chunk_size: DEFAULT_CHUNK_SIZE,
            min_frequency: 0,
            max_token_length: None,
            profile: false,
            tie_break: TieBreak::Cs336,
            documents: Documents::Files,
        }
    }
}

/// What training learned, with figures for the summary.
#[derive(Debug, Clone)]
pub struct TrainResult {
    /// Token bytes by id: 256 single bytes, one per merge, then the specials.
    pub vocab: Vec<Arc<[u8]>>,
    pub merges: Vec<Merge>,
    pub stats: TrainStats,
}

#[derive(Debug, Clone, Default)]
pub struct TrainStats {
    pub bytes_read: u64,
    pub unique_pretokens: usize,
    pub pretokenize_time: Duration,
    pub merge_time: Duration,
    pub threads: usize,
    pub count_profile: CountProfile,
    /// Bytes no match of a custom pattern covered: each run of them was
    /// counted as a pre-token of its own (0 for the presets).
    pub unmatched_bytes: u64,
    /// Bytes of the longest pre-token: memory and the longest tokens grow
    /// with it (a file of one repeated byte is one pre-token).
    pub longest_pretoken: usize,
}

/// Train on `paths`, one corpus in which each file ends a document.
pub fn train(paths: &[PathBuf], options: &TrainOptions, observer: &dyn Observer) -> Result<TrainResult, Error> {
    // Refuse a size too small before reading the corpus; HF's vocabulary
    // holds only the bytes seen, so any size is a valid request there.
    if options.tie_break == TieBreak::Cs336 {
        merges_wanted(options.vocab_size, options.special_tokens.len())?;
    }
    let (counted, run) = count_paths(paths, options, observer)?;
    let mut result = train_from_counts(counted, options, observer)?;
    run.fill(&mut result.stats);
    Ok(result)
}

/// Continue training `base` on `paths` (`extend.rs`). `options.special_tokens`
/// must hold the base's; `options.vocab_size` counts every token, the base's included.
pub fn extend(
    paths: &[PathBuf],
    options: &TrainOptions,
    base: &Encoder,
    observer: &dyn Observer,
) -> Result<Extension, Error> {
    extend::check_base(base, options)?;
    let (counted, run) = count_paths(paths, options, observer)?;
    let pool = build_pool(options.num_threads)?;
    let mut extension = extend::extend_from_counts(counted, options, base, &pool, observer)?;
    run.fill(&mut extension.stats);
    Ok(extension)
}

/// What the counting phase of a run took.
struct CountRun {
    pretokenize_time: Duration,
    threads: usize,
    count_profile: CountProfile,
}

impl CountRun {
    fn fill(self, stats: &mut TrainStats) {
        stats.pretokenize_time = self.pretokenize_time;
        stats.threads = self.threads;
        stats.count_profile = self.count_profile;
    }
}

fn count_paths(
    paths: &[PathBuf],
    options: &TrainOptions,
    observer: &dyn Observer,
) -> Result<(CountsFile, CountRun), Error> {
    let started = Instant::now();
    let settings = CountSettings {
        special_tokens: &options.special_tokens,
        pattern: &options.pattern,
        num_threads: options.num_threads,
        chunk_size: options.chunk_size,
        profile: options.profile,
        documents: options.documents,
    };
    let sources: Vec<Source> = paths.iter().cloned().map(Source::whole).collect();
    let (counted, threads, count_profile) = count(&sources, &settings, observer)?;
    Ok((counted, CountRun { pretokenize_time: started.elapsed(), threads, count_profile }))
}

/// How a corpus is counted.
#[derive(Debug, Clone, Copy)]
pub struct CountSettings<'a> {
    pub special_tokens: &'a [String],
    pub pattern: &'a str,
    pub num_threads: Option<usize>,
    pub chunk_size: usize,
    /// Split counting's time into pre-tokenizing and counting (`profile.rs`).
    pub profile: bool,
    /// Whole files (split on special tokens), or each line a document too.
    pub documents: Documents,
}

/// Phase 2 alone: the pre-token counts of `sources`, the number of threads
/// used, and where the time went.
pub fn count(
    sources: &[Source],
    settings: &CountSettings<'_>,
    observer: &dyn Observer,
) -> Result<(CountsFile, usize, CountProfile), Error> {
    let specials = SpecialSplitter::new(settings.special_tokens)?;
    let pattern = Pattern::new(settings.pattern)?;
    let pool = build_pool(settings.num_threads)?;
    let how = count::Counting {
        specials: &specials,
        pattern: &pattern,
        chunk_size: settings.chunk_size,
        profile: settings.profile,
        lines: settings.documents == Documents::Lines,
    };
    let (counts, bytes_counted, profile) = count::count_files(sources, &how, &pool, observer)?;
    let counted = CountsFile {
        pattern: pattern.spec().to_string(),
        special_tokens: settings.special_tokens.to_vec(),
        bytes_counted,
        unmatched_bytes: pattern.unmatched_bytes(),
        counts,
    };
    Ok((counted, pool.current_num_threads(), profile))
}

/// Phases 3 and 4 from a count table. The special tokens of `options` must be
/// the ones the table was counted with.
pub fn train_from_counts(
    counted: CountsFile,
    options: &TrainOptions,
    observer: &dyn Observer,
) -> Result<TrainResult, Error> {
    let specials = SpecialSplitter::new(&options.special_tokens)?;
    check_counted_specials(&counted, options)?;
    if options.tie_break == TieBreak::Hf {
        return train_hf(counted, options, specials.tokens(), observer);
    }
    let max_merges = merges_wanted(options.vocab_size, specials.tokens().len())?;
    let mut stats = stats_of(&counted);
    let started = Instant::now();
    let limits =
        merge::MergeLimits { min_frequency: options.min_frequency, max_token_length: options.max_token_length };
    let learned = merge::learn_merges(counted.counts, max_merges, limits, observer)?;
    stats.merge_time = started.elapsed();
    let vocab = layout_vocab(learned.tokens, specials.tokens());
    Ok(TrainResult { vocab, merges: learned.merges, stats })
}

/// The limits HF's loop (`hf_merge.rs`) stops at, as `options` set them.
fn hf_limits(options: &TrainOptions) -> hf_merge::HfLimits {
    hf_merge::HfLimits {
        vocab_size: options.vocab_size,
        min_frequency: options.min_frequency,
        max_token_length: options.max_token_length,
    }
}

/// `train_from_counts` with HF's loop (`hf_merge.rs`): `vocab_size` counts
/// HF's vocabulary, and the result lays out bytes, merges, specials as ever.
fn train_hf(
    counted: CountsFile,
    options: &TrainOptions,
    specials: &[String],
    observer: &dyn Observer,
) -> Result<TrainResult, Error> {
    let mut stats = stats_of(&counted);
    let started = Instant::now();
    let limits = hf_limits(options);
    let learned = hf_merge::learn_merges_hf(&counted.counts, specials, limits, observer)?;
    stats.merge_time = started.elapsed();
    let vocab = layout_vocab(learned.tokens, specials);
    Ok(TrainResult { vocab, merges: learned.merges, stats })
}

/// SuperBPE's stage 2 from a count table of its pieces: replay `inherited`
/// (stage 1's first merges), then learn superword merges that `rules` allow,
/// with `options.tie_break`'s loop and vocabulary count, until the vocabulary
/// reaches `options.vocab_size` (or grows by `new_tokens` past the replay).
/// - CS336 (`superword_cs336.rs`): every inherited merge is kept, and
///   `vocab_size` counts 256 bytes + merges + specials as ever;
/// - HF (`superword.rs`): the reference's loop, inherited merges whose pair
///   occurs nowhere dropped, and `vocab_size` counts HF's vocabulary.
///
/// Also returns the pieces' length in tokens after the replay and at the end.
/// `counted` is dropped as soon as the pieces are ids (its table holds every
/// distinct line, about the corpus's size).
pub fn train_superwords_from_counts(
    counted: CountsFile,
    options: &TrainOptions,
    inherited: &[Merge],
    rules: &superword::SuperwordRules,
    new_tokens: Option<usize>,
    observer: &dyn Observer,
) -> Result<(TrainResult, u64, u64), Error> {
    let specials = SpecialSplitter::new(&options.special_tokens)?;
    check_counted_specials(&counted, options)?;
    let mut stats = stats_of(&counted);
    let started = Instant::now();
    let (merges, tokens, replayed, learnt) = match options.tie_break {
        TieBreak::Hf => {
            let limits = hf_limits(options);
            let (learned, replayed, learnt) = superword::learn_superwords(
                counted.counts,
                specials.tokens(),
                inherited,
                rules,
                limits,
                new_tokens,
                observer,
            )?;
            (learned.merges, learned.tokens, replayed, learnt)
        }
        TieBreak::Cs336 => {
            let wanted = match new_tokens {
                Some(wanted) => wanted,
                None => superword_merges_wanted(options.vocab_size, specials.tokens().len(), inherited.len())?,
            };
            let limits =
                merge::MergeLimits { min_frequency: options.min_frequency, max_token_length: options.max_token_length };
            let pool = build_pool(options.num_threads)?;
            let learned = superword_cs336::learn_superwords_cs336(
                counted.counts,
                inherited,
                rules,
                limits,
                wanted,
                &pool,
                observer,
            )?;
            let inherited_tokens = inherited.iter().map(|(left, right)| merge::concat(left, right));
            let tokens = inherited_tokens.chain(learned.tokens).collect();
            let merges = inherited.iter().cloned().chain(learned.merges).collect();
            (merges, tokens, learned.tokens_before, learned.tokens_after)
        }
    };
    stats.merge_time = started.elapsed();
    let vocab = layout_vocab(tokens, specials.tokens());
    Ok((TrainResult { vocab, merges, stats }, replayed, learnt))
}

/// How many merges stage 2 learns past the inherited ones (CS336's count).
fn superword_merges_wanted(vocab_size: usize, num_specials: usize, inherited: usize) -> Result<usize, Error> {
    let minimum = 256 + num_specials + inherited;
    vocab_size.checked_sub(minimum).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "vocab_size {vocab_size} is too small: it must be at least {minimum} \
             (256 byte tokens + {num_specials} special tokens + {inherited} inherited merges)"
        ))
    })
}

fn check_counted_specials(counted: &CountsFile, options: &TrainOptions) -> Result<(), Error> {
    if counted.special_tokens != options.special_tokens {
        return Err(Error::InvalidArgument(format!(
            "the counts were made with special tokens {:?}, not {:?}; train with the same special tokens",
            counted.special_tokens, options.special_tokens
        )));
    }
    Ok(())
}

/// The figures of a run known from its count table alone.
fn stats_of(counted: &CountsFile) -> TrainStats {
    TrainStats {
        bytes_read: counted.bytes_counted,
        unique_pretokens: counted.counts.len(),
        unmatched_bytes: counted.unmatched_bytes,
        longest_pretoken: counted.counts.longest(),
        ..TrainStats::default()
    }
}

/// How many merges reach `vocab_size` after the 256 bytes and the specials.
fn merges_wanted(vocab_size: usize, num_specials: usize) -> Result<usize, Error> {
    let minimum = 256 + num_specials;
    vocab_size.checked_sub(minimum).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "vocab_size {vocab_size} is too small: it must be at least {minimum} \
             (256 byte tokens + {num_specials} special tokens)"
        ))
    })
}

/// The pool a training or counting call runs on: `num_threads` bounded by
/// the cores (`threads.rs`), its threads gone when it is dropped.
pub fn build_pool(num_threads: Option<usize>) -> Result<CallPool, Error> {
    CallPool::new(num_threads, "bpeforge")
}

/// `merged`: the token of each merge (`merge::Learned::tokens`), whose
/// bytes the vocabulary shares rather than copies.
fn layout_vocab(merged: Vec<Arc<[u8]>>, specials: &[String]) -> Vec<Arc<[u8]>> {
    let bytes = (0..=255u8).map(|b| Arc::from([b].as_slice()));
    let special = specials.iter().map(|s| Arc::from(s.as_bytes()));
    bytes.chain(merged).chain(special).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocab_size_below_the_minimum_is_refused_with_the_minimum() {
        let err = merges_wanted(256, 1).unwrap_err().to_string();
        assert!(err.contains("at least 257"), "{err}");
        assert_eq!(merges_wanted(300, 1).unwrap(), 43);
    }

    #[test]
    fn hf_ties_accept_a_vocab_size_below_256_and_count_the_alphabet() {
        let path = std::env::temp_dir().join(format!("bpeforge-train-hf-{}.txt", std::process::id()));
        std::fs::write(&path, "ab ab\nab\n").unwrap();
        let options = TrainOptions {
            tie_break: TieBreak::Hf,
            documents: Documents::Lines,
            num_threads: Some(1),
            ..TrainOptions::new(6, vec![])
        };
        // Alphabet a b \n ' ' = 4 ids: a vocab_size of 6 is two merges,
        // (a, b) then (' ', ab).
        let result = train(std::slice::from_ref(&path), &options, &crate::progress::Silent).unwrap();
        std::fs::remove_file(&path).unwrap();
        let merges: Vec<(&[u8], &[u8])> = result.merges.iter().map(|(l, r)| (&**l, &**r)).collect();
        assert_eq!(merges, [(&b"a"[..], &b"b"[..]), (b" ", b"ab")]);
    }

    #[test]
    fn layout_is_bytes_then_merges_then_specials() {
        let vocab = layout_vocab(vec![Arc::from(&b"ab"[..])], &["<|e|>".to_string()]);
        assert_eq!(vocab.len(), 258);
        assert_eq!(&*vocab[97], b"a");
        assert_eq!(&*vocab[256], b"ab"); // id 256 + rank 0
        assert_eq!(&*vocab[257], b"<|e|>");
    }
}
