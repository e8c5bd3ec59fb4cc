"""SuperBPE tokenizers as HF files: `save_hf` writes the pre-tokenizer the reference builds (checked against
the pipeline `tokenizers` serializes from the reference's own code), HF `tokenizers` reads the file back with
bpeforge's ids, and `Tokenizer.from_hf` loads it as the same tokenizer. Both recipes."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import bpeforge
import pytest
from bpeforge.formats.gpt2 import encode_token
from bpeforge.formats.hf import hf_document
from bpeforge.superbpe import (
    O200K_LIKE_PATTERN,
    RECIPES,
    STAGE1_PATTERN,
    SUPERWORD_2025_PATTERN,
    SUPERWORD_PATTERN,
    train_superbpe,
)
from hypothesis import given, settings
from hypothesis import strategies as st

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Regex, pre_tokenizers  # noqa: E402

FIXTURES = Path(__file__).parent / "data" / "superbpe"
GUTENBERG, UDHR = FIXTURES / "gutenberg.txt", FIXTURES / "udhr.txt"
SPECIAL = "<|endoftext|>"
# The reference's regexes as its code and scripts spell them (PythonNut/superbpe at bbd0976: utils.py before
# d731c76 for the paper's, scripts/train_tokenizer.sh and scripts/extend_tokenizer.sh for the newer recipe).
PAPER_STAGE1_SPLIT = r"(?=(\d{3})+(?!\d))| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
PAPER_STAGE2_SPLIT = r"(?=(\d{3})+(?!\d))"
SCRIPT_STAGE1 = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?"
    r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)
SCRIPT_STAGE2 = r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)"


def byte_level() -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)


def paper_pipeline(split: str) -> pre_tokenizers.PreTokenizer:
    """The paper's pre-tokenizer, built as the reference's utils.py built it."""
    digits = pre_tokenizers.Digits(individual_digits=False)
    split_step = pre_tokenizers.Split(pattern=Regex(split), behavior="isolated", invert=False)
    return pre_tokenizers.Sequence([digits, split_step, byte_level()])


def script_pipeline(regex: str) -> pre_tokenizers.PreTokenizer:
    """The newer recipe's pre-tokenizer, built as the reference's utils.py builds it since November 2025."""
    split_step = pre_tokenizers.Split(pattern=Regex(regex), behavior="isolated", invert=False)
    return pre_tokenizers.Sequence([split_step, byte_level()])


def serialized(pipeline: pre_tokenizers.PreTokenizer) -> dict:
    """`pipeline` as `tokenizers` writes it in a tokenizer.json."""
    tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE())
    tokenizer.pre_tokenizer = pipeline
    return json.loads(tokenizer.to_str())["pre_tokenizer"]


@pytest.fixture(scope="module")
def paper_result():
    return train_superbpe(GUTENBERG, 1500, [SPECIAL], transition=800, num_threads=1)


@pytest.fixture(scope="module")
def recipe_2025_result():
    return train_superbpe(GUTENBERG, 1500, [SPECIAL], transition=800, recipe="o200k-2025", num_threads=1)


@pytest.fixture(scope="module")
def exported(paper_result, recipe_2025_result, tmp_path_factory):
    """Each recipe's result, saved with save_hf and read by `tokenizers` and by bpeforge."""
    out = {}
    for name, result in (("paper", paper_result), ("o200k-2025", recipe_2025_result)):
        directory = result.save_hf(tmp_path_factory.mktemp(name) / "tok")
        path = directory / "tokenizer.json"
        ours = bpeforge.Tokenizer(result.vocab, result.merges, result.special_tokens, pattern=result.pattern)
        out[name] = (ours, tokenizers.Tokenizer.from_file(str(path)), path)
    return out


def test_the_recipes_are_the_references():
    assert RECIPES["paper"].pattern == STAGE1_PATTERN and RECIPES["paper"].superword_pattern == SUPERWORD_PATTERN
    assert (RECIPES["paper"].vocab_size, RECIPES["paper"].transition) == (200_000, 179_999)
    newer = RECIPES["o200k-2025"]
    assert (newer.pattern, newer.superword_pattern) == (SCRIPT_STAGE1, SCRIPT_STAGE2)
    # scripts/extend_tokenizer.sh: vocab_size=128000 and `head -n 100000 merges.txt` (a version line, then merges).
    assert (newer.vocab_size, newer.transition, newer.max_words, newer.forbid) == (128_000, 99_999, 4, (b": ",))
    assert O200K_LIKE_PATTERN == SCRIPT_STAGE1 and SUPERWORD_2025_PATTERN == SCRIPT_STAGE2


# Letters of several cases and scripts, marks, numerals, whitespace of several kinds, punctuation runs.
TEXT_CHARS = [*"aB  \n\t\r,.:;'-/!?1234567890", "é", "Ж", "ж", "²", "٣", "Ⅻ", "\u0301", "\u3000", "\u00a0", "😀", "中"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(TEXT_CHARS), max_size=40))
def test_the_newer_recipes_patterns_cut_text_as_its_pipelines_do(text):
    for regex, pattern in ((SCRIPT_STAGE1, O200K_LIKE_PATTERN), (SCRIPT_STAGE2, SUPERWORD_2025_PATTERN)):
        split = pre_tokenizers.Split(pattern=Regex(regex), behavior="isolated", invert=False)
        assert bpeforge.pretokenize(text, pattern) == [piece for piece, _ in split.pre_tokenize_str(text)]


def test_the_newer_recipes_stage1_equals_tokenizers(tmp_path):
    """Stage 1 of "o200k-2025" is HF's BpeTrainer with the script's pipeline."""
    tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE())
    tokenizer.pre_tokenizer = script_pipeline(SCRIPT_STAGE1)
    tokenizer.train([str(GUTENBERG)], tokenizers.trainers.BpeTrainer(vocab_size=1200, show_progress=False))
    hf = [tuple(m) for m in json.loads(tokenizer.to_str())["model"]["merges"]]
    ours = bpeforge.train(GUTENBERG, 1200, tie_break="hf", documents="lines", pattern=O200K_LIKE_PATTERN).merges
    assert [(encode_token(a), encode_token(b)) for a, b in ours] == hf


def test_save_hf_writes_the_pipelines_the_reference_builds(exported):
    paper = json.loads(exported["paper"][2].read_text(encoding="utf-8"))
    assert paper["pre_tokenizer"] == serialized(paper_pipeline(PAPER_STAGE2_SPLIT))
    newer = json.loads(exported["o200k-2025"][2].read_text(encoding="utf-8"))
    assert newer["pre_tokenizer"] == serialized(script_pipeline(SCRIPT_STAGE2))
    # utils.py's construct_hf_tokenizer: a ByteLevel decoder.
    expected_decoder = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    assert paper["decoder"] == newer["decoder"] == expected_decoder
    stage1 = bpeforge.Tokenizer({i: bytes([i]) for i in range(256)}, [], pattern=STAGE1_PATTERN)
    assert hf_document(stage1)["pre_tokenizer"] == serialized(paper_pipeline(PAPER_STAGE1_SPLIT))


def real_texts() -> list[str]:
    lines = GUTENBERG.read_text(encoding="utf-8").splitlines(keepends=True)
    udhr = UDHR.read_text(encoding="utf-8")
    return [udhr[:30_000], "".join(lines[:300]), f"one {SPECIAL} two 1234567 three:  four\r\n\n"]


@pytest.mark.parametrize("recipe", ["paper", "o200k-2025"])
def test_tokenizers_reads_the_same_ids_on_real_text(exported, recipe):
    ours, hf, _ = exported[recipe]
    for text in real_texts():
        ids = ours.encode(text)
        assert hf.encode(text).ids == ids
        assert hf.decode(ids, skip_special_tokens=False) == text
    superwords = [t for t in ours.vocab.values() if t.strip(b" ").count(b" ") >= 1]
    assert superwords, "no token spans words: the test would not tell stage 2's pieces apart"


@pytest.mark.parametrize("recipe", ["paper", "o200k-2025"])
def test_from_hf_loads_the_same_tokenizer(exported, recipe):
    ours, _, path = exported[recipe]
    loaded = bpeforge.Tokenizer.from_hf(path)
    assert loaded.pattern == ours.pattern  # a plain tokenizer: the pattern bpeforge trained with
    assert loaded.vocab == ours.vocab and loaded.merges == ours.merges
    for text in real_texts():
        assert loaded.encode(text) == ours.encode(text)


@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from([*TEXT_CHARS, " the", " of", "ing", SPECIAL]), max_size=40).map("".join))
def test_tokenizers_reads_the_same_ids_on_random_text(exported, text):
    for ours, hf, _ in exported.values():
        assert hf.encode(text).ids == ours.encode(text)


@pytest.mark.parametrize("name", ["20news.txt.xz", "multilingual.txt.xz"])
def test_tokenizers_reads_the_same_ids_on_the_shared_corpora(shared_data_dir, exported, name):
    """Trained on the fixture; encoded on 300 KB of a shared corpus (line by line, as documents)."""
    with lzma.open(shared_data_dir / "corpora" / name, "rb") as source:
        data = source.read(300_000)
    lines = data[: data.rfind(b"\n") + 1].decode("utf-8").splitlines(keepends=True)
    for ours, hf, _ in exported.values():
        assert [e.ids for e in hf.encode_batch(lines)] == ours.encode_batch(lines, num_threads=1)


def test_the_cli_trains_the_newer_recipe_and_saves_its_pattern(tmp_path):
    from cli_runs import run_cli

    output = tmp_path / "tok"
    run = run_cli(
        "train", GUTENBERG, "--superbpe", "600", "--recipe", "o200k-2025", "--vocab-size", "1200",
        "--no-special-tokens", "--no-progress", "--threads", "1", "-o", output,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    loaded = bpeforge.Tokenizer.load(output)
    assert loaded.pattern == SUPERWORD_2025_PATTERN
    expected = train_superbpe(GUTENBERG, 1200, transition=600, recipe="o200k-2025", num_threads=1)
    assert loaded.merges == expected.merges


def test_a_file_trained_by_tokenizers_without_every_byte_loads_with_its_ids(tmp_path):
    """HF's trainer keeps only the bytes it saw (the released SuperBPE files lack 0xC0, for one): such a file
    with the paper's stage-2 pipeline is not a plain Tokenizer, and `from_hf` runs it as a pipeline."""
    trained = tokenizers.Tokenizer(tokenizers.models.BPE())
    trained.pre_tokenizer = paper_pipeline(PAPER_STAGE2_SPLIT)
    trained.train([str(GUTENBERG)], tokenizers.trainers.BpeTrainer(vocab_size=600, show_progress=False))
    # utils.py's construct_hf_tokenizer adds the decoder.
    trained.decoder = tokenizers.decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    path = tmp_path / "tokenizer.json"
    trained.save(str(path))
    assert len(trained.get_vocab()) == 600  # the bytes seen and the merges: far fewer than 256 bytes
    loaded = bpeforge.Tokenizer.from_hf(path)
    assert loaded.runs_pipeline
    long_line = "word " * 250_000  # no digits: one piece, and the Split's regex searches it all
    for text in [*real_texts()[1:], long_line]:
        assert loaded.encode(text) == trained.encode(text).ids


def test_a_file_lacking_only_bytes_utf8_never_holds_runs_as_a_plain_tokenizer(tmp_path):
    """The released SuperBPE files lack only 0xC0, 0xC1 and 0xF5-0xFF, which no text holds: such a file runs
    on the plain tokenizer's SuperBPE engine (not the slower pipeline), with `tokenizers`' ids, and the 13
    bytes stay out of what the tokenizer shows and writes back."""
    never = {0xC0, 0xC1, *range(0xF5, 0x100)}
    alphabet = [encode_token(bytes([byte])) for byte in range(256) if byte not in never]
    trained = tokenizers.Tokenizer(tokenizers.models.BPE())
    trained.pre_tokenizer = paper_pipeline(PAPER_STAGE2_SPLIT)
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=900, show_progress=False, initial_alphabet=alphabet)
    trained.train([str(GUTENBERG)], trainer)
    trained.decoder = tokenizers.decoders.ByteLevel(add_prefix_space=True, trim_offsets=True, use_regex=True)
    path = tmp_path / "tokenizer.json"
    trained.save(str(path))
    assert len(trained.get_vocab()) == 900
    loaded = bpeforge.Tokenizer.from_hf(path)
    assert not loaded.runs_pipeline
    assert loaded.vocab_size == 900 and b"\xff" not in loaded.vocab.values()
    assert loaded.token_to_id(b"\xff") is None
    with pytest.raises(ValueError, match="unknown token id 900"):
        loaded.decode([900])
    long_line = "word " * 300_000  # no digits: one piece, and the Split's regex searches it all
    for text in [*real_texts(), long_line]:
        assert loaded.encode(text) == trained.encode(text).ids
    loaded.save_hf(tmp_path / "again.json")
    again = tokenizers.Tokenizer.from_file(str(tmp_path / "again.json"))
    assert again.get_vocab() == trained.get_vocab()
