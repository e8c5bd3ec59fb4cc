"""`train_superbpe(..., extend=BASE)`: SuperBPE's stage 2 on top of an existing tokenizer, keeping its ids.

Its new merges are those of `train_superbpe`'s own stage 2 from the same inherited merges (which the fork's
recorded output pins down, tests/test_superbpe.py), less the base's pairs; the base keeps every id, merge and
special token; GPT-2 extended on TinyStories encodes text as GPT-2 does wherever no new token applies."""

from __future__ import annotations

import re
from pathlib import Path

import bpeforge
import pytest
from bpeforge.superbpe import RECIPES, STAGE1_PATTERN, SUPERWORD_PATTERN, train_superbpe
from cli_runs import run_cli

FIXTURES = Path(__file__).parent / "data" / "superbpe"
GUTENBERG, UDHR = FIXTURES / "gutenberg.txt", FIXTURES / "udhr.txt"
SPECIAL = "<|endoftext|>"


def words(token: bytes) -> int:
    return len([word for word in token.split(b" ") if word])


def truncated_stage1(merge_count: int, tie_break: str = "hf") -> bpeforge.Tokenizer:
    """Stage 1 of the paper's recipe on the gutenberg fixture, cut to its first `merge_count` merges."""
    stage1 = bpeforge.train(GUTENBERG, 1500, tie_break=tie_break, documents="lines", pattern=STAGE1_PATTERN)
    merges = stage1.merges[:merge_count]
    vocab = {i: bytes([i]) for i in range(256)}
    known = set(vocab.values())
    for left, right in merges:
        if left + right not in known:
            known.add(left + right)
            vocab[len(vocab)] = left + right
    return bpeforge.Tokenizer(vocab, merges, pattern=STAGE1_PATTERN)


@pytest.mark.parametrize("tie_break", ["cs336", "hf"])
def test_extending_stage1_learns_what_train_superbpe_learns_after_the_same_merges(tie_break):
    base = truncated_stage1(600, tie_break)
    whole = train_superbpe(GUTENBERG, 1500, transition=600, tie_break=tie_break, num_threads=1)
    extended = train_superbpe(GUTENBERG, len(base.vocab) + 300, extend=base, tie_break=tie_break, num_threads=1)
    assert extended.merges[: len(base.merges)] == base.merges
    new = extended.merges[len(base.merges) :]
    expected = [merge for merge in whole.merges if merge not in set(base.merges)]
    assert len(new) == extended.stats.merges_added and 250 <= len(new) <= 300
    assert new == expected[: len(new)]
    assert any(words(left + right) >= 2 for left, right in new), "no superword learnt"
    # Ids: the base's as they were, then one per new token; the result loads and encodes.
    assert all(extended.vocab[i] == token for i, token in base.vocab.items())
    assert (
        sorted(extended.vocab) == list(range(len(extended.vocab))) and len(extended.vocab) <= 1 + len(base.vocab) + 300
    )
    assert extended.pattern == SUPERWORD_PATTERN
    tokenizer = bpeforge.Tokenizer(extended.vocab, extended.merges, pattern=extended.pattern)
    text = UDHR.read_text(encoding="utf-8")[:5000]
    assert tokenizer.decode(tokenizer.encode(text)) == text


def test_new_merges_obey_max_words_and_forbid(tmp_path):
    corpus = tmp_path / "notes.txt"
    corpus.write_text("Note: the end of the line is near\nNote: the end of the road\n" * 50, encoding="utf-8")
    base = truncated_stage1(300)
    loose = train_superbpe(corpus, len(base.vocab) + 40, extend=base, max_words=0, forbid=(), num_threads=1)
    loose_tokens = [left + right for left, right in loose.merges[len(base.merges) :]]
    # Without the rules the corpus yields both kinds: the rules below have something to refuse.
    assert any(b": " in token for token in loose_tokens) and any(words(token) > 2 for token in loose_tokens)
    strict = train_superbpe(corpus, len(base.vocab) + 40, extend=base, max_words=2, num_threads=1)
    strict_tokens = [left + right for left, right in strict.merges[len(base.merges) :]]
    assert strict_tokens and all(words(token) <= 2 and b": " not in token for token in strict_tokens)


def test_extend_arguments_are_checked():
    base = truncated_stage1(100)
    with pytest.raises(ValueError, match="leave transition unset"):
        train_superbpe(GUTENBERG, 1000, transition=50, extend=base)
    with pytest.raises(ValueError, match="no room for superword tokens"):
        train_superbpe(GUTENBERG, len(base.vocab), extend=base)
    with pytest.raises(ValueError, match="give superword_pattern instead"):
        train_superbpe(GUTENBERG, 1000, extend=base, pattern="gpt2")
    with pytest.raises(ValueError, match="recipe 'gpt4' is not one of"):
        train_superbpe(GUTENBERG, 1000, recipe="gpt4")


@pytest.fixture(scope="module")
def gpt2_superbpe(gpt2, cs336_dir):
    """GPT-2 (its <|endoftext|> special) extended by 300 superword tokens on the TinyStories sample."""
    return train_superbpe(cs336_dir / "tinystories_sample.txt", len(gpt2.vocab) + 300, extend=gpt2, num_threads=1)


def test_extending_gpt2_keeps_every_base_id(gpt2, gpt2_superbpe):
    result = gpt2_superbpe
    assert all(result.vocab[i] == token for i, token in gpt2.vocab.items())
    assert result.merges[: len(gpt2.merges)] == gpt2.merges
    assert result.special_tokens == [SPECIAL]
    new_ids = sorted(set(result.vocab) - set(gpt2.vocab))
    assert new_ids == list(range(len(gpt2.vocab), len(gpt2.vocab) + len(new_ids))) and len(new_ids) > 250
    new_tokens = [left + right for left, right in result.merges[len(gpt2.merges) :]]
    assert sum(words(token) >= 2 for token in new_tokens) > 100, "TinyStories repeats phrases: superwords expected"
    assert all(words(token) <= 4 and b": " not in token for token in new_tokens)


def test_extended_gpt2_encodes_as_gpt2_where_no_new_token_applies(gpt2, gpt2_superbpe, cs336_texts):
    """On held-out text: each line without digits (the superword pattern cuts numerals in groups of three,
    which GPT-2 does not) that the extension encodes with base tokens only has GPT-2's ids."""
    extended = bpeforge.Tokenizer(
        gpt2_superbpe.vocab, gpt2_superbpe.merges, gpt2_superbpe.special_tokens, pattern=gpt2_superbpe.pattern
    )
    base_only, with_new = 0, 0
    for name in ("corpus.en", "german.txt", "address.txt"):
        for line in cs336_texts[name].splitlines(keepends=True):
            if re.search(r"\d", line):
                continue
            ids = extended.encode(line)
            assert extended.decode(ids) == line
            if max(ids, default=0) < len(gpt2.vocab):
                assert ids == gpt2.encode(line), line
                base_only += 1
            else:
                with_new += 1
                assert len(ids) <= len(gpt2.encode(line))
    assert base_only > 100 and with_new > 10


def test_the_cli_extends_a_base_directory(tmp_path, gpt2):
    gpt2.save(tmp_path / "gpt2")
    output = tmp_path / "out"
    run = run_cli(
        "train", UDHR, "--superbpe", "--extend", tmp_path / "gpt2", "--vocab-size", len(gpt2.vocab) + 100,
        "-o", output, "--no-progress", "--threads", "1",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "superword tokens (spanning words): " in run.stdout and "base merges kept" in run.stdout
    extended = bpeforge.Tokenizer.load(output)
    assert all(extended.vocab[i] == token for i, token in gpt2.vocab.items())
    assert extended.merges[: len(gpt2.merges)] == gpt2.merges and len(extended.vocab) > len(gpt2.vocab)
    assert extended.pattern == SUPERWORD_PATTERN


def test_extended_gpt2_saves_for_tokenizers_with_the_same_ids(gpt2_superbpe, cs336_texts, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    path = gpt2_superbpe.save_hf(tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(path))
    ours = bpeforge.Tokenizer(
        gpt2_superbpe.vocab, gpt2_superbpe.merges, gpt2_superbpe.special_tokens, pattern=gpt2_superbpe.pattern
    )
    for name in ("corpus.en", "tinystories_sample.txt", "german.txt"):
        text = cs336_texts[name]
        assert hf.encode(text).ids == ours.encode(text)
    assert bpeforge.Tokenizer.from_hf(path).encode(cs336_texts["corpus.en"]) == ours.encode(cs336_texts["corpus.en"])


def test_extending_o200k_by_its_preset_name_keeps_its_ids():
    from bpeforge.open_tokenizer import open_tokenizer

    o200k = open_tokenizer("o200k_base")
    result = train_superbpe(UDHR, len(o200k.vocab) + 50, extend="o200k", recipe="o200k-2025", num_threads=1)
    assert result.special_tokens == o200k.special_tokens
    assert all(result.vocab[i] == token for i, token in o200k.vocab.items())
    assert result.merges[: len(o200k.merges)] == o200k.merges and result.stats.merges_added == 50
    assert result.pattern == RECIPES["o200k-2025"].superword_pattern
