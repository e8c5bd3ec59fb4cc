//! bpeforge: byte-level BPE training and encoding in pure Rust.
//!
//! No Python here: `crates/bpeforge-py` is the thin PyO3 layer over this crate.
//! Each folder is one concept:
//! - `pretokenize/`: the pre-tokenizer (presets' scanners, custom regexes,
//!   special tokens, where a text may be cut);
//! - `bpe/`: the vocabulary and the merges inside one pre-token;
//! - `encode/`: the encoder, its piece caches (`encode/cache/`) and the
//!   encoding of files;
//! - `train/`: counting pre-tokens and the merge loop;
//! - `formats/`: GPT-2's and tiktoken's tokenizer files;
//! - `hf/`: a byte-level BPE `tokenizer.json` of HF `tokenizers`, its whole
//!   pipeline (normalizers, pre-tokenizers, added tokens, post-processors) run
//!   with its ids;
//! - `io/`: reading inputs in chunks, shards, writing outputs;
//! - `util/`: building blocks with no tokenizer knowledge (threads, prefetch,
//!   packed keys, buffers);
//! - `progress`, `error`: how work reports, stops and fails.
//!
//! The modules are private to the crate; what the binding, the examples and
//! the fuzzers use is re-exported below, in one place.

pub(crate) mod bpe;
pub(crate) mod encode;
pub(crate) mod error;
pub(crate) mod formats;
pub(crate) mod hf;
pub(crate) mod io;
pub(crate) mod pretokenize;
pub(crate) mod progress;
pub(crate) mod train;
pub(crate) mod util;

pub use bpe::merges::{IdMerge, Merge};
pub use bpe::vocab::Vocabulary;
pub use bpe::{encode_piece, Scratch};
pub use encode::cache::shared::DEFAULT_CACHE_BYTES;
pub use encode::files::{encode_files, Sink, ENCODE_CHUNK_SIZE};
pub use encode::jsonl_records::{EncodedRecords, JsonlRecords, RECORDS_BLOCK_BYTES};
pub use encode::{ids_buffer, BatchText, EncodeState, Encoder, PieceRun};
pub use error::Error;
pub use formats::gpt2::{parse_merges, parse_vocab};
pub use formats::gpt2_vocab::gpt2_files_vocabulary;
pub use formats::packed_vocab::{pack_vocabulary, unpack_vocabulary};
pub use formats::rank_merges::{merge_splits, merges_from_ranks};
pub use formats::rank_vocab::{rank_file_vocabulary, SpecialId};
pub use formats::tiktoken::parse_rank_file;
pub use hf::{HfTokenizer, Workspace};
pub use io::append_file::Appender;
pub use io::chunking::{ChunkReader, Source};
pub use io::input::open_input;
pub use io::jsonl::LineForPython;
pub use io::packed_ids::PackedIds;
pub use io::shards::plan_shards;
pub use pretokenize::cuts::is_split_point;
pub use pretokenize::gpt2_splitter::Gpt2Splitter;
pub use pretokenize::pattern::{Pattern, PRESETS};
pub use pretokenize::pattern_names::resolve as resolve_pattern;
pub use pretokenize::specials::{Piece, SpecialSplitter};
pub use pretokenize::UNICODE_VERSION;
pub use progress::{Observer, Phase, Silent};
pub use train::count::add_texts;
pub use train::extend::extend_from_counts;
pub use train::superword::SuperwordRules;
pub use train::{
    build_pool, count, extend, train, train_from_counts, train_superwords_from_counts, CountSettings, CountsFile,
    Documents, Extension, TieBreak, TrainOptions, TrainResult, TrainStats, DEFAULT_CHUNK_SIZE,
};
pub use util::huge_pages::vec_with_capacity;
pub use util::recycled::{give_back, MIN_BYTES as RECYCLED_MIN_BYTES};
pub use util::simd_level::{simd_report, SimdLevel, SimdReport, SIMD_ENV};
pub use util::threads::{max_threads, thread_count, CallPool};
pub use util::utf32::push_utf8;
