"""Write a large benchmark corpus from the shared ones: each round is every shared corpus with its documents
in another seeded order, in whole rounds until the file reaches the size asked for.

    python benchmarks/make_big_corpus.py --gb 5 --out /tmp/corpora/big_5GB.txt

Documents keep their `\\n<|endoftext|>\\n` separators, so the result trains and encodes like the corpora it comes
from. A figure measured on it should say so (the issue asks for it): the text repeats, in other orders, so its
distinct pre-tokens are those of the shared corpora, not those of 5 GB of new text. Never write it into the repo.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from bench_encode import locate_corpus
from bpeforge.formats.atomic import check_output, open_atomically

SEPARATOR = b"\n<|endoftext|>\n"
CORPORA = ("gutenberg", "20news", "multilingual")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gb", type=float, default=5.0, help="size to reach, in 10^9 bytes (default 5)")
    parser.add_argument("--out", type=Path, required=True, help="the file to write (outside the repo)")
    parser.add_argument("--force", action="store_true", help="replace --out if it exists")
    args = parser.parse_args(argv)
    if args.gb <= 0:
        parser.error("--gb must be positive")
    try:
        # The product's own output policy: never over a source corpus, a
        # directory or an existing file without --force.
        check_output(args.out, inputs=[locate_corpus(name) for name in CORPORA], overwrite=args.force)
    except (ValueError, OSError) as exc:  # UnsafeOutputError, FileExistsError
        parser.error(str(exc))
    return args


def documents(name: str) -> list[bytes]:
    path = locate_corpus(name)
    if path.suffix == ".xz":
        import lzma

        with lzma.open(path) as f:
            data = f.read()
    else:
        data = path.read_bytes()
    return data.split(SEPARATOR)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    target = int(args.gb * 1e9)
    corpora = {name: documents(name) for name in CORPORA}
    written, rounds = 0, 0
    with open_atomically(args.out) as out:
        while written < target:
            for name, docs in corpora.items():
                order = list(range(len(docs)))
                random.Random(rounds * len(CORPORA) + CORPORA.index(name)).shuffle(order)
                for i in order:
                    if written:
                        written += out.write(SEPARATOR)
                    written += out.write(docs[i])
            rounds += 1
    print(f"wrote {args.out}: {written:,} bytes, {rounds} round(s) of {', '.join(CORPORA)} in shuffled orders")


if __name__ == "__main__":
    main()
