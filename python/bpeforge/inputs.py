"""Training inputs in the shapes corpora come in.

- text files, plain or `.gz`/`.xz`/`.zst` (read by the Rust core, in parallel);
- directories, searched recursively (`glob` filters file names, default all);
- JSON Lines (`.jsonl`/`.ndjson`, compressed too): each record's `text_field`
  is a document;
- Parquet (`.parquet`, via pyarrow): each row's `text_column` is a document;
- any iterator of strings (`train_from_iterator`): each string is a document.

Every input ends in one count table, so the merges are those of the same
documents in one plain file separated by a special token. Records are handed
to the core in batches of about `BATCH_CHARS`, counted in parallel with the
GIL released.
"""

from __future__ import annotations

import errno
import json
import os
import queue
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bpeforge import _core
from bpeforge.arguments import thread_count

BATCH_CHARS = 1 << 20
READ_BYTES = 1 << 20
COMPRESSIONS = (".gz", ".gzip", ".xz", ".zst", ".zstd")
JSONL_SUFFIXES = (".jsonl", ".ndjson")
SUPPORTED = "text files (plain, .gz, .xz, .zst), JSON Lines (.jsonl, .ndjson, also compressed), Parquet (.parquet)"


@dataclass
class RecordOptions:
    """How documents are found in record files."""

    text_field: str = "text"
    text_column: str = "text"
    skip_bad_records: bool = False
    skipped: list[str] = field(default_factory=list)  # "file:line: why" of each record skipped


def expand(paths: Sequence[str | os.PathLike[str]], glob: str | None = None) -> list[Path]:
    """Files of `paths`, directories searched recursively in sorted order (hidden files left out).

    Symbolic links are followed, to files and to folders alike; a folder met again through a link (a loop, or
    two links to one folder) is read once. A link inside a folder that leads nowhere is an error: its text
    would be missing from the run unsaid."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = _files_under(path, glob or "*")
            if not found:
                what = f"no files matching {glob!r}" if glob else "no files"
                raise IsADirectoryError(errno.EISDIR, f"a directory with {what} to read", os.fspath(path))
            files.extend(found)
        else:
            files.append(path)
    return files


def _files_under(root: Path, glob: str) -> list[Path]:
    """The files under `root` whose path matches `glob` (as `Path.rglob` matches), hidden ones left out,
    sorted; folders followed through links, each real folder once."""
    found: list[Path] = []
    walked: set[str] = set()
    for folder, subfolders, names in os.walk(root, onerror=_raise, followlinks=True):
        real = os.path.realpath(folder)
        if real in walked:
            subfolders.clear()  # a loop, or a folder reached before by another link: read once
            continue
        walked.add(real)
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
        for name in names:
            path = Path(folder, name)
            if name.startswith(".") or not path.relative_to(root).match(glob):
                continue
            if not path.exists():
                raise FileNotFoundError(
                    errno.ENOENT, "a symbolic link in the input folder leads to no file; remove or fix it", str(path)
                )
            if path.is_file():
                found.append(path)
    return sorted(found)


def _raise(error: OSError) -> None:
    """A folder that cannot be listed is an error (os.walk would skip it, and its files with it)."""
    raise error


def kind(path: Path) -> str:
    """ "text", "jsonl" or "parquet", by name (compression suffixes looked through)."""
    name = path.name.lower()
    for suffix in COMPRESSIONS:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    if name.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if name.endswith(".parquet"):
        if name != path.name.lower():
            raise ValueError(f"{path}: a compressed Parquet file; Parquet compresses inside the file, use it as is")
        return "parquet"
    return "text"


def count_inputs(
    files: Sequence[Path],
    special_tokens: list[str],
    options: RecordOptions,
    *,
    num_threads: int | None,
    progress: Callable[[str, int, int], object] | None,
    pattern: str = "gpt2",
) -> _core.Counts:
    """One count table for all `files`: text files in the core, records in batches."""
    num_threads = thread_count(num_threads)
    text_files = [os.fspath(p) for p in files if kind(p) == "text"]
    counts = (
        _core.Counts.from_files(text_files, special_tokens, num_threads, None, progress, pattern)
        if text_files
        else _core.Counts(special_tokens, pattern)
    )
    for path in files:
        if kind(path) == "jsonl":
            add_documents(counts, jsonl_texts(path, options), num_threads)
        elif kind(path) == "parquet":
            add_documents(counts, parquet_texts(path, options.text_column), num_threads)
    return counts


def warn_skipped(skipped: list[str]) -> None:
    """Say how many records `skip_bad_records` left out, and where the first was."""
    if skipped:
        warnings.warn(f"skipped {len(skipped):,} bad records; the first: {skipped[0]}", stacklevel=3)


def add_documents(counts: _core.Counts, documents: Iterable[str], num_threads: int | None) -> None:
    """Count `documents` in batches of about `BATCH_CHARS`."""
    for batch in batched_texts(documents, BATCH_CHARS):
        counts.add_texts(batch, num_threads)


def batched_texts(documents: Iterable[str], max_chars: int) -> Iterator[list[str]]:
    batch: list[str] = []
    chars = 0
    for document in documents:
        if not isinstance(document, str):
            raise TypeError(f"documents must be str, got {type(document).__name__}")
        batch.append(document)
        chars += len(document)
        if chars >= max_chars:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


def prefetched_batches(documents: Iterable[str], max_chars: int) -> Iterator[list[str]]:
    """`batched_texts(documents, max_chars)`, the next batch read (JSON parsed, files decompressed) on a thread
    while the caller encodes this one: the core encodes without the GIL, so reading no longer waits for it.
    One batch ahead at most; an error while reading is raised here, at the batch it stopped."""
    ahead: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()

    def hand(item: tuple) -> bool:
        """Put `item` for the consumer; False once it has stopped listening."""
        while not stop.is_set():
            try:
                ahead.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            for batch in batched_texts(documents, max_chars):
                if not hand(("batch", batch)):
                    return
            hand(("end", None))
        except BaseException as err:  # handed to the consumer, which raises it
            hand(("error", err))

    reader = threading.Thread(target=read, name="bpeforge-read-ahead", daemon=True)
    reader.start()
    try:
        while True:
            what, item = ahead.get()
            if what == "end":
                return
            if what == "error":
                raise item
            yield item
    finally:
        stop.set()
        reader.join()


def jsonl_texts(path: Path, options: RecordOptions) -> Iterator[str]:
    """The `text_field` of each record; a bad record names its file and line."""
    for number, line in enumerate(_lines(path), start=1):
        if not line.strip():
            continue
        text = record_text_or_skip(path, number, line, options)
        if text is not None:
            yield text


def record_text_or_skip(path: Path, number: int, line: bytes, options: RecordOptions) -> str | None:
    """The text of the record on line `number` of `path`. A bad record raises a ValueError naming them, or
    with `skip_bad_records` is noted in `options.skipped` and gives None."""
    try:
        return _record_text(line, options.text_field)
    except ValueError as err:
        where = f"{path}:{number}: {err}"
        if not options.skip_bad_records:
            raise ValueError(f"{where} (pass --skip-bad-records to skip such records)") from None
        options.skipped.append(where)
        return None


_JSON = json.JSONDecoder()


def _record_text(line: bytes, field: str) -> str:
    try:
        # The decoder itself, on decoded text: json.loads(bytes) first guesses the encoding, a fifth of the time.
        record = _JSON.decode(line.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"not JSON ({err})") from None
    if not isinstance(record, dict) or field not in record:
        raise ValueError(f"the record has no field {field!r} (choose it with --text-field)")
    text = record[field]
    if not isinstance(text, str):
        raise ValueError(f"field {field!r} is {type(text).__name__}, not a string")
    if b"\\u" in line:  # only a \u escape can make half a UTF-16 pair: the check costs most records nothing
        _check_no_lone_surrogate(text, field)
    return text


def _check_no_lone_surrogate(text: str, field: str) -> None:
    """JSON may escape half of a UTF-16 pair (`"\\ud83d"`, common in scraped text); Python keeps it as a lone
    surrogate, which is no character and has no UTF-8: the record is bad (skippable), not a codec error later."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(
            f"field {field!r} holds a lone surrogate {text[err.start]!r} at character {err.start:,} (half of a "
            "UTF-16 pair, escaped in the JSON): it is no text"
        ) from None


def _lines(path: Path) -> Iterator[bytes]:
    """Lines of a possibly compressed file, read through the core's decoders."""
    reader = _core.InputReader(os.fspath(path))
    rest = b""
    while block := reader.read(READ_BYTES):
        lines = (rest + block).split(b"\n")
        rest = lines.pop()
        yield from lines
    if rest:
        yield rest


def parquet_texts(path: Path, column: str) -> Iterator[str]:
    """The `column` of each row, read a batch of rows at a time (null rows left out). A file pyarrow cannot
    read, or a column that is not text, is an error that names the file and the column."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(f"{path}: reading Parquet needs pyarrow: pip install 'bpeforge[parquet]'") from None
    if not os.path.exists(path):  # pyarrow's own error would not name it as Python's does
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), os.fspath(path))
    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as err:
        raise ValueError(f"{path}: not a Parquet file that can be read ({_one_line(err)})") from None
    schema = parquet.schema_arrow
    if column not in schema.names:
        raise ValueError(
            f"{path}: no column {column!r} (columns: {', '.join(schema.names)}); choose it with --text-column"
        )
    kind = schema.field(column).type
    if not _is_text(pa, kind):
        texts = [name for name in schema.names if _is_text(pa, schema.field(name).type)]
        raise ValueError(
            f"{path}: column {column!r} holds {kind}, not text (strings); choose a text column with --text-column "
            f"(text columns: {', '.join(texts) or 'none'})"
        )
    try:
        for batch in parquet.iter_batches(columns=[column], batch_size=8192):
            for text in batch.column(0).to_pylist():
                if text is not None:
                    yield text
    except (pa.ArrowException, OSError) as err:  # pyarrow's I/O and format errors name no file
        raise ValueError(f"{path}: column {column!r} cannot be read: the file is damaged ({_one_line(err)})") from None


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())


def _is_text(pa: object, kind: object) -> bool:
    """Strings (plain, large, views), or a dictionary of them."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    string_view = getattr(pa.types, "is_string_view", lambda kind: False)  # pyarrow >= 16
    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or string_view(kind)
