//! The pre-tokenizer: a text split into the pieces merges stay inside.
//!
//! `pattern` picks a preset's hand-written scanner (`scan/`) or a custom
//! regex, and `pattern_names` resolves a preset's name (misspellings
//! refused); `specials` splits on special tokens first; `cuts` says where a
//! text may be cut so each part scans alone; `charclass` (over the generated
//! `unicode_tables`) gives the scanners their character classes;
//! `gpt2_splitter` is GPT-2's scanner as an iterator; `superword` and
//! `superword_stage1` cut SuperBPE's stage-2 and stage-1 regexes without
//! running them.

pub(crate) mod charclass;
pub(crate) mod cuts;
pub(crate) mod gpt2_splitter;
pub(crate) mod pattern;
pub(crate) mod pattern_names;
pub(crate) mod scan;
pub(crate) mod specials;
mod superword;
mod superword_stage1;
mod unicode_tables;

/// The Unicode version of the scanners' character classes (that of tiktoken,
/// `tokenizers` and fancy-regex; see scripts/gen_unicode_tables.py).
pub use unicode_tables::VERSION as UNICODE_VERSION;
