"""The demo corpus: the Python standard library's own `.py` files.

Every Python install has them, so `bpeforge train --demo` runs anywhere without
a download. Files that are not valid UTF-8 (a few tests declare another
encoding on purpose) are left out rather than failing the demo.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path


def stdlib_sources() -> list[str]:
    """Sorted paths of the stdlib's UTF-8 `.py` files (site-packages excluded)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    paths = []
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts or "dist-packages" in path.parts:
            continue
        try:
            path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        paths.append(str(path))
    if not paths:
        raise FileNotFoundError(f"no Python source files found under {root} for the demo corpus")
    return paths
