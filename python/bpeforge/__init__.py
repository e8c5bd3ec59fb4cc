"""bpeforge: byte-level BPE tokenizer training with a Rust core.

>>> import bpeforge
>>> bpeforge.pretokenize("Hello world's  end")
['Hello', ' world', "'s", ' ', ' end']
"""

from bpeforge._core import PATTERNS
from bpeforge._core import build_info as _build_info
from bpeforge._core import pretokenize as _pretokenize
from bpeforge.counts import Counts, count, load_counts, merge_counts, save_counts, train_from_counts
from bpeforge.formats.gpt2 import load
from bpeforge.patterns import normalize_pattern
from bpeforge.saving import save
from bpeforge.superbpe import train_superbpe
from bpeforge.tokenizer import Tokenizer
from bpeforge.train import TrainingNote, TrainResult, TrainStats, train, train_bpe, train_from_iterator
from bpeforge.transformers_patch import patch_transformers, unpatch_transformers


def pretokenize(text: str, pattern: str = "gpt2") -> list[str]:
    """The pre-tokens of one document (special tokens are not split off) with a
    preset ("gpt2", "cl100k", "o200k", "llama3", "qwen2") or a custom regex."""
    return _pretokenize(text, normalize_pattern(pattern))


def build_info() -> dict[str, object]:
    """What this build runs on this CPU, as a dict:

    - ``arch``: the CPU architecture ("x86_64", "aarch64", ...);
    - ``simd_level``: the SIMD level the pre-tokenizer's scanners run at
      ("baseline", "avx2", "avx512" or "neon");
    - ``simd_best``: the best level this CPU has; ``simd_levels``: all it has;
    - ``simd_cap``: the environment variable ``BPEFORGE_SIMD`` as read at the
      first scan (``None`` where unset), which caps the level;
    - ``cpu_features``: the CPU features the levels depend on that it has;
    - ``simd_note``: why the cap was not taken as given (a level above what
      the CPU has, or no level name), else ``None``;
    - ``unicode_version``: the Unicode version of the pre-tokenizer's
      character classes (that of tiktoken's and ``tokenizers``' regex engines).
    """
    return dict(_build_info())


def __getattr__(name: str) -> str:
    # `__version__` is read from the installed metadata only when asked:
    # importing `importlib.metadata` took a fifth of `import bpeforge`.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("bpeforge")
        except PackageNotFoundError:  # running from a source tree without installing
            return "0+unknown"
    raise AttributeError(f"module 'bpeforge' has no attribute {name!r}")


__all__ = [
    "PATTERNS",
    "Counts",
    "Tokenizer",
    "TrainResult",
    "TrainStats",
    "TrainingNote",
    "__version__",
    "build_info",
    "count",
    "load",
    "load_counts",
    "merge_counts",
    "patch_transformers",
    "pretokenize",
    "save",
    "save_counts",
    "train",
    "train_bpe",
    "train_from_counts",
    "train_from_iterator",
    "train_superbpe",
    "unpatch_transformers",
]
