"""SuperBPE's stage 2 on top of an existing tokenizer: `train_superbpe(..., extend=BASE)`.

The reference (`PythonNut/superbpe`, `scripts/extend_existing_tokenizer.sh`) copies the head of the base's
`merges.txt` and runs stage 2 with its fork of HF `tokenizers`, which numbers every token afresh. Here the
base keeps what a model trained on it depends on: every id, merge and special token. Stage 2 counts the
corpus's superword pieces, replays all the base's merges on them (with CS336 ties, by encoding each piece
with them; with HF's, as the reference replays inherited ones), then learns superword merges; the result's
merges are the base's, then the new ones (a pair the base already has is not added again), whose tokens
take the ids after the base's largest, then come new special tokens. `vocab_size` counts every token of the
result, the base's included.

On text where no new merge applies the result encodes as the base does, except where the superword
pattern cuts a base token apart (the paper's pattern cuts numerals into groups of three digits, so GPT-2's
`2000` is out of reach) or joins pieces the base's pattern kept apart so that a base merge now spans them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bpeforge import _core
from bpeforge.extend import extension_specials, open_base
from bpeforge.open_tokenizer import TokenizerSource
from bpeforge.progress import progress_bars
from bpeforge.train import TrainResult, result_from_core

# The pattern presets' names for the encodings bpeforge ships with them, so that extend="o200k" is o200k_base.
ENCODING_OF_PRESET = {"cl100k": "cl100k_base", "o200k": "o200k_base"}


@dataclass(frozen=True)
class Stage2:
    """What stage 2 learns: its pre-tokenizer and the rules of its tokens."""

    superword_pattern: str
    max_words: int
    forbid: tuple[bytes, ...]
    tie_break: str = "cs336"


def extend_superbpe(
    files: list[str],
    base_source: TokenizerSource,
    vocab_size: int,
    special_tokens: list[str],
    stage2: Stage2,
    documents: str,
    min_frequency: int | None,
    threads: int,
    progress: bool,
) -> TrainResult:
    """Stage 2 on top of `base_source` until the result holds `vocab_size` tokens (see the module docstring)."""
    if isinstance(base_source, str) and base_source in ENCODING_OF_PRESET and not Path(base_source).exists():
        base_source = ENCODING_OF_PRESET[base_source]
    base = open_base(base_source, None)
    specials = extension_specials(base, special_tokens)
    new_specials = specials[len(base.special_tokens) :]
    new_tokens = vocab_size - len(base.vocab) - len(new_specials)
    if new_tokens <= 0:
        raise ValueError(
            f"vocab_size {vocab_size:,} leaves no room for superword tokens: the base holds {len(base.vocab):,} "
            f"tokens and {len(new_specials)} new special tokens come on top; give a larger vocab_size"
        )
    pattern = stage2.superword_pattern
    with progress_bars(progress) as bars:
        counts = _core.Counts.from_files(files, specials, threads, None, bars, pattern, documents)
        _, merges, stats = counts._train_superwords(
            vocab_size,
            base.merges,
            stage2.max_words,
            list(stage2.forbid),
            min_frequency or 0,
            bars,
            new_tokens,
            tie_break=stage2.tie_break,
            num_threads=threads,
        )
    added = _new_merges(base.merges, merges)
    vocab = _extended_vocab(base.vocab, added, new_specials)
    stats["files"] = len(files)
    return result_from_core((sorted(vocab.items()), added, stats), specials, pattern, vocab_size, base)


def _new_merges(
    base_merges: list[tuple[bytes, bytes]], learned: list[tuple[bytes, bytes]]
) -> list[tuple[bytes, bytes]]:
    """The learned merges the base does not have, in order: the replayed ones are the base's, and a pair the
    base has and stage 2 learns again would apply at the base's rank anyway."""
    known = set(base_merges)
    return [merge for merge in learned if merge not in known]


def _extended_vocab(
    base_vocab: dict[int, bytes], added: list[tuple[bytes, bytes]], new_specials: list[str]
) -> dict[int, bytes]:
    """The base's ids, then an id for each new token after the base's largest (a merge whose token the base
    holds keeps the base's id), then the new special tokens."""
    vocab = dict(base_vocab)
    ids = {token: token_id for token_id, token in vocab.items()}
    next_id = max(vocab) + 1

    def add(token: bytes) -> None:
        nonlocal next_id
        if token not in ids:
            ids[token], vocab[next_id] = next_id, token
            next_id += 1

    for left, right in added:
        # A side is a byte or a token made before; a byte the base lacks (a base without all 256) joins too.
        add(left)
        add(right)
        add(left + right)
    for special in new_specials:
        vocab[next_id] = special.encode("utf-8")
        next_id += 1
    return vocab
