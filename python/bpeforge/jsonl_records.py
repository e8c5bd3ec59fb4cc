"""JSON Lines records encoded by the Rust core, a block at a time, for `bpeforge encode`.

The core reads the file (through its decoders), parses each record's text field and encodes the documents in
parallel (`_core.Encoder.encode_jsonl`), a block of about 4 MiB at a time, read one block ahead. Lines it is
not sure of come back as they are, each with its place among the documents: bad records, and the rare JSON
its parser refuses but Python's reads (NaN, a lone surrogate escape outside the text field). They are read
here by `inputs.record_text_or_skip`, the function `inputs.jsonl_texts` reads every line with: so the
documents, the errors and the records skipped are those of the Python path, in the same order.

Why: parsing JSON in Python held `bpeforge encode` of JSON Lines to a fraction of what the encoder does.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from bpeforge.inputs import RecordOptions, record_text_or_skip

if TYPE_CHECKING:
    import numpy as np

    from bpeforge.tokenizer import Tokenizer


def core_reads_jsonl(tokenizer: Tokenizer, records: RecordOptions) -> bool:
    """Whether the core can read `tokenizer`'s JSON Lines: not for a tokenizer.json pipeline (its own steps run
    in Python's batches), nor for a text field with no UTF-8 form (a lone surrogate: Python compares it as is)."""
    if tokenizer.runs_pipeline or not hasattr(tokenizer._core, "encode_jsonl"):
        return False
    try:
        records.text_field.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def jsonl_batches(
    tokenizer: Tokenizer,
    path: Path,
    records: RecordOptions,
    threads: int | None,
    block_bytes: int | None = None,
) -> Iterator[tuple[np.ndarray, np.ndarray, int]]:
    """`(ids, offsets, text_bytes)` of the documents of `path`, in order: `ids[offsets[i]:offsets[i + 1]]` are
    document i's ids (uint32), and `text_bytes` the bytes of text encoded since the last item. `offsets` may
    hold one entry (no documents: only bytes to count). `block_bytes`: the core's blocks (None: its own)."""
    import numpy as np

    blocks = tokenizer._core.encode_jsonl(os.fspath(path), records.text_field, threads, block_bytes)
    for ids, offsets, text_bytes, for_python in blocks:
        ids, offsets = np.asarray(ids), np.frombuffer(offsets, dtype="<i8")
        read = [(before, record_text_or_skip(path, number, line, records)) for before, number, line in for_python]
        read = [(before, text) for before, text in read if text is not None]
        start, first = 0, 0
        if read:  # the texts Python read, encoded as one batch: not one call a record, where many are odd
            texts_ids, texts_offsets = tokenizer.encode_batch_to_numpy([text for _, text in read], threads)
        for before, run in itertools.groupby(read, key=lambda read: read[0]):
            texts = [text for _, text in run]
            if before > start:
                yield ids[offsets[start] : offsets[before]], offsets[start : before + 1] - offsets[start], 0
            start, end = before, first + len(texts)
            run_ids = texts_ids[texts_offsets[first] : texts_offsets[end]]
            yield run_ids, texts_offsets[first : end + 1] - texts_offsets[first], sum(map(_utf8_bytes, texts))
            first = end
        yield ids[offsets[start] :], offsets[start:] - offsets[start], text_bytes


def _utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8"))
