"""The SIMD level bpeforge's children run at (``--simd``), and the per-level summary table.

``BPEFORGE_SIMD`` caps bpeforge's scanners (docs/pretokenizer.md, "The SIMD level"). It is set in bpeforge's
children only: the peers detect their own CPU features and take the same path whatever bpeforge is capped at, so
each level's table compares one bpeforge path against the same field. Every bpeforge child reports the level it
actually ran (``build_info()["simd_level"]``), since a cap above what the CPU has runs a lower level.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

LEVELS = ("auto", "baseline", "avx2", "avx512", "neon")
ENV = "BPEFORGE_SIMD"
PROBE = "import bpeforge; print(bpeforge.build_info()['simd_level'])"


def parse_levels(text: str) -> list[str]:
    """``--simd baseline,avx2`` as a list; an unknown level raises ``ValueError`` naming the choices."""
    levels = [level.strip().lower() for level in text.split(",") if level.strip()]
    unknown = [level for level in levels if level not in LEVELS]
    if unknown or not levels:
        raise ValueError(f"unknown SIMD level(s) {unknown or [text]}; choose from {','.join(LEVELS)}")
    return levels


def child_env(peer: str, level: str, base: dict[str, str]) -> dict[str, str]:
    """``base`` with ``BPEFORGE_SIMD`` set for a bpeforge child, and without it for any other peer."""
    env = {key: value for key, value in base.items() if key != ENV}
    if peer == "bpeforge":
        env[ENV] = level
    return env


def running_level() -> str:
    """In a bpeforge child: the level its scanners run at (the cap, bounded by what the CPU has)."""
    import bpeforge

    return str(bpeforge.build_info()["simd_level"])


def probe_level(level: str) -> str:
    """The level a fresh bpeforge process runs under ``BPEFORGE_SIMD=level`` (for the file workload, whose
    child is the ``bpeforge encode`` CLI and reports nothing but ids)."""
    env = child_env("bpeforge", level, dict(os.environ))
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=False)
    return proc.stdout.strip() or f"unknown ({proc.stderr.strip().splitlines()[-1:]})"


def _fastest_peer(cells: dict[str, float | None]) -> tuple[str, float] | None:
    others = [(peer, value) for peer, value in cells.items() if peer != "bpeforge" and value]
    return max(others, key=lambda item: item[1]) if others else None


def _ratio_cell(ours: float | None, cells: dict[str, float | None]) -> str:
    """``bpeforge MB/s / fastest peer's MB/s (peer)``, bold when below 1x so a miss cannot be overlooked."""
    fastest = _fastest_peer(cells)
    if ours is None or fastest is None:
        return "—"
    ratio = ours / fastest[1]
    text = f"{ratio:.2f}x {fastest[0]}"
    return f"**{text}**" if ratio < 1 else text


def render_level_summary(level: str, ran: str, reports: dict[str, Any], files: dict[str, Any] | None) -> list[str]:
    """One row per encoding and corpus: bpeforge's warm and first-call MB/s and its ratio to the fastest peer
    of that cell; then the file workload's ratio to gigatoken. ``ran`` is the level the children reported."""
    lines = [
        f"bpeforge capped at `{level}`, ran `{ran}`; ratios are bpeforge / the fastest peer of the cell "
        "(bold: below 1x).",
        "",
        "| encoding | corpus | bpeforge warm / first MB/s | warm ratio | first-call ratio |",
        "|---|---|--:|--:|--:|",
    ]
    for encoding, report in reports.items():
        for corpus, row in report["summary"]["encode"].items():
            best, first = row["mbps"], row["first_mbps"]
            ours = f"{_number(best.get('bpeforge'))} / {_number(first.get('bpeforge'))}"
            warm_cell = _ratio_cell(best.get("bpeforge"), best)
            first_cell = _ratio_cell(first.get("bpeforge"), first)
            lines.append(f"| {encoding} | {corpus} | {ours} | {warm_cell} | {first_cell} |")
    for corpus, rows in (files or {}).items():
        for threads, ours in rows["runs"].get("bpeforge", {}).items():
            theirs = rows["runs"].get("gigatoken", {}).get(threads, {})
            if "seconds" in ours and "seconds" in theirs:
                ratio = theirs["seconds"] / ours["seconds"]
                cell = f"{ratio:.2f}x gigatoken" if ratio >= 1 else f"**{ratio:.2f}x gigatoken**"
                lines.append(f"| file, gpt2, {threads} core(s) | {corpus} | — | {cell} | (whole process) |")
    return lines


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"
