//! bpeforge: byte-level BPE training and encoding in pure Rust.
//!
//! No Python here: `crates/bpeforge-py` is the thin PyO3 layer over this crate.
//! Map of the crate, one concept per module:
//! - `pattern`: the pre-tokenizer (a preset's scanner, or a custom regex);
//! - `pattern_names`: presets by any spelling, misspelt ones refused;
//! - `scan`: the presets (gpt2, cl100k, o200k, llama3, qwen2) as hand-written scanners;
//! - `pretokenize`: the GPT-2 scanner as an iterator, and where a text may be cut;
//! - `charclass` + `unicode_tables`: their character classes, generated from `regex`;
//! - `specials`: splitting on special tokens, longest first;
//! - `chunking`: reading files in chunks cut where the result cannot change;
//! - `shards`: byte ranges of a big file to count or encode on other machines;
//! - `train`: counting and the merge loop;
//! - `vocab`, `bpe`, `encode`: lookup tables, merges inside a pre-token, the encoder;
//! - `rank_sweep`: `bpe`'s path for pre-tokens over 1 KiB (issue 12's worst cases: 1 MB of one letter);
//! - `char_merges`: which characters a pre-token may start its merges from as tokens, provably unchanged ids;
//! - `min_tree`: the tournament tree `bpe`'s merge loop takes the lowest rank from (pieces of 33-1024 bytes);
//! - `pair_filter`: a Bloom filter that answers "no merge" for most pairs before the merge table;
//! - `ranks`: the merges a tiktoken rank table implies;
//! - `hf`: a byte-level BPE `tokenizer.json` of HF `tokenizers`, its whole pipeline run with its ids;
//! - `gpt2_files`, `rank_file`: GPT-2's `vocab.json` and `merges.txt`, and tiktoken's rank files, read
//!   without Python;
//! - `piece_table`, `cache`, `shared_long`: the encoder's piece caches: a thread's own, and
//!   the one kept across calls and shared by threads (and its level for long pieces);
//! - `seeds`: the vocabulary's tokens a thread's piece table starts with, so first calls merge less;
//! - `prefetch`: the cache hint the encoder's tables and the merge loop use;
//! - `recycled`: large id buffers NumPy gave back, kept for the next call (pages already mapped);
//! - `utf32`: UTF-8 from code points, for Python `str`s the binding reads as code points;
//! - `packed_ids`: ids as the little-endian bytes of a token file (uint32 lent, not copied);
//! - `threads`: how many threads a call runs on (at most the cores), in pools that end with the call;
//! - `progress`, `error`: how work reports, stops and fails;
//! - `test_rng` (tests only): the seeded xorshift the tests draw random inputs from.

pub mod append_file;
pub mod bpe;
pub mod cache;
pub mod char_merges;
pub mod charclass;
pub mod chunking;
pub mod encode;
pub mod encode_files;
pub mod error;
pub mod gpt2_files;
pub mod hf;
pub mod huge_pages;
pub mod input;
pub mod long_pieces;
mod min_tree;
pub mod packed;
pub mod packed_ids;
mod pair_filter;
pub mod pattern;
pub mod pattern_names;
pub mod piece_table;
pub mod prefetch;
pub mod pretokenize;
pub mod progress;
pub mod rank_file;
mod rank_sweep;
pub mod ranks;
pub mod recycled;
mod scan;
pub mod seeds;
pub mod shards;
mod shared_long;
pub mod specials;
#[cfg(test)]
mod test_rng;
pub mod threads;
pub mod token_index;
pub mod train;
mod unicode_tables;
pub mod utf32;
pub mod vocab;

pub use encode::Encoder;
pub use error::Error;
pub use hf::HfTokenizer;
pub use pattern::Pattern;
pub use progress::{Observer, Phase, Silent};
pub use train::{train, TrainOptions, TrainResult, TrainStats};
pub use vocab::Vocabulary;
