"""A slow, plainly written BPE trainer: the oracle for the differential tests.

It follows DESIGN.md §1.1 step by step and favours being obviously right over
being fast: every merge recounts all pair counts from the table of distinct
pre-tokens. It only ever runs on small corpora (corpus.en, 130 KB, takes a few
seconds).
"""

from __future__ import annotations

from collections import Counter
from os import PathLike

import regex
from splits import regex_pieces

# The GPT-2 pre-tokenization pattern, with the semantics of the `regex` package
# (`\p{L}`, `\p{N}` and `\s` are Unicode-aware; `(?!\S)` lets a whitespace run
# leave its last character to the next word), its classes those of Unicode 16.0
# (tiktoken's and `tokenizers`'; `regex` 2025+ has 17.0: `splits.unicode16_view`).
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
_GPT2_REGEX = regex.compile(GPT2_PATTERN)

# A pre-token (or a word being merged) is a tuple of tokens, each token bytes.
Word = tuple[bytes, ...]
Pair = tuple[bytes, bytes]


def pretokenize(text: str) -> list[str]:
    """The GPT-2 split of one document (no special-token handling)."""
    return regex_pieces(_GPT2_REGEX, text)


def split_on_specials(text: str, specials: list[str]) -> list[str]:
    """The documents between special tokens; the specials themselves are dropped.

    Longest special first in the alternation: at the leftmost position where
    some special starts, the longest one that matches there wins, so
    `<|endoftext|><|endoftext|>` beats `<|endoftext|>`. Empty documents are
    kept; they contribute no pre-tokens anyway.
    """
    if not specials:
        return [text]
    by_length = sorted(specials, key=len, reverse=True)
    alternation = "|".join(regex.escape(s) for s in by_length)
    return regex.split(alternation, text)


def read_corpus_file(path: str | PathLike) -> str:
    """The file's exact bytes as UTF-8: binary read, so `\\r\\n` stays `\\r\\n`."""
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def count_pretokens(paths: list, specials: list[str]) -> Counter[Word]:
    """Distinct pre-tokens over all files, each as a tuple of single bytes.

    Each file is split on its own, so the end of a file ends a document.
    """
    counts: Counter[Word] = Counter()
    for path in paths:
        for document in split_on_specials(read_corpus_file(path), specials):
            for piece in pretokenize(document):
                encoded = piece.encode("utf-8")
                counts[tuple(bytes([b]) for b in encoded)] += 1
    return counts


def count_pairs(words: Counter[Word]) -> Counter[Pair]:
    """Total count of every adjacent pair, weighted by pre-token frequency.

    Every adjacent position counts, overlapping or not: `aaa` holds (a, a)
    twice even though only one of them can be merged.
    """
    pairs: Counter[Pair] = Counter()
    for word, freq in words.items():
        for i in range(len(word) - 1):
            pairs[word[i], word[i + 1]] += freq
    return pairs


def best_pair(pairs: Counter[Pair]) -> Pair:
    """Highest count; ties go to the greater pair as a Python tuple of bytes.

    Tuples compare the left token's bytes first, then the right's, which is
    the required tie-break; the concatenation is never compared.
    """
    return max(pairs, key=lambda pair: (pairs[pair], pair))


def merge_word(word: Word, pair: Pair) -> Word:
    """Replace `pair` in `word` left to right, non-overlapping (aaa -> aa a)."""
    merged = pair[0] + pair[1]
    out: list[bytes] = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(merged)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def apply_merge(words: Counter[Word], pair: Pair) -> Counter[Word]:
    """The pre-token table after merging `pair` everywhere.

    Distinct pre-tokens stay distinct after a merge (merging is injective on
    the underlying bytes), but summing keeps this correct regardless.
    """
    merged: Counter[Word] = Counter()
    for word, freq in words.items():
        merged[merge_word(word, pair)] += freq
    return merged


def train_on_word_counts(words: Counter[Word], num_merges: int) -> list[Pair]:
    """The merge loop alone: at most `num_merges` merges, fewer if pairs run out."""
    merges: list[Pair] = []
    while len(merges) < num_merges:
        pairs = count_pairs(words)  # recounted from scratch: slow but plain
        if not pairs:
            break  # every pre-token is a single token: nothing left to merge
        pair = best_pair(pairs)
        merges.append(pair)
        words = apply_merge(words, pair)
    return merges


def build_vocab(merges: list[Pair], specials: list[str]) -> dict[int, bytes]:
    """Ids 0..255 the single bytes, then 256 + rank per merge, then specials."""
    vocab = {i: bytes([i]) for i in range(256)}
    for pair in merges:
        vocab[len(vocab)] = pair[0] + pair[1]
    for special in specials:
        vocab[len(vocab)] = special.encode("utf-8")
    return vocab


def reference_train_bpe(paths: list, vocab_size: int, special_tokens: list[str]) -> tuple[dict[int, bytes], list[Pair]]:
    """Train byte-level BPE on the files in `paths` (one corpus), DESIGN §1.1."""
    if isinstance(paths, (str, PathLike)):
        paths = [paths]
    minimum = 256 + len(special_tokens)
    if vocab_size < minimum:
        raise ValueError(f"vocab_size must be at least {minimum}")
    words = count_pretokens(paths, special_tokens)
    merges = train_on_word_counts(words, vocab_size - minimum)
    return build_vocab(merges, special_tokens), merges
