"""docs/api.md stays true: every example runs, and every public name is on the page.

Each ```python block runs in a fresh namespace in a temporary directory, after
the page's first block (the `corpus()` helper the others use). A block marked
`<!-- api-test: skip (why) -->` just before it is skipped, with the reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import bpeforge
import bpeforge.ray
import bpeforge.tiktoken
import pytest

API = Path(__file__).resolve().parent.parent / "docs" / "api.md"
BLOCK = re.compile(r"(?:<!-- api-test: skip \((?P<why>[^)]*)\) -->\n)?```python\n(?P<code>.*?)```", re.S)


def blocks() -> list[tuple[str, str, str | None]]:
    """`(heading, code, skip reason)` of every python block, in page order."""
    text = API.read_text(encoding="utf-8")
    found = []
    for match in BLOCK.finditer(text):
        headings = re.findall(r"^#+ (.+)$", text[: match.start()], re.M)
        found.append((headings[-1] if headings else "top", match["code"], match["why"]))
    return found


SETUP, *EXAMPLES = blocks()


@pytest.mark.parametrize(
    ("heading", "code", "skip"), EXAMPLES, ids=[f"{i}-{h[:30]}" for i, (h, _, _) in enumerate(EXAMPLES)]
)
def test_example_runs(heading, code, skip, tmp_path, monkeypatch):
    if skip:
        pytest.skip(skip)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "api_example"}
    exec(compile(SETUP[1] + "\n" + code, f"docs/api.md: {heading}", "exec"), namespace)


def public(names) -> list[str]:
    return [name for name in names if not name.startswith("_")]


@pytest.mark.parametrize(
    "names",
    [
        bpeforge.__all__,
        public(dir(bpeforge.Tokenizer)),
        public(dir(bpeforge.Counts)),
        bpeforge.ray.__all__,
        bpeforge.tiktoken.__all__,
    ],
    ids=["bpeforge", "Tokenizer", "Counts", "bpeforge.ray", "bpeforge.tiktoken"],
)
def test_every_public_name_is_documented(names):
    text = API.read_text(encoding="utf-8")
    missing = [name for name in names if not re.search(rf"\b{re.escape(name)}\b", text)]
    assert not missing, f"docs/api.md does not mention {missing}"


def test_examples_were_found():
    assert len(EXAMPLES) >= 6 and "def corpus" in SETUP[1]
