"""bpeforge: byte-level BPE tokenizer training with a Rust core.

>>> import bpeforge
>>> bpeforge.pretokenize("Hello world's  end")
['Hello', ' world', "'s", ' ', ' end']
"""

from importlib.metadata import PackageNotFoundError, version

from bpeforge._core import PATTERNS
from bpeforge._core import pretokenize as _pretokenize
from bpeforge.counts import Counts, count, load_counts, merge_counts, save_counts, train_from_counts
from bpeforge.formats.gpt2 import load
from bpeforge.patterns import normalize_pattern
from bpeforge.tokenizer import Tokenizer, save
from bpeforge.train import TrainingNote, TrainResult, TrainStats, train, train_bpe, train_from_iterator


def pretokenize(text: str, pattern: str = "gpt2") -> list[str]:
    """The pre-tokens of one document (special tokens are not split off) with a
    preset ("gpt2", "cl100k", "o200k", "llama3", "qwen2") or a custom regex."""
    return _pretokenize(text, normalize_pattern(pattern))


try:
    __version__ = version("bpeforge")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0+unknown"

__all__ = [
    "PATTERNS",
    "Counts",
    "Tokenizer",
    "TrainResult",
    "TrainStats",
    "TrainingNote",
    "__version__",
    "count",
    "load",
    "load_counts",
    "merge_counts",
    "pretokenize",
    "save",
    "save_counts",
    "train",
    "train_bpe",
    "train_from_counts",
    "train_from_iterator",
]
