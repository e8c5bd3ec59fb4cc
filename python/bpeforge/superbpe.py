"""SuperBPE (Liu et al., "SuperBPE: Space Travel for Language Models", 2025):
tokens that span words, trained in two stages as the reference does.

Stage 1 is ordinary BPE, with pieces cut at whitespace; stage 2 keeps its
first `transition` merges and continues on pieces that are whole lines (cut
only around digits), so that the later merges join words ("of the",
"in the middle of"), never a token holding ": " nor more than `max_words`
words. See docs/superbpe.md.

Two recipes (`RECIPES`, `recipe=`): the paper's (the default) and the one the
reference's README has recommended since November 2025; their pre-tokenizers
and where they come from are in `bpeforge.formats.superbpe_pipelines`.
`extend=BASE` runs stage 2 on top of an existing tokenizer, keeping its ids
(`bpeforge.superbpe_extend`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from bpeforge import _core, superbpe_extend
from bpeforge.arguments import check_positive, thread_count
from bpeforge.formats.hf_pre_tokenizer import training_pattern
from bpeforge.formats.superbpe_pipelines import (
    NUMERAL_GROUPS,
    O200K_LIKE_PATTERN,
    STAGE1_PATTERN,
    SUPERWORD_2025_PATTERN,
    SUPERWORD_PATTERN,
)
from bpeforge.inputs import expand
from bpeforge.open_tokenizer import TokenizerSource
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

__all__ = [
    "NUMERAL_GROUPS",
    "O200K_LIKE_PATTERN",
    "RECIPES",
    "STAGE1_PATTERN",
    "SUPERWORD_2025_PATTERN",
    "SUPERWORD_PATTERN",
    "Recipe",
    "train_superbpe",
]


@dataclass(frozen=True)
class Recipe:
    """A SuperBPE recipe: the defaults `train_superbpe` takes from it."""

    vocab_size: int
    transition: int  # stage-1 merges kept: the reference's `head -n t merges.txt` keeps t-1
    pattern: str
    superword_pattern: str
    max_words: int = 4
    forbid: tuple[bytes, ...] = (b": ",)


RECIPES = {
    # Liu et al. (2025): 200K tokens, t = 180K (the released OLMo2-8B-SuperBPE-t180k), Digits + Split.
    "paper": Recipe(200_000, 179_999, STAGE1_PATTERN, SUPERWORD_PATTERN),
    # PythonNut/superbpe's scripts/train_tokenizer.sh and extend_tokenizer.sh since November 2025.
    "o200k-2025": Recipe(128_000, 99_999, O200K_LIKE_PATTERN, SUPERWORD_2025_PATTERN),
}


def train_superbpe(
    inputs: PathLike | Sequence[PathLike],
    vocab_size: int | None = None,
    special_tokens: Iterable[str] | None = None,
    *,
    transition: int | None = None,
    recipe: str = "paper",
    pattern: str | None = None,
    superword_pattern: str | None = None,
    pre_tokenizer: dict | str | None = None,
    superword_pre_tokenizer: dict | str | None = None,
    max_words: int | None = None,
    forbid: Iterable[bytes] | None = None,
    extend: TokenizerSource | None = None,
    tie_break: str = "cs336",
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
    words (0: no limit).

    `tie_break` picks the conventions of both stages. "cs336" (the default):
    a tie of counts goes to the greater pair of byte strings, every inherited
    merge is kept (replayed on the pieces as the result encodes them), and
    `vocab_size` counts 256 bytes + `transition` + new merges + specials, so
    stage 2 learns `vocab_size - 256 - len(special_tokens) - transition`
    merges. "hf" is the reference's trainer (HF `tokenizers`' fork), merge for
    merge: ties to the smallest pair of HF's ids, an inherited merge whose
    pair occurs nowhere in the pieces dropped, and `vocab_size` counting HF's
    vocabulary (special tokens, the bytes seen, the distinct tokens made).
    `documents="lines"` (the default in both) makes each line a document, as
    the reference reads its files: stage 2's pieces are lines, never more.
    Special tokens in the text are cut out with "cs336" and counted as text
    with "hf", as HF's trainer reads them.

    `recipe` gives every argument left as None: "paper" (the default; 200K,
    t = 180K, the paper's pre-tokenizers) or "o200k-2025" (128K, t = 100K, an
    o200k-like stage 1 and `SUPERWORD_2025_PATTERN` in stage 2); see `RECIPES`
    and docs/superbpe.md.

    `extend=BASE` (a `Tokenizer`, a shipped encoding's name such as "gpt2",
    a directory or a file) skips stage 1: stage 2 runs on top of BASE, every
    merge of which is inherited, and the result keeps BASE's ids, merges and
    special tokens, its new merges after them (`bpeforge.superbpe_extend`).
    There `vocab_size` counts the result's tokens, the base's included
    (with "cs336" one a new merge, so a merge that spells a base token makes
    the result a token smaller).

    The result's merges are stage 2's (the kept inherited ones, then the
    superword ones) and its pattern is `superword_pattern`, so its tokenizer
    encodes as the released SuperBPE tokenizers do, and `save_hf` writes the
    reference's pre-tokenizer for it.

    `pre_tokenizer` and `superword_pre_tokenizer` give stage 1's and stage 2's
    cut as tokenizer.json `pre_tokenizer` objects (the reference's own
    pipelines included) instead of `pattern` and `superword_pattern`.
    """
    pattern = _pattern_or_pipeline("pattern", pattern, pre_tokenizer)
    superword_pattern = _pattern_or_pipeline("superword_pattern", superword_pattern, superword_pre_tokenizer)
    settings = _settings(recipe, vocab_size, transition, pattern, superword_pattern, max_words, forbid)
    specials = normalize_specials(special_tokens)
    files = [os.fspath(p) for p in expand(normalize_paths(inputs), None)]
    check_modes(tie_break, documents, files)
    threads = thread_count(num_threads)
    vocab_size = settings.vocab_size
    check_vocab_size(vocab_size, len(specials), tie_break)
    if extend is not None:
        if transition is not None:
            raise ValueError(
                "extend= inherits every merge of the base (so that its ids and encodings stay as they were); "
                "leave transition unset"
            )
        if pattern is not None:
            raise ValueError(
                "pattern is stage 1's pre-tokenizer, and extend= runs only stage 2; give superword_pattern instead"
            )
        stage2 = superbpe_extend.Stage2(settings.superword_pattern, settings.max_words, settings.forbid, tie_break)
        return superbpe_extend.extend_superbpe(
            files, extend, vocab_size, specials, stage2, documents, min_frequency, threads, progress
        )
    stage1_vocab_size = _stage1_vocab_size(vocab_size, len(specials), settings.transition, tie_break)
    common = dict(tie_break=tie_break, documents=documents, min_frequency=min_frequency, num_threads=threads)
    stage1 = train(files, stage1_vocab_size, specials, pattern=settings.pattern, progress=progress, **common)
    if settings.transition > len(stage1.merges):
        raise ValueError(
            f"transition {settings.transition:,} is beyond stage 1's {len(stage1.merges):,} merges "
            f"(the corpus ran out of pairs, or vocab_size {vocab_size:,} is reached first); give a smaller transition"
        )
    inherited = stage1.merges[: settings.transition]
    del stage1
    superword_pattern, forbid = settings.superword_pattern, list(settings.forbid)
    with progress_bars(progress) as bars:
        # As in stage 1 (`train`): HF's trainer, and so the reference, counts special tokens in the text as text.
        split = tie_break != "hf"
        counts = _core.Counts.from_files(files, specials, threads, None, bars, superword_pattern, documents, split)
        core = counts._train_superwords(
            vocab_size,
            inherited,
            settings.max_words,
            forbid,
            min_frequency or 0,
            bars,
            tie_break=tie_break,
            num_threads=threads,
        )
    result = result_from_core(core, specials, superword_pattern, vocab_size)
    return replace(result, stats=replace(result.stats, files=len(files)))


def _stage1_vocab_size(vocab_size: int, num_specials: int, transition: int, tie_break: str) -> int:
    """The vocab_size stage 1 trains to. With CS336's ties a run's merges are a prefix of any longer run's,
    so stage 1 stops at `transition` merges; HF's vocabulary count is known only as it trains, so stage 1
    runs to `vocab_size`, as the reference's does."""
    if tie_break == "hf":
        return vocab_size
    stage1 = 256 + num_specials + transition
    if stage1 > vocab_size:
        raise ValueError(
            f"vocab_size {vocab_size:,} is below the {stage1:,} tokens stage 1 leaves (256 bytes, {num_specials} "
            f"special tokens and transition {transition:,} merges); give a larger vocab_size or a smaller transition"
        )
    return stage1


def _pattern_or_pipeline(name: str, pattern: str | None, pipeline: dict | str | None) -> str | None:
    if pipeline is None:
        return pattern
    if pattern is not None:
        raise ValueError(f"give {name} or its pre_tokenizer, not both: each says how the text is cut")
    return training_pattern(pipeline)


def _settings(
    recipe: str,
    vocab_size: int | None,
    transition: int | None,
    pattern: str | None,
    superword_pattern: str | None,
    max_words: int | None,
    forbid: Iterable[bytes] | None,
) -> Recipe:
    """The recipe named, with each argument given in place of its default; checked."""
    if recipe not in RECIPES:
        raise ValueError(f"recipe {recipe!r} is not one of {sorted(RECIPES)}; see docs/superbpe.md")
    defaults = RECIPES[recipe]
    settings = Recipe(
        defaults.vocab_size if vocab_size is None else vocab_size,
        defaults.transition if transition is None else transition,
        defaults.pattern if pattern is None else pattern,
        defaults.superword_pattern if superword_pattern is None else superword_pattern,
        defaults.max_words if max_words is None else max_words,
        defaults.forbid if forbid is None else tuple(bytes(f) for f in forbid),
    )
    check_positive("transition", settings.transition)
    words = settings.max_words
    if not isinstance(words, int) or isinstance(words, bool) or words < 0:
        raise ValueError(f"max_words must be an int >= 0 (0: no limit), not {words!r}")
    return settings
