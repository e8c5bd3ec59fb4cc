"""Malformed files: every loader succeeds or raises an exception that names the file.

For each file loader (`vocab.json`, `merges.txt`, `bpeforge.json` through the
directory loaders, HF `tokenizer.json`, `.tiktoken`, count files), hypothesis
feeds malformed variants of a valid file: truncations, byte flips, inserted and
invalid UTF-8 bytes, random bytes, dropped and repeated lines, JSON of the wrong
shape, huge and negative numbers, duplicate keys. The call must return, or
raise ValueError or OSError (UnicodeDecodeError and json.JSONDecodeError are
ValueErrors) whose message names the file, and the line for the line-based
formats; within the hypothesis deadline of 2 s. Any other exception type
(TypeError, KeyError, OverflowError, RecursionError, ...) fails the test.

Two kinds of input could take the whole machine down in-process, so they run in
a child process under a 1 GiB address-space limit, where a crash or an
allocation of gigabytes is reported against the input:
- count files (a u32 length field is trusted by the reader), and
- token ids or ranks between 10**6 and 2**32 (the vocabulary is a table indexed
  by id). The in-process strategies keep their numbers outside that range.
"""

from __future__ import annotations

import base64
import faulthandler
import functools
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap
import zlib
from pathlib import Path

import bpeforge
import pytest
from bpeforge.formats.gpt2 import (
    MERGES_FILE,
    META_FILE,
    VOCAB_FILE,
    bytes_to_unicode,
    encode_token,
    load_merges,
    load_vocab,
)
from bpeforge.formats.tiktoken_ranks import read_rank_lines, read_tiktoken_ranks
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

CASES = settings(
    max_examples=300,
    deadline=2000,  # ms: a loader that takes longer on a small file counts as a hang
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# A loader stuck in native code never returns to Python to miss its deadline:
# this watchdog dumps the stacks and ends the run instead of hanging CI.
WATCHDOG_SECONDS = 120
SPECIAL = "<|endoftext|>"
# A token that the valid files lack but a merge of two of theirs makes ("the" + "the"),
# so that a tiktoken file with it gets as far as building the vocabulary.
NEW_MERGE = b"thethe"
CORPUS_TEXT = (
    "the cat sat on the mat. the cat's hat! 123 456\n\n"
    f"héllo wörld, 日本語 😀 it's the end{SPECIAL}the start   again\t\tand again\n"
) * 3


# --- valid files ----------------------------------------------------------------------

# Module-level rather than pytest fixtures, so that hypothesis reports show the
# mutated input, not every valid file.
_WORK = tempfile.TemporaryDirectory(prefix="bpeforge-malformed-")
SCRATCH = Path(_WORK.name)


@functools.lru_cache(maxsize=1)
def valid_files() -> dict[str, bytes]:
    """A small trained tokenizer in every format, as bytes by file name."""
    root = SCRATCH / "valid"
    root.mkdir()
    text = root / "corpus.txt"
    text.write_text(CORPUS_TEXT, encoding="utf-8")
    vocab, merges = bpeforge.train_bpe(text, 256 + 40 + 1, [SPECIAL])
    directory = bpeforge.save(vocab, merges, root / "tok", special_tokens=[SPECIAL])
    tok = bpeforge.Tokenizer.load(directory)
    tok.save_hf(root / "tokenizer.json")
    tok.save_tiktoken(root / "ranks.tiktoken")
    bpeforge.save_counts(bpeforge.count(text, [SPECIAL]), root / "counts.bin")
    files = {name: (directory / name).read_bytes() for name in (VOCAB_FILE, MERGES_FILE, META_FILE)}
    for name in ("tokenizer.json", "ranks.tiktoken", "counts.bin"):
        files[name] = (root / name).read_bytes()
    return files


def test_the_valid_files_load() -> None:
    """The starting point of every mutation below loads as it is."""
    valid = valid_files()
    directory = write_dir(SCRATCH / "ok", {})
    expected = bpeforge.Tokenizer.load(directory)
    assert expected.special_tokens == [SPECIAL]
    assert (
        bpeforge.Tokenizer.from_hf(write(SCRATCH / "tokenizer.json", valid["tokenizer.json"])).vocab == expected.vocab
    )
    ranks = write(SCRATCH / "ranks.tiktoken", valid["ranks.tiktoken"])
    assert bpeforge.Tokenizer.from_tiktoken(ranks, special_tokens=[SPECIAL]).vocab == expected.vocab
    assert bpeforge.load_counts(write(SCRATCH / "counts.bin", valid["counts.bin"])).special_tokens == [SPECIAL]


# --- the check --------------------------------------------------------------------------


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def write_dir(directory: Path, changed: dict[str, bytes]) -> Path:
    """A tokenizer directory: the valid files, with `changed` ones replaced."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    for name in (VOCAB_FILE, MERGES_FILE, META_FILE):
        write(directory / name, changed.get(name, valid_files()[name]))
    return directory


def draw_file(data: st.DataObject, strategy: st.SearchStrategy[bytes], path: Path) -> Path:
    """Draw the content of `path` and show it in hypothesis's report (the draw itself prints as code)."""
    content = data.draw(strategy)
    note(f"{path.name} ({len(content)} bytes): {content[:400]!r}")
    return write(path, content)


def check_load(load, path: Path, *, line_based: bool = False) -> None:
    """`load(path)` returns, or raises ValueError/OSError naming `path` (and a line: `path:N:`).

    For a directory, naming the directory or a file in it is enough. Other
    exception types propagate and fail the test.
    """
    faulthandler.dump_traceback_later(WATCHDOG_SECONDS, exit=True)
    try:
        load(path)
    except (ValueError, OSError) as err:
        message = str(err)
        described = f"{type(err).__name__}: {message[:300]}"
        assert str(path) in message or getattr(err, "filename", None) == str(path), f"does not name {path}: {described}"
        if line_based and not isinstance(err, OSError):
            assert re.search(re.escape(str(path)) + r":\d+:", message), f"does not name the line: {described}"
    finally:
        faulthandler.cancel_dump_traceback_later()


# --- strategies -------------------------------------------------------------------------

INVALID_UTF8 = [b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf"]

# Numbers that are safe in-process: up to 10**6 (a table of that many ids is
# small) and from 2**32 (they do not fit a u32 id). Ids in between are tried in
# a child process (test_huge_ids_in_a_child_process).
safe_integers = st.one_of(
    st.sampled_from([-1, 0, 1, 255, 256, 2**31 - 1 + 2**32, 2**32, 2**63, 2**64, 10**30, -(2**63)]),
    st.integers(-(2**70), 10**6),
    st.integers(2**32, 2**80),
)
json_values = st.recursive(
    st.none() | st.booleans() | safe_integers | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=6,
)


def byte_mutations(data: bytes) -> st.SearchStrategy[bytes]:
    """Truncations, byte flips, short insertions (digits included), invalid UTF-8, line edits, random bytes.

    Insertions are at most 3 bytes and flips at most 4, so that a number in the
    file grows by at most a few digits (see `safe_integers`).
    """
    size = len(data)
    positions = st.integers(0, size)

    def flip(changes: list[tuple[int, int]]) -> bytes:
        out = bytearray(data)
        for position, value in changes:
            out[position % size] = value
        return bytes(out)

    def line_edit(edit: tuple[str, int, int]) -> bytes:
        kind, i, j = edit
        lines = data.split(b"\n")
        i, j = i % len(lines), j % len(lines)
        if kind == "drop":
            del lines[i]
        elif kind == "repeat":
            lines.insert(i, lines[i])
        else:
            lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines)

    return st.one_of(
        st.integers(0, max(size - 1, 0)).map(lambda n: data[:n]),
        st.lists(st.tuples(st.integers(0, size), st.integers(0, 255)), min_size=1, max_size=4).map(flip),
        st.tuples(positions, st.binary(min_size=1, max_size=3)).map(lambda t: data[: t[0]] + t[1] + data[t[0] :]),
        st.tuples(positions, st.sampled_from(INVALID_UTF8)).map(lambda t: data[: t[0]] + t[1] + data[t[0] :]),
        st.tuples(st.sampled_from(["drop", "repeat", "swap"]), st.integers(0, 10**4), st.integers(0, 10**4)).map(
            line_edit
        ),
        st.binary(max_size=300),
    )


def set_at(document, path: tuple, value, delete: bool):
    """`document` with the value at `path` (keys, or list indexes taken modulo the length) replaced or deleted."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(document, list) and document and isinstance(head, int):
        index = head % len(document)
        copy = list(document)
        if delete and not rest:
            del copy[index]
        else:
            copy[index] = set_at(copy[index], rest, value, delete)
        return copy
    if isinstance(document, dict):
        copy = dict(document)
        if isinstance(head, int):  # the n-th key
            if not copy:
                return copy
            head = list(copy)[head % len(copy)]
        if delete and not rest:
            copy.pop(head, None)
        else:
            copy[head] = set_at(copy.get(head), rest, value, delete)
        return copy
    return document


def json_mutations(data: bytes, paths: list[tuple]) -> st.SearchStrategy[bytes]:
    """The JSON document with one value (at one of `paths`, or the whole) replaced or deleted."""
    document = json.loads(data)

    def mutate(change: tuple[tuple, object, bool]) -> bytes:
        path, value, delete = change
        return json.dumps(set_at(document, path, value, delete), ensure_ascii=False).encode("utf-8")

    return st.tuples(st.sampled_from([(), *paths]), json_values, st.booleans()).map(mutate)


def vocab_mutations(data: bytes) -> st.SearchStrategy[bytes]:
    """vocab.json as (token, id) pairs, keys kept twice where repeated: a key or an id replaced."""
    pairs = json.loads(data, object_pairs_hook=list)

    def mutate(change: tuple[int, object, str, bool]) -> bytes:
        index, value, key, repeat = change
        edited = [list(pair) for pair in pairs]
        i = index % len(edited)
        if repeat:  # the same key twice, with another id
            edited.insert(i, [edited[i][0], value])
        elif isinstance(value, (int, float)) or value is None:
            edited[i][1] = value
        else:
            edited[i][0] = key
        body = ",\n".join(f"  {json.dumps(k, ensure_ascii=False)}: {json.dumps(v)}" for k, v in edited)
        return ("{\n" + body + "\n}\n").encode("utf-8")

    return st.tuples(st.integers(0, 10**4), json_values, st.text(max_size=6), st.booleans()).map(mutate)


def lines_mutations(data: bytes, line: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    """One line replaced with `line`, or that line inserted."""
    lines = data.decode("utf-8").split("\n")

    def mutate(change: tuple[int, str, bool]) -> bytes:
        index, new, insert = change
        edited = list(lines)
        i = index % len(edited)
        edited[i : i + (0 if insert else 1)] = [new]
        return "\n".join(edited).encode("utf-8")

    return st.tuples(st.integers(0, 10**4), line, st.booleans()).map(mutate)


def token_text() -> st.SearchStrategy[str]:
    """Byte-level token text, or any text."""
    gpt2_chars = "".join(bytes_to_unicode().values())
    return st.one_of(st.text(gpt2_chars, min_size=1, max_size=4), st.text(max_size=4))


merges_lines = st.one_of(
    st.tuples(token_text(), st.sampled_from([" ", "  ", "\t", ""]), token_text()).map("".join),
    st.text(max_size=12),
)


def tiktoken_line() -> st.SearchStrategy[str]:
    tokens = st.one_of(
        st.binary(min_size=1, max_size=4).map(lambda b: base64.b64encode(b).decode()), st.text(max_size=8)
    )
    ranks = st.one_of(safe_integers.map(str), st.text(max_size=6))
    return st.tuples(tokens, st.sampled_from([" ", "  ", "\t", ""]), ranks).map("".join)


HF_PATHS = [
    ("model",),
    ("model", "type"),
    ("model", "vocab"),
    ("model", "vocab", 0),
    ("model", "vocab", 300),
    ("model", "merges"),
    ("model", "merges", 0),
    ("model", "merges", 7),
    ("model", "dropout"),
    ("model", "byte_fallback"),
    ("model", "ignore_merges"),
    ("added_tokens",),
    ("added_tokens", 0),
    ("added_tokens", 0, "id"),
    ("added_tokens", 0, "content"),
    ("added_tokens", 0, "normalized"),
    ("added_tokens", 0, "lstrip"),
    ("normalizer",),
    ("pre_tokenizer",),
    ("pre_tokenizer", "add_prefix_space"),
    ("pre_tokenizer", "use_regex"),
    ("post_processor",),
    ("decoder",),
]
META_PATHS = [("format_version",), ("special_tokens",), ("special_tokens", 0), ("pattern",), ("vocab_size",)]


# --- vocab.json, merges.txt -----------------------------------------------------------


@CASES
@given(data=st.data())
def test_load_vocab(data: st.DataObject) -> None:
    original = valid_files()[VOCAB_FILE]
    mutations = st.one_of(byte_mutations(original), vocab_mutations(original), json_mutations(original, []))
    check_load(load_vocab, draw_file(data, mutations, SCRATCH / VOCAB_FILE))


@CASES
@given(data=st.data())
def test_load_merges(data: st.DataObject) -> None:
    original = valid_files()[MERGES_FILE]
    mutations = st.one_of(byte_mutations(original), lines_mutations(original, merges_lines))
    check_load(load_merges, draw_file(data, mutations, SCRATCH / MERGES_FILE), line_based=True)


def check_fast_reader_agrees(vocab: bytes, merges: bytes) -> None:
    """The Rust reader of GPT-2's files (`formats/gpt2.rs` in the core) gives what the Python readers give, or
    None: it never accepts a file they refuse, nor reads one differently."""
    fast = bpeforge._core.parse_gpt2_files(vocab, merges)
    vocab_path, merges_path = write(SCRATCH / "fast" / VOCAB_FILE, vocab), write(SCRATCH / "fast" / MERGES_FILE, merges)
    try:
        slow = list(load_vocab(vocab_path).items()), load_merges(merges_path)
    except ValueError:
        assert fast is None
        return
    if fast is not None:
        pairs, fast_merges = fast
        assert (list(dict(pairs).items()), fast_merges) == slow


@CASES
@given(data=st.data())
def test_the_fast_reader_agrees_on_vocab_json(data: st.DataObject) -> None:
    original = valid_files()[VOCAB_FILE]
    mutations = st.one_of(byte_mutations(original), vocab_mutations(original), json_mutations(original, []))
    content = data.draw(mutations)
    note(f"vocab.json ({len(content)} bytes): {content[:400]!r}")
    check_fast_reader_agrees(content, valid_files()[MERGES_FILE])


@CASES
@given(data=st.data())
def test_the_fast_reader_agrees_on_merges_txt(data: st.DataObject) -> None:
    original = valid_files()[MERGES_FILE]
    content = data.draw(st.one_of(byte_mutations(original), lines_mutations(original, merges_lines)))
    note(f"merges.txt ({len(content)} bytes): {content[:400]!r}")
    check_fast_reader_agrees(valid_files()[VOCAB_FILE], content)


def test_the_fast_reader_reads_the_valid_files() -> None:
    """Not a test that passes by deferring: the valid files are read by the fast reader itself."""
    assert bpeforge._core.parse_gpt2_files(valid_files()[VOCAB_FILE], valid_files()[MERGES_FILE]) is not None
    check_fast_reader_agrees(valid_files()[VOCAB_FILE], valid_files()[MERGES_FILE])


# --- directories: bpeforge.load, Tokenizer.load -----------------------------------------


def draw_dir(data: st.DataObject, directory: Path) -> Path:
    """A directory with one of its three files mutated."""
    valid = valid_files()
    vocab, merges, meta = valid[VOCAB_FILE], valid[MERGES_FILE], valid[META_FILE]
    name = data.draw(st.sampled_from([VOCAB_FILE, MERGES_FILE, META_FILE]))
    mutations = {
        VOCAB_FILE: st.one_of(byte_mutations(vocab), vocab_mutations(vocab)),
        MERGES_FILE: st.one_of(byte_mutations(merges), lines_mutations(merges, merges_lines)),
        META_FILE: st.one_of(byte_mutations(meta), json_mutations(meta, META_PATHS)),
    }[name]
    write_dir(directory, {})
    draw_file(data, mutations, directory / name)
    return directory


@CASES
@given(data=st.data())
def test_load_directory(data: st.DataObject) -> None:
    check_load(bpeforge.load, draw_dir(data, SCRATCH / "tok"))


@CASES
@given(data=st.data())
def test_tokenizer_load_directory(data: st.DataObject) -> None:
    check_load(bpeforge.Tokenizer.load, draw_dir(data, SCRATCH / "tok"))


@pytest.mark.parametrize("missing", [VOCAB_FILE, MERGES_FILE])
def test_a_missing_or_unreadable_file_is_named(missing: str) -> None:
    directory = write_dir(SCRATCH / "tok", {})
    (directory / missing).unlink()
    with pytest.raises(FileNotFoundError, match=re.escape(str(directory / missing))):
        bpeforge.Tokenizer.load(directory)
    (directory / missing).mkdir()  # a directory where the file should be
    with pytest.raises(OSError, match=re.escape(str(directory / missing))):
        bpeforge.Tokenizer.load(directory)


# --- tokenizer.json ------------------------------------------------------------------------


@CASES
@given(data=st.data())
def test_load_hf(data: st.DataObject) -> None:
    original = valid_files()["tokenizer.json"]
    mutations = st.one_of(byte_mutations(original), json_mutations(original, HF_PATHS))
    check_load(bpeforge.Tokenizer.from_hf, draw_file(data, mutations, SCRATCH / "tokenizer.json"))


# --- .tiktoken --------------------------------------------------------------------------------


def tiktoken_mutations() -> st.SearchStrategy[bytes]:
    original = valid_files()["ranks.tiktoken"]
    return st.one_of(byte_mutations(original), lines_mutations(original, tiktoken_line()))


@CASES
@given(data=st.data())
def test_read_tiktoken_ranks(data: st.DataObject) -> None:
    path = draw_file(data, tiktoken_mutations(), SCRATCH / "ranks.tiktoken")
    check_load(read_tiktoken_ranks, path, line_based=True)


@CASES
@given(data=st.data())
def test_the_fast_reader_agrees_on_rank_files(data: st.DataObject) -> None:
    """The Rust reader of `.tiktoken` files (`formats/tiktoken.rs` in the core) gives what the line reader gives, or
    None: it never accepts a file the line reader refuses, nor reads one differently."""
    path = draw_file(data, tiktoken_mutations(), SCRATCH / "ranks.tiktoken")
    fast = bpeforge._core.parse_rank_file(path.read_bytes())
    try:
        slow = list(read_rank_lines(path).items())
    except ValueError:
        assert fast is None
        return
    assert fast is None or fast == slow


def test_the_fast_rank_reader_reads_the_valid_file() -> None:
    """Not a test that passes by deferring: the valid file is read by the fast reader itself."""
    path = write(SCRATCH / "ranks.tiktoken", valid_files()["ranks.tiktoken"])
    assert bpeforge._core.parse_rank_file(path.read_bytes()) == list(read_rank_lines(path).items())


@CASES
@given(data=st.data())
def test_load_tiktoken(data: st.DataObject) -> None:
    check_load(bpeforge.Tokenizer.from_tiktoken, draw_file(data, tiktoken_mutations(), SCRATCH / "ranks.tiktoken"))


# --- explicit cases -------------------------------------------------------------------------


def byte_vocab_json(extra: dict[str, object]) -> bytes:
    entries = {encode_token(bytes([b])): b for b in range(256)} | extra
    return json.dumps(entries).encode()


EXPLICIT = {
    # name: (file name, content)
    "vocab.json: not JSON": (VOCAB_FILE, b"{"),
    "vocab.json: empty": (VOCAB_FILE, b""),
    "vocab.json: invalid UTF-8": (VOCAB_FILE, b'{"\xff": 0}'),
    "vocab.json: a list of numbers": (VOCAB_FILE, b"[1, 2]"),
    "vocab.json: a list of lists": (VOCAB_FILE, b'[["a", 1, 2]]'),
    "vocab.json: nested 100000 deep": (VOCAB_FILE, b"[" * 100_000 + b"]" * 100_000),
    "vocab.json: id 2**32": (VOCAB_FILE, byte_vocab_json({"ab": 2**32})),
    "vocab.json: id 2**70": (VOCAB_FILE, byte_vocab_json({"ab": 2**70})),
    "vocab.json: id -1": (VOCAB_FILE, byte_vocab_json({"ab": -1})),
    "vocab.json: a key twice, the same id": (VOCAB_FILE, b'{"a": 0,\n "a": 0}'),
    "merges.txt: invalid UTF-8": (MERGES_FILE, b"#version: 0.2\na b\n\xff c\n"),
    "merges.txt: a surrogate": (MERGES_FILE, b"#version: 0.2\n\xed\xa0\x80 b\n"),
    "merges.txt: a merge whose result is not in the vocab": (MERGES_FILE, b"#version: 0.2\n\xc4\xa4 \xc4\xa4\n"),
    "bpeforge.json: not JSON": (META_FILE, b"{"),
    "bpeforge.json: invalid UTF-8": (META_FILE, b'{"\xff": 1}'),
    "bpeforge.json: a list": (META_FILE, b"[]"),
    "bpeforge.json: special_tokens 5": (META_FILE, b'{"format_version": 1, "special_tokens": 5}'),
    "bpeforge.json: special_tokens null": (META_FILE, b'{"format_version": 1, "special_tokens": null}'),
    "bpeforge.json: special_tokens [1]": (META_FILE, b'{"format_version": 1, "special_tokens": [1]}'),
    'bpeforge.json: special_tokens [""]': (META_FILE, b'{"format_version": 1, "special_tokens": [""]}'),
    "bpeforge.json: pattern 5": (META_FILE, b'{"format_version": 1, "pattern": 5}'),
    'bpeforge.json: pattern "("': (META_FILE, b'{"format_version": 1, "pattern": "("}'),
    "bpeforge.json: format_version twice": (META_FILE, b'{"format_version": 1, "format_version": 2}'),
}


@pytest.mark.parametrize("name", EXPLICIT)
def test_explicit_malformed_directory(name: str) -> None:
    file_name, content = EXPLICIT[name]
    directory = write_dir(SCRATCH / "tok", {file_name: content})
    check_load(bpeforge.load, directory)
    check_load(bpeforge.Tokenizer.load, directory)


def hf_with(change) -> bytes:
    document = json.loads(valid_files()["tokenizer.json"])
    change(document)
    return json.dumps(document).encode()


HF_EXPLICIT = {
    "not JSON": lambda: b"{",
    "invalid UTF-8": lambda: b'{"\xff": 1}',
    "merges 5": lambda: hf_with(lambda d: d["model"].update(merges=5)),
    "added_tokens 5": lambda: hf_with(lambda d: d.update(added_tokens=5)),
    "added_tokens normalized unhashable": lambda: hf_with(lambda d: d["added_tokens"][0].update(normalized={"a": 1})),
    "id 2**32": lambda: hf_with(lambda d: d["model"]["vocab"].update({"ĠĠĠ": 2**32})),
    "id 2**70": lambda: hf_with(lambda d: d["model"]["vocab"].update({"ĠĠĠ": 2**70})),
    "model twice, the second junk": lambda: valid_files()["tokenizer.json"].rstrip()[:-1] + b', "model": 7}',
}


@pytest.mark.parametrize("name", HF_EXPLICIT)
def test_explicit_malformed_tokenizer_json(name: str) -> None:
    check_load(bpeforge.Tokenizer.from_hf, write(SCRATCH / "tokenizer.json", HF_EXPLICIT[name]()))


@pytest.mark.parametrize("rank", [2**32, 2**70])
def test_explicit_tiktoken_rank_beyond_u32(rank: int) -> None:
    line = base64.b64encode(NEW_MERGE).decode() + f" {rank}\n"
    check_load(
        bpeforge.Tokenizer.from_tiktoken,
        write(SCRATCH / "ranks.tiktoken", valid_files()["ranks.tiktoken"] + line.encode()),
    )


def test_special_tokens_given_as_a_string_are_refused() -> None:
    """`"special_tokens": "<|endoftext|>"` must not load as 13 one-character special tokens."""
    meta = json.loads(valid_files()[META_FILE]) | {"special_tokens": SPECIAL}
    directory = write_dir(SCRATCH / "tok", {META_FILE: json.dumps(meta).encode()})
    with pytest.raises(ValueError, match=re.escape(str(directory / META_FILE))):
        bpeforge.Tokenizer.load(directory)


# --- in a child process: huge ids, count files ---------------------------------------------

# Runs `load(path)` for each (loader, path) pair given as JSON on stdin, under a
# 1 GiB address-space limit, printing a JSON line when it starts one (so that a
# crash is pinned on its input) and one with the outcome.
_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, resource.RLIM_INFINITY))
    import bpeforge

    LOADERS = {"load_counts": bpeforge.load_counts, "Tokenizer.load": bpeforge.Tokenizer.load,
               "load_hf": bpeforge.Tokenizer.from_hf, "load_tiktoken": bpeforge.Tokenizer.from_tiktoken}
    for loader, path in json.load(sys.stdin):
        print(json.dumps({"path": path, "started": True}), flush=True)
        start = time.monotonic()
        result = {"path": path}
        try:
            LOADERS[loader](path)
        except Exception as err:
            result.update(error=type(err).__name__, message=str(err), filename=getattr(err, "filename", None),
                          allowed=isinstance(err, (ValueError, OSError)))
        result["seconds"] = time.monotonic() - start
        print(json.dumps(result), flush=True)
    """
)


def run_in_child(cases: list[tuple[str, Path]]) -> dict[str, dict]:
    """Each `(loader, path)` in a child process (a new one after a crash): the outcome by path."""
    env = {**os.environ, "MALLOC_ARENA_MAX": "2", "RUST_BACKTRACE": "0"}
    todo = [(loader, str(path)) for loader, path in cases]
    outcomes: dict[str, dict] = {}
    while todo:
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD], input=json.dumps(todo), capture_output=True, text=True, env=env, timeout=600
        )
        for line in proc.stdout.splitlines():
            record = json.loads(line)
            outcomes[record["path"]] = record
        done = [path for _, path in todo if path in outcomes]
        if proc.returncode != 0:
            if not done or not outcomes[done[-1]].get("started"):
                pytest.fail(f"the child process failed before loading a file:\n{proc.stderr[-3000:]}")
            said = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("note:")]
            outcomes[done[-1]]["crash"] = f"exit status {proc.returncode}: {said[-1] if said else '(nothing)'}"
        todo = todo[len(done) :]
    return outcomes


def problem(record: dict) -> str | None:
    """What is wrong with one child outcome, if anything."""
    path = record["path"]
    if "crash" in record:
        return f"the process died ({record['crash']})"
    if "wrong" in record:
        return record["wrong"]
    if record["seconds"] > 2:
        return f"took {record['seconds']:.1f} s"
    if "error" not in record:
        return None
    described = f"{record['error']}: {record['message'][:200]}"
    if not record["allowed"]:
        return described
    if path not in record["message"] and record["filename"] != path:
        return f"does not name the file: {described}"
    return None


def assert_no_problems(outcomes: dict[str, dict], describe) -> None:
    problems = [(path, p) for path, record in outcomes.items() if (p := problem(record))]
    lines = [f"{describe(path)}: {p}" for path, p in problems[:12]]
    assert not problems, f"{len(problems)} of {len(outcomes)} inputs fail:\n" + "\n".join(lines)


@pytest.mark.parametrize("token_id", [10**7, 10**9, 2**32 - 1])
def test_huge_ids_in_a_child_process(token_id: int) -> None:
    """One token with a huge id: refused (or loaded) in bounded memory, never a crash."""
    valid = valid_files()
    root = SCRATCH / f"huge-{token_id}"
    vocab = json.loads(valid[VOCAB_FILE]) | {"ĠĠĠ": token_id}
    directory = write_dir(root / "tok", {VOCAB_FILE: json.dumps(vocab).encode()})
    hf = hf_with(lambda d: d["model"]["vocab"].update({"ĠĠĠ": token_id}))
    line = base64.b64encode(NEW_MERGE).decode() + f" {token_id}\n"
    cases = [
        ("Tokenizer.load", directory),
        ("load_hf", write(root / "tokenizer.json", hf)),
        ("load_tiktoken", write(root / "ranks.tiktoken", valid["ranks.tiktoken"] + line.encode())),
    ]
    names = {str(path): loader for loader, path in cases}
    assert_no_problems(run_in_child(cases), lambda path: f"{names[path]} with id {token_id}")


def count_file_fields(data: bytes) -> list[tuple[int, int]]:
    """(offset, width) of every length and count field of a count file (docs/format.md)."""
    fields, pos = [], 12
    fields.append((pos, 2))
    pos += 2 + int.from_bytes(data[pos : pos + 2], "little")
    fields.append((pos, 4))
    num_specials = int.from_bytes(data[pos : pos + 4], "little")
    pos += 4
    for _ in range(num_specials):
        fields.append((pos, 4))
        pos += 4 + int.from_bytes(data[pos : pos + 4], "little")
    fields += [(pos, 8), (pos + 8, 8)]
    entries = int.from_bytes(data[pos + 8 : pos + 16], "little")
    pos += 16
    for _ in range(entries):
        fields.append((pos, 4))
        pos += 4 + int.from_bytes(data[pos : pos + 4], "little")
        fields.append((pos, 8))
        pos += 8
    return fields


def test_count_files_truncated_and_lying() -> None:
    """Every truncation, and every length or count field set to a lie, of a valid count file."""
    original = valid_files()["counts.bin"]
    variants = {f"truncated to {n} bytes": original[:n] for n in range(len(original))}
    for offset, width in count_file_fields(original):
        for lie in (2 ** (8 * width) - 1, 2 ** (8 * width - 1), 2**31 - 1):
            lie_bytes = (lie % 2 ** (8 * width)).to_bytes(width, "little")
            variants[f"field at {offset} set to {lie:#x}"] = original[:offset] + lie_bytes + original[offset + width :]
    root = SCRATCH / "counts-lies"
    paths = {str(write(root / f"{i}.bin", data)): name for i, (name, data) in enumerate(variants.items())}
    outcomes = run_in_child([("load_counts", Path(path)) for path in paths])
    assert_no_problems(outcomes, lambda path: paths[path])


def test_count_file_counts_past_2_64_are_refused() -> None:
    """The same pre-token twice, with counts that add up past 2**64: an error, not a wrapped count."""
    entry = struct.pack("<I", 1) + b"a" + struct.pack("<Q", 2**64 - 1)
    head = b"BPEFCNT\0" + struct.pack("<IH", 2, 4) + b"gpt2" + struct.pack("<IQQ", 0, 0, 2)
    body = head + entry + entry + b"END\0"
    path = write(SCRATCH / "counts-wrap" / "twice.bin", body + struct.pack("<I", zlib.crc32(body)))
    outcome = run_in_child([("load_counts", path)])[str(path)]
    if "error" not in outcome and "crash" not in outcome:
        outcome["wrong"] = "loads: the count wrapped around 2**64 without an error"
    assert problem(outcome) is None, problem(outcome)


@settings(max_examples=3, deadline=None, derandomize=True, database=None, phases=[Phase.explicit, Phase.generate])
@given(data=st.data())
def test_count_files_mutated(data: st.DataObject) -> None:
    """Batches of 60 hypothesis-mutated count files, each batch in one child process (no shrinking)."""
    root = SCRATCH / "counts-mutated"
    shutil.rmtree(root, ignore_errors=True)
    batch = data.draw(st.lists(byte_mutations(valid_files()["counts.bin"]), min_size=60, max_size=60))
    paths = {str(write(root / f"{i}.bin", mutated)): mutated for i, mutated in enumerate(batch)}
    outcomes = run_in_child([("load_counts", Path(path)) for path in paths])
    assert_no_problems(outcomes, lambda path: describe_change(valid_files()["counts.bin"], paths[path]))


def describe_change(original: bytes, mutated: bytes) -> str:
    """Where `mutated` first differs from `original`, compactly (the whole file is in the child's scratch)."""
    at = next((i for i, (a, b) in enumerate(zip(original, mutated)) if a != b), min(len(original), len(mutated)))
    return (
        f"count file of {len(mutated)} bytes (valid: {len(original)}), from byte {at}: "
        f"{mutated[at : at + 12].hex()} instead of {original[at : at + 12].hex()}"
    )
