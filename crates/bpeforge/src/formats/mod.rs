//! Tokenizer files read without Python: GPT-2's `vocab.json` and
//! `merges.txt` (`gpt2`) and the vocabulary they hold (`gpt2_vocab`),
//! tiktoken's `.tiktoken` rank files (`tiktoken`), the merges a rank table
//! implies (`rank_merges`) and a rank file's vocabulary built from them
//! (`rank_vocab`); a vocabulary as bytes, for pickling (`packed_vocab`); and
//! GPT-2's byte-level chars that `tokenizer.json` and HF's training spell
//! tokens in (`byte_level`).

pub(crate) mod byte_level;
pub(crate) mod gpt2;
pub(crate) mod gpt2_vocab;
pub(crate) mod packed_vocab;
pub(crate) mod rank_merges;
pub(crate) mod rank_vocab;
pub(crate) mod tiktoken;
