"""`bpeforge train --profile`: where the training time went, printed and saved.

Phases:
- read: reading and UTF-8 checking. It runs on one thread while the others
  pre-tokenize the previous batch, so it overlaps them.
- pre-tokenize and count: the wall time of the parallel batches, split by the
  CPU time the workers spent in each. Count also includes folding each
  batch's table into the corpus table, which is serial.
- merge loop: its rate in merges/s.
- write: the output files.

The report is saved as `DIR/train_report.json` (keys in docs/format.md).
"""

from __future__ import annotations

import json
from pathlib import Path

from bpeforge.cli.summary import peak_memory_mib
from bpeforge.formats.atomic import write_text_atomically
from bpeforge.formats.gpt2 import REPORT_FILE
from bpeforge.train import TrainResult

LABELS = {"pretokenize": "pre-tokenize", "merge": "merge loop"}
VERSION = 1


def build_report(result: TrainResult, *, write_seconds: float, total_seconds: float) -> dict:
    """The phases as `{name: {"seconds": wall, ...}}` with run figures."""
    stats = result.stats
    phases = _count_phases(stats.count_profile)
    merges_per_second = len(result.merges) / stats.merge_seconds if stats.merge_seconds > 0 else None
    phases["merge"] = {"seconds": stats.merge_seconds, "merges": len(result.merges), "merges_per_s": merges_per_second}
    phases["write"] = {"seconds": write_seconds}
    return {
        "version": VERSION,
        "total_seconds": total_seconds,
        "bytes": stats.bytes_read,
        "threads": stats.threads,
        "unique_pretokens": stats.unique_pretokens,
        "vocab_size": len(result.vocab),
        "peak_memory_mib": peak_memory_mib(),
        "phases": phases,
    }


def _count_phases(profile: dict[str, float]) -> dict[str, dict]:
    """Read, pre-tokenize and count, from the core's counting profile."""
    if not profile.get("batches"):
        return {}  # trained from counts: nothing was read
    cpu = profile["pretokenize_cpu"] + profile["count_cpu"]
    share = profile["pretokenize_cpu"] / cpu if cpu > 0 else 0.5
    return {
        "read": {"seconds": profile["read"], "overlapped": True},
        "pretokenize": {"seconds": profile["batches"] * share, "cpu_seconds": profile["pretokenize_cpu"]},
        "count": {
            "seconds": profile["batches"] * (1 - share) + profile["fold"],
            "cpu_seconds": profile["count_cpu"],
            "fold_seconds": profile["fold"],
        },
    }


def format_report(report: dict) -> str:
    """A table of the phases for the terminal."""
    total = report["total_seconds"]
    lines = ["profile (wall clock; read overlaps pre-tokenize on another thread)"]
    lines.append(f"  {'phase':<14}{'seconds':>9}{'share':>8}  detail")
    for name, phase in report["phases"].items():
        share = "" if phase.get("overlapped") else f"{phase['seconds'] / total:7.0%}" if total > 0 else ""
        label = LABELS.get(name, name)
        lines.append(f"  {label:<14}{phase['seconds']:>9.3f}{share:>8}  {_detail(name, phase, report)}".rstrip())
    lines.append(f"  {'total':<14}{total:>9.3f}")
    return "\n".join(lines)


def _detail(name: str, phase: dict, report: dict) -> str:
    if name == "read":
        return f"{report['bytes'] / 2**20 / max(phase['seconds'], 1e-9):,.0f} MiB/s, overlapped"
    if name in ("pretokenize", "count"):
        return f"{phase['cpu_seconds']:.3f} s CPU on {report['threads']} threads"
    if name == "merge" and phase["merges_per_s"] is not None:
        return f"{phase['merges']:,} merges, {phase['merges_per_s']:,.0f} merges/s"
    return ""


def save_report(directory: Path, report: dict) -> Path:
    return write_text_atomically(directory / REPORT_FILE, json.dumps(report, indent=2) + "\n", overwrite=True)
