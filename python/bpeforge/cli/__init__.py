"""The `bpeforge` command: `parser` reads the arguments and reports errors; one module per group of
subcommands (`train`, `encode`, `inspect`, `convert`, and `on_ray` for `--ray`) turns them into calls of the
library. Nothing below the CLI imports it."""

from bpeforge.cli.parser import main

__all__ = ["main"]
