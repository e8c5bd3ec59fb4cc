"""Progress bars (tqdm) fed by the Rust core's progress reports.

Bytes are shown in MiB and MiB/s, the unit of every summary. tqdm's own byte
scaling would not do: it counts sizes in 1024s but rates in 1000s ("MB/s").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tqdm import tqdm

MIB = 1 << 20
_BYTES = {"unit": " MiB", "unit_scale": 1 / MIB}  # tqdm scales the count, the total and the rate
_PHASES = {
    "pretokenize": {"desc": "pre-tokenize", **_BYTES},
    "merge": {"desc": "merges", "unit": " merges", "unit_scale": False},
    "encode": {"desc": "encode", **_BYTES},
}
# With a total: "encode:  42%|████      | 120.3/286.1 MiB [00:01<00:02, 98.20 MiB/s, 25,412,000 tokens/s]".
_KNOWN_TOTAL = "{l_bar}{bar}| {n:,.1f}/{total:,.1f} MiB [{elapsed}<{remaining}, {rate_noinv_fmt}{postfix}]"
_UNKNOWN_TOTAL = "{desc}: {n:,.1f} MiB [{elapsed}, {rate_noinv_fmt}{postfix}]"  # compressed input, records


def _bar_format(phase: str, total: int | None) -> str | None:
    if _PHASES[phase]["unit"] != _BYTES["unit"]:
        return None
    return _KNOWN_TOTAL if total else _UNKNOWN_TOTAL


class ProgressBars:
    """Callable the core reports `(phase, done, total)` to; one bar per phase."""

    def __init__(self, postfix: Callable[[float], str] | None = None) -> None:
        """`postfix(elapsed_seconds)` adds a note to the bar, e.g. tokens/s."""
        self._bars: dict[str, tqdm] = {}
        self._postfix = postfix

    def __call__(self, phase: str, done: int, total: int) -> None:
        total = max(total, done) if total else None  # 0: unknown (compressed input, records)
        bar = self._bars.get(phase)
        if bar is None:
            # Imported with the first bar: tqdm (and the package metadata it reads) was a third of
            # `import bpeforge`, paid by every run, `--no-progress` ones too.
            from tqdm import tqdm

            for other in self._bars.values():
                other.close()
            bar = self._bars[phase] = tqdm(
                total=total, dynamic_ncols=True, bar_format=_bar_format(phase, total), **_PHASES[phase]
            )
        if bar.total != total:
            bar.total = total
            bar.bar_format = _bar_format(phase, total)
        if self._postfix is not None:
            bar.set_postfix_str(self._postfix(bar.format_dict["elapsed"]), refresh=False)
        bar.update(done - bar.n)

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()


@contextmanager
def progress_bars(enabled: bool, postfix: Callable[[float], str] | None = None) -> Iterator[ProgressBars | None]:
    """Bars for the core to report to while the block runs (None when disabled), closed after it."""
    bars = ProgressBars(postfix) if enabled else None
    try:
        yield bars
    finally:
        if bars is not None:
            bars.close()
