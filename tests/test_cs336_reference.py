"""Training against the Stanford CS336 assignment 1 fixtures.

The fixtures live outside the repository: set BPEFORGE_TEST_DATA to the shared
data directory (the one holding `cs336/`). The same reference results also
validate the slow oracle of the differential tests, so a bug there cannot hide
a bug in bpeforge.
"""

import json
import pickle
from collections import Counter
from pathlib import Path

import bpeforge
import pytest
from reference_trainer import reference_train_bpe, train_on_word_counts

ENDOFTEXT = "<|endoftext|>"
TINYSTORIES_5M = "tinystories_sample_5M.txt"


def gpt2_bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table (as in CS336 tests/common.py).

    Printable Latin-1 bytes map to themselves; the other 68 bytes map to
    U+0100 onwards in byte order, so every token is a printable string.
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in printable}
    shifted = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + shifted)
            shifted += 1
    return table


GPT2_BYTE_DECODER = {char: byte for byte, char in gpt2_bytes_to_unicode().items()}


def decode_gpt2_token(token: str) -> bytes:
    return bytes(GPT2_BYTE_DECODER[char] for char in token)


def load_reference_merges(path: Path) -> list[tuple[bytes, bytes]]:
    """One merge per line: the two GPT-2-encoded tokens separated by one space."""
    merges = []
    for line in path.read_text(encoding="utf-8").splitlines():
        left, right = line.split(" ")
        merges.append((decode_gpt2_token(left), decode_gpt2_token(right)))
    return merges


def load_reference_vocab(path: Path) -> dict[int, bytes]:
    """A JSON object from GPT-2-encoded token to id."""
    encoded = json.loads(path.read_text(encoding="utf-8"))
    return {token_id: decode_gpt2_token(token) for token, token_id in encoded.items()}


def assert_no_special_fragments(vocab: dict[int, bytes]) -> None:
    """Specials contribute no bytes, so no learned token may contain "<|"."""
    for token in vocab.values():
        if token != ENDOFTEXT.encode():
            assert b"<|" not in token, token


def assert_matches_corpus_en_reference(cs336_dir: Path, vocab: dict, merges: list) -> None:
    reference_merges = load_reference_merges(cs336_dir / "train-bpe-reference-merges.txt")
    reference_vocab = load_reference_vocab(cs336_dir / "train-bpe-reference-vocab.json")
    assert len(reference_merges) == 243  # the fixture itself: 500 - 256 bytes - 1 special
    assert merges == reference_merges
    # CS336 puts the special first and we put it last, so compare as sets.
    assert set(vocab.keys()) == set(reference_vocab.keys())
    assert set(vocab.values()) == set(reference_vocab.values())
    assert_no_special_fragments(vocab)


def test_train_bpe_matches_cs336_reference(cs336_dir):
    vocab, merges = bpeforge.train_bpe(cs336_dir / "corpus.en", 500, [ENDOFTEXT])
    assert_matches_corpus_en_reference(cs336_dir, vocab, merges)
    # Our id layout: merge of rank r has id 256 + r; the special comes last.
    assert all(vocab[256 + rank] == left + right for rank, (left, right) in enumerate(merges))
    assert vocab[499] == ENDOFTEXT.encode()


def test_oracle_matches_cs336_reference(cs336_dir):
    # The differential tests are only as good as the oracle: prove it here.
    vocab, merges = reference_train_bpe([cs336_dir / "corpus.en"], 500, [ENDOFTEXT])
    assert_matches_corpus_en_reference(cs336_dir, vocab, merges)


def test_train_bpe_matches_oracle_on_tinystories_sample(cs336_dir):
    # A small real corpus with <|endoftext|> between stories, trained until
    # the pairs run out.
    path = cs336_dir / "tinystories_sample.txt"
    assert ENDOFTEXT in path.read_text(encoding="utf-8")
    expected = reference_train_bpe([path], 1000, [ENDOFTEXT])
    assert bpeforge.train_bpe(path, 1000, [ENDOFTEXT]) == expected
    assert_no_special_fragments(expected[0])


def load_special_tokens_snapshot(cs336_dir: Path) -> dict:
    with open(cs336_dir / "tests" / "_snapshots" / "test_train_bpe_special_tokens.pkl", "rb") as f:
        return pickle.load(f)


def test_special_tokens_snapshot_has_the_expected_shape(cs336_dir):
    # Keeps the snapshot check below honest while its corpus is missing.
    snapshot = load_special_tokens_snapshot(cs336_dir)
    assert snapshot["vocab_keys"] == set(range(1000))
    assert len(snapshot["vocab_values"]) == 1000 and ENDOFTEXT.encode() in snapshot["vocab_values"]
    assert len(snapshot["merges"]) == 743  # 1000 - 256 bytes - 1 special


def test_train_bpe_special_tokens_snapshot(cs336_dir):
    path = cs336_dir / TINYSTORIES_5M
    if not path.exists():
        pytest.skip(f"{TINYSTORIES_5M} is not in BPEFORGE_TEST_DATA/cs336 (see SOURCES.md)")
    vocab, merges = bpeforge.train_bpe(path, 1000, [ENDOFTEXT])
    assert_no_special_fragments(vocab)
    snapshot = load_special_tokens_snapshot(cs336_dir)
    assert merges == snapshot["merges"]
    assert set(vocab.keys()) == snapshot["vocab_keys"]
    assert set(vocab.values()) == snapshot["vocab_values"]


def test_oracle_merge_loop_on_the_cs336_worked_example():
    # DESIGN §1.1's worked example, pre-tokenized on whitespace only, checks
    # the merge loop and its tie-break apart from pre-tokenization.
    words = Counter({b"low": 5, b"lower": 2, b"widest": 3, b"newest": 6})
    as_tokens = Counter({tuple(bytes([b]) for b in word): count for word, count in words.items()})
    expected = "s t, e st, o w, l ow, w est, n e, ne west, w i, wi d, wid est, low e, lowe r"
    pairs = [tuple(part.encode() for part in merge.split(" ")) for merge in expected.split(", ")]
    assert train_on_word_counts(as_tokens, 100) == pairs  # all 12, then no pair is left
