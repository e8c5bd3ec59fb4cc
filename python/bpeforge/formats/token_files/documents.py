"""Where a stack puts its document separator (EOD / EOT / EOS), and a batch of documents with it added.

Each stack's own preprocessing script decides:

- `after`: after every document, an empty one too (nanoGPT's `prepare.py`, datatrove's EOS post-processor,
  OLMo's EOS);
- `after_nonempty`: after every document that has tokens (Megatron's `preprocess_data.py --append-eod` adds
  EOD to a document's last sentence, and an empty document has none);
- `before`: before every document (llm.c's `fineweb.py` starts each document with `<|endoftext|>`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

AFTER = "after"
AFTER_NONEMPTY = "after_nonempty"
BEFORE = "before"


def with_separators(
    ids: np.ndarray, offsets: np.ndarray, separator: int | None, placement: str
) -> tuple[np.ndarray, np.ndarray]:
    """The ids of a batch of documents (`ids[offsets[i]:offsets[i + 1]]` is document i) with `separator` put
    where `placement` says, and each document's length with it."""
    import numpy as np

    lengths = np.diff(offsets)
    if separator is None:
        return ids, lengths
    if placement == BEFORE:
        return np.insert(ids, offsets[:-1], separator), lengths + 1
    if placement == AFTER:
        return np.insert(ids, offsets[1:], separator), lengths + 1
    nonempty = lengths > 0
    return np.insert(ids, offsets[1:][nonempty], separator), lengths + nonempty
