"""Training: argument policy and progress display over the Rust trainer."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Union

from bpeforge import _core
from bpeforge import extend as _extend
from bpeforge.arguments import TrainingNote, check_positive, thread_count
from bpeforge.formats.hf_pre_tokenizer import training_pattern
from bpeforge.inputs import RecordOptions, add_documents, count_inputs, expand, kind
from bpeforge.open_tokenizer import TokenizerSource, is_bare_gpt2_directory, is_tiktoken_file, open_tokenizer
from bpeforge.patterns import normalize_pattern
from bpeforge.progress import progress_bars
from bpeforge.tokenizer import Tokenizer

PathLike = Union[str, "os.PathLike[str]"]

# Token ids are 32-bit: a larger vocab_size could never be reached.
MAX_VOCAB_SIZE = 2**32
# A pre-token longer than this is noted: its tokens grow as long (a file of one repeated byte is one pre-token).
LONG_PRETOKEN_BYTES = 1 << 20


class TrainedVocab(dict):
    """The `vocab` dict of a training result, which remembers the pattern and
    special tokens it was trained with, so that `bpeforge.save(vocab, merges,
    DIR)` records them (a plain dict works too; then pass them to `save`)."""

    pattern: str = "gpt2"
    special_tokens: tuple[str, ...] = ()


@dataclass(frozen=True)
class TrainStats:
    """Figures from one training run, for summaries and reports."""

    bytes_read: int
    unique_pretokens: int
    pretokenize_seconds: float
    merge_seconds: float
    threads: int
    # Bytes that no match of a custom pattern covered; each run of them was a
    # pre-token of its own. Always 0 for the presets.
    unmatched_bytes: int = 0
    longest_pretoken: int = 0  # bytes
    skipped_records: list[str] = field(default_factory=list)  # with skip_bad_records: "file:line: why"
    # Seconds spent counting text files: "read" (overlaps the rest), "batches", "fold", and with
    # profile=True "pretokenize_cpu"/"count_cpu" (all threads). Empty for other inputs.
    count_profile: dict[str, float] = field(default_factory=dict)
    # With extend=: the merges learned on top of the base, and the counted text's length in tokens with the
    # base and with the result (specials left out), which give the compression gained.
    merges_added: int | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    # Input files read, folders expanded into their files (0 for a run from counts or an iterator).
    files: int = 0


@dataclass(frozen=True)
class TrainResult:
    """A trained vocabulary: ids 0-255 are bytes, then one per merge, then specials."""

    vocab: dict[int, bytes]
    merges: list[tuple[bytes, bytes]]
    special_tokens: list[str]
    stats: TrainStats
    pattern: str = "gpt2"

    def save(self, directory: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the vocabulary, merges, special tokens and pattern, as `bpeforge.save` does.

        A result is consistent as trained, so it is written without the tokenizer `bpeforge.save` builds to
        check its input, which holds every token twice more: on a file of one repeated letter, hundreds of MB.
        (A result changed since is written as it is; `bpeforge.save(result.vocab, result.merges, ...)` checks.)
        """
        from bpeforge.formats import gpt2
        from bpeforge.vocabulary import unique_specials

        gpt2.check_types(self.vocab, self.merges)
        specials = unique_specials(self.special_tokens)
        return gpt2.write_tokenizer_directory(
            self.vocab, self.merges, directory, special_tokens=specials, pattern=self.pattern, overwrite=overwrite
        )

    def save_hf(self, path: str | os.PathLike[str], *, overwrite: bool = False, **roles: str | None) -> Path:
        """Write an HF `tokenizer.json` (to a directory `transformers` loads, or to a `.json` file), as
        `Tokenizer.save_hf` does; a SuperBPE result gets the reference's pre-tokenizer (docs/superbpe.md)."""
        tokenizer = Tokenizer(self.vocab, self.merges, self.special_tokens, pattern=self.pattern)
        return tokenizer.save_hf(path, overwrite=overwrite, **roles)

    def __iter__(self):
        """`vocab, merges = result`, as with `train_bpe`."""
        return iter((self.vocab, self.merges))

    def __repr__(self) -> str:
        return (
            f"TrainResult(vocab_size={len(self.vocab)}, merges={len(self.merges)}, "
            f"special_tokens={self.special_tokens!r}, pattern={self.pattern!r})"
        )


def train_bpe(
    input_path: PathLike | Sequence[PathLike],
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    num_threads: int | None = None,
    progress: bool = False,
    chunk_size: int | None = None,
    min_frequency: int | None = None,
    max_token_length: int | None = None,
    pattern: str = "gpt2",
) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Train a byte-level BPE vocabulary with the exact CS336 semantics.

    `input_path` is a file or a list of files read as one corpus (each file
    ends a document). Returns `(vocab, merges)`: ids 0-255 are the single
    bytes, 256 + i is the i-th merge, and the special tokens come last.
    `num_threads` defaults to all cores; `chunk_size` (bytes per read) is a
    tuning knob. Neither changes the result. `min_frequency` (stop when the
    best pair occurs fewer times) and `max_token_length` (bytes) are off by
    default, which is the exact CS336 semantics. `pattern` is the
    pre-tokenizer: "gpt2" (CS336's), "cl100k", "o200k", "llama3", "qwen2" or a regex.
    `special_tokens=None` means none. The returned vocab remembers the pattern
    and special tokens, so `bpeforge.save(vocab, merges, DIR)` records them.
    A `vocab_size` the corpus cannot reach trains all it can and warns
    (`TrainingNote`); a corpus with no text at all is a ValueError.
    """
    result = train(
        input_path,
        vocab_size,
        special_tokens,
        num_threads=num_threads,
        progress=progress,
        chunk_size=chunk_size,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
        pattern=pattern,
    )
    return result.vocab, result.merges


def train(
    input_path: PathLike | Sequence[PathLike],
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    num_threads: int | None = None,
    progress: bool = False,
    chunk_size: int | None = None,
    min_frequency: int | None = None,
    max_token_length: int | None = None,
    glob: str | None = None,
    text_field: str = "text",
    text_column: str = "text",
    skip_bad_records: bool = False,
    pattern: str | None = None,
    profile: bool = False,
    extend: TokenizerSource | None = None,
    tie_break: str = "cs336",
    documents: str = "files",
    pre_tokenizer: dict | str | None = None,
) -> TrainResult:
    """Like `train_bpe`, with the special tokens and run figures kept.

    Inputs may also be directories (searched recursively, `glob` filters
    names), `.gz`/`.xz`/`.zst` text, JSON Lines (`text_field` of each record)
    and Parquet (`text_column` of each row); each record is a document. See
    `bpeforge.inputs`. `profile` times pre-tokenizing and counting apart
    (`stats.count_profile`), which makes counting somewhat slower.

    `extend` continues training a base tokenizer (a `Tokenizer`, a tokenizer
    directory, a `tokenizer.json`, or a `.tiktoken` file with its `pattern`):
    its ids, merges and special tokens are kept, new merges follow its largest
    id, and `vocab_size` counts every token, the base's included (see
    `bpeforge.extend`). `pattern` defaults to "gpt2", or to the base's.

    `tie_break="hf"` follows HF `tokenizers`' `BpeTrainer`: ties go to the
    smallest pair of its token ids (specials, then the bytes seen in the order
    of their byte-level chars, then new tokens), and `vocab_size` counts its
    vocabulary (specials + bytes seen + new tokens). `documents="lines"` makes
    each line of a text file (its newline kept) a document, as HF's
    `train(files)` reads them. See docs/superbpe.md. `pre_tokenizer` (a
    tokenizer.json `pre_tokenizer` object, dict or JSON) cuts the text as
    `tokenizers` does where one regex can (`formats/hf_pre_tokenizer.py`),
    instead of `pattern`: with both HF options, the merges are `BpeTrainer`'s.
    """
    if pre_tokenizer is not None:
        if pattern is not None:
            raise ValueError("give pattern or pre_tokenizer, not both: each says how the text is cut")
        pattern = training_pattern(pre_tokenizer)
    files = expand(normalize_paths(input_path), glob)
    base, specials, pattern = training_setup(special_tokens, pattern, extend)
    check_modes(tie_break, documents, files)
    check_vocab_size(vocab_size, len(specials), tie_break)
    check_limits(min_frequency, max_token_length)
    num_threads = thread_count(num_threads)
    if chunk_size is not None:
        check_positive("chunk_size", chunk_size)
    paths = [os.fspath(p) for p in files]
    records = RecordOptions(text_field, text_column, skip_bad_records)
    with progress_bars(progress) as bars:
        all_text = all(kind(p) == "text" for p in files)
        if all_text and (tie_break != "cs336" or documents != "files"):
            # HF's trainer reads text without its added tokens: specials are the vocabulary's, not cuts.
            split = tie_break != "hf"
            counts = _core.Counts.from_files(paths, specials, num_threads, chunk_size, bars, pattern, documents, split)
            core = train_counts(counts, vocab_size, min_frequency, max_token_length, bars, base, num_threads, tie_break)
        elif all_text:
            core = _core.train(
                paths,
                vocab_size,
                specials,
                num_threads,
                chunk_size,
                bars,
                min_frequency or 0,
                max_token_length,
                pattern,
                profile,
                None if base is None else base._core,
            )
        else:
            counts = count_inputs(files, specials, records, num_threads=num_threads, progress=bars, pattern=pattern)
            core = train_counts(counts, vocab_size, min_frequency, max_token_length, bars, base, num_threads, tie_break)
    result = result_from_core(core, specials, pattern, vocab_size, base)
    return replace(result, stats=replace(result.stats, skipped_records=records.skipped, files=len(files)))


def train_from_iterator(
    iterator: Iterable[str],
    vocab_size: int,
    special_tokens: Iterable[str] | None = None,
    *,
    num_threads: int | None = None,
    progress: bool = False,
    min_frequency: int | None = None,
    max_token_length: int | None = None,
    pattern: str | None = None,
    extend: TokenizerSource | None = None,
    tie_break: str = "cs336",
) -> TrainResult:
    """Train on documents from any iterator of strings (each string is a document).

    Strings are counted in batches, in parallel, with the GIL released, so the
    iterator can be a generator over a data loader of any size. `extend` and
    `pattern` as in `train`.
    """
    if isinstance(iterator, (str, bytes)):
        raise TypeError("train_from_iterator takes an iterable of documents (str), not one string; wrap it: [text]")
    base, specials, pattern = training_setup(special_tokens, pattern, extend)
    check_modes(tie_break, "files", [])
    check_vocab_size(vocab_size, len(specials), tie_break)
    check_limits(min_frequency, max_token_length)
    num_threads = thread_count(num_threads)
    counts = _core.Counts(specials, pattern)
    add_documents(counts, iterator, num_threads)
    with progress_bars(progress) as bars:
        core = train_counts(counts, vocab_size, min_frequency, max_token_length, bars, base, num_threads, tie_break)
    return result_from_core(core, specials, pattern, vocab_size, base)


def training_setup(
    special_tokens: Iterable[str] | None, pattern: str | None, extend: TokenizerSource | None
) -> tuple[Tokenizer | None, list[str], str]:
    """The base tokenizer (or None), the special tokens and the pattern to count with."""
    specials = normalize_specials(special_tokens)
    if extend is None:
        return None, specials, normalize_pattern(pattern or "gpt2")
    unrecorded = is_tiktoken_file(extend) or is_bare_gpt2_source(extend)
    if is_bare_gpt2_source(extend):
        # Its files record no special tokens nor pattern: those given are the base's own.
        extend = open_tokenizer(extend, special_tokens=specials, pattern=pattern)
    base = _extend.open_base(extend, pattern)
    pattern = _extend.extension_pattern(base, None if unrecorded else pattern)
    return base, _extend.extension_specials(base, specials), pattern


def is_bare_gpt2_source(source: object) -> bool:
    return isinstance(source, (str, os.PathLike)) and is_bare_gpt2_directory(Path(source))


def train_counts(
    counts: _core.Counts,
    vocab_size: int,
    min_frequency: int | None,
    max_token_length: int | None,
    bars: object,
    base: Tokenizer | None = None,
    num_threads: int | None = None,
    tie_break: str = "cs336",
) -> tuple:
    """The core's training (or extension of `base`) from a count table."""
    core_base = None if base is None else base._core
    threads = thread_count(num_threads)
    return counts.train(vocab_size, min_frequency or 0, max_token_length, bars, core_base, threads, tie_break)


def result_from_core(
    core: tuple[list, list[tuple[bytes, bytes]], dict],
    specials: list[str],
    pattern: str,
    vocab_size: int,
    base: Tokenizer | None = None,
) -> TrainResult:
    """The Python result of a core training run (or extension of `base`, for
    which the core returns `(id, bytes)` entries and the new merges), with what
    the caller should hear about it: an error for a corpus with no text, notes
    for the rest."""
    vocab_entries, merges, stats = core
    if base is None:
        stats = TrainStats(**stats)
        vocab = TrainedVocab(enumerate(vocab_entries))
    else:
        stats = TrainStats(**stats, merges_added=len(merges))
        vocab = TrainedVocab(vocab_entries)
        merges = base.merges + merges
    if stats.unique_pretokens == 0:
        raise ValueError(
            "the corpus has no text to train on (the inputs are empty, or hold only special tokens or skipped "
            "records); give files with text"
        )
    vocab.pattern, vocab.special_tokens = pattern, tuple(specials)
    result = TrainResult(vocab, merges, specials, stats, pattern)
    for note in training_notes(result, vocab_size):
        warnings.warn(note, TrainingNote, stacklevel=3)
    return result


def training_notes(result: TrainResult, vocab_size: int) -> list[str]:
    """What a run did beyond what was asked, one sentence each (also the CLI summary's notes)."""
    notes = []
    if len(result.vocab) < vocab_size:
        notes.append(
            f"the corpus ran out of pairs at {len(result.vocab):,} tokens, short of the {vocab_size:,} asked for "
            f"(every pre-token is one token already, or a limit stopped it)"
        )
    if result.stats.unmatched_bytes:
        notes.append(
            f"{result.stats.unmatched_bytes:,} bytes of the corpus matched no part of the pattern "
            f"{result.pattern!r}; each run of them was counted as a pre-token of its own"
        )
    if result.stats.longest_pretoken > LONG_PRETOKEN_BYTES:
        notes.append(
            f"the longest pre-token is {result.stats.longest_pretoken:,} bytes (a run of one repeated character, "
            f"such as padding, is one pre-token): its tokens can grow as long, and memory with them, unless "
            f"max_token_length (--max-token-length) bounds them"
        )
    return notes


def normalize_paths(input_path: PathLike | Sequence[PathLike]) -> list[str]:
    if isinstance(input_path, (str, os.PathLike)):
        return [os.fspath(input_path)]
    if isinstance(input_path, bytes):
        raise TypeError("input_path must be a str or os.PathLike path (or a list of them), not bytes")
    if hasattr(input_path, "read"):
        raise TypeError("input_path must be a path (or a list of paths), not an open file; pass its name: f.name")
    if not isinstance(input_path, Iterable):
        raise TypeError(f"input_path must be a path or a list of paths, got {type(input_path).__name__}")
    paths = []
    for path in input_path:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"input_path must hold paths (str or os.PathLike), got {type(path).__name__}: {path!r}")
        paths.append(os.fspath(path))
    if not paths:
        raise ValueError("input_path is an empty list: give at least one file to train on")
    return paths


def normalize_specials(special_tokens: Iterable[str] | None) -> list[str]:
    """The special tokens as a list; None means none. A special token must
    not be a single byte: that byte is already a token of every vocabulary."""
    if special_tokens is None:
        return []
    if isinstance(special_tokens, (str, bytes)):
        raise TypeError(f"special_tokens must be a list of strings, not the string {special_tokens!r}; wrap it: [...]")
    specials = list(special_tokens)
    for token in specials:
        if not isinstance(token, str):
            raise TypeError(f"special tokens must be str, got {type(token).__name__}: {token!r}")
        if not token:
            raise ValueError("a special token must not be empty")
        if len(token.encode("utf-8")) == 1:
            raise ValueError(
                f"special token {token!r} is already the byte token {ord(token)} of every vocabulary; "
                f"a special token must be a string no text of the corpus is cut into, such as '<|endoftext|>'"
            )
    return specials


def check_modes(tie_break: object, documents: object, files: Sequence[str]) -> None:
    if tie_break not in ("cs336", "hf"):
        raise ValueError(f'tie_break must be "cs336" or "hf", not {tie_break!r}')
    if documents not in ("files", "lines"):
        raise ValueError(f'documents must be "files" or "lines", not {documents!r}')
    if documents == "lines":
        for path in files:
            if kind(Path(path)) != "text":
                raise ValueError(f'documents="lines" reads text files, and {path} is not one; give text files')


def check_vocab_size(vocab_size: object, num_specials: int, tie_break: str = "cs336") -> None:
    # HF's vocabulary holds only the bytes seen, so any size is a valid request there.
    minimum = 256 + num_specials if tie_break == "cs336" else 1
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
    if vocab_size > MAX_VOCAB_SIZE:
        raise ValueError(
            f"vocab_size {vocab_size:,} is too large: token ids are 32-bit, so at most {MAX_VOCAB_SIZE:,}; "
            f"a vocab_size beyond what the corpus allows trains all it can and says so"
        )
    if vocab_size < minimum:
        raise ValueError(
            f"vocab_size {vocab_size} is too small: it must be at least {minimum} "
            f"(256 byte tokens + {num_specials} special tokens)"
        )


def check_limits(min_frequency: object, max_token_length: object) -> None:
    if min_frequency is not None:
        check_positive("min_frequency", min_frequency)
    if max_token_length is not None:
        check_positive("max_token_length", max_token_length)
