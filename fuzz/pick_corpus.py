"""Pick a small seed corpus for one fuzz target: a greedy set cover of the coverage edges.

libFuzzer's own minimization (`cargo fuzz cmin`) keeps one file per new feature, smallest first,
which leaves hundreds of files for a target with a few thousand edges. This script reads the
control file of a libFuzzer merge (which records the edges each input covers) and keeps the inputs
that add the most edges, largest gain first, until every edge is covered or `--max-files` are kept.

    fuzz/target/x86_64-unknown-linux-gnu/release/TARGET -merge=1 -merge_control_file=CTL EMPTY_DIR INPUTS...
    python fuzz/pick_corpus.py CTL fuzz/corpus/TARGET --max-files 40
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path


def read_control_file(path: Path) -> dict[str, set[int]]:
    lines = path.read_text().splitlines()
    count = int(lines[0])
    files = lines[2 : 2 + count]
    edges: dict[str, set[int]] = {}
    for line in lines[2 + count :]:
        kind, index, *values = line.split()
        if kind == "COV":
            edges[files[int(index)]] = {int(v) for v in values}
    return edges


def greedy_cover(edges: dict[str, set[int]], max_files: int) -> list[str]:
    uncovered = set().union(*edges.values()) if edges else set()
    chosen: list[str] = []
    while uncovered and len(chosen) < max_files:
        # Most new edges first; among equals the smaller file, then the name (deterministic).
        best = max(edges, key=lambda f: (len(edges[f] & uncovered), -Path(f).stat().st_size, f))
        gain = edges[best] & uncovered
        if not gain:
            break
        chosen.append(best)
        uncovered -= gain
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("control_file", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--max-files", type=int, default=40)
    args = parser.parse_args()
    edges = read_control_file(args.control_file)
    chosen = greedy_cover(edges, args.max_files)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name in chosen:
        shutil.copy(name, args.out_dir / Path(name).name)
    total = len(set().union(*edges.values())) if edges else 0
    covered = len(set().union(*(edges[f] for f in chosen))) if chosen else 0
    print(f"{args.out_dir}: {len(chosen)} of {len(edges)} inputs cover {covered} of {total} edges")


if __name__ == "__main__":
    main()
