"""Pictures of a tokenizer with matplotlib (`pip install 'bpeforge[plot]'`)."""

from __future__ import annotations

from pathlib import Path

from bpeforge.formats.atomic import replaced_atomically


def plot_length_histogram(histogram: dict[str, int], path: Path, *, title: str) -> Path:
    """A bar chart of how many tokens have each length in bytes, written atomically."""
    plt = _pyplot()
    lengths = [int(length) for length in histogram]
    figure, axes = plt.subplots(figsize=(8, 4.5), dpi=120)
    axes.bar(lengths, [histogram[str(length)] for length in lengths], color="#4c72b0", width=0.85)
    axes.set_xlabel("token length (bytes)")
    axes.set_ylabel("tokens")
    axes.set_title(title)
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    return _save(figure, path, plt)


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only; never needs a display
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plots need matplotlib: pip install 'bpeforge[plot]'") from None
    return plt


def _save(figure, path: Path, plt) -> Path:
    try:
        with replaced_atomically(path) as staging:
            figure.savefig(staging, format=path.suffix.lstrip(".") or "png")
    finally:
        plt.close(figure)
    return path
