"""The merges shipped with the rank files (`bpeforge/tiktoken/data/*.splits`) are those recovered from them."""

from __future__ import annotations

import bpeforge
import pytest
from bpeforge import _core
from bpeforge.formats import shipped_merges
from bpeforge.tiktoken import get_encoding
from bpeforge.tiktoken.registry import RANK_FILES, load_ranks


@pytest.mark.parametrize("name", sorted(RANK_FILES))
def test_shipped_merges_are_those_the_ranks_imply(name):
    ranks = load_ranks(name)
    assert shipped_merges.shipped_merges(name, ranks) == _core.merges_from_ranks(list(ranks.items()))


def test_get_encoding_uses_them_and_gives_the_same_tokenizer():
    ranks = load_ranks("cl100k_base")
    assert get_encoding("cl100k_base")._tokenizer.merges == _core.merges_from_ranks(list(ranks.items()))


def test_from_tiktoken_of_a_shipped_file_uses_them(tmp_path, monkeypatch):
    (tmp_path / "r50k.tiktoken.gz").write_bytes((shipped_merges.DATA / "r50k_base.tiktoken.gz").read_bytes())
    monkeypatch.setattr(shipped_merges, "SPLIT_FILES", {**shipped_merges.SPLIT_FILES, "r50k_base": "0" * 64})
    with pytest.raises(ValueError, match=r"r50k_base\.splits is damaged"):  # read, so refused as damaged
        bpeforge.Tokenizer.from_tiktoken(tmp_path / "r50k.tiktoken.gz")
    monkeypatch.undo()
    tokenizer = bpeforge.Tokenizer.from_tiktoken(tmp_path / "r50k.tiktoken.gz")
    ranks = load_ranks("r50k_base")
    assert tokenizer.merges == _core.merges_from_ranks(list(ranks.items()))


def test_a_damaged_file_is_refused_naming_it(tmp_path, monkeypatch):
    ranks = load_ranks("r50k_base")
    damaged = bytearray((shipped_merges.DATA / "r50k_base.splits").read_bytes())
    damaged[1000] ^= 1
    (tmp_path / "r50k_base.splits").write_bytes(bytes(damaged))
    monkeypatch.setattr(shipped_merges, "DATA", tmp_path)
    with pytest.raises(ValueError, match=r"r50k_base\.splits is damaged .*reinstall bpeforge"):
        shipped_merges.shipped_merges("r50k_base", ranks)
