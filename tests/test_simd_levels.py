"""The SIMD level switch: `BPEFORGE_SIMD` caps the level of the pre-tokenizer's block scanners, read once per
process, never above what the CPU has; `bpeforge.build_info()` says which level runs and why.

Each case runs a fresh interpreter, since the variable is read at the first scan. That every level splits text as
`regex` does is checked by tests/test_scanners.py and tests/test_patterns.py (`splits.assert_same_split` runs each
check at every level this CPU has).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import bpeforge
import pytest
from bpeforge._core import set_simd_level

INFO = bpeforge.build_info()
LEVELS = INFO["simd_levels"]
ALL_NAMES = ["baseline", "avx2", "avx512", "neon"]

# A text that takes every path of the block scanners (ASCII windows, passed punctuation, char-by-char turns).
SAMPLE = ("Hello world's  end, it’s 12345 — “quoted” XMLHttpRequest\n\n  日本語 é/path " * 40) + "x"


def run_with(cap: str | None) -> tuple[dict, list[list[str]], str]:
    """build_info(), the sample's pieces for each preset, and stderr, from a process with BPEFORGE_SIMD=cap."""
    env = {key: value for key, value in os.environ.items() if key != "BPEFORGE_SIMD"}
    if cap is not None:
        env["BPEFORGE_SIMD"] = cap
    code = (
        "import json, sys, bpeforge\n"
        "text = sys.stdin.read()\n"
        "pieces = [bpeforge.pretokenize(text, name) for name, _ in bpeforge.PATTERNS]\n"
        "print(json.dumps([bpeforge.build_info(), pieces]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=SAMPLE,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=True,
    )
    info, pieces = json.loads(done.stdout)
    return info, pieces, done.stderr


def test_build_info_describes_this_cpu():
    assert INFO["arch"] in {"x86_64", "aarch64"} or INFO["simd_levels"] == ["baseline"]
    assert INFO["simd_levels"][0] == "baseline"
    assert INFO["simd_best"] == LEVELS[-1]
    assert INFO["simd_level"] in LEVELS
    if INFO["arch"] == "x86_64":
        assert "sse2" in INFO["cpu_features"]
        assert ("avx512" in LEVELS) == ({"avx512f", "avx512bw"} <= set(INFO["cpu_features"]))
        assert ("avx2" in LEVELS) == ("avx2" in INFO["cpu_features"])
    if INFO["arch"] == "aarch64":
        assert LEVELS == ["baseline", "neon"]


def test_no_cap_and_auto_run_the_best_level():
    for cap in [None, "auto", "AVX512" if "avx512" in LEVELS else "auto"]:
        info, _, stderr = run_with(cap)
        assert info["simd_level"] == info["simd_best"] == LEVELS[-1], cap
        assert info["simd_note"] is None and stderr == "", cap


@pytest.mark.parametrize("level", LEVELS)
def test_each_level_the_cpu_has_runs_when_capped_to_it_and_splits_alike(level):
    info, pieces, stderr = run_with(level)
    assert (info["simd_level"], info["simd_cap"], info["simd_note"]) == (level, level, None)
    assert stderr == ""
    _, best_pieces, _ = run_with(None)
    assert pieces == best_pieces
    assert all("".join(split) == SAMPLE for split in pieces)


@pytest.mark.parametrize("cap", [name for name in ALL_NAMES if name not in LEVELS])
def test_a_cap_above_the_cpu_or_of_another_platform_runs_what_it_has_and_says_so(cap):
    info, _, stderr = run_with(cap)
    assert info["simd_level"] in LEVELS
    assert info["simd_cap"] == cap
    assert info["simd_note"] is not None
    assert "above what this CPU has" in info["simd_note"] or "another platform" in info["simd_note"]
    assert f"bpeforge: BPEFORGE_SIMD={cap}" in stderr


def test_a_cap_that_is_no_level_runs_the_best_and_says_so():
    info, _, stderr = run_with("sse9")
    assert info["simd_level"] == LEVELS[-1]
    assert 'BPEFORGE_SIMD="sse9" is not one of auto, baseline, avx2, avx512, neon' in info["simd_note"]
    assert info["simd_note"] in stderr


def test_the_test_setter_switches_the_level_and_refuses_what_the_cpu_lacks():
    before = bpeforge.build_info()["simd_level"]
    try:
        for level in LEVELS:
            set_simd_level(level)
            assert bpeforge.build_info()["simd_level"] == level
        for missing in [name for name in ALL_NAMES if name not in LEVELS] + ["sse9"]:
            with pytest.raises(ValueError, match="SIMD level"):
                set_simd_level(missing)
    finally:
        set_simd_level(before)
    assert bpeforge.build_info()["simd_level"] == before
