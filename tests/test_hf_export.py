"""HF exports that transformers loads as is (issue 14): `save_hf` to a directory, every preset.

For each pre-tokenizer preset and a custom regex, a tokenizer is written with
`save_hf(directory)` and loaded three ways: HF `tokenizers`
(`Tokenizer.from_file`), `transformers.AutoTokenizer.from_pretrained`, and
bpeforge's own `Tokenizer.from_hf`. All three must give bpeforge's ids on
samples of the three shared corpora and on hand-made edge cases, and
`AutoTokenizer` must know the end-of-text token.
"""

from __future__ import annotations

import json
import lzma
import warnings

import bpeforge
import pytest
from bpeforge import tiktoken as bt
from bpeforge.formats.hf import hf_pre_tokenizer
from bpeforge.formats.oniguruma import onig_regex

tokenizers = pytest.importorskip("tokenizers")
transformers = pytest.importorskip("transformers")

ENDOFTEXT = "<|endoftext|>"
SAMPLE_BYTES = 300_000
EDGE_CASES = [
    "don't DON'T you're I'LL  we've\n\n\nend",
    "123 4567 89012345 ١٢٣ ½",
    "東京タワーは333メートル。中文没有空格",
    "emoji 🙂🙂 flags 🇫🇷 zwj 👩‍👩‍👧",
    "tabs\t\tand   spaces   \n  \r\n trailing   ",
    "  leading spaces and a trailing space ",
    f"documents{ENDOFTEXT}joined{ENDOFTEXT}",
    "café naïve Ελληνικά русский",
]
# The bundled encodings (real OpenAI files) and small trained tokenizers for the other presets.
ENCODINGS = {"gpt2": "gpt2", "cl100k": "cl100k_base", "o200k": "o200k_base"}
TRAINED = ["llama3", "qwen2", r"\p{L}+|\p{N}{1,2}+|[^\p{L}\p{N}]+$|\s+|."]


@pytest.fixture(scope="module")
def samples(shared_data_dir) -> list[str]:
    texts = []
    for name in ("gutenberg_500MB.txt.xz", "multilingual.txt.xz", "20news.txt.xz"):
        path = shared_data_dir / "corpora" / name
        if not path.is_file():
            pytest.skip(f"{path} is not there (see ../shared/data/corpora/README)")
        with lzma.open(path, "rb") as f:
            texts.append(f.read(SAMPLE_BYTES).decode("utf-8", errors="ignore"))
    return texts + EDGE_CASES


def trained(cs336_dir, pattern: str) -> bpeforge.Tokenizer:
    result = bpeforge.train(cs336_dir / "corpus.en", 800, [ENDOFTEXT], pattern=pattern)
    return bpeforge.Tokenizer(result.vocab, result.merges, result.special_tokens, pattern=result.pattern)


def check_round_trip(tokenizer: bpeforge.Tokenizer, directory, texts: list[str]) -> None:
    written = tokenizer.save_hf(directory)
    assert sorted(p.name for p in written.iterdir()) == [
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    hf = tokenizers.Tokenizer.from_file(str(directory / "tokenizer.json"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = transformers.AutoTokenizer.from_pretrained(directory)
    back = bpeforge.Tokenizer.from_hf(directory / "tokenizer.json")
    assert back == tokenizer and back.pattern == tokenizer.pattern
    assert auto.eos_token == ENDOFTEXT and auto.eos_token_id == tokenizer.token_to_id(ENDOFTEXT)
    for text in texts:
        expected = tokenizer.encode(text)
        assert hf.encode(text).ids == expected, text[:60]
        assert auto(text)["input_ids"] == expected, text[:60]
        assert back.encode(text) == expected
        assert auto.decode(expected) == text


@pytest.mark.parametrize("pattern", list(ENCODINGS))
def test_bundled_encodings_round_trip_through_autotokenizer(pattern, samples, tmp_path):
    tokenizer = bt.get_encoding(ENCODINGS[pattern])._tokenizer
    assert tokenizer.pattern == pattern
    check_round_trip(tokenizer, tmp_path / "hf", samples)


@pytest.mark.parametrize("pattern", TRAINED, ids=["llama3", "qwen2", "custom"])
def test_trained_presets_and_custom_patterns_round_trip(pattern, cs336_dir, samples, tmp_path):
    check_round_trip(trained(cs336_dir, pattern), tmp_path / "hf", samples)


def test_split_regex_is_written_for_oniguruma():
    # `$` is the end of the text in bpeforge, the end of a line in Oniguruma; `X{1,3}+` is possessive in
    # bpeforge, `(X{1,3})+` in Oniguruma. Both are rewritten; classes and escapes are left alone.
    assert onig_regex(r"\s++$|\p{N}{1,3}+|[$]\$") == r"\s++\z|(?>\p{N}{1,3})|[$]\$"
    cl100k = json.dumps(hf_pre_tokenizer("cl100k"))
    assert r"\\z" in cl100k and "{1,3}+" not in cl100k


def test_roles_bos_and_pad_when_asked(cs336_dir, tmp_path):
    result = bpeforge.train(cs336_dir / "corpus.en", 600, [ENDOFTEXT, "<s>", "<pad>"])
    tokenizer = bpeforge.Tokenizer(result.vocab, result.merges, result.special_tokens)
    tokenizer.save_hf(tmp_path / "hf", bos_token="<s>", pad_token="<pad>")
    roles = json.loads((tmp_path / "hf" / "special_tokens_map.json").read_text())
    assert roles == {"eos_token": ENDOFTEXT, "bos_token": "<s>", "pad_token": "<pad>"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = transformers.AutoTokenizer.from_pretrained(tmp_path / "hf")
    assert (auto.bos_token, auto.pad_token, auto.pad_token_id) == ("<s>", "<pad>", tokenizer.token_to_id("<pad>"))
    with pytest.raises(ValueError, match="'<mask>' is not a special token"):
        tokenizer.save_hf(tmp_path / "other", pad_token="<mask>")
    assert not (tmp_path / "other").exists()


def test_a_directory_is_not_clobbered(cs336_dir, tmp_path):
    tokenizer = trained(cs336_dir, "gpt2")
    target = tmp_path / "model"
    target.mkdir()
    (target / "model.safetensors").write_text("weights")
    with pytest.raises(FileExistsError):
        tokenizer.save_hf(target)
    with pytest.raises(Exception, match=r"model\.safetensors"):
        tokenizer.save_hf(target, overwrite=True)
    assert (target / "model.safetensors").read_text() == "weights"
    # A .json path (or an existing file) is still one tokenizer.json.
    single = tokenizer.save_hf(tmp_path / "tokenizer.json")
    assert single.is_file() and bpeforge.Tokenizer.from_hf(single) == tokenizer
