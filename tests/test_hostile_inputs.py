"""The hostile-input matrix (issue 11; docs/reliability.md lists it).

bpeforge used as a careless or hostile user would: outputs over inputs, over
their directories and parents, over the current directory, through symlinks
and hard links, over foreign files and directories; failing runs over existing
outputs; killed runs; absurd and misspelt arguments; wrong types; empty and
degenerate inputs. Each CLI case runs the real `bpeforge` in its own process
and asserts the exit code, that the message names the right thing, that no
traceback is printed, and that every file that existed before is
byte-identical afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import bpeforge
import numpy as np
import pytest

TEXT = "the cat sat on the mat. the dog ate the cat's food!\n" * 40


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bpeforge", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def every_file(root: Path) -> dict[str, bytes]:
    """Each file under `root` (symlinks as their target's path) by relative path."""
    found = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            found[key] = b"-> " + os.fsencode(os.readlink(path))
        elif path.is_file():
            found[key] = path.read_bytes()
    return found


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """data/corpus.txt, a trained tokenizer tok/, ids.npy of the corpus, and a notes.txt."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "corpus.txt").write_text(TEXT)
    (data / "other.txt").write_text("another file of the user's\n")
    (tmp_path / "notes.txt").write_text("my notes\n")
    done = run_cli("train", "data/corpus.txt", "--vocab-size", "300", "-o", "tok", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    done = run_cli("encode", "data/corpus.txt", "--tokenizer", "tok", "-o", "ids.npy", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path


@dataclass(frozen=True)
class Refusal:
    name: str
    args: tuple[str, ...]
    message: str  # a part of the one-line error that names what is at fault
    cwd: str = "."


REFUSALS = [
    # Outputs over inputs, their directories and parents (the lost-corpus report).
    Refusal("train -o the input's directory", ("train", "data/corpus.txt", "-o", "data", "--force"), "contains"),
    Refusal("train -o a parent of the input", ("train", "data/corpus.txt", "-o", ".", "--force"), "current"),
    Refusal("train -o the input file", ("train", "data/corpus.txt", "-o", "data/corpus.txt", "--force"), "is the"),
    Refusal("train -o inside an input dir", ("train", "data", "-o", "data/tok", "--force"), "inside the input"),
    Refusal("train -o the cwd", ("train", "../notes.txt", "-o", ".", "--force"), "current directory", cwd="data"),
    Refusal("train -o a parent of the cwd", ("train", "corpus.txt", "-o", "..", "--force"), "parent", cwd="data"),
    Refusal("train -o a regular file", ("train", "data/corpus.txt", "-o", "notes.txt", "--force"), "is a file"),
    Refusal("train -o a dir of user files", ("train", "notes.txt", "-o", "data", "--force"), "did not write"),
    Refusal("train -o existing, no --force", ("train", "data/corpus.txt", "-o", "tok"), "--force"),
    Refusal("train -o a symlink to the input", ("train", "data/corpus.txt", "-o", "link", "--force"), "is the input"),
    Refusal(
        "encode -o the input",
        ("encode", "data/corpus.txt", "--tokenizer", "tok", "-o", "data/corpus.txt", "--force"),
        "is the input",
    ),
    Refusal(
        "encode -o a hard link to the input",
        ("encode", "data/corpus.txt", "--tokenizer", "tok", "-o", "hard.npy", "--force"),
        "is the input",
    ),
    Refusal(
        "encode -o the tokenizer dir",
        ("encode", "data/corpus.txt", "--tokenizer", "tok", "-o", "tok", "--force"),
        "tok",
    ),
    Refusal(
        "encode -o a directory",
        ("encode", "data/corpus.txt", "--tokenizer", "tok", "-o", "data", "--force"),
        "contains the input",
    ),
    Refusal(
        "decode -o its input", ("decode", "ids.npy", "--tokenizer", "tok", "-o", "ids.npy", "--force"), "is the input"
    ),
    Refusal(
        "decode over a file, no --force", ("decode", "ids.npy", "--tokenizer", "tok", "-o", "notes.txt"), "--force"
    ),
    Refusal(
        "decode -o a directory", ("decode", "ids.npy", "--tokenizer", "tok", "-o", "data", "--force"), "is a directory"
    ),
    Refusal(
        "decode an unknown id over a file",
        ("decode", "bad.npy", "--tokenizer", "tok", "-o", "notes.txt", "--force"),
        "unknown token id 99999",
    ),
    Refusal(
        "decode a file that is not .npy", ("decode", "notes.txt", "--tokenizer", "tok", "-o", "out.txt"), "notes.txt"
    ),
    Refusal("count -o the input", ("count", "data/corpus.txt", "-o", "data/corpus.txt", "--force"), "is the input"),
    Refusal("convert -o the source", ("convert", "tok", "--to", "gpt2", "-o", "tok", "--force"), "is the input"),
    Refusal(
        "show --html into the tokenizer",
        ("show", "tok", "hi", "--html", "tok/vocab.json", "--force"),
        "inside the input",
    ),
    Refusal(
        "inspect --plot over the sample",
        ("inspect", "tok", "--sample", "data/corpus.txt", "--plot", "data/corpus.txt", "--force"),
        "is the input",
    ),
    # Absurd and misspelt arguments.
    Refusal("--vocab-size 0", ("train", "data/corpus.txt", "--vocab-size", "0", "-o", "new"), "vocab_size 0"),
    Refusal("--vocab-size 2**70", ("train", "data/corpus.txt", "--vocab-size", str(2**70), "-o", "new"), "too large"),
    Refusal("--vocab-size -5", ("train", "data/corpus.txt", "--vocab-size", "-5", "-o", "new"), "too small"),
    Refusal("--pattern misspelt", ("train", "data/corpus.txt", "--pattern", "gtp2", "-o", "new"), "did you mean"),
    Refusal("--pattern a word", ("train", "data/corpus.txt", "--pattern", "words", "-o", "new"), "presets"),
    Refusal(
        "--special-token a byte", ("train", "data/corpus.txt", "--special-token", "a", "-o", "new"), "byte token 97"
    ),
    Refusal(
        "--threads 0",
        ("encode", "data/corpus.txt", "--tokenizer", "tok", "-o", "new.npy", "--threads", "0"),
        "--threads",
    ),
    Refusal("missing -o shows the subcommand usage", ("train", "data/corpus.txt"), "usage: bpeforge train"),
    # Empty and degenerate inputs.
    Refusal("train on an empty file", ("train", "empty.txt", "-o", "new"), "no text"),
    Refusal("train on special tokens only", ("train", "specials.txt", "-o", "new"), "no text"),
    Refusal("train on a missing file", ("train", "nope.txt", "-o", "new"), "nope.txt"),
    Refusal("train on an empty directory", ("train", "emptydir", "-o", "new"), "emptydir"),
    Refusal("an output that cannot be created", ("train", "data/corpus.txt", "-o", "/proc/nope"), "/proc/nope"),
    Refusal("inspect an empty sample", ("inspect", "tok", "--sample", "empty.txt"), "empty.txt: the sample is empty"),
    Refusal("compare on an empty sample", ("compare", "tok", "tok", "--sample", "empty.txt"), "empty"),
    Refusal(
        "load a directory that is not a tokenizer",
        ("encode", "data/corpus.txt", "--tokenizer", "data", "-o", "new.npy"),
        "data",
    ),
]


def prepare(workspace: Path) -> None:
    """The extra files some refusals need."""
    (workspace / "link").symlink_to("data/corpus.txt")
    os.link(workspace / "data" / "corpus.txt", workspace / "hard.npy")
    np.save(workspace / "bad.npy", np.array([1, 2, 99999], dtype=np.uint32))
    (workspace / "empty.txt").write_text("")
    (workspace / "specials.txt").write_text("<|endoftext|><|endoftext|>")
    (workspace / "emptydir").mkdir()


@pytest.mark.parametrize("case", REFUSALS, ids=lambda case: case.name)
def test_refused_with_one_line_that_names_the_fault_and_nothing_changes(workspace, case):
    prepare(workspace)
    before = every_file(workspace)
    result = run_cli(*case.args, cwd=workspace / case.cwd)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert case.message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert ".tmp-" not in result.stderr  # the user's path, never a temporary one
    assert "[Errno" not in result.stderr
    assert every_file(workspace) == before  # no file lost, changed or left behind


def test_force_replaces_a_directory_of_bpeforges_own_outputs(workspace):
    before = (workspace / "tok" / "vocab.json").read_bytes()
    result = run_cli("train", "data/corpus.txt", "--vocab-size", "270", "-o", "tok", "--force", cwd=workspace)
    assert result.returncode == 0, result.stderr
    assert (workspace / "tok" / "vocab.json").read_bytes() != before
    assert sorted(p.name for p in workspace.iterdir()) == ["data", "ids.npy", "notes.txt", "tok"]


def test_decode_is_atomic_and_takes_force(workspace):
    out = workspace / "out.txt"
    out.write_text("old")
    result = run_cli("decode", "ids.npy", "--tokenizer", "tok", "-o", "out.txt", "--force", cwd=workspace)
    assert result.returncode == 0, result.stderr
    assert out.read_text() == TEXT
    assert not [p for p in workspace.iterdir() if ".tmp-" in p.name]


def test_a_huge_vocab_size_trains_what_the_corpus_allows_and_says_so(workspace):
    result = run_cli("train", "data/corpus.txt", "--vocab-size", str(2**32), "-o", "big", cwd=workspace)
    assert result.returncode == 0, result.stderr
    assert "ran out of pairs" in result.stdout and "4,294,967,296" in result.stdout
    with pytest.warns(bpeforge.TrainingNote, match="ran out of pairs"):
        vocab, _ = bpeforge.train_bpe(workspace / "data" / "corpus.txt", 2**32, None)
    assert 256 < len(vocab) < 1000


def test_preset_names_take_any_common_spelling(workspace):
    gpt2 = bpeforge.train_bpe(workspace / "data" / "corpus.txt", 300, None, pattern="gpt2")
    for spelling in ("GPT2", "gpt-2", "Gpt_2", "r50k_base"):
        assert bpeforge.train_bpe(workspace / "data" / "corpus.txt", 300, None, pattern=spelling) == gpt2
    assert bpeforge.pretokenize("Hello world", "O200K_BASE") == ["Hello", " world"]
    result = run_cli("train", "data/corpus.txt", "--pattern", "GPT-2", "-o", "upper", cwd=workspace)
    assert result.returncode == 0, result.stderr
    assert bpeforge.Tokenizer.load(workspace / "upper").encode("hello world") != []


def test_the_summary_cuts_a_huge_token_with_its_length(tmp_path):
    (tmp_path / "one.txt").write_text("a" * 200_000)
    result = run_cli("train", "one.txt", "--vocab-size", "300", "-o", "tok", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout) < 4000, len(result.stdout)
    inspected = run_cli("inspect", "tok", cwd=tmp_path)
    assert inspected.returncode == 0 and len(inspected.stdout) < 6000, len(inspected.stdout)
    assert "bytes)" in inspected.stdout


def test_a_killed_encode_leaves_a_temporary_file_that_the_next_run_removes(workspace):
    big = workspace / "big.txt"
    with open(big, "w") as f:
        for _ in range(400):
            f.write(TEXT * 50)
    out = workspace / "big.npy"
    cmd = [
        sys.executable,
        "-m",
        "bpeforge",
        "encode",
        "big.txt",
        "--tokenizer",
        "tok",
        "-o",
        "big.npy",
        "--no-progress",
        "--threads",
        "1",
    ]
    proc = subprocess.Popen(cmd, cwd=workspace, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not list(workspace.glob(".big.npy.tmp-*")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    left = list(workspace.glob(".big.npy.tmp-*"))
    assert left and not out.exists(), "the kill came too late to leave a temporary file"
    result = run_cli("encode", "big.txt", "--tokenizer", "tok", "-o", "big.npy", "--no-progress", cwd=workspace)
    assert result.returncode == 0, result.stderr
    assert not list(workspace.glob(".big.npy.tmp-*"))
    assert np.load(out).size > 0


def test_stale_temporaries_of_live_processes_and_other_names_are_kept(tmp_path):
    from bpeforge.formats.atomic import remove_stale_temporaries

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".out.npy.tmp-{dead.pid}-0123456789ab"
    live = tmp_path / f".out.npy.tmp-{os.getpid()}-0123456789ab"
    other = tmp_path / f".other.npy.tmp-{dead.pid}-0123456789ab"
    mine = tmp_path / ".out.npy.tmp-notes"
    for path in (stale, live, other, mine):
        path.write_text("x")
    assert remove_stale_temporaries(tmp_path / "out.npy") == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (live, other, mine))


# --- the API ---------------------------------------------------------------------------------------------------


def byte_vocab() -> dict[int, bytes]:
    return {i: bytes([i]) for i in range(256)}


def test_save_refuses_what_load_would_refuse_before_writing(tmp_path):
    out = tmp_path / "tok"
    with pytest.raises(ValueError, match="not in the vocab"):
        bpeforge.save(byte_vocab(), [(b"a", b"bc")], out)
    with pytest.raises(TypeError, match="list of strings"):
        bpeforge.save(byte_vocab(), [], out, special_tokens="<|endoftext|>")
    with pytest.raises(ValueError, match="does not compile"):
        bpeforge.save(byte_vocab(), [], out, pattern="(unclosed")
    # What training with special_tokens=["a"] used to make: two ids for b"a".
    with pytest.raises(ValueError, match=r"special token 'a' is already the byte token 97 .* also has id 256"):
        bpeforge.save(byte_vocab() | {256: b"a"}, [], out, special_tokens=["a"])
    vocab = byte_vocab() | {256: b"ab", 257: b"ab"}
    with pytest.raises(ValueError, match=r"'ab' is already the merged token 256 .* also has id 257"):
        bpeforge.save(vocab, [(b"a", b"b")], out, special_tokens=["ab"])
    assert list(tmp_path.iterdir()) == []


def test_save_records_the_pattern_and_specials_a_vocab_was_trained_with(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("Hello World's 12345 THE cat's<|endoftext|>ABC def " * 30)
    vocab, merges = bpeforge.train_bpe(corpus, 300, ["<|endoftext|>"], pattern="o200k")
    bpeforge.save(vocab, merges, tmp_path / "tok")
    loaded = bpeforge.Tokenizer.load(tmp_path / "tok")
    assert (loaded.pattern, loaded.special_tokens) == ("o200k", ["<|endoftext|>"])
    trained = bpeforge.Tokenizer(vocab, merges, ["<|endoftext|>"], pattern="o200k")
    assert loaded.encode("HelloWorld's 12345<|endoftext|>") == trained.encode("HelloWorld's 12345<|endoftext|>")
    with pytest.raises(ValueError, match="trained with pattern 'o200k'"):
        bpeforge.save(vocab, merges, tmp_path / "other", pattern="gpt2")
    # A plain dict: the tokens that are neither bytes nor merges are its specials.
    bpeforge.save(dict(vocab), merges, tmp_path / "plain", pattern="o200k")
    assert bpeforge.Tokenizer.load(tmp_path / "plain").special_tokens == ["<|endoftext|>"]
    result = bpeforge.train(corpus, 300, ["<|endoftext|>"], pattern="cl100k")
    result.save(tmp_path / "one-call")
    assert bpeforge.Tokenizer.load(tmp_path / "one-call").pattern == "cl100k"
    vocab2, merges2 = result
    assert (vocab2, merges2) == (result.vocab, result.merges)
    assert len(repr(result)) < 200


def test_a_directory_without_bpeforge_json_loads_with_a_warning(tmp_path):
    bpeforge.save(byte_vocab(), [], tmp_path / "tok", special_tokens=["<|endoftext|>"])
    (tmp_path / "tok" / "bpeforge.json").unlink()
    with pytest.warns(UserWarning, match="no bpeforge.json") as warned:
        tokenizer = bpeforge.Tokenizer.load(tmp_path / "tok")
    assert tokenizer.special_tokens == []
    assert warned[0].filename == __file__, "the warning points at the caller's line"


def test_training_refuses_a_special_token_that_is_a_byte(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("a\nb\n")
    for special in ("a", "\n"):
        with pytest.raises(ValueError, match="byte token"):
            bpeforge.train_bpe(corpus, 300, [special])


def test_empty_corpora_are_errors_not_successes(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="no text"):
        bpeforge.train_bpe(empty, 300, None)
    with pytest.raises(ValueError, match="no text"):
        bpeforge.train_from_iterator(["<|endoftext|>"], 300, ["<|endoftext|>"])


def test_vocab_size_is_bounded_and_typed(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text(TEXT)
    with pytest.raises(ValueError, match=r"vocab_size .* too large"):
        bpeforge.train_bpe(corpus, 2**70, None)
    with pytest.raises(ValueError, match="vocab_size 0 is too small"):
        bpeforge.train_bpe(corpus, 0, None)
    with pytest.raises(TypeError, match="vocab_size must be an int"):
        bpeforge.train_bpe(corpus, 300.0, None)  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bpeforge.TrainingNote)
        vocab, _ = bpeforge.train_bpe(corpus, 2**32, None)  # runs: what the corpus allows
    assert len(vocab) > 256


def test_wrong_types_get_a_type_error_that_says_what_to_pass(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text(TEXT)
    tokenizer = bpeforge.Tokenizer(byte_vocab(), [])
    with pytest.raises(TypeError, match="not one string"):
        tokenizer.encode_batch("abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not one string"):
        list(tokenizer.encode_iterable("abc"))  # type: ignore[arg-type]
    with open(corpus) as f, pytest.raises(TypeError, match="not an open file"):
        bpeforge.train_bpe(f, 300, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="hold paths"):
        bpeforge.train_bpe([corpus, 3], 300, None)  # type: ignore[list-item]
    with pytest.raises(TypeError, match="not one string"):
        bpeforge.train_from_iterator("abc", 300)
    with pytest.raises(TypeError, match="pattern must be a str"):
        bpeforge.Tokenizer(byte_vocab(), [], pattern=None)  # type: ignore[arg-type]
    # None means no special tokens, everywhere.
    assert bpeforge.train_bpe(corpus, 300, None) == bpeforge.train_bpe(corpus, 300, [])
    assert bpeforge.count(corpus, None).special_tokens == []


@pytest.mark.parametrize("pattern", [r"\w+", r"[a-z]+", r"x*", r"\d", r"(?i)the"])
def test_encoding_is_lossless_for_any_pattern(tmp_path, pattern):
    text = "Hello, wörld! 12 the  THE\n\t😀 end"
    corpus = tmp_path / "c.txt"
    corpus.write_text(text * 20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = bpeforge.train(corpus, 280, None, pattern=pattern)
    tokenizer = bpeforge.Tokenizer(result.vocab, result.merges, pattern=pattern)
    assert tokenizer.decode(tokenizer.encode(text)) == text
    assert "".join(bpeforge.pretokenize(text, pattern)) == text
    if result.stats.unmatched_bytes:
        assert any("matched no part of the pattern" in str(w.message) for w in caught)


def test_unmatched_bytes_are_counted_in_training(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("ab, cd!")
    with pytest.warns(bpeforge.TrainingNote, match="3 bytes of the corpus matched no part"):
        result = bpeforge.train(corpus, 300, None, pattern=r"\w+")
    assert result.stats.unmatched_bytes == 3


# --- Ctrl-C from Python ------------------------------------------------------------------------------------------

INTERRUPTED_ENCODE = """
import sys, time, bpeforge
vocab = {i: bytes([i]) for i in range(256)}
if PATTERN == "gpt2":  # the presets cut long texts before whitespace
    text = "lorem ipsum dolor sit amet " * 4_000_000
else:  # a custom regex can only be cut at special tokens
    text = ("lorem ipsum dolor sit amet " * 2000 + "<|endoftext|>") * 1200
tokenizer = bpeforge.Tokenizer(vocab, [], ["<|endoftext|>"], pattern=PATTERN)
batch = [text[i : i + 100_000] for i in range(0, len(text), 100_000)]
started = time.monotonic()
print("ready", flush=True)
try:
    tokenizer.CALL
except KeyboardInterrupt:
    print(f"interrupted at {time.monotonic()!r}", flush=True)  # the system-wide clock: the parent compares
    sys.exit(0)
print(f"finished after {time.monotonic() - started:.2f}", flush=True)
"""


@pytest.mark.parametrize("pattern", ["gpt2", r"\p{L}+(?=\s)|\s+|\S"])
@pytest.mark.parametrize("call", ["encode(text)", "encode_batch(batch, num_threads=1)"])
def test_ctrl_c_stops_a_long_encode_within_about_a_second(call, pattern):
    script = INTERRUPTED_ENCODE.replace("PATTERN", repr(pattern)).replace("CALL", call)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.3)  # the encode takes over a second (one id per byte of 108 MB, or a slow regex)
    assert proc.poll() is None, "the encode finished before the signal: make the text longer"
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert "interrupted at" in out, (out, err)
    # From the signal to the KeyboardInterrupt in the child (CLOCK_MONOTONIC is one clock for all
    # processes); freeing a 100 MB text and its ids at exit is not part of it.
    waited = float(out.split("interrupted at ")[1].split()[0]) - sent
    assert waited < 2.0, f"KeyboardInterrupt came {waited:.2f} s after Ctrl-C"
