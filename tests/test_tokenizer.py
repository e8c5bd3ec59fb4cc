"""`Tokenizer`: GPT-2-exact encoding, decoding and streaming (DESIGN §1.2, issue 3).

The oracle is tiktoken's GPT-2 encoding, built here from the CS336 fixture
files so that nothing needs the network. Those fixtures live outside the
repository: set BPEFORGE_TEST_DATA to the shared data directory (the one
holding `cs336/` and `corpora/`). Tests that need no fixture use small
vocabularies of their own and always run.
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
import lzma
import os
import pickle
import random
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import bpeforge
import bpeforge.tokenizer as tokenizer_module
import pytest
import regex
from bpeforge import Tokenizer
from bpeforge.formats.gpt2 import load_vocab
from conftest import CS336_TEXTS
from hypothesis import given, settings
from hypothesis import strategies as st

SPECIAL = "<|endoftext|>"
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
TINYSTORIES_5M = "tinystories_sample_5M.txt"
MIB = 1 << 20

# A few hundred generated examples in all, the same ones on every run.
HYPOTHESIS = {"derandomize": True, "deadline": None, "database": None}


# --------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiktoken_gpt2(gpt2_paths):
    """tiktoken's `gpt2` encoding, from the fixture files instead of a download."""
    tiktoken = pytest.importorskip("tiktoken")
    vocab = load_vocab(gpt2_paths[0])
    return tiktoken.Encoding(
        name="gpt2-local",
        pat_str=GPT2_PATTERN,
        mergeable_ranks={token: token_id for token_id, token in vocab.items() if token_id != 50256},
        special_tokens={SPECIAL: 50256},
    )


@pytest.fixture
def tiny() -> Tokenizer:
    """The docstring's tokenizer: bytes, three merges and one special.

    Ids: 0-255 the single bytes (h=104, e=101, l=108, o=111, d=100, r=114, w=119),
    256 = b" w", 257 = b"or", 258 = b" wor", and <|endoftext|> appended as 259.
    """
    vocab = {i: bytes([i]) for i in range(256)} | {256: b" w", 257: b"or", 258: b" wor"}
    return Tokenizer(vocab, [(b" ", b"w"), (b"o", b"r"), (b" w", b"or")], [SPECIAL])


# --------------------------------------------------------------------------
# Generated text
# --------------------------------------------------------------------------

# Pieces that exercise the pre-tokenizer's corners: whitespace of every kind
# (the `\s+(?!\S)` rule), NUL and controls, emoji with modifiers and ZWJ,
# digits of several scripts, contractions (ASCII and curly), CJK, combining
# marks, and fragments of the special token.
FRAGMENTS = [
    " ",
    "  ",
    "   ",
    "\n",
    "\n\n",
    "\r\n",
    "\r\n\r\n",
    "\r",
    "\t",
    " \t ",
    "\u00a0",
    "\u3000",
    "\u2028",
    "\x85",
    "\x0b\x0c",
    "\x00",
    "\x00\x00",
    "\x7f",
    "😀",
    "👍🏽",
    "👨\u200d👩\u200d👧\u200d👦",
    "🏳️\u200d🌈",
    "\u200d",
    "0",
    "7",
    "2024",
    "3.14",
    "١٢٣",
    "½",
    "Ⅻ",
    "'",
    "'s",
    "'t",
    "'re",
    "'ve",
    "'m",
    "'ll",
    "'d",
    "'S",
    "don't",
    "we'll",
    "it’s",
    "猫",
    "日本語",
    "한국어",
    "e\u0301",
    "\u0301",
    "\u0308\u0308",
    "ñ",
    "ß",
    "a",
    "the",
    "Hello",
    " world",
    "-",
    "...",
    "<|",
    "|>",
    "<|endoftext",
    "endoftext|>",
    SPECIAL,
]

any_text = st.text()
biased_text = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=3)), max_size=40).map("".join)


@st.composite
def text_with_specials(draw) -> str:
    """Biased text with <|endoftext|> at the start, the end and back to back in between."""
    parts = draw(st.lists(biased_text, min_size=1, max_size=4))
    text = SPECIAL * draw(st.integers(0, 2)) + parts[0]
    for part in parts[1:]:
        text += SPECIAL * draw(st.integers(1, 3)) + part
    return text + SPECIAL * draw(st.integers(0, 2))


all_kinds_of_text = st.one_of(any_text, biased_text, text_with_specials())


# --------------------------------------------------------------------------
# 1. Parity with tiktoken's GPT-2 encoding
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", CS336_TEXTS)
def test_matches_tiktoken_on_cs336_fixture_texts(gpt2, tiktoken_gpt2, cs336_texts, name):
    text = cs336_texts[name]
    expected = tiktoken_gpt2.encode(text, allowed_special="all")
    assert gpt2.encode(text) == expected
    assert gpt2.decode(expected) == text


def test_cs336_fixture_texts_cover_specials_and_newline_runs(cs336_texts):
    # What the parity above covers beyond prose. (No fixture has CRLF: the
    # generated text below does.)
    assert cs336_texts["special_token_trailing_newlines.txt"] == f"{SPECIAL}\n\n"
    assert cs336_texts["special_token_double_newlines_non_whitespace.txt"] == f"{SPECIAL}\n\ntesting!"
    assert SPECIAL in cs336_texts["tinystories_sample.txt"]


@settings(max_examples=150, **HYPOTHESIS)
@given(text=any_text)
def test_matches_tiktoken_on_any_unicode(gpt2, tiktoken_gpt2, text):
    assert gpt2.encode(text) == tiktoken_gpt2.encode(text, allowed_special="all")


@settings(max_examples=150, **HYPOTHESIS)
@given(text=biased_text)
def test_matches_tiktoken_on_whitespace_emoji_digits_and_contractions(gpt2, tiktoken_gpt2, text):
    assert gpt2.encode(text) == tiktoken_gpt2.encode(text, allowed_special="all")


@settings(max_examples=100, **HYPOTHESIS)
@given(text=text_with_specials())
def test_matches_tiktoken_with_special_tokens_anywhere(gpt2, tiktoken_gpt2, text):
    assert gpt2.encode(text) == tiktoken_gpt2.encode(text, allowed_special="all")


def test_hand_checked_gpt2_ids(gpt2):
    # "Hello" = 15496, " world" = 995, <|endoftext|> = 50256, "\n\n" = 628 (gpt2_vocab.json).
    assert gpt2.encode("Hello world<|endoftext|>\n\n") == [15496, 995, 50256, 628]
    # "a   b": `\s+(?!\S)` leaves the last space to " b": "a" = 64, "  " = 220 220, " b" = 275.
    assert gpt2.encode("a   b") == [64, 220, 220, 275]


def test_without_specials_the_special_text_is_ordinary(gpt2_paths, tiktoken_gpt2):
    plain = Tokenizer.from_files(*gpt2_paths)
    text = f"a{SPECIAL}b"
    assert plain.encode(text) == tiktoken_gpt2.encode_ordinary(text)
    assert 50256 not in plain.encode(text)
    assert plain.special_tokens == []


# --------------------------------------------------------------------------
# 2. Round trips and invalid UTF-8
# --------------------------------------------------------------------------


@settings(max_examples=150, **HYPOTHESIS)
@given(text=all_kinds_of_text)
def test_decode_inverts_encode(gpt2, text):
    ids = gpt2.encode(text)
    assert gpt2.decode(ids) == text
    assert gpt2.decode_bytes(ids) == text.encode("utf-8")


def test_decode_replaces_invalid_utf8(gpt2):
    # Byte 0x80 (a lone continuation byte) is its own token: 222 ("Ģ" in the vocab file).
    assert gpt2.token_to_id(b"\x80") == 222
    assert gpt2.decode_bytes([222]) == b"\x80"
    assert gpt2.decode([222]) == "\ufffd"
    # "hello" = 31373, then the stray byte, then " world" = 995.
    assert gpt2.decode([31373, 222, 995]) == "hello\ufffd world"
    # 😀 is F0 9F 98 80: 47249 = F0 9F 98, 222 = 80. Half an emoji is not text.
    assert gpt2.encode("😀") == [47249, 222]
    assert gpt2.decode([47249]) == "\ufffd"
    assert gpt2.decode_bytes([47249]) == b"\xf0\x9f\x98"
    assert gpt2.decode([47249, 222]) == "😀"


def test_decode_accepts_numpy_ids(gpt2):
    np = pytest.importorskip("numpy")
    # What `np.load`/`np.memmap` of an encoded corpus gives back.
    assert gpt2.decode(np.array([15496, 995], dtype=np.uint16)) == "Hello world"
    assert gpt2.decode(np.array([15496, 995], dtype=np.int64)) == "Hello world"


# --------------------------------------------------------------------------
# 3. Special tokens: longest first, appended when missing
# --------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["single first", "double first"])
def test_overlapping_specials_longest_wins(gpt2_paths, gpt2, order):
    double = SPECIAL * 2
    specials = [SPECIAL, double] if order == "single first" else [double, SPECIAL]
    tok = Tokenizer.from_files(*gpt2_paths, specials)
    # <|endoftext|> is 50256 in GPT-2; the double is not in the vocab and is appended as 50257.
    assert tok.vocab_size == 50258
    assert tok.token_to_id(double) == 50257
    assert tok.encode(double) == [50257]
    # Three in a row: the double from the left, then the single.
    assert tok.encode(SPECIAL * 3) == [50257, 50256]
    # "a" = 64, "b" = 65.
    assert tok.encode(f"a{double}{SPECIAL}b") == [64, 50257, 50256, 65]
    assert tok.decode([50257]) == double
    # With only the single special, the same text is two tokens.
    assert gpt2.encode(double) == [50256, 50256]


def test_missing_specials_are_appended_in_order(gpt2_paths):
    tok = Tokenizer.from_files(*gpt2_paths, ["<|pad|>", SPECIAL, "<|im_start|>", "<|pad|>"])
    # <|endoftext|> keeps 50256; the two new ones get 50257 and 50258 (the repeat is ignored).
    assert tok.vocab_size == 50257 + 2
    assert tok.special_tokens == ["<|pad|>", SPECIAL, "<|im_start|>"]
    assert tok.token_to_id("<|pad|>") == 50257
    assert tok.token_to_id("<|im_start|>") == 50258
    assert tok.id_to_token(50258) == b"<|im_start|>"
    # "hi" = 5303.
    text = "<|pad|>hi<|im_start|><|endoftext|>"
    assert tok.encode(text) == [50257, 5303, 50258, 50256]
    assert tok.decode(tok.encode(text)) == text


def test_specials_in_tiny_vocab(tiny):
    # h e l l o, " wor" (258: " " + "w" -> " w", "o" + "r" -> "or", " w" + "or"), l d, then the special.
    assert tiny.encode("hello world<|endoftext|>") == [104, 101, 108, 108, 111, 258, 108, 100, 259]
    assert tiny.vocab_size == 260
    assert tiny.id_to_token(259) == SPECIAL.encode()


# --------------------------------------------------------------------------
# 4. Empty input
# --------------------------------------------------------------------------


def test_empty_input(tiny):
    assert tiny.encode("") == []
    assert tiny.decode([]) == ""
    assert tiny.decode_bytes([]) == b""
    assert list(tiny.encode_iterable([])) == []
    assert list(tiny.encode_iterable(["", "", ""])) == []
    assert tiny.encode_batch([]) == []
    assert tiny.encode_batch([""]) == [[]]


# --------------------------------------------------------------------------
# 5. Unknown ids
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad_id",
    [260 + 5, -1, 2**64],  # the tiny vocab has 260 ids; 2**64 does not fit any machine integer
    ids=["vocab_size+5", "negative", "2**64"],
)
def test_unknown_id_raises_value_error_naming_it(tiny, bad_id):
    assert tiny.vocab_size == 260
    for ids in ([bad_id], [104, bad_id, 105]):
        with pytest.raises(ValueError, match=regex.escape(str(bad_id))):
            tiny.decode(ids)
        with pytest.raises(ValueError, match=regex.escape(str(bad_id))):
            tiny.decode_bytes(ids)


def test_unknown_id_has_no_token(tiny):
    assert tiny.id_to_token(tiny.vocab_size) is None
    assert tiny.id_to_token(-1) is None
    assert tiny.token_to_id(b"not a token") is None


# --------------------------------------------------------------------------
# 6. encode_iterable == encode, however the text is cut
# --------------------------------------------------------------------------


def interesting_cuts(text: str) -> list[int]:
    """Cut points next to whitespace (inside runs, inside CRLF) and inside special tokens."""
    cuts = [i for i in range(1, len(text)) if text[i - 1].isspace() or text[i].isspace()]
    start = text.find(SPECIAL)
    while start != -1:
        cuts.extend(range(start + 1, start + len(SPECIAL)))
        start = text.find(SPECIAL, start + 1)
    return cuts


def cut(text: str, points: list[int]) -> list[str]:
    bounds = [0, *sorted(points), len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


@settings(max_examples=150, **HYPOTHESIS)
@given(data=st.data())
def test_encode_iterable_equals_encode_for_any_cuts(gpt2, data):
    text = data.draw(st.one_of(biased_text, text_with_specials(), any_text), label="text")
    special_points = interesting_cuts(text)
    points = data.draw(st.lists(st.integers(0, len(text)), max_size=8), label="anywhere")
    if special_points:
        points += data.draw(st.lists(st.sampled_from(special_points), max_size=12), label="inside runs and specials")
    # Small chunk sizes make the streaming cut logic run on these short texts.
    chunk_chars = data.draw(st.sampled_from([1, 2, 5, 64, tokenizer_module.STREAM_CHUNK_CHARS]), label="chunk chars")
    pieces = cut(text, points)
    assert "".join(pieces) == text
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tokenizer_module, "STREAM_CHUNK_CHARS", chunk_chars)
        assert list(gpt2.encode_iterable(pieces)) == gpt2.encode(text)
        assert list(gpt2.encode_iterable(iter(pieces))) == gpt2.encode(text)


@pytest.mark.parametrize("chunk_chars", [64, None])
def test_encode_iterable_over_file_lines(gpt2, tiktoken_gpt2, cs336_dir, monkeypatch, chunk_chars):
    if chunk_chars is not None:
        monkeypatch.setattr(tokenizer_module, "STREAM_CHUNK_CHARS", chunk_chars)
    for name in CS336_TEXTS:
        with open(cs336_dir / name, encoding="utf-8", newline="") as f:
            text = f.read()
        with open(cs336_dir / name, encoding="utf-8", newline="") as f:
            streamed = list(gpt2.encode_iterable(f))
        assert streamed == gpt2.encode(text) == tiktoken_gpt2.encode(text, allowed_special="all"), name


def test_encode_iterable_whitespace_runs_across_lines(gpt2, tmp_path, monkeypatch):
    # Each line alone would end a whitespace run differently: "\n\n  \n" + "  x"
    # is "\n\n  \n " + " x" as a whole, not "\n\n  \n" + "  x".
    rng = random.Random(3)
    blocks = ["\n", "\r\n", "  \n", "\t\n", " \u3000\n", "\n\n\n", "x\n", " y  \n", f"{SPECIAL}\n", "  "]
    text = "".join(rng.choice(blocks) for _ in range(3000))
    path = tmp_path / "ws.txt"
    path.write_bytes(text.encode("utf-8"))
    monkeypatch.setattr(tokenizer_module, "STREAM_CHUNK_CHARS", 64)
    with open(path, encoding="utf-8", newline="") as f:
        assert list(gpt2.encode_iterable(f)) == gpt2.encode(text)


def test_encode_iterable_special_token_with_a_newline_split_by_lines(gpt2_paths, tmp_path, monkeypatch):
    # Reading by lines cuts this special token in two on every occurrence.
    special = "<|doc\n|>"
    tok = Tokenizer.from_files(*gpt2_paths, [SPECIAL, special])
    text = "".join(f"line {i}\n{special}\n\n{SPECIAL}  " for i in range(200))
    path = tmp_path / "docs.txt"
    path.write_bytes(text.encode("utf-8"))
    monkeypatch.setattr(tokenizer_module, "STREAM_CHUNK_CHARS", 16)
    with open(path, encoding="utf-8", newline="") as f:
        streamed = list(tok.encode_iterable(f))
    assert streamed == tok.encode(text)
    assert streamed.count(50257) == 200  # the appended special, whole every time


def test_encode_iterable_is_lazy_and_reads_the_chunk_size_at_call_time(gpt2, cs336_texts, monkeypatch):
    text = cs336_texts["corpus.en"]  # about 130k characters: twice the default chunk
    lines = text.splitlines(keepends=True)
    assert len(text) > 2 * tokenizer_module.STREAM_CHUNK_CHARS
    consumed = 0

    def pieces():
        nonlocal consumed
        for line in lines:
            consumed += len(line)
            yield line

    def first_id_after() -> tuple[int, list[int]]:
        nonlocal consumed
        consumed = 0
        stream = gpt2.encode_iterable(pieces())
        first = next(stream)
        seen = consumed
        return seen, [first, *stream]

    # Default: about STREAM_CHUNK_CHARS are buffered before the first ids come out.
    seen, ids = first_id_after()
    assert tokenizer_module.STREAM_CHUNK_CHARS <= seen < len(text)
    assert ids == gpt2.encode(text)

    # Patched after import: a small chunk gives the first id after a few lines.
    monkeypatch.setattr(tokenizer_module, "STREAM_CHUNK_CHARS", 64)
    seen, ids = first_id_after()
    assert seen < 64 + 2 * max(map(len, lines))
    assert ids == gpt2.encode(text)


# --------------------------------------------------------------------------
# 7. Memory
# --------------------------------------------------------------------------


def current_rss() -> int:
    """Resident set size in bytes, from /proc/self/statm (what psutil's memory_info().rss reads)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory_limit(max_mem):
    """CS336's decorator, with /proc/self/statm in place of psutil."""

    def decorator(f):
        def wrapper(*args, **kwargs):
            prev_limits = resource.getrlimit(resource.RLIMIT_AS)
            resource.setrlimit(resource.RLIMIT_AS, (current_rss() + max_mem, -1))
            try:
                result = f(*args, **kwargs)
                return result
            finally:
                # Even if the function above fails (e.g., it exceeds the
                # memory limit), reset the memory limit back to the
                # previous limit so other tests aren't affected.
                resource.setrlimit(resource.RLIMIT_AS, prev_limits)

        return wrapper

    return decorator


@memory_limit(int(1e6))
def _encode_iterable(tokenizer, iterable):
    """
    We place tokenizer.encode_iterable into a separate function so we can limit memory
    for just this function. We set the memory limit to 1MB.
    """
    # As upstream: this is a generator function, so the limit is in force only
    # while the generator object is created, not while it runs. The check that
    # memory stays flat while it runs is test_encode_iterable_memory_is_flat_on_gutenberg.
    yield from tokenizer.encode_iterable(iterable)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="rlimit support for non-linux systems is spotty.")
def test_encode_iterable_memory_usage(gpt2_paths, cs336_dir):
    """CS336 `test_encode_iterable_memory_usage`, unchanged but for the fixture lookup."""
    if not (cs336_dir / TINYSTORIES_5M).exists():
        pytest.skip(
            f"{TINYSTORIES_5M} is absent from BPEFORGE_TEST_DATA/cs336 (see its SOURCES.md); "
            "test_encode_iterable_memory_is_flat_on_gutenberg runs the same check meanwhile"
        )
    tokenizer = Tokenizer.from_files(*gpt2_paths)
    with open(cs336_dir / TINYSTORIES_5M) as f:
        ids = []
        for _id in _encode_iterable(tokenizer, f):
            ids.append(_id)


@pytest.fixture(scope="module")
def gutenberg_5mb(tmp_path_factory, shared_data_dir) -> Path:
    """The first 5 MiB of the shared Gutenberg corpus, cut after a line end."""
    source = shared_data_dir / "corpora" / "gutenberg_500MB.txt.xz"
    assert source.is_file(), f"{source} is missing"
    with lzma.open(source) as f:
        data = f.read(5 * MIB)
    data = data[: data.rindex(b"\n") + 1]
    path = tmp_path_factory.mktemp("gutenberg") / "gutenberg_5MB.txt"
    path.write_bytes(data)
    return path


# Runs in a fresh process so that the peak is the encoder's alone. VmHWM is the
# peak RSS; writing "5" to /proc/self/clear_refs resets it to the current RSS
# (Linux >= 4.0), so the figure is the rise during the loop alone, not the peak
# of loading the vocabulary. (ru_maxrss would not do: Linux carries it across
# fork and exec.)
MEMORY_CHILD = r"""
import json, re, sys
from bpeforge import Tokenizer

def vm(key):
    with open("/proc/self/status") as f:
        return int(re.search(key + r":\s+(\d+) kB", f.read()).group(1)) * 1024

mode, path, vocab, merges = sys.argv[1:]
tokenizer = Tokenizer.from_files(vocab, merges, ["<|endoftext|>"])
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
before = vm("VmHWM")
count = 0
with open(path, encoding="utf-8") as f:
    if mode == "stream":
        for _ in tokenizer.encode_iterable(f):
            count += 1
    else:
        count = len(tokenizer.encode(f.read()))
print(json.dumps({"before": before, "after": vm("VmHWM"), "tokens": count}))
"""


def peak_rise_in_child(mode: str, path: Path, gpt2_paths) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_CHILD, mode, str(path), *map(str, gpt2_paths)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    report["rise"] = report["after"] - report["before"]
    return report


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads VmHWM from /proc")
def test_encode_iterable_memory_is_flat_on_gutenberg(gutenberg_5mb, gpt2_paths):
    size = gutenberg_5mb.stat().st_size
    streamed = peak_rise_in_child("stream", gutenberg_5mb, gpt2_paths)
    whole = peak_rise_in_child("whole", gutenberg_5mb, gpt2_paths)
    assert streamed["tokens"] == whole["tokens"] > size / 8
    # Measured: the peak rises by about 20 KiB while streaming these 5 MiB
    # (8 KiB for a 1 MiB slice), against about 39 MiB for encode() of the
    # whole text. The bound is CS336's 1 MB, with no further allowance.
    assert streamed["rise"] < 1_000_000, f"peak rose {streamed['rise'] / MIB:.2f} MiB while streaming"
    # The measurement can see a rise: holding the text and its ids costs several times the file.
    assert whole["rise"] > size, f"encode() of {size / MIB:.1f} MiB raised the peak by only {whole['rise']} bytes"


def test_encode_iterable_equals_encode_on_gutenberg(gpt2, gutenberg_5mb):
    # 5 MiB crosses the default STREAM_CHUNK_CHARS about 80 times.
    with open(gutenberg_5mb, encoding="utf-8", newline="") as f:
        streamed = list(gpt2.encode_iterable(f))
    text = gutenberg_5mb.read_bytes().decode("utf-8")
    assert streamed == gpt2.encode(text)


# --------------------------------------------------------------------------
# 8. encode_batch
# --------------------------------------------------------------------------


def test_encode_batch_equals_encode(gpt2, cs336_texts):
    texts = [*cs336_texts.values(), "", SPECIAL, " \r\n ", "😀" * 7, *cs336_texts.values()]
    expected = [gpt2.encode(text) for text in texts]
    for threads in (None, 1, 2):
        assert gpt2.encode_batch(texts, num_threads=threads) == expected, threads
    assert gpt2.encode_batch(iter(texts)) == expected


def test_encode_batch_over_many_groups_keeps_order_and_raises_on_surrogates(gpt2, cs336_texts):
    """Several MiB of texts: encode_batch's lists are made a group at a time while the next group is encoded
    (encoder.rs, `BATCH_CHECK_BYTES`); every text keeps its place, and a bad text anywhere still raises."""
    texts = [text[i : i + 50_000] for text in cs336_texts.values() for i in range(0, len(text), 50_000)] * 25
    assert sum(len(text.encode()) for text in texts) > 3 << 20
    expected = [gpt2.encode(text) for text in texts]
    for threads in (1, 2):
        assert gpt2.encode_batch(texts, num_threads=threads) == expected, threads
    with pytest.raises(UnicodeEncodeError):
        gpt2.encode_batch([*texts, "\ud800"], num_threads=2)


@pytest.mark.parametrize("threads", [0, -1])
def test_encode_batch_rejects_no_threads(tiny, threads):
    # -1 means "all cores" in joblib and friends; here it must be refused as clearly as 0.
    with pytest.raises(ValueError, match="num_threads"):
        tiny.encode_batch(["hello"], num_threads=threads)


# --------------------------------------------------------------------------
# 9. Pickle and threads
# --------------------------------------------------------------------------


def test_pickle_round_trip(gpt2_paths, cs336_texts):
    tok = Tokenizer.from_files(*gpt2_paths, [SPECIAL, "<|pad|>"])
    copy = pickle.loads(pickle.dumps(tok))
    assert repr(copy) == repr(tok)
    assert copy.vocab_size == tok.vocab_size == 50258
    assert copy.special_tokens == tok.special_tokens
    for text in [*cs336_texts.values(), "<|pad|>x<|endoftext|>"]:
        assert copy.encode(text) == tok.encode(text)


def test_one_tokenizer_from_eight_threads(gpt2, cs336_texts):
    texts = list(cs336_texts.values()) * 4
    rotations = [texts[i:] + texts[:i] for i in range(8)]
    # Sequential first: each rotation's ids per text, and streamed as one text.
    expected = [([gpt2.encode(t) for t in order], gpt2.encode("".join(order))) for order in rotations]

    def work(order: list[str]) -> tuple[list[list[int]], list[int]]:
        return [gpt2.encode(t) for t in order], list(gpt2.encode_iterable(order))

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(work, rotations))
    assert results == expected


# --------------------------------------------------------------------------
# 10. Lookups and repr
# --------------------------------------------------------------------------


def test_lookups_agree_with_the_vocab_file(gpt2, gpt2_paths):
    with open(gpt2_paths[0], encoding="utf-8") as f:
        raw = json.load(f)
    assert raw["Ġthe"] == 262 and raw[SPECIAL] == 50256  # "Ġ" is GPT-2's printable stand-in for a space
    assert gpt2.token_to_id(" the") == 262
    assert gpt2.token_to_id(b" the") == 262
    assert gpt2.id_to_token(262) == b" the"
    assert gpt2.id_to_token(50256) == b"<|endoftext|>"
    assert gpt2.token_to_id(SPECIAL) == 50256
    assert gpt2.vocab_size == len(raw) == 50257
    vocab = load_vocab(gpt2_paths[0])
    for token_id, token in vocab.items():
        assert gpt2.id_to_token(token_id) == token
        assert gpt2.token_to_id(token) == token_id
    assert gpt2.id_to_token(50257) is None
    assert gpt2.token_to_id(" the the the the") is None


def test_repr_says_what_the_tokenizer_is(gpt2):
    text = repr(gpt2)
    assert "50257" in text and "50000" in text and SPECIAL in text
    assert text.startswith("Tokenizer(")


# --------------------------------------------------------------------------
# 11. Worst cases
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["a" * 200_000, "1234567890" * 20_000, " " * 200_000, "😀" * 50_000],
    ids=["one-letter", "digits", "spaces", "one-emoji"],
)
def test_long_single_pieces_match_tiktoken(gpt2, tiktoken_gpt2, text):
    ids = gpt2.encode(text)
    assert ids == tiktoken_gpt2.encode(text, allowed_special="all")
    assert gpt2.decode(ids) == text
    # Streamed in 1000-character pieces, none of which is a place to cut.
    pieces = [text[i : i + 1000] for i in range(0, len(text), 1000)]
    assert list(gpt2.encode_iterable(pieces)) == ids


# --------------------------------------------------------------------------
# 12. A tokenizer trained by bpeforge
# --------------------------------------------------------------------------


def oracle_encode(text: str, merges: list[tuple[bytes, bytes]], special_ids: dict[str, int], vocab_ids) -> list[int]:
    """Slow and plain: split on specials, pre-tokenize with `regex`, apply the merges in creation order."""
    ids: list[int] = []
    specials = sorted(special_ids, key=len, reverse=True)
    parts = regex.split("(" + "|".join(map(regex.escape, specials)) + ")", text) if specials else [text]
    for part in parts:
        if part in special_ids:
            ids.append(special_ids[part])
            continue
        for piece in regex.findall(GPT2_PATTERN, part):
            ids.extend(vocab_ids[token] for token in apply_merges(piece.encode("utf-8"), tuple(merges)))
    return ids


@functools.cache
def apply_merges(piece: bytes, merges: tuple[tuple[bytes, bytes], ...]) -> list[bytes]:
    word = [bytes([b]) for b in piece]
    for left, right in merges:
        i, merged = 0, []
        while i < len(word):
            if i + 1 < len(word) and word[i] == left and word[i + 1] == right:
                merged.append(left + right)
                i += 2
            else:
                merged.append(word[i])
                i += 1
        word = merged
    return word


@dataclass(frozen=True)
class Trained:
    text: str
    vocab: dict[int, bytes]
    merges: list[tuple[bytes, bytes]]
    tokenizer: Tokenizer

    @property
    def vocab_ids(self) -> dict[bytes, int]:
        return {token: token_id for token_id, token in self.vocab.items()}

    def oracle(self, text: str) -> list[int]:
        vocab_ids = self.vocab_ids
        return oracle_encode(text, self.merges, {SPECIAL: vocab_ids[SPECIAL.encode()]}, vocab_ids)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Trained:
    """bpeforge.train_bpe on 200 generated documents, stopped by the vocabulary size."""
    rng = random.Random(12)
    words = ["low", "lower", "newest", "widest", "the", "cat", "sat", "don't", "1984", "naïve", "日本", "😀"]
    words += ["".join(rng.choices("abcdefghijklmnopqrstuvwxyzéü", k=rng.randint(2, 9))) for _ in range(300)]
    weights = [50] * 12 + [1] * 300
    docs = [" ".join(rng.choices(words, weights, k=rng.randint(5, 80))) for _ in range(200)]
    text = f"\n{SPECIAL}\n".join(docs) + "\r\n  \n"
    path = tmp_path_factory.mktemp("trained") / "corpus.txt"
    path.write_bytes(text.encode("utf-8"))
    vocab, merges = bpeforge.train_bpe(path, 400, [SPECIAL])
    return Trained(text, vocab, merges, Tokenizer(vocab, merges, [SPECIAL]))


def test_trained_tokenizer_encodes_like_applying_its_merges(trained):
    tok, vocab_ids = trained.tokenizer, trained.vocab_ids
    assert len(trained.merges) == 400 - 257  # stopped by the size, not by running out of pairs
    assert tok.vocab_size == 400  # the special is already in the trained vocab: nothing appended
    special_id = vocab_ids[SPECIAL.encode()]
    assert special_id == 399  # our layout: bytes, merges, then specials
    ids = tok.encode(trained.text)
    assert ids == trained.oracle(trained.text)
    assert tok.decode(ids) == trained.text
    assert ids.count(special_id) == 199
    # The merges do the work: most ids are merged tokens, frequent words one token each.
    assert sum(1 for i in ids if 256 <= i < special_id) > len(ids) / 2
    assert len(ids) < len(trained.text.encode("utf-8")) / 2  # measured: 2.7 bytes per token
    for word in [" the", " lower", " newest"]:
        assert tok.encode(word) == [vocab_ids[word.encode()]]


@settings(max_examples=100, **HYPOTHESIS)
@given(text=st.one_of(biased_text, text_with_specials()))
def test_trained_tokenizer_round_trips_any_text(trained, text):
    ids = trained.tokenizer.encode(text)
    assert trained.tokenizer.decode(ids) == text
    assert ids == trained.oracle(text)


def test_tokenizers_compare_count_and_name_like_their_peers():
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"ab"}
    a = Tokenizer(vocab, [(b"a", b"b")], ["<|endoftext|>"])
    assert a == Tokenizer(vocab, [(b"a", b"b")], ["<|endoftext|>"])
    assert a != Tokenizer(vocab, [(b"a", b"b")])
    assert a != Tokenizer(vocab, [(b"a", b"b")], ["<|endoftext|>"], pattern="o200k")
    assert len(a) == a.n_vocab == 258 and a.eot_token == 257
    assert Tokenizer(vocab, [(b"a", b"b")]).eot_token is None
    assert a.get_vocab()[b"ab"] == 256


def test_text_reaches_the_core_as_is_and_lone_surrogates_are_refused(tiny):
    # The binding borrows a str's UTF-8 form (crates/bpeforge-py/src/text.rs): ASCII, multi-byte text and
    # a str made at run time encode as their bytes; a lone surrogate has no UTF-8 form and raises as Python would.
    for text in ["low lower", "naïve 東京 🙂", "".join(["lo", "w"] * 1000)]:
        assert tiny.decode(tiny.encode(text)) == text
        assert tiny.encode_to_numpy(text).tolist() == tiny.encode(text)
    for call in (tiny.encode, tiny.encode_to_numpy):
        with pytest.raises(UnicodeEncodeError, match="surrogates not allowed"):
            call("low\ud800er")


def long_texts_of_every_width() -> dict[str, str]:
    """Texts past the size the binding transcodes itself (4 Ki characters, read 16 Ki at a time; text.rs),
    of each kind CPython stores (1, 2 and 4 bytes a character), with their wide characters at chunk and
    16-character block edges, and random Unicode."""
    rng = random.Random(12)
    ascii_text = "".join(rng.choice("low lower newest widest\n") for _ in range(3 * 16384 + 777))
    texts = {}
    for name, wide in [("latin-1", "é"), ("two bytes", "“"), ("CJK", "東"), ("astral", "🙂")]:
        chars = list(ascii_text)
        edges = [0, 15, 16, 17, 16383, 16384, 16385, 2 * 16384 - 1, len(chars) - 1]
        for at in [*edges, *rng.sample(range(len(chars)), 500)]:
            chars[at] = wide
        texts[name] = "".join(chars)
    texts["runs of CJK"] = "東京は大きい都市です。 Tokyo is big. " * 3000
    texts["random Unicode"] = "".join(
        chr(rng.choice([rng.randrange(0x80), rng.randrange(0x80, 0xD800), rng.randrange(0xE000, 0x110000)]))
        for _ in range(70_001)
    )
    return texts


def test_long_text_that_is_not_ascii_encodes_as_its_utf8(tiny):
    # A long str seen the first time is transcoded by the binding; seen again, CPython's own UTF-8 is used.
    for name, text in long_texts_of_every_width().items():
        first = tiny.encode_to_numpy(text).tolist()
        assert tiny.decode(first) == text, name
        assert tiny.encode(text) == first == tiny.encode_to_numpy(text).tolist(), name
        # A fresh copy of equal text (the transcoded path again) gives the same ids.
        assert tiny.encode("".join([text[:10], text[10:]])) == first, name
    # Batches too, each text on its own (the same str twice, texts seen before and new ones).
    texts = list(long_texts_of_every_width().values())
    expected = [tiny.encode(text) for text in texts]
    for batch in [texts, texts, [texts[0], texts[0], *texts[1:]]]:
        lists = tiny.encode_batch(batch, num_threads=2)
        ids, offsets = tiny.encode_batch_to_numpy(batch, num_threads=2)
        assert [ids[a:b].tolist() for a, b in zip(offsets, offsets[1:])] == lists
        assert lists == [tiny.encode(text) for text in batch]
    assert lists[2:] == expected[1:]


class _Text(str):
    """A `str` subclass: a text like any other."""


@pytest.mark.parametrize("method", ["encode_batch", "encode_batch_to_numpy"])
def test_a_batch_takes_any_iterable_of_str_and_names_a_text_that_is_not(tiny, method):
    encode = getattr(tiny, method)
    flat = lambda result: [i for ids in result for i in ids] if method == "encode_batch" else result[0].tolist()  # noqa: E731
    expected = [*tiny.encode("low"), *tiny.encode("lower")]
    for texts in (["low", "lower"], ("low", "lower"), iter(["low", "lower"]), [_Text("low"), "lower"]):
        assert flat(encode(texts, num_threads=2)) == expected, texts
    for bad, name in ((b"low", "bytes"), (None, "NoneType"), (7, "int")):
        with pytest.raises(TypeError, match=f"expected str, got {name}; decode bytes to str first"):
            encode(["low", bad, "lower"], num_threads=2)
    with pytest.raises(TypeError, match="takes a list of texts, not one string"):
        encode("low")


def test_long_text_that_is_not_ascii_matches_tiktoken(gpt2, tiktoken_gpt2):
    for name, text in long_texts_of_every_width().items():
        assert gpt2.encode(text) == tiktoken_gpt2.encode(text, disallowed_special=()), name


def streamed_texts() -> dict[str, str]:
    """Texts longer than the binding reads ahead at once (1 Mi characters; utf8_stream.rs): cut across reads,
    a run with no place to cut longer than a read, and special tokens."""
    rng = random.Random(5)
    words = ["naïve", "“quoted”", "東京は", "🙂", "low", "lower", "\n\n", "  ", SPECIAL, "é" * 40]
    mixed = " ".join(rng.choice(words) for _ in range(700_000))
    return {"mixed": mixed, "one long piece": "x “" + "é" * 2_500_000 + "” y " + mixed[:100_000]}


def test_long_text_read_ahead_in_stretches_encodes_as_its_utf8(tiny, gpt2, tiktoken_gpt2):
    for name, text in streamed_texts().items():
        ids = tiny.encode_to_numpy(text).tolist()
        assert tiny.decode(ids) == text, name
        assert tiny.encode(text) == ids, name  # seen again: CPython's UTF-8
        assert gpt2.encode("".join([text[:1], text[1:]])) == tiktoken_gpt2.encode(text, allowed_special="all"), name
        as_text = gpt2.encode("".join([text[:1], text[1:]]), allowed_special=set(), disallowed_special=())
        assert as_text == tiktoken_gpt2.encode(text, disallowed_special=()), name


@pytest.mark.parametrize("at", [0, 16383, 16384, 40_000, 70_000])
def test_a_lone_surrogate_in_a_long_text_raises_as_cpython_does(tiny, at):
    text = "".join(["naïve “quote” ", "x" * 70_000])
    text = text[:at] + "\udc80" + text[at:]
    with pytest.raises(UnicodeEncodeError) as cpython:
        text.encode()
    batch_lists = lambda text: tiny.encode_batch(["naïve " * 1000, text])  # noqa: E731
    batch_numpy = lambda text: tiny.encode_batch_to_numpy(["naïve " * 1000, text])  # noqa: E731
    no_specials = functools.partial(tiny.encode, allowed_special=set())
    for call in (tiny.encode, tiny.encode_to_numpy, no_specials, batch_lists, batch_numpy):
        with pytest.raises(UnicodeEncodeError) as ours:
            call(text)
        assert (ours.value.start, ours.value.reason) == (cpython.value.start, cpython.value.reason)


def test_long_texts_that_are_not_ascii_are_made_utf8_by_the_workers_with_the_same_ids(tiny):
    """A long `str` that is not ASCII is made UTF-8 by the batch worker that takes it (text.rs, `WorkerUtf8`):
    new texts (transcoded), the same texts again (CPython's UTF-8, kept in the `str`) and a third time give the
    ids of encoding each alone; of two texts with a lone surrogate, the first one's error is raised."""
    texts = [f"naïve “{i}” " * (600 + i) + "x" * i for i in range(40)] + ["plain ascii " * 500, "short ñ"]
    expected = [tiny.encode(text) for text in texts]
    for threads in (1, 2):
        for _ in range(3):
            ids, offsets = tiny.encode_batch_to_numpy(texts, num_threads=threads)
            assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected, threads
        fresh = [(text + " ")[:-1] for text in texts]
        ids, offsets = tiny.encode_batch_to_numpy(fresh, num_threads=threads)
        assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected, threads
    broken = list(texts)
    broken[30] = broken[30][:4000] + "\udc80" + broken[30][4000:]
    broken[10] = broken[10][:5000] + "\ud800" + broken[10][5000:]
    for threads in (1, 2):
        with pytest.raises(UnicodeEncodeError) as raised:
            tiny.encode_batch_to_numpy(broken, num_threads=threads)
        assert raised.value.object == broken[10] and raised.value.start == 5000, threads


def test_a_lone_surrogate_past_the_first_read_raises_as_cpython_does(tiny):
    text = "naïve “quote” " * 200_000  # 2.8 M characters: read in three stretches
    text = text[:2_000_000] + "\ud800" + text[2_000_000:]
    with pytest.raises(UnicodeEncodeError) as cpython:
        text.encode()
    with pytest.raises(UnicodeEncodeError) as ours:
        tiny.encode_to_numpy(text)
    assert (ours.value.start, ours.value.reason) == (cpython.value.start, cpython.value.reason)
