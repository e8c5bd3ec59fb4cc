"""Plot how BPE training time and peak memory grow with corpus size and vocabulary size.

Trains bpeforge and its peers with ``bench_train.py``'s machinery (one fresh process per
run) over two grids: corpus size at a fixed vocabulary, and vocabulary size at a fixed
corpus. Writes every result to a JSON file and draws four panels into one PNG:

    python benchmarks/plot_scaling.py --sizes-mb 1,10,50,100 --vocab-sizes 1000,4000,10000,32000,64000,128000,256000 \\
        --vocab-size 10000 --fixed-mb 10 --repeat 3 \\
        --json benchmarks/plots/scaling.json --out benchmarks/plots/scaling.png

Re-draw (and re-print the table) from saved results, without training:

    python benchmarks/plot_scaling.py --from-json benchmarks/plots/scaling.json

The corpus is a prefix of ``gutenberg_500MB.txt`` (``/tmp/corpora``, else the shared
``.xz``), cut back to a whole UTF-8 character. A run longer than ``--timeout`` is killed and
recorded as timed out; that peer skips the larger points of the same grid. A peer that is
not installed is noted and left out. The children inherit the environment: to measure a
fixed bpeforge build rather than the editable checkout, put it first on ``PYTHONPATH``
(the JSON and the plot say which one was measured).
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import importlib.util
import json
import os
import platform
import shlex
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _peers import PEERS, SPECIALS
from bench_encode import locate_corpus
from bench_train import (
    DEFAULT_PEERS,
    _cpu_model,
    _describe,
    _git_revision,
    add_ratios,
    prepare_corpus,
    run_child,
    summarize,
)

PLOTS_DIR = Path(__file__).with_name("plots")
MB = 1_000_000
LOG_RANGE = 10  # an axis whose values span this factor or more is drawn log-scaled
COLORS = dict(zip(PEERS, ["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]))

Point = dict[str, Any]  # one grid point: size_mb, vocab_size, grid, corpus_bytes, rows (one per peer)


def _numbers(text: str) -> list[float]:
    return sorted({float(x) for x in text.split(",")})


def _ints(text: str) -> list[int]:
    return sorted({int(x) for x in text.split(",")})


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="default: gutenberg_500MB.txt from /tmp/corpora, else the .xz")
    parser.add_argument("--sizes-mb", type=_numbers, default=[1, 10, 50, 100], help="corpus grid, MB (10^6 bytes)")
    parser.add_argument(
        "--vocab-sizes", type=_ints, default=[1000, 4000, 10000, 32000, 64000, 128000, 256000], help="vocabulary grid"
    )
    parser.add_argument("--vocab-size", type=int, default=10000, help="vocabulary of the corpus grid")
    parser.add_argument("--fixed-mb", type=float, default=10, help="corpus MB of the vocabulary grid")
    parser.add_argument("--peers", default=DEFAULT_PEERS, help=f"from {','.join(PEERS)}")
    parser.add_argument("--repeat", type=int, default=1, help="runs per peer and point; the best time counts")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per run before it is killed")
    parser.add_argument("--json", type=Path, default=PLOTS_DIR / "scaling.json", help="results file to write")
    parser.add_argument("--out", type=Path, default=PLOTS_DIR / "scaling.png", help="PNG to draw")
    parser.add_argument("--from-json", type=Path, help="draw from this results file instead of training")
    args = parser.parse_args(argv)
    args.peers = args.peers.split(",")
    _check_args(parser, args)
    return args


def _check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Fail on a typo before minutes of training, not after."""
    unknown = [p for p in args.peers if p not in PEERS]
    if unknown:
        parser.error(f"unknown peers {unknown}; choose from {list(PEERS)}")
    if min([args.vocab_size, *args.vocab_sizes]) <= 256 + len(SPECIALS):
        parser.error(f"vocabulary sizes must exceed {256 + len(SPECIALS)}")
    if min([args.fixed_mb, *args.sizes_mb]) <= 0 or args.repeat < 1 or args.timeout <= 0:
        parser.error("sizes and --timeout must be positive, --repeat at least 1")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- running ------------------------------------------------------------------------


def measure_point(peers: list[str], corpus: Path, vocab_size: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every peer at one point, round-robin ``--repeat`` times; a peer stops at its first bad run."""
    runs: dict[str, list[dict[str, Any]]] = {peer: [] for peer in peers}
    for _ in range(args.repeat):
        for peer in peers:
            if runs[peer] and runs[peer][-1]["status"] != "ok":
                continue
            runs[peer].append(run_child(peer, corpus, vocab_size, args.timeout))
            log(f"    {peer}: {_describe(runs[peer][-1])}")
    rows = [summarize(peer, peer_runs) for peer, peer_runs in runs.items()]
    add_ratios(rows)
    return rows


def _left_out(rows: list[dict[str, Any]], where: str) -> dict[str, dict[str, Any]]:
    """Peers not to run at the grid's larger points, with the row that stands in for them."""
    out = {}
    for row in rows:
        if row["status"] == "not installed":
            out[row["peer"]] = {"peer": row["peer"], "status": "not installed"}
        elif row["status"] == "timeout":
            out[row["peer"]] = {"peer": row["peer"], "status": "skipped", "error": f"timed out at {where}"}
    return out


def run_grid(
    grid: str,
    specs: list[tuple[float, int]],
    peers: list[str],
    corpus_of: Callable[[float], Path],
    args: argparse.Namespace,
) -> list[Point]:
    """One grid of (MB, vocab) points, smallest first."""
    points: list[Point] = []
    left_out: dict[str, dict[str, Any]] = {}
    for size_mb, vocab_size in specs:
        where = f"{size_mb:g} MB, vocab {vocab_size:,}"
        log(f"{grid} grid: {where}" + "".join(f"; {p} left out ({r['status']})" for p, r in left_out.items()))
        corpus = corpus_of(size_mb)
        rows = measure_point([p for p in peers if p not in left_out], corpus, vocab_size, args)
        rows += list(left_out.values())
        bytes_ = corpus.stat().st_size
        points.append(
            {"grid": grid, "size_mb": size_mb, "vocab_size": vocab_size, "corpus_bytes": bytes_, "rows": rows}
        )
        left_out |= _left_out(rows, where)
    return points


def metadata(args: argparse.Namespace, source: Path) -> dict[str, Any]:
    return {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": shlex.join(["python", "benchmarks/plot_scaling.py", *sys.argv[1:]]),
        "corpus": str(source),
        "vocab_size": args.vocab_size,
        "fixed_mb": args.fixed_mb,
        "repeat": args.repeat,
        "timeout_s": args.timeout,
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "git": _git_revision(),
        "bpeforge": _bpeforge_build(),
        "load_before": os.getloadavg()[0],
    }


def _bpeforge_build() -> str:
    """Which bpeforge the children import (they inherit ``PYTHONPATH``): this repository's, or another directory."""
    spec = importlib.util.find_spec("bpeforge")
    if spec is None or spec.origin is None:
        return "not installed"
    package = Path(spec.origin).resolve().parent
    if Path(__file__).resolve().parent.parent in package.parents:
        return f"this repository at {_git_revision()}"
    return f"{package.parent} (not this repository)"


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Both grids; the prefixes are written once each to a temporary directory."""
    source = args.corpus or locate_corpus("gutenberg")
    meta = metadata(args, source)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bpeforge-scaling-") as tmp:
        corpus_of = functools.lru_cache(maxsize=None)(lambda mb: prepare_corpus(source, int(mb * MB), Path(tmp)))
        points = run_grid("corpus", [(mb, args.vocab_size) for mb in args.sizes_mb], args.peers, corpus_of, args)
        peers = [p for p in args.peers if not any(_status(pt, p) == "not installed" for pt in points)]
        points += run_grid("vocab", [(args.fixed_mb, v) for v in args.vocab_sizes], peers, corpus_of, args)
    meta |= {"elapsed_s": time.perf_counter() - start, "load_after": os.getloadavg()[0]}
    return {"meta": meta, "points": points}


def _status(point: Point, peer: str) -> str | None:
    return next((r["status"] for r in point["rows"] if r["peer"] == peer), None)


# --- reporting ----------------------------------------------------------------------


def peers_of(points: list[Point]) -> list[str]:
    seen = [row["peer"] for point in points for row in point["rows"]]
    return list(dict.fromkeys(seen))


def _cell(row: dict[str, Any] | None, key: str, ratio: str, spec: str) -> str:
    if row is None or row["status"] != "ok":
        return "—" if row is None else row["status"]
    return f"{row[key]:{spec}}" + (f" ({row[ratio]:.1f}x)" if ratio in row else "")


def render_table(points: list[Point]) -> str:
    """Markdown: train s and peak RSS per peer, with each peer's ratio to bpeforge in brackets."""
    peers = peers_of(points)
    head = ["grid", "corpus", "vocab", *(f"{p} s" for p in peers), *(f"{p} MiB" for p in peers)]
    lines = ["| " + " | ".join(head) + " |", "|---|--:|--:|" + "--:|" * 2 * len(peers)]
    for point in points:
        rows = {row["peer"]: row for row in point["rows"]}
        cells = [point["grid"], f"{point['size_mb']:g} MB", f"{point['vocab_size']:,}"]
        cells += [_cell(rows.get(p), "train_s", "speedup", ".2f") for p in peers]
        cells += [_cell(rows.get(p), "peak_rss_mib", "rss_ratio", ",.0f") for p in peers]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def problems(points: list[Point]) -> list[str]:
    """Every row that is not a measurement, one line each."""
    return [
        f"{point['grid']} grid, {point['size_mb']:g} MB, vocab {point['vocab_size']:,}: {row['peer']} "
        + row["status"]
        + (f" ({row['error']})" if "error" in row else "")
        for point in points
        for row in point["rows"]
        if row["status"] != "ok"
    ]


# --- drawing ------------------------------------------------------------------------

TIME, RSS = "training time (s)", "peak RSS (MiB)"
SIZE, VOCAB = "corpus size (MB, 10^6 bytes)", "vocabulary size (tokens)"
PANELS = [  # (grid, x, y, title, x label, y label)
    ("corpus", "size_mb", "train_s", "Training time vs corpus size", SIZE, TIME),
    ("corpus", "size_mb", "peak_rss_mib", "Peak memory vs corpus size", SIZE, RSS),
    ("vocab", "vocab_size", "train_s", "Training time vs vocabulary size", VOCAB, TIME),
    ("vocab", "vocab_size", "peak_rss_mib", "Peak memory vs vocabulary size", VOCAB, RSS),
]


def series(points: list[Point], grid: str, x: str, y: str) -> dict[str, tuple[list[float], list[float]]]:
    """Per peer, the x and y of its measured points in one grid (timeouts and failures left off)."""
    out: dict[str, tuple[list[float], list[float]]] = {}
    for point in (p for p in points if p["grid"] == grid):
        for row in (r for r in point["rows"] if r["status"] == "ok"):
            xs, ys = out.setdefault(row["peer"], ([], []))
            xs.append(point[x])
            ys.append(row[y])
    return out


def _set_scale(ax: Any, which: str, values: list[float], ticks: list[float] | None) -> None:
    """Log-scale axis ``which`` ("x" or "y") when its values span ``LOG_RANGE`` or more; plain-number labels."""
    from matplotlib import ticker

    if not values or max(values) / min(values) < LOG_RANGE:
        return
    getattr(ax, f"set_{which}scale")("log")
    axis = getattr(ax, f"{which}axis")
    axis.set_major_locator(ticker.FixedLocator(ticks) if ticks else ticker.LogLocator(subs=(1, 2, 5)))
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:,g}"))
    axis.set_minor_locator(ticker.NullLocator())


def draw_panel(ax: Any, points: list[Point], panel: tuple[str, ...], fixed: str) -> None:
    grid, x, y, title, xlabel, ylabel = panel
    lines = series(points, grid, x, y)
    for peer, (xs, ys) in lines.items():
        width = 2.5 if peer == "bpeforge" else 1.5
        ax.plot(xs, ys, marker="o", linewidth=width, color=COLORS.get(peer), label=peer)
    ticks = sorted({p[x] for p in points if p["grid"] == grid})
    _set_scale(ax, "x", ticks, ticks)
    _set_scale(ax, "y", [v for _, ys in lines.values() for v in ys], None)
    ax.set(title=f"{title} ({fixed})", xlabel=xlabel, ylabel=ylabel)
    ax.grid(True, which="major", alpha=0.3)


def _title(meta: dict[str, Any]) -> str:
    runs = "one run" if meta["repeat"] == 1 else f"best of {meta['repeat']}"
    return (
        f"BPE training scaling: {meta['cores']} cores ({meta['cpu']}), {meta['date'][:10]}\n"
        f"Gutenberg prefixes; {runs} per point, each in a fresh process; time = the training call, "
        f"memory = the child's peak RSS\nbpeforge: {meta.get('bpeforge', 'repository at ' + meta['git'])}"
    )


def figure_notes(points: list[Point]) -> list[str]:
    """Per grid and peer, the first point that was not measured (later ones follow from it)."""
    notes: dict[tuple[str, str], str] = {}
    for point in points:
        for row in point["rows"]:
            if row["status"] in ("timeout", "failed", "not installed"):
                where = f"{point['size_mb']:g} MB, vocab {point['vocab_size']:,}"
                notes.setdefault((point["grid"], row["peer"]), f"{row['peer']} {row['status']} at {where}")
    return list(notes.values())


def draw(data: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # before pyplot: no display
    import matplotlib.pyplot as plt

    meta, points = data["meta"], data["points"]
    fixed = {"corpus": f"vocab {meta['vocab_size']:,}", "vocab": f"{meta['fixed_mb']:g} MB corpus"}
    fig, axes = plt.subplots(2, 2, figsize=(13, 10))
    for ax, panel in zip(axes.flat, PANELS):
        draw_panel(ax, points, panel, fixed[panel[0]])
    fig.suptitle(_title(meta), fontsize=11)
    handles = {label: h for ax in axes.flat for h, label in zip(*ax.get_legend_handles_labels())}
    legend_y = 0.895  # under the three title lines, above the panels
    fig.legend(handles.values(), handles.keys(), loc="center", bbox_to_anchor=(0.5, legend_y), ncol=len(handles))
    notes = figure_notes(points)
    if notes:
        fig.text(0.5, 0.01, "Not measured: " + "; ".join(notes), ha="center", fontsize=9, wrap=True)
    fig.subplots_adjust(
        left=0.07, right=0.98, top=legend_y - 0.05, bottom=0.1 if notes else 0.07, hspace=0.3, wspace=0.2
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.from_json:
        data = json.loads(args.from_json.read_text())
    else:
        data = measure(args)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=2))
        log(f"wrote {args.json} ({data['meta']['elapsed_s']:.0f} s of training)")
    draw(data, args.out)
    log(f"wrote {args.out}")
    print(render_table(data["points"]))
    for line in problems(data["points"]):
        print(f"- {line}")


if __name__ == "__main__":
    main()
