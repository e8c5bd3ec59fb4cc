"""Continuing training from a base tokenizer (`train(..., extend=BASE)`; docs/design.md, "Continuing training").

The defining property: training to V, and training to U < V then extending
that result to V on the same corpus, give the same merges and the same token
byte strings; the base's ids stay where they were. Checked on generated corpora
against a plain Python oracle, on corpus.en for every preset, and by extending
GPT-2's real vocabulary on 20news.
"""

from __future__ import annotations

import lzma
import subprocess
import sys
from collections import Counter
from pathlib import Path

import bpeforge
import pytest
from corpora import training_corpora, vocab_sizes, write_files
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_trainer import (
    Pair,
    Word,
    count_pretokens,
    merge_word,
    train_on_word_counts,
)

PRESETS = ["gpt2", "cl100k", "o200k", "llama3", "qwen2"]
ENDOFTEXT = "<|endoftext|>"
DIFFERENTIAL = settings(max_examples=120, deadline=None, derandomize=True, database=None)


def reference_extend(paths: list[Path], base_merges: list[Pair], new_merges: int, specials: list[str]) -> list[Pair]:
    """The oracle: each pre-token with the base's merges applied in order, then the plain merge loop."""
    words: Counter[Word] = Counter()
    for word, count in count_pretokens(paths, specials).items():
        for pair in base_merges:
            word = merge_word(word, pair)
        words[word] += count
    return train_on_word_counts(words, new_merges)


def tokenizer_of(result: bpeforge.TrainResult) -> bpeforge.Tokenizer:
    return bpeforge.Tokenizer(result.vocab, result.merges, result.special_tokens, pattern=result.pattern)


@DIFFERENTIAL
@given(data=st.data())
def test_extending_a_smaller_training_is_training_to_the_larger_size(tmp_path_factory, data):
    text, specials = data.draw(training_corpora(), label="corpus")
    vocab_size = data.draw(vocab_sizes(specials), label="vocab_size") + 1
    smaller = data.draw(st.integers(256 + len(specials), vocab_size - 1), label="base vocab_size")
    [path] = write_files(tmp_path_factory.mktemp("corpus"), [text])

    whole = bpeforge.train(path, vocab_size, specials)
    base = bpeforge.train(path, smaller, specials)
    if len(base.vocab) < smaller:
        return  # the corpus ran out of pairs: there is nothing left to extend with
    extended = bpeforge.train(path, vocab_size, extend=tokenizer_of(base))

    assert extended.merges == whole.merges
    assert sorted(extended.vocab.values()) == sorted(whole.vocab.values())
    assert {i: extended.vocab[i] for i in base.vocab} == base.vocab  # the base's ids are kept
    new = reference_extend([path], base.merges, vocab_size - len(base.vocab), specials)
    assert extended.merges[len(base.merges) :] == new
    assert extended.stats.merges_added == len(new)


@pytest.mark.parametrize("pattern", PRESETS)
def test_corpus_en_every_preset(cs336_dir, pattern):
    path = cs336_dir / "corpus.en"
    whole = bpeforge.train(path, 1000, [ENDOFTEXT], pattern=pattern)
    for smaller in (300, 700):
        base = bpeforge.train(path, smaller, [ENDOFTEXT], pattern=pattern)
        extended = bpeforge.train(path, 1000, extend=tokenizer_of(base))
        assert extended.pattern == pattern
        assert extended.merges == whole.merges
        assert sorted(extended.vocab.values()) == sorted(whole.vocab.values())
        # Only the special token moved: it keeps the base's last id.
        assert extended.vocab[smaller - 1] == ENDOFTEXT.encode()
        assert whole.vocab[999] == ENDOFTEXT.encode()


def test_train_from_counts_extends_like_train(tmp_path, cs336_dir):
    path = cs336_dir / "corpus.en"
    base = bpeforge.train(path, 500, [ENDOFTEXT])
    counts = bpeforge.count(path, [ENDOFTEXT])
    from_counts = bpeforge.train_from_counts(counts, 800, extend=tokenizer_of(base))
    from_files = bpeforge.train(path, 800, extend=tokenizer_of(base))
    assert from_counts.merges == from_files.merges and from_counts.vocab == from_files.vocab
    # A saved base directory is a base too.
    base.save(tmp_path / "base")
    assert bpeforge.train(path, 800, extend=tmp_path / "base").vocab == from_files.vocab


@pytest.fixture(scope="module")
def news_sample(shared_data_dir, tmp_path_factory) -> Path:
    source = shared_data_dir / "corpora" / "20news.txt.xz"
    if not source.is_file():
        pytest.skip(f"{source} is not there (see ../shared/data/corpora/README)")
    with lzma.open(source, "rb") as f:
        data = f.read(3_000_000)
    path = tmp_path_factory.mktemp("news") / "20news-3MB.txt"
    path.write_bytes(data[: data.rfind(b"\n") + 1])
    return path


def test_extending_gpt2_keeps_every_id_and_merge(gpt2, news_sample):
    extended = bpeforge.train(news_sample, 50_257 + 500, extend=gpt2)
    assert len(extended.vocab) == 50_757
    assert {i: extended.vocab[i] for i in gpt2.vocab} == gpt2.vocab
    assert extended.merges[:50_000] == gpt2.merges
    assert extended.stats.merges_added == 500
    old_tokens = set(gpt2.vocab.values())
    for left, right in extended.merges[50_000:]:
        assert left in old_tokens or left in {a + b for a, b in extended.merges[50_000:]}
        assert right in old_tokens or right in {a + b for a, b in extended.merges[50_000:]}
    assert all(i >= 50_257 for i in extended.vocab if i not in gpt2.vocab)
    tokenizer = tokenizer_of(extended)
    text = news_sample.read_text(encoding="utf-8")[:300_000]
    ids = tokenizer.encode(text)
    assert tokenizer.decode(ids) == text
    assert len(ids) < len(gpt2.encode(text))
    assert extended.stats.tokens_after < extended.stats.tokens_before


# --- bad input: clear errors before any work ---------------------------------


@pytest.fixture(scope="module")
def small_base(cs336_dir) -> bpeforge.Tokenizer:
    return tokenizer_of(bpeforge.train(cs336_dir / "corpus.en", 400, [ENDOFTEXT]))


def test_vocab_size_not_above_the_base_is_refused(cs336_dir, small_base):
    with pytest.raises(ValueError, match="larger than the base's 400 tokens"):
        bpeforge.train(cs336_dir / "corpus.en", 400, extend=small_base)


def test_a_pattern_that_cuts_base_tokens_is_refused(gpt2, cs336_dir):
    with pytest.raises(ValueError, match=r"pattern 'o200k' cuts the base's token"):
        bpeforge.train(cs336_dir / "corpus.en", 60_000, extend=gpt2, pattern="o200k")


def test_a_pattern_that_keeps_base_tokens_is_taken(cs336_dir):
    # Llama 3's pattern cuts text as cl100k's does, so it keeps every token of a cl100k base whole.
    base = tokenizer_of(bpeforge.train(cs336_dir / "corpus.en", 400, [ENDOFTEXT], pattern="cl100k"))
    result = bpeforge.train(cs336_dir / "corpus.en", 450, extend=base, pattern="llama3")
    assert result.pattern == "llama3"
    assert result.merges[: len(base.merges)] == base.merges


def test_new_special_tokens_come_after_the_new_merges(cs336_dir, small_base):
    result = bpeforge.train(cs336_dir / "corpus.en", 452, ["<|pad|>"], extend=small_base)
    assert result.special_tokens == [ENDOFTEXT, "<|pad|>"]
    assert result.vocab[399] == ENDOFTEXT.encode()  # the base's 400 tokens, then 51 merges from id 400
    assert result.stats.merges_added == 51
    assert result.vocab[451] == b"<|pad|>" and max(result.vocab) == 451


def test_counts_without_the_base_special_tokens_are_refused(cs336_dir, small_base):
    counts = bpeforge.count(cs336_dir / "corpus.en", [])
    with pytest.raises(ValueError, match="without the base's special tokens"):
        bpeforge.train_from_counts(counts, 500, extend=small_base)


def test_a_tiktoken_base_needs_its_pattern(tmp_path, small_base, cs336_dir):
    path = tmp_path / "base.tiktoken"
    small_base.save_tiktoken(path)
    with pytest.raises(ValueError, match="does not record its pre-tokenizer"):
        bpeforge.train(cs336_dir / "corpus.en", 500, extend=path)
    result = bpeforge.train(cs336_dir / "corpus.en", 500, extend=path, pattern="gpt2")
    assert result.merges[: len(small_base.merges)] == small_base.merges


def test_a_missing_base_is_a_clear_error(tmp_path, cs336_dir):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        bpeforge.train(cs336_dir / "corpus.en", 500, extend=tmp_path / "nope")


# --- formats and the command line --------------------------------------------


def test_an_extended_gpt2_saves_to_every_format_with_the_same_ids(gpt2, news_sample, tmp_path):
    from bpeforge import tiktoken as bt

    extended = tokenizer_of(bpeforge.train(news_sample, 50_257 + 300, extend=gpt2))
    text = news_sample.read_text(encoding="utf-8")[:200_000] + "<|endoftext|>"
    expected = extended.encode(text)
    extended.save(tmp_path / "gpt2-files")
    extended.save_hf(tmp_path / "tokenizer.json")
    extended.save_tiktoken(tmp_path / "ranks.tiktoken")
    reloaded = {
        "gpt2 files": bpeforge.Tokenizer.load(tmp_path / "gpt2-files"),
        "hf": bpeforge.Tokenizer.from_hf(tmp_path / "tokenizer.json"),
        "tiktoken": bpeforge.Tokenizer.from_tiktoken(tmp_path / "ranks.tiktoken", "gpt2", {ENDOFTEXT: 50_256}),
    }
    for name, tokenizer in reloaded.items():
        assert tokenizer.encode(text) == expected, name
    from tokenizers import Tokenizer as HFTokenizer

    assert HFTokenizer.from_file(str(tmp_path / "tokenizer.json")).encode(text).ids == expected
    ranks = {token: token_id for token_id, token in extended.vocab.items() if token != ENDOFTEXT.encode()}
    encoding = bt.Encoding(
        "gpt2-extended",
        pat_str=bt.get_encoding("gpt2")._pat_str,
        mergeable_ranks=ranks,
        special_tokens={ENDOFTEXT: 50_256},
    )
    assert encoding.encode(text, allowed_special="all") == expected


def test_a_bundled_encoding_is_a_base_with_its_special_tokens(cs336_dir):
    result = bpeforge.train(cs336_dir / "corpus.en", 200_000 + 50, extend="o200k_base")
    assert result.pattern == "o200k"
    assert result.vocab[199_999] == b"<|endoftext|>" and result.vocab[200_018] == b"<|endofprompt|>"
    assert result.stats.merges_added == 50 and min(i for i in result.vocab if i > 200_018) == 200_019


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bpeforge", *args], capture_output=True, text=True, timeout=300)


def test_cli_extends_a_directory_and_keeps_it(tmp_path, cs336_dir):
    corpus = cs336_dir / "corpus.en"
    base = tmp_path / "base"
    assert run_cli("train", str(corpus), "--vocab-size", "400", "-o", str(base), "--no-progress").returncode == 0
    before = {p.name: p.read_bytes() for p in base.iterdir()}
    done = run_cli("train", str(corpus), "--extend", str(base), "--vocab-size", "600", "-o", str(tmp_path / "x"))
    assert done.returncode == 0, done.stderr
    assert "143 base merges kept, 200 added" in done.stdout and "fewer tokens" in done.stdout
    extended = bpeforge.Tokenizer.load(tmp_path / "x")
    assert extended.merges == bpeforge.train(corpus, 600, [ENDOFTEXT]).merges
    # --force cannot make the base its own output: the base is an input.
    refused = run_cli("train", str(corpus), "--extend", str(base), "--vocab-size", "600", "-o", str(base), "--force")
    assert refused.returncode != 0 and "base" in refused.stderr
    assert {p.name: p.read_bytes() for p in base.iterdir()} == before
    # From a count file, the same result.
    counts = tmp_path / "counts.bin"
    assert run_cli("count", str(corpus), "-o", str(counts), "--no-progress").returncode == 0
    done = run_cli(
        "train",
        "--from-counts",
        str(counts),
        "--extend",
        str(base),
        "--vocab-size",
        "600",
        "-o",
        str(tmp_path / "y"),
        "--no-progress",
    )
    assert done.returncode == 0, done.stderr
    assert bpeforge.Tokenizer.load(tmp_path / "y") == extended
