"""Runs a careless or hostile caller makes: thread counts without a bound, inputs that change or loop, options
that cannot apply, typos of presets, damaged count files, records that are not text. Each must give the right
result, or a refusal that names what to fix; none may be silently wrong."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import bpeforge
import pytest
from bpeforge.arguments import max_threads

CORPUS = "the quick brown fox jumps over the lazy dog. " * 40


def _run_python(script: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=timeout
    )


def _cli(*args: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bpeforge", *args], capture_output=True, text=True, cwd=cwd, timeout=timeout
    )


# Threads: every count bounded by the cores, with a note; no pools left behind but the two kept ones
# (all cores, and the last smaller size asked).


def test_huge_thread_counts_return_promptly_with_the_ids_and_a_note_and_keep_only_the_two_pools():
    # In a process of its own: its thread count is not moved by the other tests' threads.
    result = _run_python(
        """
        import os, time, warnings
        import bpeforge
        from bpeforge.arguments import max_threads

        def live():
            return len(os.listdir("/proc/self/task"))

        tokenizer = bpeforge.Tokenizer({**{i: bytes([i]) for i in range(256)}, 256: b"he"}, [(b"h", b"e")], [])
        texts = [f"hello world {i}" for i in range(3000)]
        expected = tokenizer.encode_batch(texts)
        tokenizer.encode_batch_to_numpy(texts)
        baseline = live()
        for asked in (10000, 2**40, 1, 1):
            started = time.monotonic()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                assert tokenizer.encode_batch(texts, num_threads=asked) == expected
                ids, offsets = tokenizer.encode_batch_to_numpy(texts, num_threads=asked)
            assert ids.tolist() == [i for text in expected for i in text]
            assert time.monotonic() - started < 10, asked
            notes = [str(w.message) for w in caught if issubclass(w.category, bpeforge.TrainingNote)]
            if asked > max_threads():
                assert len(notes) == 2 and f"num_threads={asked:,}" in notes[0], notes
                assert f"running on {max_threads()} threads" in notes[0]
                assert all(w.filename == "<string>" for w in caught), "the note points at the caller's line"
            else:
                assert notes == []
            # A smaller ask keeps its pool for the next such call, and only that one.
            kept = asked if asked < max_threads() else 0
            assert live() == baseline + kept, (asked, live(), baseline)
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_training_and_counting_bound_their_threads_and_leave_none(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS)
    result = _run_python(
        f"""
        import os, warnings
        import bpeforge

        def live():
            return len(os.listdir("/proc/self/task"))

        expected = bpeforge.train({str(corpus)!r}, 280, num_threads=1)
        baseline = live()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            trained = bpeforge.train({str(corpus)!r}, 280, num_threads=2**40)
            counted = bpeforge.count({str(corpus)!r}, num_threads=10000)
            iterated = bpeforge.train_from_iterator([{CORPUS!r}], 280, num_threads=10000)
            from_counts = bpeforge.train_from_counts(counted, 280, num_threads=10000)
        assert trained.merges == expected.merges == iterated.merges == from_counts.merges
        assert trained.stats.threads <= os.cpu_count()
        notes = [str(w.message) for w in caught if "cores this process may use" in str(w.message)]
        assert len(notes) == 4, notes
        assert live() == baseline, (live(), baseline)
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_the_core_counts_class_bounds_threads_with_the_same_note(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        counts = bpeforge.Counts([])
        counts.add_texts([CORPUS], num_threads=10000)
        from_files = bpeforge.Counts.from_files([str(corpus)], [], 2**40)
        from_files.train(270, num_threads=300)
    assert counts.items() == from_files.items()
    notes = [str(w.message) for w in caught if issubclass(w.category, bpeforge.TrainingNote)]
    if max_threads() < 300:
        assert [note.split(" is more")[0] for note in notes] == ["num_threads=10,000", "num_threads=1,099,511,627,776",
                                                                 "num_threads=300"]  # fmt: skip
        assert all(w.filename == __file__ for w in caught), "the note points at the caller's line"


def test_the_tiktoken_drop_in_bounds_threads_by_the_same_rule():
    import bpeforge.tiktoken as tiktoken

    encoding = tiktoken.get_encoding("gpt2")
    texts = ["hello world", "thread counts"] * 50
    expected = encoding.encode_batch(texts)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert encoding.encode_batch(texts, num_threads=300) == expected
        assert encoding.encode_ordinary_batch(texts, num_threads=8) == expected
    notes = [str(w.message) for w in caught if issubclass(w.category, bpeforge.TrainingNote)]
    if max_threads() < 300:
        # An ask above tiktoken's default is bounded with a note; its default (8) quietly.
        assert notes == [
            f"num_threads=300 is more than the {max_threads()} cores this process may use; "
            f"running on {max_threads()} threads"
        ]


def test_the_cli_bounds_threads_with_a_note_and_names_its_own_option(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS)
    trained = _cli(
        "train", str(corpus), "--vocab-size", "270", "-o", str(tmp_path / "tok"), "--no-progress", "--threads", "100000"
    )
    assert trained.returncode == 0, trained.stderr
    assert f"--threads=100,000 is more than the {max_threads()} cores" in trained.stderr
    assert f"on {max_threads()} threads" in trained.stdout
    started = time.monotonic()
    encoded = _cli(
        "encode",
        str(corpus),
        "--tokenizer",
        str(tmp_path / "tok"),
        "-o",
        str(tmp_path / "ids.npy"),
        "--no-progress",
        "--threads",
        "100000",
    )
    assert encoded.returncode == 0, encoded.stderr
    assert time.monotonic() - started < 30
    assert "cores this process may use" in encoded.stderr
    for command in ("train", "count", "encode"):
        refused = _cli(command, str(corpus), "--threads", "0", "-o", str(tmp_path / "x"), "--tokenizer", "gpt2")
        assert refused.returncode == 2
        assert "--threads: must be at least 1, got 0" in refused.stderr
        assert "num_threads" not in refused.stderr


def test_a_thread_count_that_is_not_a_positive_int_is_refused():
    tokenizer = bpeforge.Tokenizer({i: bytes([i]) for i in range(256)}, [], [])
    for bad in (0, -1, 1.5, True, "4"):
        with pytest.raises(ValueError, match="num_threads must be a positive integer"):
            tokenizer.encode_batch(["a"], num_threads=bad)


# Inputs: folders through links, each real folder once; the summary counts the files read.


def _linked_corpus(tmp_path: Path) -> Path:
    """corpus/ with a file, a linked folder outside it, a link back to itself (a loop) and a second link to its
    own subfolder."""
    corpus, elsewhere = tmp_path / "corpus", tmp_path / "elsewhere"
    (corpus / "sub").mkdir(parents=True)
    elsewhere.mkdir()
    (corpus / "sub" / "a.txt").write_text("alpha beta gamma\n")
    (elsewhere / "b.txt").write_text("delta epsilon\n")
    (corpus / "linked").symlink_to(elsewhere, target_is_directory=True)
    (corpus / "sub" / "loop").symlink_to(corpus, target_is_directory=True)
    (corpus / "sub2").symlink_to(corpus / "sub", target_is_directory=True)
    return corpus


def test_linked_folders_are_followed_once_and_loops_end(tmp_path):
    from bpeforge.inputs import expand

    corpus = _linked_corpus(tmp_path)
    assert expand([corpus]) == [corpus / "linked" / "b.txt", corpus / "sub" / "a.txt"]
    assert expand([corpus], "b.*") == [corpus / "linked" / "b.txt"]


def test_the_train_summary_counts_the_files_read_not_the_arguments(tmp_path):
    corpus = _linked_corpus(tmp_path)
    result = _cli("train", str(corpus), "--vocab-size", "270", "-o", str(tmp_path / "tok"), "--no-progress")
    assert result.returncode == 0, result.stderr
    assert "in 2 file(s)" in result.stdout
    trained = bpeforge.train(corpus, 270)
    assert trained.stats.files == 2
    assert trained.stats.bytes_read == len("alpha beta gamma\ndelta epsilon\n")


def test_a_link_to_nothing_inside_an_input_folder_is_refused_by_name(tmp_path):
    corpus = _linked_corpus(tmp_path)
    (corpus / "gone.txt").symlink_to(tmp_path / "missing.txt")
    with pytest.raises(FileNotFoundError, match=r"gone\.txt"):
        bpeforge.train(corpus, 270)


# --from-counts: options that choose how a corpus is counted cannot apply, and are refused by name.


@pytest.fixture
def count_file(tmp_path) -> Path:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS)
    counted = tmp_path / "c.bin"
    result = _cli("count", str(corpus), "-o", str(counted), "--no-progress")
    assert result.returncode == 0, result.stderr
    return counted


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--pattern", "o200k"], "--pattern"),
        (["--glob", "*.txt"], "--glob"),
        (["--text-field", "text"], "--text-field"),  # the default's value, but given
        (["--text-column", "body", "--skip-bad-records"], "--text-column, --skip-bad-records"),
    ],
)
def test_from_counts_refuses_counting_options_by_name(count_file, tmp_path, options, named):
    result = _cli("train", "--from-counts", str(count_file), "--vocab-size", "270", "-o", str(tmp_path / "t"), *options)
    assert result.returncode == 2
    assert f"error: {named} cannot apply with --from-counts" in result.stderr
    assert not (tmp_path / "t").exists()


def test_from_counts_summary_says_nothing_was_counted(count_file, tmp_path):
    result = _cli("train", "--from-counts", str(count_file), "--vocab-size", "270", "-o", str(tmp_path / "t"))
    assert result.returncode == 0, result.stderr
    assert "inf" not in result.stdout and "0 threads" not in result.stdout
    assert "pre-tokenize    none (the count file holds the counts)" in result.stdout
    assert "counted before (read from the count file)" in result.stdout


# Preset names: any spelling is the preset, a misspelling is refused in every API, a regex in a group is a regex.

TYPOS = [("gtp2", "gpt2"), ("o200", "o200k"), ("gpt2!", "gpt2"), ("cl100k*", "cl100k")]


@pytest.mark.parametrize(("typo", "meant"), TYPOS)
def test_a_misspelt_preset_is_refused_in_every_api(tmp_path, typo, meant):
    import bpeforge.tiktoken as tiktoken

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS)
    byte_vocab = {i: bytes([i]) for i in range(256)}
    ranks = {bytes([i]): i for i in range(256)}
    calls = {
        "Counts": lambda: bpeforge.Counts([], typo),
        "Counts.from_files": lambda: bpeforge.Counts.from_files([str(corpus)], [], None, None, None, typo),
        "count": lambda: bpeforge.count(corpus, pattern=typo),
        "train": lambda: bpeforge.train(corpus, 270, pattern=typo),
        "train_from_iterator": lambda: bpeforge.train_from_iterator([CORPUS], 270, pattern=typo),
        "pretokenize": lambda: bpeforge.pretokenize("hello", typo),
        "Tokenizer": lambda: bpeforge.Tokenizer(byte_vocab, [], pattern=typo),
        "tiktoken.Encoding": lambda: tiktoken.Encoding("x", pat_str=typo, mergeable_ranks=ranks, special_tokens={}),
    }
    for api, call in calls.items():
        with pytest.raises(ValueError, match=rf'did you mean "{meant}"\?') as refused:
            call()
        assert f"(?:{typo})" in str(refused.value), api
    result = _cli("train", str(corpus), "--pattern", typo, "-o", str(tmp_path / "t"))
    assert result.returncode == 2 and f'did you mean "{meant}"?' in result.stderr


def test_any_spelling_of_a_preset_is_the_preset_and_a_grouped_name_is_a_regex():
    assert bpeforge.Counts([], "GPT-2").pattern == "gpt2"
    assert bpeforge.Counts([], "o200K").pattern == "o200k"
    # A regex: its matches, and the text between them as pieces of their own.
    assert bpeforge.pretokenize("gpt2 and gpt2", "(?:gpt2)") == ["gpt2", " and ", "gpt2"]


# Count files carry a checksum: any changed byte is refused, naming the file.


def test_a_count_file_with_a_flipped_byte_is_refused_by_name(count_file, tmp_path):
    data = count_file.read_bytes()
    # The last entry's u64 count ends before the end marker and the checksum (docs/format.md).
    count_at = len(data) - 8 - 8
    for at, flip in [(count_at + 3, 0x7F), (count_at, 0x01), (20, 0x10), (len(data) - 1, 0x80)]:
        damaged = tmp_path / "damaged.bin"
        damaged.write_bytes(data[:at] + bytes([data[at] ^ flip]) + data[at + 1 :])
        with pytest.raises(ValueError, match=r"damaged\.bin: "):
            bpeforge.load_counts(damaged)
        result = _cli("train", "--from-counts", str(damaged), "--vocab-size", "270", "-o", str(tmp_path / "t"))
        assert result.returncode == 2 and "damaged.bin: " in result.stderr, result.stderr
        assert not (tmp_path / "t").exists()
    assert bpeforge.load_counts(count_file).bytes_counted == len(CORPUS)


# .tiktoken files record no pattern: given, or known for the rank files bpeforge ships (by hash).

RANKS = Path(bpeforge.__file__).parent / "tiktoken" / "data"


def test_convert_knows_the_pattern_of_a_shipped_rank_file_by_its_hash(tmp_path):
    import gzip

    import bpeforge.tiktoken as tiktoken

    renamed = tmp_path / "mine.tiktoken"  # a copy under another name, uncompressed
    renamed.write_bytes(gzip.decompress((RANKS / "cl100k_base.tiktoken.gz").read_bytes()))
    result = _cli("convert", str(renamed), "--to", "gpt2", "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert "pattern cl100k" in result.stdout
    text = "hello   2024 world!! 12345 'll"
    assert bpeforge.Tokenizer.load(tmp_path / "out").encode(text) == tiktoken.get_encoding("cl100k_base").encode(text)


def test_convert_of_an_unknown_rank_file_needs_its_pattern(tmp_path):
    import gzip

    lines = gzip.decompress((RANKS / "r50k_base.tiktoken.gz").read_bytes()).splitlines(keepends=True)
    unknown = tmp_path / "small.tiktoken"
    unknown.write_bytes(b"".join(lines[:300]))
    refused = _cli("convert", str(unknown), "--to", "gpt2", "-o", str(tmp_path / "out"))
    assert refused.returncode == 2
    assert "small.tiktoken: a .tiktoken file does not record its pre-tokenizer" in refused.stderr
    assert "--pattern" in refused.stderr and not (tmp_path / "out").exists()
    given = _cli("convert", str(unknown), "--to", "gpt2", "-o", str(tmp_path / "out"), "--pattern", "o200k")
    assert given.returncode == 0, given.stderr
    assert bpeforge.Tokenizer.load(tmp_path / "out").pattern == "o200k"
    wrong = _cli("convert", str(tmp_path / "out"), "--to", "hf", "-o", str(tmp_path / "t.json"), "--pattern", "gpt2")
    assert wrong.returncode == 2 and "has its own pre-tokenizer" in wrong.stderr


# A GPT-2 directory without bpeforge.json: the warning says what it lacks, and the options that give it apply.


@pytest.fixture
def bare_gpt2(tmp_path) -> Path:
    vocab = {i: bytes([i]) for i in range(256)} | {256: b"he", 257: b"<|endoftext|>"}
    directory = tmp_path / "bare"
    bpeforge.save(vocab, [(b"h", b"e")], directory, special_tokens=["<|endoftext|>"])
    (directory / "bpeforge.json").unlink()
    return directory


def test_a_bare_gpt2_directory_takes_the_special_tokens_its_warning_asks_for(bare_gpt2, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("hello there<|endoftext|>he said")
    warned = _cli("encode", str(corpus), "--tokenizer", str(bare_gpt2), "-o", str(tmp_path / "a.npy"))
    assert warned.returncode == 0, warned.stderr
    assert "has no bpeforge.json" in warned.stderr and "--special-token" in warned.stderr
    given = [
        "encode", str(corpus), "--tokenizer", str(bare_gpt2), "-o", str(tmp_path / "b.npy"),
        "--special-token", "<|endoftext|>", "--document-separator", "<|endoftext|>",
    ]  # fmt: skip
    result = _cli(*given)
    assert result.returncode == 0, result.stderr
    assert "bpeforge.json" not in result.stderr  # nothing missing: it was given
    import numpy as np

    ids = np.load(tmp_path / "b.npy").tolist()
    assert ids.count(257) == 2  # the special inside the text, and the separator after the file
    extended = _cli(
        "train", str(corpus), "--extend", str(bare_gpt2), "--special-token", "<|endoftext|>",
        "--vocab-size", "262", "-o", str(tmp_path / "ext"), "--no-progress",
    )  # fmt: skip
    assert extended.returncode == 0, extended.stderr
    assert bpeforge.Tokenizer.load(tmp_path / "ext").special_tokens == ["<|endoftext|>"]
    unsaid = _cli(
        "train", str(corpus), "--extend", str(bare_gpt2), "--vocab-size", "262", "-o", str(tmp_path / "x"),
    )  # fmt: skip
    assert unsaid.returncode == 2
    assert "files do not record, declare it (special_tokens=, --special-token)" in unsaid.stderr.splitlines()[-1]


def test_a_tokenizer_that_records_its_special_tokens_refuses_others_saying_where_they_apply(bare_gpt2, tmp_path):
    files = (bare_gpt2 / "vocab.json", bare_gpt2 / "merges.txt")
    bpeforge.Tokenizer.from_files(*files, ["<|endoftext|>"]).save(tmp_path / "full")  # with bpeforge.json
    result = _cli("encode", str(bare_gpt2), "--tokenizer", str(tmp_path / "full"), "-o", str(tmp_path / "a.npy"),
                  "--special-token", "<|x|>")  # fmt: skip
    assert result.returncode == 2
    assert "has its own special tokens" in result.stderr
    assert "GPT-2 directories without bpeforge.json" in result.stderr


# Records that are not text: named by file and line (or column), and skippable.


def test_a_lone_surrogate_in_json_lines_is_a_bad_record_named_and_skippable(tmp_path):
    records = tmp_path / "r.jsonl"
    records.write_text('{"text": "hello world"}\n{"text": "bad \\ud83d here"}\n{"text": "pair \\ud83d\\ude00 ok"}\n')
    for command in (["train", "--vocab-size", "270", "-o", str(tmp_path / "t")],
                    ["encode", "--tokenizer", "gpt2", "-o", str(tmp_path / "e.npy")]):  # fmt: skip
        refused = _cli(command[0], str(records), *command[1:], "--no-progress")
        assert refused.returncode == 2
        assert "r.jsonl:2: field 'text' holds a lone surrogate '\\ud83d' at character 4" in refused.stderr
        assert "--skip-bad-records" in refused.stderr
        skipped = _cli(command[0], str(records), *command[1:], "--no-progress", "--skip-bad-records")
        assert skipped.returncode == 0, skipped.stderr
        assert "r.jsonl:2" in skipped.stdout + skipped.stderr
    result = bpeforge.train(records, 270, skip_bad_records=True)
    assert result.stats.skipped_records[0].startswith(f"{records}:2: field 'text' holds a lone surrogate")
    assert result.stats.bytes_read == len(("hello world" + "pair \U0001f600 ok").encode())  # the pair is one char


def test_parquet_errors_name_the_file_and_the_column(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"text": [1, 2], "body": ["a", "b"]}), tmp_path / "ints.parquet")
    pq.write_table(pa.table({"text": [b"a", b"b"]}), tmp_path / "bytes.parquet")
    pq.write_table(pa.table({"text": ["hello", "world"] * 50}), tmp_path / "ok.parquet")
    data = (tmp_path / "ok.parquet").read_bytes()
    (tmp_path / "cut.parquet").write_bytes(data[:40])
    at = data.find(b"hello")
    (tmp_path / "damaged.parquet").write_bytes(data[:4] + b"\xff" * (at - 4) + data[at:])
    expected = {
        "ints.parquet": "ints.parquet: column 'text' holds int64, not text (strings); choose a text column with "
        "--text-column (text columns: body)",
        "bytes.parquet": "bytes.parquet: column 'text' holds binary, not text",
        "cut.parquet": "cut.parquet: not a Parquet file that can be read",
        "damaged.parquet": "damaged.parquet: column 'text' cannot be read: the file is damaged",
    }
    for name, message in expected.items():
        with pytest.raises(ValueError, match=re.escape(message)):
            bpeforge.train(tmp_path / name, 270)
        result = _cli("encode", str(tmp_path / name), "--tokenizer", "gpt2", "-o", str(tmp_path / "e.npy"))
        assert result.returncode == 2 and message in result.stderr, result.stderr
