"""Scale limits: one huge pre-token, many special tokens, more vocabulary than the corpus has."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import bpeforge

CHILD = """
import json, re, sys, time, bpeforge
path, vocab_size = sys.argv[1], int(sys.argv[2])
started = time.perf_counter()
result = bpeforge.train(path, vocab_size, [])
trained = time.perf_counter()
text = open(path, encoding="utf-8").read()
tok = bpeforge.Tokenizer(result.vocab, result.merges)
ids = tok.encode(text)
assert tok.decode(ids) == text
done = time.perf_counter()
hwm = int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1))
print(json.dumps({"train": trained - started, "encode": done - trained, "peak_kib": hwm, "merges": len(result.merges)}))
"""


def one_word(path: Path, megabytes: float) -> Path:
    rng = random.Random(5)
    path.write_text("".join(rng.choices("abcdefghij", k=int(megabytes * 1_000_000))), encoding="utf-8")
    return path


def run(path: Path, vocab_size: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), str(vocab_size)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def best_of_two(path: Path, vocab_size: int) -> dict:
    first, second = run(path, vocab_size), run(path, vocab_size)
    return {key: min(first[key], second[key]) for key in first}


def test_a_10_mb_pre_token_trains_and_encodes_in_near_linear_time(tmp_path):
    small = best_of_two(one_word(tmp_path / "small.txt", 2.5), 300)
    large = best_of_two(one_word(tmp_path / "large.txt", 10), 300)
    assert small["merges"] == large["merges"] == 300 - 256
    # 4x the input: linear costs 4x, n log n a little more, quadratic 16x. The
    # bound is a complexity check with room for a noisy machine, not a timing.
    for phase in ("train", "encode"):
        ratio = large[phase] / max(small[phase], 1e-3)
        assert ratio < 9, (
            f"{phase}: 10 MB took {ratio:.1f}x the time of 2.5 MB ({small[phase]:.2f} s -> {large[phase]:.2f} s)"
        )
    # Memory grows with the word (its symbols must be held), by a small factor of its size.
    assert large["peak_kib"] * 1024 < 40 * 10_000_000


def test_ten_thousand_special_tokens(tmp_path):
    specials = [f"<|s{i}|>" for i in range(10_000)]
    rng = random.Random(2)
    words = ["".join(rng.choices("abcdefgh", k=rng.randint(2, 7))) for _ in range(300)]
    pieces = [rng.choice([*rng.choices(words, k=5), rng.choice(specials)]) for _ in range(5000)]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(" ".join(pieces), encoding="utf-8")
    vocab, merges = bpeforge.train_bpe(corpus, 256 + len(specials) + 50, specials)
    assert len(merges) == 50 and all(b"<|" not in left + right for left, right in merges)
    tok = bpeforge.Tokenizer(vocab, merges, specials)
    ids = tok.encode("x<|s9999|>y<|s0|>")
    assert ids[1] == tok.token_to_id("<|s9999|>") and ids[3] == tok.token_to_id("<|s0|>")
    assert tok.decode(ids) == "x<|s9999|>y<|s0|>"


def test_more_vocabulary_than_the_corpus_supports_stops_cleanly_and_says_so(tmp_path):
    corpus = tmp_path / "tiny.txt"
    corpus.write_text("ab ab abc", encoding="utf-8")
    cmd = [sys.executable, "-m", "bpeforge", "train", str(corpus), "--vocab-size", "5000", "-o", str(tmp_path / "t")]
    done = subprocess.run([*cmd, "--no-progress"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "ran out of pairs" in done.stdout
    vocab, merges = bpeforge.load(tmp_path / "t")
    assert 0 < len(merges) < 10 and len(vocab) == 256 + len(merges) + 1
    assert json.loads((tmp_path / "t" / "bpeforge.json").read_text())["num_merges"] == len(merges)
