"""SuperBPE (Liu et al., "SuperBPE: Space Travel for Language Models", 2025):
tokens that span words, trained in two stages as the reference does.

Stage 1 is ordinary BPE, with pieces cut at whitespace; stage 2 keeps its
first `transition` merges and continues on pieces that are whole lines (cut
only around digits), so that the later merges join words ("of the",
"in the middle of"), never a token holding ": " nor more than `max_words`
words. See docs/superbpe.md.

The two pre-tokenizers are the reference's HF pipelines written as one regex
each (tests/test_superbpe.py checks them against `tokenizers`' own):
- stage 1: `Digits(individual_digits=False)`, then `Split(R1, "isolated")` with
  R1 = `(?=(\\d{3})+(?!\\d))| ?\\p{L}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`;
- stage 2: `Digits(individual_digits=False)`, then `Split((?=(\\d{3})+(?!\\d)), "isolated")`.
A run of numerals is its own piece, cut into groups of three digits from the
right; whitespace before a numeral ends where the numeral starts.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import replace

from bpeforge import _core
from bpeforge.arguments import check_positive, thread_count
from bpeforge.inputs import expand
from bpeforge.progress import progress_bars
from bpeforge.train import (
    PathLike,
    TrainResult,
    check_modes,
    check_vocab_size,
    normalize_paths,
    normalize_specials,
    result_from_core,
    train,
)

# A numeral's groups of three from the right (as the lookahead split makes them).
NUMERAL_GROUPS = r"\p{N}+?(?=(?:\d{3})+(?!\d)|(?!\p{N}))"
STAGE1_PATTERN = NUMERAL_GROUPS + r"| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?![^\s\p{N}])|\s+"
SUPERWORD_PATTERN = NUMERAL_GROUPS + r"|\P{N}+"


def train_superbpe(
    inputs: PathLike | Sequence[PathLike],
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    transition: int,
    pattern: str = STAGE1_PATTERN,
    superword_pattern: str = SUPERWORD_PATTERN,
    max_words: int = 4,
    forbid: Iterable[bytes] = (b": ",),
    tie_break: str = "hf",
    documents: str = "lines",
    min_frequency: int | None = None,
    num_threads: int | None = None,
    progress: bool = False,
) -> TrainResult:
    """Train a SuperBPE tokenizer on text files.

    Stage 1 learns BPE with `pattern` until the vocabulary reaches
    `vocab_size` and keeps its first `transition` merges (the reference's
    `head -n t merges.txt` keeps t-1: pass t-1 to reproduce it). Stage 2
    counts the pieces of `superword_pattern`, replays those merges in order
    (dropping one whose pair occurs nowhere in the pieces, as the reference
    does), then learns merges until the vocabulary reaches `vocab_size`,
    skipping any token that holds one of `forbid` or more than `max_words`
    words (0: no limit). `vocab_size` counts HF's vocabulary: special tokens,
    the bytes seen and the distinct tokens made.

    The result's merges are stage 2's (the kept inherited ones, then the
    superword ones) and its pattern is `superword_pattern`, so its tokenizer
    encodes as the released SuperBPE tokenizers do.
    """
    if tie_break != "hf":
        raise ValueError('train_superbpe follows the reference trainer, HF tokenizers\' fork: use tie_break="hf"')
    specials = normalize_specials(special_tokens)
    check_vocab_size(vocab_size, len(specials), tie_break)
    check_positive("transition", transition)
    if not isinstance(max_words, int) or isinstance(max_words, bool) or max_words < 0:
        raise ValueError(f"max_words must be an int >= 0 (0: no limit), not {max_words!r}")
    forbid = [bytes(f) for f in forbid]
    files = [os.fspath(p) for p in expand(normalize_paths(inputs), None)]
    check_modes(tie_break, documents, files)
    threads = thread_count(num_threads)
    common = dict(tie_break=tie_break, documents=documents, min_frequency=min_frequency, num_threads=threads)
    stage1 = train(files, vocab_size, specials, pattern=pattern, progress=progress, **common)
    if transition > len(stage1.merges):
        raise ValueError(
            f"transition {transition:,} is beyond stage 1's {len(stage1.merges):,} merges "
            f"(the corpus ran out of pairs, or vocab_size {vocab_size:,} is reached first); give a smaller transition"
        )
    inherited = stage1.merges[:transition]
    with progress_bars(progress) as bars:
        counts = _core.Counts.from_files(files, specials, threads, None, bars, superword_pattern, documents)
        core = counts._train_superwords(vocab_size, inherited, max_words, forbid, min_frequency or 0, bars)
    result = result_from_core(core, specials, superword_pattern, vocab_size)
    return replace(result, stats=replace(result.stats, files=len(files)))
