"""Progress bars (tqdm) fed by the Rust core's progress reports."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tqdm import tqdm

_PHASES = {
    "pretokenize": {"desc": "pre-tokenize", "unit": "B", "unit_scale": True, "unit_divisor": 1024},
    "merge": {"desc": "merges", "unit": " merges", "unit_scale": False},
    "encode": {"desc": "encode", "unit": "B", "unit_scale": True, "unit_divisor": 1024},
}


class ProgressBars:
    """Callable the core reports `(phase, done, total)` to; one bar per phase."""

    def __init__(self, postfix: Callable[[float], str] | None = None) -> None:
        """`postfix(elapsed_seconds)` adds a note to the bar, e.g. tokens/s."""
        self._bars: dict[str, tqdm] = {}
        self._postfix = postfix

    def __call__(self, phase: str, done: int, total: int) -> None:
        bar = self._bars.get(phase)
        if bar is None:
            for other in self._bars.values():
                other.close()
            bar = self._bars[phase] = tqdm(total=total or None, dynamic_ncols=True, **_PHASES[phase])
        total = total or None  # 0: unknown (compressed input)
        if bar.total != total:
            bar.total = total
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
