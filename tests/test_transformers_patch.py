"""`bpeforge.patch_transformers()`: `AutoTokenizer.from_pretrained(dir)` of a byte-level BPE model encodes
through bpeforge with the ids (and attention masks) unpatched transformers gives; files bpeforge refuses, and
calls asking for more than ids, run transformers' own code; `unpatch_transformers()` restores it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import bpeforge
import pytest
from bpeforge import transformers_patch

transformers = pytest.importorskip("transformers")
TokenizersBackend = pytest.importorskip("transformers.tokenization_utils_tokenizers").TokenizersBackend

FIXTURES = Path(__file__).resolve().parent / "data" / "hf"
EXACT = ["clip", "falcon", "gpt-neox-20b-pii", "olmo1", "olmo2", "phi-2", "roberta-base", "whisper-large-v3"]
REFUSED = ["chatglm", "sentencepiece-added-tokens"]
TEXTS = [
    "Hello world's  end <|endoftext|> 123 4567 café",
    "",
    "  spaces\n\nnew lines\t and\ttabs  ",
    "Ünïcödé ﬁ Ⅻ ２ 🤖 <mask> text</s><s>",
    "The quick brown fox jumps over the lazy dog. " * 20,
]


@pytest.fixture(autouse=True)
def _unpatched_after():
    yield
    transformers_patch.unpatch_transformers()


def model_dir(tmp_path: Path, name: str, **config: str) -> Path:
    """A model directory as the Hub holds one: `tokenizer.json` and a `tokenizer_config.json`."""
    directory = tmp_path / name
    directory.mkdir()
    shutil.copy(FIXTURES / f"{name}.json", directory / "tokenizer.json")
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 64, **config}
    (directory / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return directory


def outputs(tokenizer, **options) -> list[dict]:
    """The tokenizer's results for a list of str, each single str, and a batch big enough for bpeforge's thread
    pool (`_POOL_MIN_CHARS`), `add_special_tokens` both ways."""
    calls = [TEXTS, *TEXTS, TEXTS * 40]
    return [
        dict(tokenizer(texts, add_special_tokens=special, **options)) for special in (True, False) for texts in calls
    ]


@pytest.mark.parametrize("name", EXACT + REFUSED)
def test_ids_and_masks_equal_unpatched_transformers(tmp_path, name):
    directory = model_dir(tmp_path, name)
    expected = outputs(transformers.AutoTokenizer.from_pretrained(directory))
    bpeforge.patch_transformers()
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    assert outputs(tokenizer) == expected
    assert tokenizer.encode(TEXTS[0]) == expected[1]["input_ids"]
    twin = tokenizer.__dict__[transformers_patch._STATE][1]
    # The files bpeforge runs went through it; the ones it refuses stayed on transformers' path.
    assert (twin is not None) == (name in EXACT), twin


def test_calls_needing_more_than_ids_run_transformers_own_code(tmp_path):
    directory = model_dir(tmp_path, "roberta-base", pad_token="<pad>")
    reference = transformers.AutoTokenizer.from_pretrained(directory)
    options = [
        {"return_offsets_mapping": True},
        {"padding": True},
        {"truncation": True, "max_length": 5},
        {"return_special_tokens_mask": True},
        {"return_token_type_ids": True},
        {"return_length": True},
    ]
    expected = [outputs(reference, **one) for one in options]
    bpeforge.patch_transformers()
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    assert [outputs(tokenizer, **one) for one in options] == expected
    assert transformers_patch._STATE not in tokenizer.__dict__  # never asked bpeforge
    assert tokenizer(TEXTS[:2], return_offsets_mapping=True).encodings is not None


def test_tokens_added_after_loading_are_encoded_as_transformers_does(tmp_path):
    directory = model_dir(tmp_path, "olmo2")
    reference = transformers.AutoTokenizer.from_pretrained(directory)
    reference.add_tokens(["quick brown", "<new-special>"])
    expected = outputs(reference)
    bpeforge.patch_transformers()
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    outputs(tokenizer)  # the twin of the file as loaded
    tokenizer.add_tokens(["quick brown", "<new-special>"])
    assert outputs(tokenizer) == expected
    assert tokenizer.__dict__[transformers_patch._STATE][1] is not None


def test_patch_is_idempotent_and_unpatch_restores_the_method(tmp_path):
    original = TokenizersBackend._encode_plus
    bpeforge.patch_transformers()
    patched = TokenizersBackend._encode_plus
    bpeforge.patch_transformers()
    assert patched is not original and TokenizersBackend._encode_plus is patched
    bpeforge.unpatch_transformers()
    assert TokenizersBackend._encode_plus is original
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir(tmp_path, "phi-2"))
    tokenizer(TEXTS)
    assert transformers_patch._STATE not in tokenizer.__dict__


def test_a_plain_tokenizer_saved_by_bpeforge_encodes_through_it(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("low lower lowest newer newest<|endoftext|>the cat sat on the mat\n" * 200, encoding="utf-8")
    trained = bpeforge.Tokenizer(*bpeforge.train_bpe(str(corpus), 280, ["<|endoftext|>"]), ["<|endoftext|>"])
    trained.save_hf(tmp_path / "model")
    expected = outputs(transformers.AutoTokenizer.from_pretrained(tmp_path / "model"))
    bpeforge.patch_transformers()
    tokenizer = transformers.AutoTokenizer.from_pretrained(tmp_path / "model")
    assert outputs(tokenizer) == expected
    assert tokenizer.__dict__[transformers_patch._STATE][1] is not None
