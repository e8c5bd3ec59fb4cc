"""The merges shipped with the rank files (`bpeforge/tiktoken/data/*.splits`) are those recovered from them."""

from __future__ import annotations

import pytest
from bpeforge import _core
from bpeforge.tiktoken import get_encoding, merge_splits
from bpeforge.tiktoken.registry import RANK_FILES, load_ranks


@pytest.mark.parametrize("name", sorted(RANK_FILES))
def test_shipped_merges_are_those_the_ranks_imply(name):
    ranks = load_ranks(name)
    assert merge_splits.shipped_merges(name, ranks) == _core.merges_from_ranks(list(ranks.items()))


def test_get_encoding_uses_them_and_gives_the_same_tokenizer():
    ranks = load_ranks("cl100k_base")
    assert get_encoding("cl100k_base")._tokenizer.merges == _core.merges_from_ranks(list(ranks.items()))


def test_a_damaged_file_is_refused_naming_it(tmp_path, monkeypatch):
    ranks = load_ranks("r50k_base")
    damaged = bytearray((merge_splits.DATA / "r50k_base.splits").read_bytes())
    damaged[1000] ^= 1
    (tmp_path / "r50k_base.splits").write_bytes(bytes(damaged))
    monkeypatch.setattr(merge_splits, "DATA", tmp_path)
    with pytest.raises(ValueError, match=r"r50k_base\.splits is damaged .*reinstall bpeforge"):
        merge_splits.shipped_merges("r50k_base", ranks)
