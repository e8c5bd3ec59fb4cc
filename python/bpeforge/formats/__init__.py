"""Tokenizers and token ids on disk: one module per format, and the one way every file is written.

- `atomic`: where an output may be written (never over an input, the working directory or a folder of
  other files) and writing it so that a crash leaves the old file or the new one, never a half;
- `gpt2`: `vocab.json` + `merges.txt` (+ `bpeforge.json`), bpeforge's own directory format;
- `hf`: HF `tokenizer.json` (and the transformers directory around it), with `oniguruma` for its regexes;
- `tiktoken_ranks`: tiktoken's `.tiktoken` rank files;
- `npy`: the `.npy` arrays of token ids that `bpeforge encode` writes;
- `parts`: what a loader returns and the checks every export shares.

This package imports nothing of bpeforge but the Rust core: loaders return `TokenizerParts`, and
`Tokenizer`'s `from_*` / `save_*` methods call down into it. Count files are written by the Rust core
(`train/counts_file.rs`, through `bpeforge.save_counts`).
"""
