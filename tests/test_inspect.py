"""`bpeforge inspect`, `compare`, `show` and `train --profile`, run as a user runs them.

The HTML page of `show` is opened in a real headless browser (Debian's
chromium) and its screenshot is checked for the token colours and for the
tooltip of a token; the histogram plot is read back as an image.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import bpeforge
import numpy as np
import pytest
from bpeforge.inspection import show
from bpeforge.inspection.figures import draw_documents, sample_figures, vocabulary_figures

SPECIAL = "<|endoftext|>"


def _document(seed: int) -> str:
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghijklmnoé日本Ω") for _ in range(rng.randint(1, 8))) for _ in range(80)]
    return f"Document {seed}: " + " ".join(words) + ".\n"


DOCUMENTS = [_document(seed) for seed in range(40)]
TEXT = "Hello, world! 日本語 and ✨ sparkles; tabs\tand\nnew lines."


def _run(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "bpeforge", *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("inspect") / "corpus.txt"
    path.write_text(SPECIAL.join(DOCUMENTS), encoding="utf-8", newline="")
    return path


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory) -> Path:
    """A tokenizer directory trained by the CLI with --profile."""
    out = tmp_path_factory.mktemp("tok") / "tok"
    _run("train", str(corpus), "--vocab-size", "400", "-o", str(out), "--profile", "--no-progress")
    return out


@pytest.fixture(scope="module")
def other(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tok2") / "small"
    _run("train", str(corpus), "--vocab-size", "300", "-o", str(out), "--no-progress")
    return out


def test_profile_reports_every_phase_and_does_not_change_the_result(trained, corpus):
    report = json.loads((trained / "train_report.json").read_text())
    assert list(report["phases"]) == ["read", "pretokenize", "count", "merge", "write"]
    assert all(phase["seconds"] >= 0 for phase in report["phases"].values())
    merge = report["phases"]["merge"]
    tokenizer = bpeforge.Tokenizer.load(trained)
    assert merge["merges"] == len(tokenizer.merges) == 400 - 257
    assert merge["merges_per_s"] == pytest.approx(merge["merges"] / merge["seconds"])
    serial = sum(phase["seconds"] for name, phase in report["phases"].items() if name != "read")
    assert serial <= report["total_seconds"] * 1.05
    assert report["bytes"] == corpus.stat().st_size
    assert bpeforge.train(corpus, 400, [SPECIAL]).merges == tokenizer.merges


def test_profile_splits_counting_into_pretokenize_and_count(corpus):
    profile = bpeforge.train(corpus, 300, [SPECIAL], profile=True).stats.count_profile
    assert profile["pretokenize_cpu"] > 0 and profile["count_cpu"] > 0
    unprofiled = bpeforge.train(corpus, 300, [SPECIAL]).stats.count_profile
    assert unprofiled["pretokenize_cpu"] == 0 and unprofiled["batches"] > 0


def test_inspect_json_figures(trained, corpus):
    figures = json.loads(_run("inspect", str(trained), "--sample", str(corpus), "--json").stdout)
    tokenizer = bpeforge.Tokenizer.load(trained)
    assert figures["vocab_size"] == tokenizer.vocab_size and figures["special_tokens"] == [SPECIAL]
    lengths = [token["bytes"] for token in figures["longest"]]
    assert lengths == sorted(lengths, reverse=True)
    longest = max((t for t in tokenizer.vocab.values() if t != SPECIAL.encode()), key=len)
    assert lengths[0] == len(longest)
    assert sum(figures["length_histogram"].values()) == tokenizer.vocab_size - 1
    (sample,) = figures["samples"]
    text = corpus.read_text(encoding="utf-8")
    assert sample["tokens"] == len(tokenizer.encode(text))
    assert sample["bytes_per_token"] == pytest.approx(corpus.stat().st_size / sample["tokens"])
    assert sample["pile_hours"] == pytest.approx(825e9 / (sample["mb_per_second"] * 1e6) / 3600)
    # The whole-file throughput runs `bpeforge encode`'s path, whose workers keep their own
    # tables; the shared encode cache fills from encode/encode_batch (--documents: the next test).
    cache = figures["cache"]
    assert 0 <= cache["bytes"] <= cache["capacity"] == tokenizer.cache_size


def test_inspect_text_shows_the_cache(trained, corpus):
    # --documents encodes the drawn documents with encode_batch, which fills the shared encode cache.
    out = _run("inspect", str(trained), "--sample", str(corpus), "--documents", "20").stdout
    (line,) = [line for line in out.splitlines() if line.strip().startswith("cache")]
    assert "pieces in" in line and "MiB of 64.0 MiB" in line and "lookups hit" in line


def test_inspect_shows_tokens_that_are_not_utf8_as_escaped_bytes(tmp_path):
    # Rare three-byte characters: some learned tokens hold only part of one.
    path = tmp_path / "cjk.txt"
    path.write_text("".join(chr(0x4E00 + (i * 7919) % 3000) for i in range(20000)), encoding="utf-8")
    result = bpeforge.train(path, 600)
    bpeforge.save(result.vocab, result.merges, tmp_path / "tok")
    figures = vocabulary_figures(bpeforge.Tokenizer.load(tmp_path / "tok"), longest=600)
    partial = [t["token"] for t in figures["longest"] if t["token"].startswith("b'")]
    assert partial, "expected tokens that split a character"
    assert all("\\x" in token for token in partial)


def test_documents_are_drawn_reproducibly_in_file_order(corpus):
    drawn = draw_documents(corpus, SPECIAL, 5, seed=3)
    assert len(drawn) == 5 and drawn == draw_documents(corpus, SPECIAL, 5, seed=3)
    positions = [DOCUMENTS.index(doc) for doc in drawn]
    assert positions == sorted(positions)
    assert draw_documents(corpus, SPECIAL, 1000) == DOCUMENTS
    seen = {doc for seed in range(30) for doc in draw_documents(corpus, SPECIAL, 5, seed=seed)}
    assert len(seen) > 25, "draws should reach most documents"


def test_sampled_compression_is_over_the_drawn_documents(trained, corpus):
    tokenizer = bpeforge.Tokenizer.load(trained)
    figures = sample_figures(tokenizer, corpus, documents=4, seed=1)
    drawn = draw_documents(corpus, SPECIAL, 4, seed=1)
    size = sum(len(doc.encode()) for doc in drawn)
    assert figures.documents == 4
    assert figures.bytes_per_token == pytest.approx(size / sum(len(tokenizer.encode(d)) for d in drawn))


def test_inspect_plot_is_a_histogram_image(trained, tmp_path):
    image = pytest.importorskip("PIL.Image", reason="reading the plot back needs Pillow (matplotlib brings it)")
    out = tmp_path / "lengths.png"
    _run("inspect", str(trained), "--plot", str(out))
    pixels = np.asarray(image.open(out).convert("RGB")).reshape(-1, 3)
    bar = np.array([0x4C, 0x72, 0xB0])
    assert (np.abs(pixels.astype(int) - bar).sum(axis=1) < 10).mean() > 0.02, "no bars drawn"


def test_compare_json_overlap(trained, other, corpus):
    figures = json.loads(_run("compare", str(trained), str(other), "--sample", str(corpus), "--json").stdout)
    a, b = bpeforge.Tokenizer.load(trained), bpeforge.Tokenizer.load(other)
    tokens_a, tokens_b = set(a.vocab.values()), set(b.vocab.values())
    overlap = figures["overlap"]
    assert overlap["shared"] == len(tokens_a & tokens_b) == b.vocab_size  # same corpus: B's merges are A's first ones
    assert overlap["only_a_count"] == len(tokens_a - tokens_b) and overlap["only_b_count"] == 0
    assert [t["id"] for t in overlap["only_a"]] == sorted(i for i, t in a.vocab.items() if t not in tokens_b)[:20]
    (sample,) = figures["samples"]
    assert sample["a"]["bytes_per_token"] > sample["b"]["bytes_per_token"]


def test_show_pieces_cover_the_text_and_its_ids(trained):
    tokenizer = bpeforge.Tokenizer.load(trained)
    pieces = show.pieces(tokenizer, TEXT + SPECIAL + "✨")
    assert "".join(piece.text for piece in pieces) == TEXT + SPECIAL + "✨"
    assert [i for piece in pieces for i in piece.ids] == tokenizer.encode(TEXT + SPECIAL + "✨")
    assert any(len(piece.ids) > 1 for piece in pieces), "✨ takes several byte tokens in this small vocabulary"
    printed = _run("show", str(trained), TEXT).stdout
    assert printed.split("\n\n")[0].replace("|", "").replace("↵", "").replace("→", "\t") == TEXT


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium (.ci/run does) to test the HTML page in a browser")
        pytest.skip("the HTML test needs Debian's chromium: apt-get install chromium")
    return found


def _screenshot(page: Path, out: Path, fragment: str = "") -> np.ndarray:
    image = pytest.importorskip("PIL.Image", reason="reading screenshots needs Pillow (matplotlib brings it)")
    command = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--host-resolver-rules=MAP * ~NOTFOUND",  # the page must need no network
        "--window-size=900,300",
        f"--screenshot={out}",
        page.as_uri() + fragment,
    ]
    subprocess.run(command, capture_output=True, timeout=120, check=True)
    return np.asarray(image.open(out).convert("RGB")).reshape(-1, 3).astype(int)


def _share_of(pixels: np.ndarray, hex_colour: str) -> float:
    rgb = np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)])
    return float((np.abs(pixels - rgb).sum(axis=1) < 6).mean())


def test_show_html_renders_coloured_tokens_and_tooltips_in_a_browser(trained, tmp_path):
    page = tmp_path / "show.html"
    _run("show", str(trained), TEXT, "--html", str(page))
    source = page.read_text(encoding="utf-8")
    assert "http://" not in source and "https://" not in source and "<script" not in source
    pieces = show.pieces(bpeforge.Tokenizer.load(trained), TEXT)
    plain = _screenshot(page, tmp_path / "plain.png")
    used = show.PALETTE[: min(len(pieces), len(show.PALETTE))]
    assert all(_share_of(plain, colour) > 0.001 for colour in used), "a token colour is missing on screen"
    assert _share_of(plain, "#222222") == 0, "no tooltip should show before hovering"
    hovered = _screenshot(page, tmp_path / "hover.png", "#t2")
    assert _share_of(hovered, "#222222") > 0.002, "the tooltip of token 2 did not appear"


def test_a_missing_optional_extra_is_named_not_a_traceback(trained, tmp_path):
    # matplotlib blocked in a fresh interpreter: the user is told what to install.
    code = (
        "import sys; sys.modules['matplotlib'] = None; from bpeforge.cli import main; "
        f"raise SystemExit(main(['inspect', {str(trained)!r}, '--plot', {str(tmp_path / 'x.png')!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "pip install 'bpeforge[plot]'" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "x.png").exists()


def test_inspect_compare_and_show_take_any_tokenizer_source(trained, corpus, tmp_path):
    """A tokenizer.json is the tokenizer of its directory; a .tiktoken file needs its pattern."""
    tokenizer = bpeforge.Tokenizer.load(trained)
    hf = tmp_path / "tokenizer.json"
    tokenizer.save_hf(hf)
    figures = json.loads(_run("inspect", str(hf), "--sample", str(corpus), "--json").stdout)
    from_dir = json.loads(_run("inspect", str(trained), "--sample", str(corpus), "--json").stdout)
    assert (
        figures["longest"] == from_dir["longest"]
        and figures["samples"][0]["tokens"] == from_dir["samples"][0]["tokens"]
    )
    text = _run("inspect", str(hf)).stdout
    assert text.startswith(f"tokenizer {hf}\n") and "MiB/s" not in text  # no samples, no throughput
    assert "MiB/s" in _run("inspect", str(hf), "--sample", str(corpus)).stdout
    # compare: the same tokenizer twice, one as .tiktoken (specials given), the other as tokenizer.json.
    ranks = tmp_path / "tok.tiktoken"
    tokenizer.save_tiktoken(ranks)
    options = ["--pattern", "gpt2", "--special-token", SPECIAL, "--sample", str(corpus), "--json"]
    compared = json.loads(_run("compare", str(ranks), str(hf), *options).stdout)
    assert compared["overlap"]["only_a_count"] == compared["overlap"]["only_b_count"] == 0
    assert _run("show", str(hf), TEXT).stdout == _run("show", str(trained), TEXT).stdout
    refused = subprocess.run(
        [sys.executable, "-m", "bpeforge", "show", str(ranks), TEXT], capture_output=True, text=True, timeout=120
    )
    assert refused.returncode == 2
    assert refused.stderr.startswith("bpeforge show: error: ") and "give its pattern" in refused.stderr
