"""Real `tokenizer.json` files (tests/data/hf, trimmed: see its README) and generated pipelines, encoded by
bpeforge and by HF `tokenizers`: the same ids, with `add_special_tokens` both ways; what bpeforge does not run
exactly is refused naming the component."""

from __future__ import annotations

import copy
import json
import pickle
import subprocess
import sys
from pathlib import Path

import bpeforge
import numpy as np
import pytest
from bpeforge.encode_files import encode_files
from bpeforge.hf_pipeline import PIPELINE
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from splits import assigned_code_points

tokenizers = pytest.importorskip("tokenizers")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "data" / "hf"
EXACT = [
    "claude",
    "clip",
    "deepseek-v2",
    "deepseek-v3",
    "deepseek-v4",
    "falcon",
    "gpt-neox-20b-pii",
    "llama3",
    "olmo1",
    "olmo2",
    "phi-2",
    "qwen2",
    "roberta-base",
    "whisper-large-v3",
    "whisper-tiny",
]
REFUSED = {
    "chatglm": "pre_tokenizer without ByteLevel",
    "sentencepiece-added-tokens": "pre_tokenizer without ByteLevel",
}
# Chars where pipelines differ: decompositions, case rules, numbers of other scripts, wide and zero-width
# spaces, UTF-8 continuation bytes that are digits in GPT-2's byte chars (0xB2 of "ò"), control bytes
# Falcon's vocabulary lacks.
UNICODE = list("aZz09 \t\n\r.,!?'’-_$+<>|«»—…éèßΣςİﬁ½²³٣४日本語のカー한😀👍🏽\u00a0\u3000\u200be\u0301ò\x03\x0b\x1c")
UNICODE.append("\U0003336d")  # CJK Extension J: Unicode 17.0, unassigned to tokenizers' Oniguruma (16.0)


def _text(extra: list[str]):
    """Text of the chars above and of `extra` strings (added tokens, words)."""
    return st.lists(st.sampled_from([*UNICODE, *extra]), max_size=40).map("".join)


REAL_TEXTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))[:4]]


def _texts() -> list[str]:
    texts = [path.read_text(encoding="utf-8")[:20000] for path in REAL_TEXTS]
    return [*texts, "", " ", "Hello  world! 123456 ½ café ΟΔΟΣ 日本語 😀 \t\n\r\n x", "<|endoftext|>a<s> <mask> b"]


def _hf(path: Path):
    return tokenizers.Tokenizer.from_file(str(path))


@pytest.fixture(scope="module", params=EXACT)
def pair(request):
    path = FIXTURES / f"{request.param}.json"
    return _hf(path), bpeforge.Tokenizer.from_hf(path)


def test_real_files_encode_with_tokenizers_ids(pair):
    theirs, ours = pair
    for text in _texts():
        for add in (True, False):
            assert ours.encode(text, add_special_tokens=add) == theirs.encode(text, add_special_tokens=add).ids
    assert ours.encode("Hi") == theirs.encode("Hi").ids, "add_special_tokens=True is the default, as in tokenizers"


def test_real_files_batch_numpy_and_decode_agree(pair):
    theirs, ours = pair
    texts = _texts()
    expected = [encoding.ids for encoding in theirs.encode_batch(texts, add_special_tokens=False)]
    assert ours.encode_batch(texts, add_special_tokens=False) == expected
    ids, offsets = ours.encode_batch_to_numpy(texts, num_threads=2)
    assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == ours.encode_batch(texts)
    assert ours.encode_to_numpy(texts[0]).dtype == np.uint32
    for text in texts:
        ids = theirs.encode(text).ids
        assert ours.decode(ids) == theirs.decode(ids, skip_special_tokens=False)


def test_real_files_batches_of_many_short_texts_keep_each_texts_ids(pair):
    """A batch of lines: the pieces of many texts are looked up together (`encode/piece_run.rs`), with added
    tokens, the post-processor's ids and long texts (encoded alone) between them, on one and two threads."""
    theirs, ours = pair
    lines = _texts()[0].splitlines(keepends=True)
    texts = [*lines, *(line + "<|endoftext|>" for line in lines[:40]), *_texts()[1:], _texts()[1], *lines[:300]]
    for add in (True, False):
        expected = [encoding.ids for encoding in theirs.encode_batch(texts, add_special_tokens=add)]
        for threads in (1, 2):
            ids, offsets = ours.encode_batch_to_numpy(texts, num_threads=threads, add_special_tokens=add)
            assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected, (add, threads)


def test_a_pipeline_makes_its_python_tables_when_first_asked():
    """Loading parses the file once (the core's tables); `vocab` and `merges` are made from the core and the
    file's text on first use, and equal what the file holds."""
    from bpeforge.formats import hf
    from bpeforge.formats.gpt2 import decode_token

    path = FIXTURES / "llama3.json"
    ours = bpeforge.Tokenizer.from_hf(path)
    assert "_vocab" not in ours.__dict__ and "_merges" not in ours.__dict__
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert ours.merges == hf.merges_of(doc)
    assert ours.vocab_size == len(ours.vocab) == len(doc["model"]["vocab"]) + len(doc["added_tokens"])
    assert all(ours.vocab[token_id] == decode_token(text) for text, token_id in doc["model"]["vocab"].items())


def test_batches_take_any_iterable_and_name_what_is_not_text():
    """The core reads a batch's list in one pass (`text_list.rs`): tuples and generators give the same ids, a text
    that is not a `str` or has a lone surrogate raises as `encode` does, and long texts beyond ASCII (converted by the
    workers) keep their ids call after call."""
    ours = bpeforge.Tokenizer.from_hf(FIXTURES / "llama3.json")
    texts = ["a b", "日本語" * 2000 + "x", "", "é" * 5000, "c"]
    expected = [ours.encode(text, add_special_tokens=False) for text in texts]
    for batch in (texts, tuple(texts), (text for text in texts)):
        assert ours.encode_batch(batch, add_special_tokens=False) == expected
    for _ in range(3):
        ids, offsets = ours.encode_batch_to_numpy(texts, add_special_tokens=False)
        assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected
    with pytest.raises(TypeError, match="expected str, got int"):
        ours.encode_batch_to_numpy(["a", 3])
    with pytest.raises(UnicodeEncodeError):
        ours.encode_batch_to_numpy(["ok", "\ud800"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_text(["<|endoftext|>", "<s>", " <mask>", "|||EMAIL_ADDRESS|||"]))
def test_real_files_on_generated_unicode(pair, text):
    theirs, ours = pair
    for add in (True, False):
        assert ours.encode(text, add_special_tokens=add) == theirs.encode(text, add_special_tokens=add).ids


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_files_bpeforge_cannot_run_exactly_are_refused_naming_the_component(name):
    path = FIXTURES / f"{name}.json"
    _hf(path)  # a valid file for tokenizers
    with pytest.raises(ValueError, match=REFUSED[name]) as refused:
        bpeforge.Tokenizer.from_hf(path)
    assert str(path) in str(refused.value)


def test_from_pretrained_pickle_and_save_hf_keep_the_pipeline(tmp_path):
    source = FIXTURES / "roberta-base.json"
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "tokenizer.json").write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    tokenizer = bpeforge.Tokenizer.from_pretrained(tmp_path / "model")
    assert isinstance(tokenizer, bpeforge.Tokenizer) and tokenizer.pattern == PIPELINE
    text = "Hello <mask> world"
    copy_ = pickle.loads(pickle.dumps(tokenizer))
    assert copy_ == tokenizer and copy_.encode(text) == tokenizer.encode(text)
    assert tokenizer != bpeforge.Tokenizer.from_hf(FIXTURES / "olmo1.json")
    saved = tokenizer.save_hf(tmp_path / "again.json")
    assert _hf(saved).encode(text).ids == tokenizer.encode(text)
    with pytest.raises(ValueError, match="save_hf"):
        tokenizer.save(tmp_path / "plain")
    with pytest.raises(FileNotFoundError, match=r"tokenizer\.json"):
        bpeforge.Tokenizer.from_pretrained(tmp_path)


# Generated pipelines: random sequences of the components bpeforge runs, on the model of the OLMo 2 fixture.

LLAMA3 = dict(bpeforge.PATTERNS)["llama3"]
REGEXES = [
    LLAMA3,
    r"\s+",
    r"\p{N}{1,3}",
    r"[A-Za-z]+",
    r" ?\p{L}+",
    r"[\r\n]",
    r"\s?[一-龥ぁ-ゟ゠-ヿ]+",
    r"\d+$",
    r"'s|'t",
]
BEHAVIORS = ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]


def _pattern():
    return st.one_of(
        st.sampled_from(REGEXES).map(lambda regex: {"Regex": regex}),
        st.sampled_from([" ", "-", "ab"]).map(lambda literal: {"String": literal}),
    )


_NORMALIZER = st.one_of(
    st.sampled_from(["NFC", "NFD", "NFKC", "NFKD", "Lowercase"]).map(lambda kind: {"type": kind}),
    st.builds(
        lambda left, right: {"type": "Strip", "strip_left": left, "strip_right": right}, st.booleans(), st.booleans()
    ),
    st.builds(
        lambda p, c: {"type": "Replace", "pattern": p, "content": c}, _pattern(), st.sampled_from(["", " ", "▁"])
    ),
    st.sampled_from(["▁", " "]).map(lambda text: {"type": "Prepend", "prepend": text}),
)
_SPLIT = st.builds(
    lambda p, behavior, invert: {"type": "Split", "pattern": p, "behavior": behavior, "invert": invert},
    _pattern(),
    st.sampled_from(BEHAVIORS),
    st.booleans(),
)
_STEP = st.one_of(
    _SPLIT,
    st.booleans().map(lambda individual: {"type": "Digits", "individual_digits": individual}),
    st.sampled_from(BEHAVIORS).map(lambda behavior: {"type": "Punctuation", "behavior": behavior}),
    st.sampled_from([{"type": "Whitespace"}, {"type": "WhitespaceSplit"}]),
)
_BYTE_LEVEL = st.builds(
    lambda prefix, regex: {"type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": True, "use_regex": regex},
    st.booleans(),
    st.booleans(),
)
_ADDED = st.lists(
    st.builds(
        lambda content, special, normalized, rules: {
            "content": content,
            "special": special,
            "normalized": normalized,
            "lstrip": "l" in rules,
            "rstrip": "r" in rules,
            "single_word": "w" in rules,
        },
        st.sampled_from(["<|x|>", "<|xy|>", "Hello", "hello", " ", "日本", "½", "é"]),
        st.booleans(),
        st.booleans(),
        st.sampled_from(["", "l", "r", "lr", "w", "lrw"]),
    ),
    max_size=4,
    unique_by=lambda token: token["content"],
)


@st.composite
def pipelines(draw):
    doc = {"base": draw(st.sampled_from(["olmo2", "clip"]))}
    normalizers = draw(st.lists(_NORMALIZER, max_size=3))
    doc["normalizer"] = None if not normalizers else {"type": "Sequence", "normalizers": normalizers}
    before, after = draw(st.lists(_STEP, max_size=3)), draw(st.lists(_STEP, max_size=1))
    doc["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [*before, draw(_BYTE_LEVEL), *after]}
    doc["ignore_merges"] = draw(st.booleans())
    added = draw(_ADDED)
    doc["added_tokens"] = [{"id": 0, **token} for token in added]
    first, last = draw(st.sampled_from([[], ["<|x|>"]])), draw(st.sampled_from([[], ["<|xy|>"], ["Hello"]]))
    contents = {token["content"] for token in added}
    if (first or last) and contents.issuperset(first + last):
        doc["post_processor"] = {
            "type": "TemplateProcessing",
            "single": [
                *({"SpecialToken": {"id": t, "type_id": 0}} for t in first),
                {"Sequence": {"id": "A", "type_id": 0}},
                *({"SpecialToken": {"id": t, "type_id": 0}} for t in last),
            ],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}],
            "special_tokens": {t: {"id": t, "ids": [0], "tokens": [t]} for t in first + last},
        }
    return doc


_BASES: dict[str, dict] = {}


def _base_document(name: str) -> dict:
    """A fixture (OLMo 2's, or CLIP's with its `</w>` suffix) cut to its first 300 merges and the tokens they use,
    each byte's spellings included (ids kept dense)."""
    if name not in _BASES:
        doc = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
        vocab, merges = doc["model"]["vocab"], doc["model"]["merges"][:300]
        suffix = doc["model"].get("end_of_word_suffix") or ""
        keep = {token for token in vocab if len(token.removesuffix(suffix) if suffix else token) == 1}
        keep.update(part for merge in merges for part in (*merge.split(" "), merge.replace(" ", "")))
        kept = sorted(keep, key=vocab.__getitem__)
        doc["model"].update(merges=merges, vocab={token: token_id for token_id, token in enumerate(kept)})
        _BASES[name] = {**doc, "added_tokens": []}
    return _BASES[name]


def _document(pipeline: dict) -> str:
    """The base file with `pipeline`'s parts."""
    doc = copy.deepcopy(_base_document(pipeline.pop("base")))
    doc["model"]["ignore_merges"] = pipeline.pop("ignore_merges")
    doc.update(pipeline, post_processor=pipeline.get("post_processor"))
    return json.dumps(_number_templates(doc), ensure_ascii=False)


def _number_templates(doc: dict) -> dict:
    """`doc` with its templates naming the ids `tokenizers` gives their tokens (a template must name real ids)."""
    steps = [doc.get("post_processor") or {}]
    steps += steps[0].get("processors", [])
    for step in steps:
        if "special_tokens" in step:
            numbered = tokenizers.Tokenizer.from_str(json.dumps({**doc, "post_processor": None}))
            for special in step["special_tokens"].values():
                special["ids"] = [numbered.token_to_id(special["tokens"][0])]
    return doc


@settings(max_examples=300, deadline=None)
@given(
    pipeline=pipelines(),
    texts=st.lists(
        _text(["<|x|>", "<|xy|>", "Hello", "日本", " hello "]),
        min_size=1,
        max_size=4,
    ),
)
def test_generated_pipelines_encode_with_tokenizers_ids(tmp_path_factory, pipeline, texts):
    document = _document(dict(pipeline))
    theirs = tokenizers.Tokenizer.from_str(document)
    path = tmp_path_factory.mktemp("pipeline") / "tokenizer.json"
    path.write_text(document, encoding="utf-8")
    try:
        ours = bpeforge.Tokenizer.from_hf(path)
    except ValueError as refused:
        # The refusals a generated pipeline may meet: an added token normalized to nothing, or two to one
        # spelling (tokenizers then picks either, by its hash map's order).
        assert "empty once normalized" in str(refused) or "tokenizers picks either" in str(refused)
        assume(False)
    for text in texts:
        for add in (True, False):
            assert ours.encode(text, add_special_tokens=add) == theirs.encode(text, add_special_tokens=add).ids, text


# The pipelines of models, as their tokenizer.json files write them (transcribed), on the OLMo 2 fixture's
# model, besides the real files above: Llama 3 (ignore_merges, a BOS template), Qwen 2 (NFC),
# DeepSeek V3 (three Splits), SmolLM2 (Digits before ByteLevel's regex).
def _split(regex: str) -> dict:
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False}


_BYTE_LEVEL_ONLY = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
_BOS = {
    "type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [],
    "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [0], "tokens": ["<|endoftext|>"]}},
}
DEEPSEEK_V3 = (
    r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
MODEL_PIPELINES = {
    "llama3": {
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [_split(LLAMA3), _BYTE_LEVEL_ONLY]},
        "post_processor": {"type": "Sequence", "processors": [{**_BYTE_LEVEL_ONLY, "trim_offsets": False}, _BOS]},
        "ignore_merges": True,
    },
    "qwen2": {
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [_split(dict(bpeforge.PATTERNS)["qwen2"]), _BYTE_LEVEL_ONLY],
        },
        "post_processor": {**_BYTE_LEVEL_ONLY, "trim_offsets": False},
        "ignore_merges": False,
    },
    "deepseek-v3": {
        "normalizer": {"type": "Sequence", "normalizers": []},
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                _split(r"\p{N}{1,3}"),
                _split("[一-龥\u3040-ゟ゠-ヿ]+"),
                _split(DEEPSEEK_V3),
                _BYTE_LEVEL_ONLY,
            ],
        },
        "post_processor": _BOS,
        "ignore_merges": False,
    },
    "smollm2": {
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Digits", "individual_digits": True},
                {**_BYTE_LEVEL_ONLY, "use_regex": True},
            ],
        },
        "post_processor": None,
        "ignore_merges": False,
    },
}


@pytest.mark.parametrize("model", sorted(MODEL_PIPELINES))
def test_model_pipelines_encode_with_tokenizers_ids(tmp_path, model):
    doc = json.loads((FIXTURES / "olmo2.json").read_text(encoding="utf-8"))
    pipeline = copy.deepcopy(MODEL_PIPELINES[model])
    doc["model"]["ignore_merges"] = pipeline.pop("ignore_merges")
    doc.update(pipeline)
    _number_templates(doc)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    theirs, ours = _hf(path), bpeforge.Tokenizer.from_hf(path)
    texts = [*_texts(), "".join(UNICODE), "12345678 2024年3月 日本語のテキストとカタカナ"]
    for add in (True, False):
        expected = [encoding.ids for encoding in theirs.encode_batch(texts, add_special_tokens=add)]
        assert ours.encode_batch(texts, add_special_tokens=add) == expected


def _documents_on_disk(tmp_path: Path) -> tuple[list[Path], list[str]]:
    """A plain and an xz-compressed text file (each one document) and a JSON Lines file of two records."""
    import lzma

    texts = [_texts()[0][:5000], "Another file.\n\n  Ça 123456 日本語 😀\n", "doc one", "doc two <|endoftext|> 😀"]
    plain, packed, records = tmp_path / "a.txt", tmp_path / "b.txt.xz", tmp_path / "c.jsonl"
    plain.write_text(texts[0], encoding="utf-8")
    packed.write_bytes(lzma.compress(texts[1].encode("utf-8")))
    records.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts[2:]), encoding="utf-8")
    return [plain, packed, records], texts


def test_the_cli_encodes_files_through_a_pipeline(tmp_path):
    """`bpeforge encode --tokenizer tokenizer.json`: each text file whole and each record is a document, encoded
    as `tokenizers` encodes it (its post-processor's <s> and </s> included, as Megatron's HF tokenizer adds them)."""
    from stack_readers import megatron_indexed_dataset

    inputs, texts = _documents_on_disk(tmp_path)
    expected = [encoding.ids for encoding in _hf(FIXTURES / "roberta-base.json").encode_batch(texts)]
    assert all(ids[0] == expected[0][0] for ids in expected)  # RobertaProcessing's <s>
    tokenizer = ["--tokenizer", str(FIXTURES / "roberta-base.json"), *map(str, inputs)]
    for output in (["-o", str(tmp_path / "ids.npy")], ["--format", "megatron", "-o", str(tmp_path / "meg")]):
        run = subprocess.run(
            [sys.executable, "-m", "bpeforge", "encode", *tokenizer, *output, "--no-progress"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert run.returncode == 0, run.stderr
    assert np.load(tmp_path / "ids.npy").tolist() == [i for ids in expected for i in ids]
    megatron = megatron_indexed_dataset()
    if megatron is not None:
        dataset = megatron.IndexedDataset(str(tmp_path / "meg"))
        assert [dataset[i].tolist() for i in range(len(dataset))] == expected


def test_a_pipeline_refuses_a_text_file_that_is_not_utf8(tmp_path):
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("caf\xe9 ok".encode("latin-1"))
    tokenizer = bpeforge.Tokenizer.from_hf(FIXTURES / "olmo2.json")
    with pytest.raises(ValueError, match=r"latin1\.txt: not UTF-8 at byte 3"):
        encode_files(tokenizer, [bad], tmp_path / "ids.npy", dtype="uint32", progress=False)
    assert not (tmp_path / "ids.npy").exists()


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (
            {"truncation": {"max_length": 8, "strategy": "LongestFirst", "stride": 0, "direction": "Right"}},
            "truncation",
        ),
        ({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [_split(r"\h+"), _BYTE_LEVEL_ONLY]}}, r"\\h"),
        ({"decoder": None}, "decoder null"),
        ({"normalizer": {"type": "BertNormalizer"}}, "normalizer"),
    ],
)
def test_what_would_encode_differently_is_refused_naming_it(tmp_path, change, named):
    doc = {**json.loads((FIXTURES / "olmo2.json").read_text(encoding="utf-8")), **change}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match=named):
        bpeforge.Tokenizer.from_hf(path)


# Every third code point for the files whose Split is a preset's scanner (tests/test_scanners.py checks those
# scanners on every code point against `regex`), a different third each, so that the three cover every one
# (`tokenizers` takes 12 s a file on all of them); DeepSeek V3's hand-written regexes take every one.
_CODE_POINT_THIRD = {"llama3": 0, "qwen2": 1, "olmo2": 2}


@pytest.mark.parametrize("name", ["llama3", "qwen2", "deepseek-v3", "olmo2"])
def test_real_files_on_every_code_point(name):
    """Each code point in contexts where its class decides the split; those that Unicode 17.0 added are
    unassigned to tokenizers' Oniguruma (Unicode 16.0) and to bpeforge's tables alike."""
    theirs, ours = _hf(FIXTURES / f"{name}.json"), bpeforge.Tokenizer.from_hf(FIXTURES / f"{name}.json")
    assigned = assigned_code_points(0x80, 16)  # as `regex` (Unicode 17.0) assigns them
    if name in _CODE_POINT_THIRD:
        assigned = assigned[_CODE_POINT_THIRD[name] :: 3]
    texts = ["".join(f"a{c}a {c}1'{c}s A{c}b\n" for c in assigned[i : i + 4096]) for i in range(0, len(assigned), 4096)]
    expected = [encoding.ids for encoding in theirs.encode_batch(texts, add_special_tokens=False)]
    assert ours.encode_batch(texts, add_special_tokens=False) == expected


def test_inspect_and_compare_read_samples_through_a_pipeline(tmp_path):
    """`bpeforge inspect` and `compare` encode a sample file whole with a pipeline; bytes/token is tokenizers'."""
    sample = tmp_path / "sample.txt"
    text = _texts()[0]
    sample.write_text(text, encoding="utf-8")
    ids = _hf(FIXTURES / "llama3.json").encode(text, add_special_tokens=False).ids
    expected = f"{len(text.encode('utf-8')) / len(ids):.2f}"
    for command in (["inspect", str(FIXTURES / "llama3.json")], ["compare", str(FIXTURES / "llama3.json"), "gpt2"]):
        run = subprocess.run(
            [sys.executable, "-m", "bpeforge", *command, "--sample", str(sample)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert run.returncode == 0, run.stderr
        assert expected in run.stdout, run.stdout


@pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD"])
def test_unicode_normalizers_on_every_code_point(form, tmp_path):
    """`tokenizers` normalizes with Unicode 9.0's data: a char assigned later is left as it is and blocks
    composition (U+07FD, 11.0, between "a" and U+0301), a later compatibility char is not decomposed
    (U+32FF), and new composition pairs (U+11935 U+11930, 13.0) stay apart. Every code point after "a" and
    before U+0301, in Claude's file (NFKC) with each form."""
    doc = json.loads((FIXTURES / "claude.json").read_text(encoding="utf-8"))
    doc["normalizer"] = {"type": form}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    theirs, ours = _hf(path), bpeforge.Tokenizer.from_hf(path)
    chars = assigned_code_points(0x80, 64)  # as `regex` (Unicode 17.0) assigns them
    texts = ["".join(f"a{c}\u0301{c}" for c in chars[i : i + 2048]) for i in range(0, len(chars), 2048)]
    texts += ["\U00011935\U00011930", "e\u0301\U00011935\U00011930", "\u32ff\U0001f16c"]
    expected = [encoding.ids for encoding in theirs.encode_batch(texts, add_special_tokens=False)]
    assert ours.encode_batch(texts, add_special_tokens=False) == expected


def test_a_plain_tokenizer_takes_add_special_tokens_as_pipelines_do(tmp_path):
    """GPT-2's tokenizer.json loads as a plain Tokenizer (no post-processor): the keyword is taken both ways,
    and the ids are tokenizers' either way."""
    from bpeforge.open_tokenizer import open_tokenizer

    path = open_tokenizer("gpt2").save_hf(tmp_path / "gpt2.json")
    ours, theirs = bpeforge.Tokenizer.from_hf(path), _hf(path)
    assert not ours.runs_pipeline
    text = "Hello world <|endoftext|> 12345"
    for add in (True, False):
        expected = theirs.encode(text, add_special_tokens=add).ids
        assert ours.encode(text, add_special_tokens=add) == expected
        assert ours.encode_to_numpy(text, add_special_tokens=add).tolist() == expected
        assert ours.encode_batch([text], add_special_tokens=add) == [expected]
        assert ours.encode_batch_to_numpy([text], add_special_tokens=add)[0].tolist() == expected
