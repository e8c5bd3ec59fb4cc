"""Hostile outputs and terminal text (docs/reliability.md, "Outputs that are not regular files").

Outputs that are not regular files: a FIFO, a character device, standard output (`-o -`, `/dev/stdout`), a
socket, a symbolic link (to a file, to a directory, dangling). Each row runs the real `bpeforge` in its own
process and checks what is left on disk afterwards: a stream is written through and is still a stream, a link
is still the same link, and a socket is refused. Also: output names at the file system's 255-byte limit,
control characters in terminal output, compressed rank files, and the API's refusals that said nothing.

`/dev/null` itself: the commands are first run on a private character device made with the numbers of
/dev/null (`mknod`, as root), so that a regression replaces that node, never the system's; only after it
held is the real /dev/null used.
"""

from __future__ import annotations

import gzip
import os
import socket
import stat
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import bpeforge
import numpy as np
import pytest
from bpeforge.open_tokenizer import open_tokenizer

TEXT = "the cat sat on the mat. the dog ate the cat's food!\n<|endoftext|>\n" * 40


def bpeforge_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "bpeforge", *args]


def run_cli(*args: str, cwd: Path, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run(bpeforge_cmd(*args), cwd=cwd, stdout=stdout, stderr=subprocess.PIPE, timeout=120)


# Each command that writes one output file: its arguments for an output path, and the regular file the
# workspace fixture has it write (the bytes every other kind of output must get).
OUTPUTS = {
    "encode": (lambda out: ("encode", "corpus.txt", "--tokenizer", "tok", "-o", out, "--no-progress"), "ids.npy"),
    "decode": (lambda out: ("decode", "ids.npy", "--tokenizer", "tok", "-o", out), "decoded.txt"),
    "count": (lambda out: ("count", "corpus.txt", "-o", out, "--no-progress"), "count.bin"),
    "show --html": (lambda out: ("show", "tok", "the cat sat", "--html", out), "page.html"),
    "convert --to tiktoken": (lambda out: ("convert", "tok", "--to", "tiktoken", "-o", out), "ranks.tiktoken"),
}


def output_args(name: str, out: str, *extra: str) -> tuple[str, ...]:
    return (*OUTPUTS[name][0](out), *extra)


def expected(workspace: Path, name: str) -> bytes:
    return (workspace / OUTPUTS[name][1]).read_bytes()


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """corpus.txt, a trained tokenizer tok/, and each command's output written to a regular file."""
    root = tmp_path_factory.mktemp("made")
    (root / "corpus.txt").write_text(TEXT)
    done = run_cli("train", "corpus.txt", "--vocab-size", "300", "-o", "tok", "--no-progress", cwd=root)
    assert done.returncode == 0, done.stderr
    for name, (args, file) in OUTPUTS.items():
        done = run_cli(*args(file), cwd=root)
        assert done.returncode == 0, (name, done.stderr)
    assert (root / "decoded.txt").read_text() == TEXT
    return root


@pytest.fixture
def workspace(made: Path, tmp_path: Path) -> Path:
    """A fresh copy of `made` for one test."""
    for entry in made.iterdir():
        if entry.is_dir():
            (tmp_path / entry.name).mkdir()
            for inner in entry.iterdir():
                (tmp_path / entry.name / inner.name).write_bytes(inner.read_bytes())
        else:
            (tmp_path / entry.name).write_bytes(entry.read_bytes())
    return tmp_path


def read_fifo_in_background(path: Path) -> tuple[threading.Thread, list[bytes]]:
    """A thread that opens the FIFO for reading (the writer's open waits for it) and reads it to the end."""
    received: list[bytes] = []

    def read() -> None:
        with open(path, "rb") as f:
            received.append(f.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread, received


@pytest.mark.parametrize("name", list(OUTPUTS))
def test_a_fifo_output_is_written_through_and_stays_a_fifo(workspace, name):
    fifo = workspace / "pipe"
    os.mkfifo(fifo)
    reader, received = read_fifo_in_background(fifo)
    done = run_cli(*output_args(name, "pipe", "--force"), cwd=workspace)
    reader.join(timeout=60)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced"
    assert received == [expected(workspace, name)]
    assert not [p.name for p in workspace.iterdir() if ".tmp-" in p.name]


@pytest.mark.parametrize("name", list(OUTPUTS))
def test_dash_is_standard_output_for_every_command(workspace, name):
    done = run_cli(*output_args(name, "-"), cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected(workspace, name)  # the data alone: the report went to standard error
    assert b"wrote" in done.stderr
    assert not (workspace / "-").exists()


def test_standard_output_redirected_to_a_file_is_written_where_it_stands(workspace):
    """`-o - >> log` appends, as a shell's redirection says; the file is not replaced (same inode)."""
    log = workspace / "log"
    log.write_bytes(b"HEAD")
    inode = log.stat().st_ino
    with open(log, "ab") as out:
        done = run_cli(*output_args("decode", "-"), cwd=workspace, stdout=out)
    assert done.returncode == 0, done.stderr
    assert log.read_bytes() == b"HEAD" + TEXT.encode()
    assert log.stat().st_ino == inode


def test_standard_output_redirected_to_an_input_is_refused(workspace):
    before = (workspace / "corpus.txt").read_bytes()
    with open(workspace / "corpus.txt", "ab") as out:
        done = run_cli(*output_args("encode", "/dev/stdout"), cwd=workspace, stdout=out)
    assert done.returncode == 2
    assert b"is the input" in done.stderr
    assert (workspace / "corpus.txt").read_bytes() == before


@pytest.mark.parametrize("name", list(OUTPUTS))
def test_a_symlink_keeps_being_the_link_and_its_target_is_replaced(workspace, name):
    target = workspace / "elsewhere" / "target"
    target.parent.mkdir()
    target.write_bytes(b"old")
    link = workspace / "link"
    link.symlink_to(target)
    refused = run_cli(*output_args(name, "link"), cwd=workspace)
    assert refused.returncode == 2 and b"already exists" in refused.stderr
    assert target.read_bytes() == b"old"
    done = run_cli(*output_args(name, "link", "--force"), cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() == expected(workspace, name)
    assert not [p.name for p in target.parent.iterdir() if p.name != "target"]  # no temporary left


def test_a_dangling_symlink_is_written_at_its_target(workspace):
    link = workspace / "link"
    link.symlink_to(workspace / "new.npy")
    done = run_cli(*output_args("encode", "link"), cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink()
    assert (workspace / "new.npy").read_bytes() == expected(workspace, "encode")


def test_a_symlink_to_a_tokenizer_directory_replaces_the_directory_and_keeps_the_link(workspace):
    real = workspace / "runs" / "tok-1"
    real.parent.mkdir()
    assert run_cli("train", "corpus.txt", "--vocab-size", "280", "-o", str(real), cwd=workspace).returncode == 0
    (workspace / "latest").symlink_to(real)
    done = run_cli("train", "corpus.txt", "--vocab-size", "300", "-o", "latest", "--force", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert (workspace / "latest").is_symlink()
    assert bpeforge.load(real) == bpeforge.load(workspace / "tok")  # the 300-token run
    assert sorted(p.name for p in real.parent.iterdir()) == ["tok-1"]


@pytest.mark.parametrize("output", ["-", "pipe"])
def test_a_stream_is_not_a_directory_output(workspace, output):
    os.mkfifo(workspace / "pipe")
    done = run_cli("train", "corpus.txt", "--vocab-size", "300", "-o", output, "--force", cwd=workspace)
    assert done.returncode == 2
    assert b"not a directory" in done.stderr
    assert stat.S_ISFIFO(os.lstat(workspace / "pipe").st_mode)


def test_a_socket_is_refused_and_kept(workspace):
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(workspace / "sock"))
    try:
        done = run_cli(*output_args("encode", "sock", "--force"), cwd=workspace)
    finally:
        server.close()
    assert done.returncode == 2
    assert b"is a socket" in done.stderr
    assert stat.S_ISSOCK(os.lstat(workspace / "sock").st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_character_device_is_written_through_and_stays_a_device(workspace):
    """A private node with /dev/null's numbers first; the system's /dev/null only once that held."""
    null = os.stat("/dev/null")
    private = workspace / "null"
    os.mknod(private, stat.S_IFCHR | 0o666, null.st_rdev)
    for device in (str(private), "/dev/null"):
        for name in OUTPUTS:
            done = run_cli(*output_args(name, device, "--force"), cwd=workspace)
            assert done.returncode == 0, (device, name, done.stderr)
            mode = os.lstat(device).st_mode
            assert stat.S_ISCHR(mode) and os.lstat(device).st_rdev == null.st_rdev, f"{name} replaced {device}"
    assert not [p.name for p in workspace.iterdir() if ".tmp-" in p.name]


def test_the_api_writes_through_a_fifo_and_a_link(workspace):
    tokenizer = bpeforge.Tokenizer.load(workspace / "tok")
    os.mkfifo(workspace / "pipe")
    reader, received = read_fifo_in_background(workspace / "pipe")
    bpeforge.formats.tiktoken_ranks.save_tiktoken(tokenizer, workspace / "pipe", overwrite=False)
    reader.join(timeout=30)
    assert received == [expected(workspace, "convert --to tiktoken")]
    (workspace / "link").symlink_to("ranks.tiktoken")
    counts = bpeforge.count(workspace / "corpus.txt", ["<|endoftext|>"])
    bpeforge.save_counts(counts, workspace / "link", overwrite=True)
    assert (workspace / "link").is_symlink()
    assert (workspace / "ranks.tiktoken").read_bytes() == expected(workspace, "count")


# Output names at the file system's limit of 255 bytes a name: the temporary name once made them fail.
LONG_NAMES = ["n" * 251 + ".npy", "é" * 125 + ".npy", "x" * 229 + ".npy"]


@pytest.mark.parametrize("name", LONG_NAMES, ids=lambda name: f"{len(name.encode())}B")
def test_output_names_up_to_255_bytes_are_written(workspace, name):
    done = run_cli(*output_args("encode", name), cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert (workspace / name).read_bytes() == expected(workspace, "encode")
    directory = name.removesuffix(".npy")
    done = run_cli("train", "corpus.txt", "--vocab-size", "300", "-o", directory, cwd=workspace)
    assert done.returncode == 0, done.stderr
    again = run_cli("train", "corpus.txt", "--vocab-size", "290", "-o", directory, "--force", cwd=workspace)
    assert again.returncode == 0, again.stderr
    assert not [p.name for p in workspace.iterdir() if ".tmp-" in p.name or ".old-" in p.name]


def test_a_long_names_temporary_left_by_a_killed_run_is_removed_by_the_next(workspace):
    from bpeforge.formats.temporaries import temporary_sibling

    name = "q" * 250 + ".npy"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    mine = temporary_sibling(workspace / name)
    assert len(mine.name.encode()) <= 255
    stale = mine.with_name(mine.name.replace(f"-{os.getpid()}-", f"-{dead.pid}-"))
    stale.write_bytes(b"left by a killed run")
    done = run_cli(*output_args("encode", name), cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert not stale.exists()


HOSTILE_TEXT = "bell\a esc\x1b[2J cr\rover rlo\u202eexe.txt lri\u2066 c1\x9b del\x7f"


def test_show_prints_no_control_or_bidi_override_character(workspace):
    done = run_cli("show", "tok", HOSTILE_TEXT, cwd=workspace)
    assert done.returncode == 0, done.stderr
    shown = done.stdout.decode()
    for char in "\a\x1b\r\u202e\u2066\x9b\x7f":
        assert char not in shown, repr(char)
    for stand_in in ("␇", "␛", "␍", "\\u202e", "\\u2066", "\\x9b", "␡"):
        assert stand_in in shown


def test_inspect_and_errors_print_no_control_character(workspace):
    name = "sample\x1b]0;owned\x07.txt"
    (workspace / name).write_text("text\n")
    done = run_cli("inspect", "tok", "--sample", name, cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert b"\x1b" not in done.stdout and b"\x07" not in done.stdout
    missing = run_cli("encode", "nothing\x1b[31m.txt", "--tokenizer", "tok", "-o", "x.npy", cwd=workspace)
    assert missing.returncode == 2
    assert b"\x1b" not in missing.stderr and "␛[31m".encode() in missing.stderr


@pytest.mark.parametrize("suffix", [".gz", ".xz", ".zst"])
def test_a_compressed_rank_file_is_written_compressed_and_reads_back(workspace, suffix):
    name = f"ranks.tiktoken{suffix}"
    done = run_cli("convert", "tok", "--to", "tiktoken", "-o", name, cwd=workspace)
    assert done.returncode == 0, done.stderr
    data = (workspace / name).read_bytes()
    magic = {".gz": b"\x1f\x8b", ".xz": b"\xfd7zXZ", ".zst": b"\x28\xb5\x2f\xfd"}[suffix]
    assert data.startswith(magic)
    if suffix == ".gz":
        assert gzip.decompress(data) == expected(workspace, "convert --to tiktoken")
    tokenizer = bpeforge.Tokenizer.load(workspace / "tok")
    back = open_tokenizer(workspace / name, pattern="gpt2", special_tokens=tokenizer.special_tokens)
    assert back.encode(TEXT) == tokenizer.encode(TEXT)


def test_loading_a_missing_tokenizer_names_it_first_without_a_warning(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("x")
    cases = {"missing": "does not exist", "empty": "vocab.json and .*merges.txt not found", "file": "not a directory"}
    for name, message in cases.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with pytest.raises(OSError, match=message):
                bpeforge.Tokenizer.load(tmp_path / name)
        assert not caught, [str(w.message) for w in caught]


def test_counts_added_to_themselves_double(tmp_path):
    (tmp_path / "c.txt").write_text(TEXT)
    counts = bpeforge.count(tmp_path / "c.txt")
    before, counted = dict(counts.items()), counts.bytes_counted
    counts.merge(counts)
    assert dict(counts.items()) == {token: 2 * n for token, n in before.items()}
    assert counts.bytes_counted == 2 * counted


@pytest.mark.parametrize(
    ("texts", "message"),
    [("one text", "got one str: pass \\[text\\]"), ([b"bytes"], "item 0 has type bytes"), (5, "got type int")],
)
def test_counts_add_texts_says_to_pass_a_list_of_str(texts, message):
    counts = bpeforge.Counts([])
    with pytest.raises(TypeError, match=message):
        counts.add_texts(texts)
    counts.add_texts(("a tuple", "of texts"))  # any sequence of str is documents
    assert sorted(token for token, _ in counts.items()) == [b" texts", b" tuple", b"a", b"of"]


def test_extend_takes_a_train_result(tmp_path):
    (tmp_path / "c.txt").write_text(TEXT)
    base = bpeforge.train(tmp_path / "c.txt", 280)
    from_result = bpeforge.train(tmp_path / "c.txt", 300, extend=base)
    from_tokenizer = bpeforge.train(tmp_path / "c.txt", 300, extend=bpeforge.Tokenizer(*base, base.special_tokens))
    assert from_result.merges == from_tokenizer.merges and from_result.merges[: len(base.merges)] == base.merges
    with pytest.raises(TypeError, match="a Tokenizer, a TrainResult"):
        bpeforge.train(tmp_path / "c.txt", 300, extend=5)


def test_encoding_nothing_says_so_without_nan(workspace):
    (workspace / "empty.txt").write_text("")
    done = run_cli("encode", "empty.txt", "--tokenizer", "tok", "-o", "e.npy", "--no-progress", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert b"nan" not in done.stdout and b"0 tokens" in done.stdout
    assert np.load(workspace / "e.npy").size == 0


def test_a_loop_of_symlinks_is_refused_and_kept(workspace):
    (workspace / "loop").symlink_to("loop")
    done = run_cli(*output_args("encode", "loop", "--force"), cwd=workspace)
    assert done.returncode == 2
    assert b"loop of symbolic links" in done.stderr
    assert os.readlink(workspace / "loop") == "loop"


def test_a_closed_standard_output_is_refused_and_never_reused(workspace):
    """With `>&-`, the next file opened takes descriptor 1: data for standard output went into it."""
    closed = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", *bpeforge_cmd(*output_args("encode", "-"))],
        cwd=workspace, capture_output=True, timeout=120,
    )  # fmt: skip
    assert closed.returncode == 2
    assert b"standard output is closed" in closed.stderr
    to_file = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", *bpeforge_cmd(*output_args("encode", "again.npy"))],
        cwd=workspace, capture_output=True, timeout=120,
    )  # fmt: skip
    assert to_file.returncode == 0, to_file.stderr
    assert (workspace / "again.npy").read_bytes() == expected(workspace, "encode")


def test_a_reader_that_goes_away_ends_the_command_quietly(workspace):
    """`bpeforge decode ... -o - | head -c 10`: exit 141 (SIGPIPE's), no error message."""
    big = workspace / "big.txt"
    big.write_text(TEXT * 400)
    done = run_cli("encode", "big.txt", "--tokenizer", "tok", "-o", "big.npy", "--no-progress", cwd=workspace)
    assert done.returncode == 0, done.stderr
    proc = subprocess.Popen(
        bpeforge_cmd("decode", "big.npy", "--tokenizer", "tok", "-o", "-"),
        cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout.read(10) == TEXT.encode()[:10]
    proc.stdout.close()
    stderr = proc.stderr.read()
    assert proc.wait(timeout=60) == 141
    assert b"error" not in stderr and b"Traceback" not in stderr
