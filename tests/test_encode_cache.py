"""The encode cache kept across calls (issue 12) and the NumPy outputs.

The cache maps a pre-token's bytes to its ids, so it must never change them:
the ids are checked against tiktoken's GPT-2 encoding (built from the CS336
fixture files, as in test_tokenizer.py) for caches that are off, tiny
(constant eviction), the default and large, on one thread and several.
Tests that need no fixture use a small vocabulary and always run.
"""

from __future__ import annotations

import concurrent.futures
import gc
import pickle
import random
import threading

import numpy as np
import pytest
from bpeforge import Tokenizer
from bpeforge.formats.gpt2 import load_merges, load_vocab
from bpeforge.tokenizer import DEFAULT_CACHE_SIZE
from hypothesis import given, settings
from hypothesis import strategies as st

SPECIAL = "<|endoftext|>"
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
HYPOTHESIS = {"derandomize": True, "deadline": None, "database": None}
KIB, MIB = 1 << 10, 1 << 20
CACHE_SIZES = [0, KIB, DEFAULT_CACHE_SIZE, 1 << 30]


@pytest.fixture(scope="module")
def gpt2_tables(gpt2_paths):
    return load_vocab(gpt2_paths[0]), load_merges(gpt2_paths[1])


@pytest.fixture(scope="module")
def gpt2_by_cache(gpt2_tables) -> dict[int, Tokenizer]:
    """One GPT-2 tokenizer per cache size, kept for the module so that caches fill and evict across tests."""
    vocab, merges = gpt2_tables
    return {size: Tokenizer(vocab, merges, [SPECIAL], cache_size=size) for size in CACHE_SIZES}


@pytest.fixture(scope="module")
def reference(gpt2_tables):
    """tiktoken's `gpt2` encoding, from the fixture files instead of a download."""
    tiktoken = pytest.importorskip("tiktoken")
    vocab, _ = gpt2_tables
    return tiktoken.Encoding(
        name="gpt2-local",
        pat_str=GPT2_PATTERN,
        mergeable_ranks={token: token_id for token_id, token in vocab.items() if token_id != 50256},
        special_tokens={SPECIAL: 50256},
    )


def small_tokenizer(cache_size: int = DEFAULT_CACHE_SIZE) -> Tokenizer:
    """Bytes plus " a" ... " z": a space and up to three letters make at most three ids."""
    letters = [bytes([c]) for c in range(ord("a"), ord("z") + 1)]
    vocab = {i: bytes([i]) for i in range(256)} | {256 + i: b" " + letter for i, letter in enumerate(letters)}
    return Tokenizer(vocab, [(b" ", letter) for letter in letters], [SPECIAL], cache_size=cache_size)


def share_cache(tok: Tokenizer) -> Tokenizer:
    """Start a stream, after which the shared cache fills, as it does once two threads encode at the same time.

    (One thread alone keeps everything in its own tables: the shared cache stays empty until another needs it.)
    """
    list(tok.encode_iterable([" a"]))
    return tok


def distinct_words(count: int, seed: int = 0) -> list[str]:
    """`count` different words of one to three letters, each with a leading space, in random order."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = [f" {a}" for a in letters] + [f" {a}{b}" for a in letters for b in letters]
    words += [f" {a}{b}{c}" for a in letters for b in letters for c in letters]
    random.Random(seed).shuffle(words)
    return words[:count]


# --------------------------------------------------------------------------
# Same ids whatever the cache (GPT-2 fixture vs tiktoken)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("size", CACHE_SIZES)
def test_fixture_texts_match_tiktoken_cold_and_warm(gpt2_by_cache, reference, cs336_texts, size):
    tok = gpt2_by_cache[size]
    for name, text in cs336_texts.items():
        expected = reference.encode(text, allowed_special="all")
        assert tok.encode(text) == expected, f"{name}, cache {size}, cold"
        assert tok.encode(text) == expected, f"{name}, cache {size}, warm"


@settings(max_examples=150, **HYPOTHESIS)
@given(st.text(max_size=300) | st.text(alphabet="ab \n'é中1", max_size=300))
def test_any_unicode_matches_tiktoken_for_every_cache_size(gpt2_by_cache, reference, text):
    expected = reference.encode(text, allowed_special="all")
    for size, tok in gpt2_by_cache.items():
        assert tok.encode(text) == expected, f"cache {size}"


@pytest.mark.parametrize("size", CACHE_SIZES)
def test_threads_get_the_same_ids(gpt2_by_cache, reference, cs336_texts, size):
    tok = gpt2_by_cache[size]
    texts = [line for text in cs336_texts.values() for line in text.splitlines(keepends=True)][:3000]
    expected = [reference.encode(text, allowed_special="all") for text in texts]
    for threads in (1, 2, 4):
        assert tok.encode_batch(texts, num_threads=threads) == expected, f"cache {size}, {threads} threads"
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert list(pool.map(tok.encode, texts)) == expected, f"cache {size}, Python threads"


def test_a_tiny_cache_evicts_and_stays_exact(gpt2_by_cache, reference, cs336_texts):
    tok = share_cache(gpt2_by_cache[KIB])
    text = cs336_texts["tinystories_sample.txt"]
    assert tok.encode(text) == reference.encode(text, allowed_special="all")
    info = tok.cache_info()
    assert info["capacity"] == KIB and 0 < info["bytes"] <= KIB
    assert 0 < info["entries"] <= KIB // 32


# --------------------------------------------------------------------------
# Bounded, shared, resizable
# --------------------------------------------------------------------------


@pytest.mark.parametrize("size", [KIB, 64 * KIB, MIB])
def test_memory_stays_under_the_bound(size):
    tok = share_cache(small_tokenizer(size))
    words = distinct_words(10_000)
    expected = small_tokenizer(0).encode("".join(words))
    for _ in range(3):
        assert tok.encode("".join(words)) == expected
    info = tok.cache_info()
    assert info["capacity"] == size
    assert 0 < info["bytes"] <= size, info
    assert 0 < info["entries"] * 32 <= info["bytes"], info
    assert info["misses"] > 0


def test_one_thread_alone_keeps_its_pieces_in_its_own_table():
    tok = small_tokenizer()
    text = "".join(distinct_words(500, seed=3))
    assert tok.encode(text) == tok.encode(text)
    info = tok.cache_info()
    assert info["entries"] == info["bytes"] == 0 and info["thread_tables"] == 1, info
    assert info["thread_table_bytes"] > 0 and info["hits"] > 0 and info["misses"] > 0, info


def test_the_vocabulary_seeds_the_first_table_and_changes_no_id(gpt2_tables, reference):
    """Built with the cache on, a tokenizer's first table holds the vocabulary's tokens (`encode/cache/seeds.rs`): a
    first call finds the text's whole-token pieces there; seeds it finds stop counting; the ids are tiktoken's all
    along."""
    text = "The seeds: the, and, of; tokens\n  that are whole words. " * 50 + "".join(distinct_words(300, seed=5))
    for size in CACHE_SIZES:
        tok = Tokenizer(*gpt2_tables, [SPECIAL], cache_size=size)
        planted = tok.cache_info()["seeds"]
        if size == 0:
            assert planted == 0, "no table is kept, so none is seeded"
            continue
        assert 40_000 < planted <= 50_257, planted
        assert tok.encode(text) == reference.encode(text), size
        after = tok.cache_info()
        assert after["hits"] > 0 and after["seeds"] < planted, after
        tok.set_cache_size(size)
        assert tok.cache_info()["seeds"] == planted, "planted again after the cache was replaced"
        assert tok.encode(text) == reference.encode(text), size


def test_a_second_thread_hits_what_the_first_cached():
    tok = small_tokenizer()
    text = "".join(distinct_words(500, seed=1))
    results: dict[str, list[int]] = {}
    first = threading.Thread(target=lambda: results.update(first=tok.encode(text)))
    first.start()
    first.join()
    warmed = tok.cache_info()
    # Its hits are seeds (the vocabulary's tokens, planted when the tokenizer was built): distinct words miss.
    assert warmed["thread_tables"] == 1 and warmed["misses"] > 0
    second = threading.Thread(target=lambda: results.update(second=tok.encode(text)))
    second.start()
    second.join()
    after = tok.cache_info()
    assert results["second"] == results["first"]
    assert after["misses"] == warmed["misses"], "the second thread merged pieces the first had cached"
    assert after["hits"] - warmed["hits"] >= warmed["misses"], after


def test_once_shared_calls_fill_the_shared_cache():
    tok = share_cache(small_tokenizer())
    text = "".join(distinct_words(500, seed=4))
    expected = tok.encode(text)
    info = tok.cache_info()
    assert info["entries"] > 0 and info["bytes"] > 0, info
    assert tok.encode_batch([text] * 4, num_threads=2) == [expected] * 4
    assert tok.cache_info()["misses"] == info["misses"], "a piece merged again"


def test_encode_batch_workers_share_one_cache():
    tok = small_tokenizer()
    texts = ["".join(distinct_words(200, seed=seed)) for seed in range(8)]
    first = tok.encode_batch(texts, num_threads=2)
    misses = tok.cache_info()["misses"]
    assert tok.encode_batch(texts, num_threads=2) == first
    assert tok.cache_info()["misses"] == misses


def test_cache_size_zero_turns_it_off_and_can_be_changed():
    tok = share_cache(small_tokenizer(0))
    text = "".join(distinct_words(300))
    expected = tok.encode(text)
    info = tok.cache_info()
    assert info["entries"] == info["bytes"] == info["capacity"] == info["thread_tables"] == 0, info
    assert info["misses"] > 0, "the misses are still counted"
    tok.set_cache_size(64 * KIB)
    assert tok.cache_size == 64 * KIB
    assert tok.encode(text) == expected and tok.encode(text) == expected
    assert tok.cache_info()["entries"] > 0 and tok.cache_info()["hits"] > 0
    tok.set_cache_size(0)
    assert tok.encode(text) == expected
    assert tok.cache_info()["entries"] == 0 and tok.cache_size == 0


def test_default_cache_size():
    tok = small_tokenizer()
    assert tok.cache_size == DEFAULT_CACHE_SIZE == tok.cache_info()["capacity"]
    assert tok.cache_info()["bytes"] == 0  # tables are made on first use


@pytest.mark.parametrize(("bad", "error"), [(-1, ValueError), (2**64, ValueError), (1.5, TypeError), (True, TypeError)])
def test_bad_cache_sizes_are_refused(bad, error):
    with pytest.raises(error, match="cache_size"):
        small_tokenizer(bad)
    with pytest.raises(error, match="cache_size"):
        small_tokenizer().set_cache_size(bad)


def test_pickling_keeps_the_cache_size_not_its_contents():
    tok = small_tokenizer(64 * KIB)
    text = "".join(distinct_words(300))
    ids = tok.encode(text)
    copy = pickle.loads(pickle.dumps(tok))
    assert copy.cache_size == 64 * KIB
    assert copy.cache_info()["entries"] == 0
    assert copy.encode(text) == ids


# --------------------------------------------------------------------------
# NumPy outputs
# --------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "a", " ab ab<|endoftext|>abcdé\n\n", "".join(distinct_words(700))])
def test_encode_to_numpy_equals_encode(text):
    tok = small_tokenizer()
    ids = tok.encode_to_numpy(text)
    assert ids.dtype == np.uint32 and ids.ndim == 1
    assert ids.tolist() == tok.encode(text)


def test_encode_to_numpy_owns_its_ids_without_a_copy():
    """The array is over the encoder's own buffer (`__array_interface__`): it outlives the
    tokenizer, is writable like any array a user makes, and each call gets its own memory."""
    tok = small_tokenizer()
    text = "".join(distinct_words(700))
    first, second = tok.encode_to_numpy(text), tok.encode_to_numpy(text)
    expected = tok.encode(text)
    assert first.base is not None and type(first.base).__name__ == "IdArray"
    assert first.flags.writeable and not np.shares_memory(first, second)
    first[:] = 7
    del tok
    gc.collect()
    assert second.tolist() == expected and set(first.tolist()) == {7}


def test_numpy_memory_given_back_is_reused_and_never_shared():
    """A large result's memory goes back to the encoder when NumPy frees the array
    (`util/recycled.rs`), and the next call writes its ids there: an array still alive is never
    written over, and what a user wrote into a freed one never shows in a later result."""
    tok = small_tokenizer()
    text = "".join(distinct_words(700)) * 1100  # 3 MB: ids take a buffer of 6 MB, over the 4 MiB kept
    assert len(text) > 3_000_000
    expected = tok.encode(text)
    alive = tok.encode_to_numpy(text)
    freed = tok.encode_to_numpy(text)
    address = freed.__array_interface__["data"][0]
    freed[:] = 7
    del freed
    again = tok.encode_to_numpy(text)
    assert again.__array_interface__["data"][0] == address, "the freed buffer was not reused"
    assert again.tolist() == expected and alive.tolist() == expected
    assert not np.shares_memory(alive, again)
    address = again.__array_interface__["data"][0]
    again[:] = 9
    del again
    half = len(text) // 2
    ids, offsets = tok.encode_batch_to_numpy([text[:half], text[half:]], num_threads=2)
    assert ids.__array_interface__["data"][0] == address, "the batch did not reuse it"
    assert ids[offsets[0] : offsets[1]].tolist() == tok.encode(text[:half])
    assert ids[offsets[1] : offsets[2]].tolist() == tok.encode(text[half:])
    assert alive.tolist() == expected


@pytest.mark.parametrize("threads", [None, 1, 2])
def test_encode_batch_to_numpy_equals_encode_batch(threads):
    tok = small_tokenizer()
    texts = ["", " ab", *("".join(distinct_words(50, seed=seed)) for seed in range(20)), "", "a<|endoftext|>"]
    ids, offsets = tok.encode_batch_to_numpy(texts, num_threads=threads)
    assert ids.dtype == np.uint32 and offsets.dtype == np.int64
    assert len(offsets) == len(texts) + 1 and offsets[0] == 0 and offsets[-1] == len(ids)
    expected = tok.encode_batch(texts)
    assert [ids[offsets[i] : offsets[i + 1]].tolist() for i in range(len(texts))] == expected


@pytest.mark.parametrize("threads", [1, 2])
def test_encode_batch_to_numpy_past_its_reservation(threads):
    """The flat array is reserved at one id per two bytes of text; texts of one-byte tokens (spaces and
    punctuation that no merge joins, bytes no merge starts) need more, and get all of their ids."""
    tok = small_tokenizer()
    rng = random.Random(5)
    texts = ["".join(rng.choice("!?;~|^") + " " for _ in range(rng.randrange(1, 5000))) for _ in range(40)]
    texts += ["\x00\x01\x02" * 3000, "é" * 4000]
    ids, offsets = tok.encode_batch_to_numpy(texts, num_threads=threads)
    expected = [tok.encode(text) for text in texts]
    assert sum(map(len, expected)) > sum(len(text.encode()) for text in texts) // 2
    assert [ids[offsets[i] : offsets[i + 1]].tolist() for i in range(len(texts))] == expected


def test_encode_batch_to_numpy_of_nothing():
    ids, offsets = small_tokenizer().encode_batch_to_numpy([])
    assert ids.tolist() == [] and offsets.tolist() == [0]
    with pytest.raises(TypeError, match="list of texts"):
        small_tokenizer().encode_batch_to_numpy("one string")


def test_numpy_outputs_match_tiktoken_on_gpt2(gpt2_by_cache, reference, cs336_texts):
    tok = gpt2_by_cache[DEFAULT_CACHE_SIZE]
    texts = list(cs336_texts.values())
    expected = [reference.encode(text, allowed_special="all") for text in texts]
    assert [tok.encode_to_numpy(text).tolist() for text in texts] == expected
    ids, offsets = tok.encode_batch_to_numpy(texts, num_threads=2)
    assert np.array_equal(ids, np.concatenate([np.array(e, dtype=np.uint32) for e in expected]))
    assert np.diff(offsets).tolist() == [len(e) for e in expected]


def test_encode_iterable_reads_the_cache_but_does_not_fill_it():
    # Streaming stays in flat memory (CS336's 1 MB bound): lookups only. It
    # finds what an earlier call merged: the state that call kept adds its
    # table to the shared cache when the stream starts.
    tok = small_tokenizer()
    words = distinct_words(2000, seed=2)
    expected = tok.encode("".join(words))
    fresh = small_tokenizer()
    assert list(fresh.encode_iterable(iter(words))) == expected
    assert fresh.cache_info()["entries"] == 0
    misses = tok.cache_info()["misses"]
    assert list(tok.encode_iterable(iter(words))) == expected
    info = tok.cache_info()
    assert info["misses"] == misses and info["hits"] > 0
