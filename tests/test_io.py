"""GPT-2-style vocab.json + merges.txt: exact round trips and atomic writes."""

from __future__ import annotations

import json
import os
import random

import bpeforge
import pytest
from bpeforge.formats.gpt2 import bytes_to_unicode, load_files, load_merges, load_special_tokens, load_vocab


def test_byte_to_unicode_is_a_printable_bijection():
    table = bytes_to_unicode()
    assert sorted(table) == list(range(256))
    assert len(set(table.values())) == 256
    assert all(char.isprintable() and not char.isspace() for char in table.values())
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ"  # GPT-2's well-known spellings


def random_tokens(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    return [bytes(rng.randrange(256) for _ in range(rng.randint(1, 6))) for _ in range(count)]


def test_any_bytes_round_trip(tmp_path):
    # Tokens that are not UTF-8 alone, spaces, newlines, NUL: all survive.
    # Each merge joins two tokens already in the vocab, as `save` requires.
    rng = random.Random(0)
    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(b" ", b"\n"), (b"\x00", b"\x00"), (b"\xff", b"\xfe"), ("é".encode()[:1], b" ")]
    while len(merges) < 200:
        merges.append((rng.choice(list(vocab.values())), rng.choice(list(vocab.values()))))
        vocab[255 + len(merges)] = b"".join(merges[-1])
    vocab.update({256 + rank: left + right for rank, (left, right) in enumerate(merges)})
    bpeforge.save(vocab, merges, tmp_path / "tok", special_tokens=["<|endoftext|>"])
    assert bpeforge.load(tmp_path / "tok") == (vocab, merges)
    assert load_special_tokens(tmp_path / "tok") == ["<|endoftext|>"]


def test_two_ids_with_the_same_bytes_are_both_kept(tmp_path):
    # Merges ("ab","c") and ("a","bc") both make b"abc": two ids, one spelling.
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab", 257: b"bc", 258: b"abc", 259: b"abc"}
    merges = [(b"a", b"b"), (b"b", b"c"), (b"ab", b"c"), (b"a", b"bc")]
    bpeforge.save(vocab, merges, tmp_path / "tok")
    assert bpeforge.load(tmp_path / "tok") == (vocab, merges)


def test_files_are_what_gpt2_tools_expect(tmp_path):
    vocab = {i: bytes([i]) for i in range(256)} | {256: b" t", 257: b"<|endoftext|>"}
    bpeforge.save(vocab, [(b" ", b"t")], tmp_path / "tok")
    assert json.loads((tmp_path / "tok" / "vocab.json").read_text("utf-8"))["Ġt"] == 256
    lines = (tmp_path / "tok" / "merges.txt").read_text("utf-8").splitlines()
    assert lines == ["#version: 0.2", "Ġ t"]


def test_existing_directory_is_kept_unless_overwrite(tmp_path):
    target = tmp_path / "tok"
    vocab = {i: bytes([i]) for i in range(256)}
    bpeforge.save(vocab, [], target)
    (target / "vocab.json").write_text("{}")  # an earlier output, replaced only when asked
    with pytest.raises(FileExistsError, match="overwrite=True"):
        bpeforge.save(vocab, [], target)
    assert (target / "vocab.json").read_text() == "{}"
    bpeforge.save(vocab, [], target, overwrite=True)
    assert sorted(p.name for p in target.iterdir()) == ["bpeforge.json", "merges.txt", "vocab.json"]
    assert bpeforge.load(target) == (vocab, [])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tok"]  # no staging or retired dirs left


def test_overwrite_never_replaces_a_directory_holding_other_files(tmp_path):
    target = tmp_path / "data"
    target.mkdir()
    (target / "corpus.txt").write_text("mine")
    vocab = {i: bytes([i]) for i in range(256)}
    with pytest.raises(ValueError, match=r"did not write \(corpus.txt\)"):
        bpeforge.save(vocab, [], target, overwrite=True)
    assert [p.name for p in target.iterdir()] == ["corpus.txt"]
    assert (target / "corpus.txt").read_text() == "mine"


def test_overwrite_never_turns_a_file_into_a_directory(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    with pytest.raises(ValueError, match="is a file"):
        bpeforge.save({i: bytes([i]) for i in range(256)}, [], notes, overwrite=True)
    assert notes.read_text() == "mine"
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_a_failed_save_leaves_nothing_behind(tmp_path):
    vocab = {0: b"a", 1: "not bytes"}  # encoding the second token fails mid-way
    with pytest.raises(TypeError):
        bpeforge.save(vocab, [], tmp_path / "tok")  # type: ignore[dict-item]
    assert list(tmp_path.iterdir()) == []


def test_malformed_merges_name_the_file_and_line(tmp_path):
    path = tmp_path / "merges.txt"
    path.write_text("#version: 0.2\nĠ t\nthree parts here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"merges\.txt:3: expected two tokens"):
        load_merges(path)


def test_vocab_with_a_char_outside_the_byte_table_is_refused(tmp_path):
    path = tmp_path / "vocab.json"
    path.write_text(json.dumps({"a": 0, "☃": 1}), encoding="utf-8")
    with pytest.raises(ValueError, match="not a GPT-2 byte character"):
        load_vocab(path)


def test_loads_gpt2s_own_files(gpt2_paths):
    vocab = load_vocab(gpt2_paths[0])
    merges = load_merges(gpt2_paths[1])
    assert len(vocab) == 50257 and len(merges) == 50000
    assert vocab[50256] == b"<|endoftext|>"
    assert vocab[220] == b" "  # GPT-2 does not put bytes at ids 0-255 in byte order
    assert merges[0] == (b" ", b"t")
    # Every merge's result is a token of the vocabulary.
    values = set(vocab.values())
    assert all(left + right in values for left, right in merges)
    # The Rust reader that `Tokenizer.from_files` and `load` use reads them itself, identically.
    assert load_files(*gpt2_paths) == (vocab, merges)
    fast = bpeforge._core.parse_gpt2_files(gpt2_paths[0].read_bytes(), gpt2_paths[1].read_bytes())
    assert fast is not None and (dict(fast[0]), fast[1]) == (vocab, merges)


def test_output_files_get_the_umask_permissions_not_private_ones(tmp_path):
    # Staging files used to come from mkstemp (0600), and the rename kept that
    # mode: token arrays and count files others on a cluster could not read.
    from bpeforge.formats.npy import NpyWriter

    umask = os.umask(0o022)
    try:
        with NpyWriter(tmp_path / "ids.npy", "uint16") as writer:
            writer.write(b"\x01\x00")
        corpus = tmp_path / "c.txt"
        corpus.write_text("a b c")
        bpeforge.save_counts(bpeforge.count(corpus), tmp_path / "c.counts")
        bpeforge.formats.atomic.write_text_atomically(tmp_path / "t.json", "{}", overwrite=False)
    finally:
        os.umask(umask)
    for name in ("ids.npy", "c.counts", "t.json"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o644, name
