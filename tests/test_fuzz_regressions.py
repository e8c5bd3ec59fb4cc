"""The fuzz corpus (`fuzz/corpus/<target>/*`), replayed through the Python API.

`.ci/fuzz` runs the cargo-fuzz targets of `fuzz/` for a short while; the inputs
they found interesting are kept in `fuzz/corpus/`. Here each of them is run
through the Python-level API that the target's Rust code serves, with the same
property, so that they stay regression tests in the normal suite:

- `pretokenize`: raw bytes; if UTF-8, `bpeforge.pretokenize` equals `regex.findall`.
- `specials`: UTF-8 fields separated by 0xFF, the special tokens then the text;
  `Tokenizer.encode` gives the special ids where `re.split` (longest first) finds them.
- `chunking`: a 3-byte header (chunk size, flags, number of specials), the special
  tokens each ended by 0xFF, then a file's bytes; counting the file with that chunk
  size gives the counts of the whole text, or a ValueError at the first invalid byte.
- `encode`: a 5-byte header, merges as pairs of little-endian u16 token indexes,
  the special tokens, then the text; the tokenizer they make round-trips the text,
  gives the ids of a plain reference BPE, and streams to the same ids.
- `counts_file`: raw bytes written to a file; `bpeforge.load_counts` loads it or
  raises ValueError/OSError naming the file. These run in a child process with a
  1 GiB address-space limit, since a lying length field can make the reader
  allocate gigabytes (a crash there is reported against the file, not the suite).

The layouts are documented in each `fuzz/fuzz_targets/*.rs`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import bpeforge
import pytest
import regex
from reference_trainer import GPT2_PATTERN
from splits import regex_pieces

CORPUS = Path(__file__).resolve().parent.parent / "fuzz" / "corpus"
GPT2 = regex.compile(GPT2_PATTERN)
PRESET_PATTERNS = dict(bpeforge.PATTERNS)
SEPARATOR = b"\xff"
PATTERNS = ["gpt2", "cl100k", "o200k"]
# As in fuzz/fuzz_targets/encode.rs.
MAX_TEXT = 16 << 10
MAX_REFERENCE_PIECE = 1024


def corpus(target: str) -> list:
    files = sorted((CORPUS / target).glob("*")) if (CORPUS / target).is_dir() else []
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no fuzz/corpus/{target} in this tree"))]
    return [pytest.param(path, id=path.name) for path in files]


def split_fields(data: bytes, n: int) -> tuple[list[bytes], bytes]:
    """Up to `n` fields each ended by 0xFF, and the rest (`split_fields` in fuzz/src/lib.rs)."""
    fields = []
    while len(fields) < n and SEPARATOR in data:
        field, data = data.split(SEPARATOR, 1)
        fields.append(field)
    return fields, data


def take(data: bytes, n: int) -> tuple[bytes, bytes]:
    """`n` bytes as arbitrary's `Unstructured` reads them: zero-filled past the end."""
    return data[:n].ljust(n, b"\0"), data[n:]


def decode_all(fields: list[bytes]) -> list[str] | None:
    try:
        return [field.decode("utf-8") for field in fields]
    except UnicodeDecodeError:
        return None


def split_specials(specials: list[str], text: str) -> list[str | int]:
    """Python's `re.split` on the specials sorted longest first: text pieces and special indexes."""
    if not specials:
        return [text] if text else []
    by_length = sorted(specials, key=len, reverse=True)
    parts = re.split("(" + "|".join(map(re.escape, by_length)) + ")", text)
    out: list[str | int] = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(specials.index(part))
        elif part:
            out.append(part)
    return out


def bad_specials(specials: list[str]) -> bool:
    return "" in specials or len(set(specials)) != len(specials)


# --- pretokenize --------------------------------------------------------------------


@pytest.mark.parametrize("path", corpus("pretokenize"))
def test_pretokenize_corpus(path: Path) -> None:
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return  # the target checks only that the raw bytes do not panic is_split_point
    pieces = bpeforge.pretokenize(text)
    assert pieces == regex_pieces(GPT2, text)
    assert "".join(pieces) == text


# --- specials -----------------------------------------------------------------------


@pytest.mark.parametrize("path", corpus("specials"))
def test_specials_corpus(path: Path) -> None:
    fields = decode_all(path.read_bytes().split(SEPARATOR))
    if fields is None:
        return
    specials, text = fields[:-1][:16], fields[-1]
    vocab = {i: bytes([i]) for i in range(256)}
    if "" in specials:
        with pytest.raises(ValueError, match="empty"):
            bpeforge.Tokenizer(vocab, [], specials)
        return
    tok = bpeforge.Tokenizer(vocab, [], specials)  # a repeated special token is kept once
    specials = tok.special_tokens
    expected: list[int] = []
    for part in split_specials(specials, text):
        # No merges: every byte of text is its own id.
        expected.extend([tok.token_to_id(specials[part])] if isinstance(part, int) else part.encode("utf-8"))
    ids = tok.encode(text)
    assert ids == expected
    assert tok.decode(ids) == text


# --- chunking -----------------------------------------------------------------------


@pytest.mark.parametrize("path", corpus("chunking"))
def test_chunking_corpus(path: Path, tmp_path: Path) -> None:
    header, rest = take(path.read_bytes(), 3)
    target, flags, num_specials = header
    fields, data = split_fields(rest, num_specials % 5)
    specials = decode_all(fields)
    if specials is None:
        return
    chunk_size = max(1, target % 32)
    # As the fuzz target: flags % 6 picks GPT-2's scanner (cuts before any ASCII
    # whitespace after a non-space), cl100k (before spaces and tabs only),
    # GPT-2's regex as a custom pattern (cuts only after special tokens), or
    # o200k, llama3, qwen2 (as cl100k).
    pattern = ["gpt2", "cl100k", GPT2_PATTERN, "o200k", "llama3", "qwen2"][flags % 6]
    corpus_file = tmp_path / "corpus.txt"
    corpus_file.write_bytes(data)

    def count(chunk_size: int = chunk_size) -> bpeforge.Counts:
        return bpeforge.Counts.from_files(
            [str(corpus_file)], specials, num_threads=1, chunk_size=chunk_size, pattern=pattern
        )

    if bad_specials(specials):
        with pytest.raises(ValueError, match="special token"):
            count()
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        with pytest.raises(ValueError, match=re.escape(f"{corpus_file}: invalid UTF-8 at byte offset {err.start};")):
            count()
        return
    counts = count()
    compiled = regex.compile(PRESET_PATTERNS.get(pattern, pattern))
    expected = Counter(
        piece.encode("utf-8")
        for part in split_specials(specials, text)
        if isinstance(part, str)
        for piece in regex_pieces(compiled, part)
    )
    assert dict(counts.items()) == dict(expected)
    assert counts.bytes_counted == len(data)


# --- encode -------------------------------------------------------------------------


def reference_bpe(piece: bytes, lowest: dict[bytes, int], rules: dict[tuple[int, int], tuple[int, int]]) -> list[int]:
    """Merge the lowest-ranked adjacent pair, the leftmost of equals, until none has a merge."""
    parts = [lowest[bytes([b])] for b in piece]
    while True:
        candidates = [(rules[pair][0], i) for i, pair in enumerate(zip(parts, parts[1:])) if pair in rules]
        if not candidates:
            return parts
        _, i = min(candidates)
        parts[i : i + 2] = [rules[(parts[i], parts[i + 1])][1]]


@pytest.mark.parametrize("path", corpus("encode"))
def test_encode_corpus(path: Path) -> None:
    header, rest = take(path.read_bytes(), 5)
    rotate, pattern, repeat, num_merges, num_specials = header
    merge_indexes = []
    for _ in range(num_merges):
        pair, rest = take(rest, 4)
        merge_indexes.append((int.from_bytes(pair[:2], "little"), int.from_bytes(pair[2:], "little")))
    fields, text_bytes = split_fields(rest, num_specials % 5)
    decoded = decode_all([*fields, text_bytes])
    if decoded is None:
        return
    *specials, text = decoded
    if repeat >= 192:
        # Cut at the last char boundary at or before MAX_TEXT bytes.
        text = (text * (repeat - 190)).encode("utf-8")[:MAX_TEXT].decode("utf-8", errors="ignore")

    tokens = [bytes([(b + rotate) % 256]) for b in range(256)]
    merges = []
    for left, right in merge_indexes:
        merge = (tokens[left % len(tokens)], tokens[right % len(tokens)])
        tokens.append(merge[0] + merge[1])
        merges.append(merge)
    pattern_name = PATTERNS[max(0, pattern % 8 - 5)]
    vocab = dict(enumerate(tokens))
    if "" in specials:
        with pytest.raises(ValueError, match="empty"):
            bpeforge.Tokenizer(vocab, merges, specials, pattern=pattern_name)
        return
    tok = bpeforge.Tokenizer(vocab, merges, specials, pattern=pattern_name)
    specials = tok.special_tokens  # a repeated one is kept once

    ids = tok.encode(text)
    assert tok.decode_bytes(ids) == text.encode("utf-8")

    if pattern_name == "gpt2" and all(len(p.encode()) <= MAX_REFERENCE_PIECE for p in regex_pieces(GPT2, text)):
        lowest: dict[bytes, int] = {}
        for token_id, token in sorted(tok.vocab.items()):
            lowest.setdefault(token, token_id)
        rules: dict[tuple[int, int], tuple[int, int]] = {}
        for rank, (left, right) in enumerate(merges):
            rules.setdefault((lowest[left], lowest[right]), (rank, lowest[left + right]))
        expected: list[int] = []
        for part in split_specials(specials, text):
            if isinstance(part, int):
                expected.append(lowest[specials[part].encode("utf-8")])
            else:
                for piece in regex_pieces(GPT2, part):
                    expected.extend(reference_bpe(piece.encode("utf-8"), lowest, rules))
        assert ids == expected

    step = 1 + rotate % 7
    assert list(tok.encode_iterable(text[i : i + step] for i in range(0, len(text), step))) == ids
    assert tok.encode_batch([text, text], num_threads=2) == [ids, ids]


# --- count files --------------------------------------------------------------------

# Loads each file given on the command line and prints one JSON line per file:
# first that it starts (so that a crash is pinned on the file), then the outcome.
# A table that loads is compared with a plain reading of the format (docs/format.md)
# with exact integers: counts must not wrap around 2**64, neither when loading nor
# when `merge_counts` adds the file to itself.
_COUNTS_CHILD = textwrap.dedent(
    """
    import json, resource, sys, tempfile, time, zlib
    from pathlib import Path
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, resource.RLIM_INFINITY))
    import bpeforge

    def reference(data):
        pos = 0
        def take(n):
            nonlocal pos
            if pos + n > len(data):
                raise ValueError("truncated")
            pos += n
            return data[pos - n : pos]
        def number(n):
            return int.from_bytes(take(n), "little")
        if take(8) != b"BPEFCNT\\0" or number(4) != 2:
            raise ValueError("not a version 2 count file")
        pattern = take(number(2)).decode("utf-8")
        specials = [take(number(4)).decode("utf-8") for _ in range(number(4))]
        bytes_counted, counts = number(8), {}
        for _ in range(number(8)):
            token = take(number(4))
            counts[token] = counts.get(token, 0) + number(8)
        if take(4) != b"END\\0":
            raise ValueError("no end marker")
        if number(4) != zlib.crc32(data[: pos - 4]) or pos != len(data):
            raise ValueError("checksum")
        return pattern, specials, bytes_counted, counts

    scratch = Path(tempfile.mkdtemp())
    for name in sys.argv[1:]:
        print(json.dumps({"file": name, "started": True}), flush=True)
        start = time.monotonic()
        result = {"file": name, "problems": []}
        try:
            counts = bpeforge.load_counts(name)
            try:
                expected = reference(Path(name).read_bytes())
            except ValueError as err:
                result["problems"].append(f"loads, but a plain reading of the format fails: {err}")
            else:
                got = (counts.pattern, counts.special_tokens, counts.bytes_counted, dict(counts.items()))
                if got != expected:
                    result["problems"].append(f"loads as {got!r:.300}, but the file holds {expected!r:.300}")
            again = bpeforge.load_counts(bpeforge.save_counts(counts, scratch / "again.bin", overwrite=True))
            if sorted(again.items()) != sorted(counts.items()):
                result["problems"].append("save_counts + load_counts changed the table")
            try:
                total = bpeforge.merge_counts([name, name])
            except ValueError:
                pass
            else:
                doubled = {token: 2 * n for token, n in counts.items()}
                if dict(total.items()) != doubled or total.bytes_counted != 2 * counts.bytes_counted:
                    result["problems"].append(
                        f"merge_counts of the file with itself gives {dict(total.items())!r:.200} "
                        f"(bytes_counted {total.bytes_counted}), not {doubled!r:.200} ({2 * counts.bytes_counted})"
                    )
        except Exception as err:
            result.update(error=type(err).__name__, message=str(err), oserror=isinstance(err, OSError),
                          valueerror=isinstance(err, ValueError), filename=getattr(err, "filename", None))
        result["seconds"] = time.monotonic() - start
        print(json.dumps(result), flush=True)
    """
)


@pytest.fixture(scope="module")
def counts_outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Every count-file corpus input through `load_counts`, in child processes (a new one after a crash)."""
    scratch = tmp_path_factory.mktemp("counts")
    copies = []
    for path in sorted((CORPUS / "counts_file").glob("*")):
        copy = scratch / f"{path.name}.bin"  # named as users name them
        copy.write_bytes(path.read_bytes())
        copies.append(str(copy))
    env = {**os.environ, "MALLOC_ARENA_MAX": "2", "RUST_BACKTRACE": "0"}
    outcomes: dict[str, dict] = {}
    while copies:
        proc = subprocess.run(
            [sys.executable, "-c", _COUNTS_CHILD, *copies], capture_output=True, text=True, timeout=300, env=env
        )
        for line in proc.stdout.splitlines():
            record = json.loads(line)
            outcomes[record["file"]] = record
        done = [name for name in copies if name in outcomes]
        if proc.returncode != 0 and done and outcomes[done[-1]].get("started"):
            outcomes[done[-1]]["crash"] = f"exit status {proc.returncode}; stderr:\n{proc.stderr[-1500:]}"
        elif proc.returncode != 0:
            pytest.fail(f"the count-file child process failed before loading a file:\n{proc.stderr[-3000:]}")
        copies = copies[len(done) :]
    return {Path(name).name[: -len(".bin")]: {**record, "copy": name} for name, record in outcomes.items()}


@pytest.mark.parametrize("path", corpus("counts_file"))
def test_counts_file_corpus(path: Path, counts_outcomes: dict[str, dict]) -> None:
    record = counts_outcomes[path.name]
    assert "crash" not in record, f"load_counts crashed the process (1 GiB address-space limit): {record['crash']}"
    assert record["seconds"] < 2, f"load_counts took {record['seconds']:.1f} s"
    if "error" in record:
        assert record["valueerror"] or record["oserror"], f"{record['error']}: {record['message']}"
        named = record["copy"] in record["message"] or record["filename"] == record["copy"]
        assert named, f"the message does not name the file: {record['error']}: {record['message']}"
    assert not record["problems"], "; ".join(record["problems"])
