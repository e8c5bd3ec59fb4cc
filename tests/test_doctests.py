"""The examples in the package's docstrings run and give what they show."""

import doctest

import bpeforge
import bpeforge.formats.gpt2
import bpeforge.tokenizer
import pytest


@pytest.mark.parametrize("module", [bpeforge, bpeforge.formats.gpt2, bpeforge.tokenizer], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0, f"{module.__name__} has no examples to run"
    assert result.failed == 0
