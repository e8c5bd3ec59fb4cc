r"""Regexes for Oniguruma, the engine of HF `tokenizers`: the same matches as in bpeforge's engine.

Two constructs differ: `$` is end of text in bpeforge (fancy-regex, Python's `regex`) but end of line in
Oniguruma (Ruby syntax), and `X{n,m}+` is possessive here but `(X{n,m})+` there. `onig_regex` rewrites
both for export; `from_onig_regex` undoes it on load. Found by comparing cl100k's pieces in HF and
bpeforge; tests/test_hf_export.py checks every preset on the corpora.
"""

from __future__ import annotations

import re

# A quantified atom followed by a possessive interval, `X{n,m}+`: possessive in Python's `regex` and
# fancy-regex, but in Oniguruma (Ruby syntax) `X{n,m}` repeated one or more times.
_POSSESSIVE_INTERVAL = re.compile(
    r"(\\p\{\w+\}|\\.|\[(?:\\.|[^\]\\])*\]|\((?:\\.|[^()\\])*\)|[^\\()\[\]{}])(\{\d+(?:,\d*)?\})\+"
)


def onig_regex(source: str) -> str:
    r"""`source` (bpeforge's regex syntax) as Oniguruma, HF's engine, reads it with the same matches: `$`
    outside a class is end of text in bpeforge but end of line in Oniguruma, so it becomes `\z`; `X{n,m}+`
    (possessive) becomes the atomic group `(?>X{n,m})`. `from_onig_regex` undoes both. Checked on every
    preset and the corpora by tests/test_hf_export.py; other constructs are passed through as they are."""
    return _POSSESSIVE_INTERVAL.sub(r"(?>\1\2)", _swap_outside_classes(source, "$", r"\z"))


def from_onig_regex(source: str) -> str:
    """`onig_regex` undone: the regex as bpeforge saved it (`\\z` and `(?>X{n,m})` mean the same in
    bpeforge's engine, so a regex that had them to begin with keeps its meaning)."""
    return _ATOMIC_INTERVAL.sub(r"\1\2+", _swap_outside_classes(source, r"\z", "$"))


_ATOMIC_INTERVAL = re.compile(r"\(\?>" + _POSSESSIVE_INTERVAL.pattern[:-2] + r"\)")


def _swap_outside_classes(source: str, old: str, new: str) -> str:
    """`source` with the token `old` (`$` or an escape) replaced by `new` wherever it stands outside a
    character class; escapes are read as one token each."""
    out, in_class, i = [], False, 0
    while i < len(source):
        token = source[i : i + 2] if source[i] == "\\" else source[i]
        if token == "[" and not in_class:
            in_class = True
        elif token == "]" and in_class:
            in_class = False
        out.append(new if token == old and not in_class else token)
        i += len(token)
    return "".join(out)


def reads_alike(regex: str) -> bool:
    """Whether an Oniguruma regex from a `tokenizer.json` has none of what the engines read apart: `X{n,m}+`,
    escapes only Oniguruma has or reads otherwise (even escaped themselves: a false alarm only loads the file
    as a pipeline, which reads it as Oniguruma does), and line anchors outside classes."""
    return not _READ_APART.search(regex) and not _LINE_ANCHOR.search(_outside_classes(regex))


_READ_APART = re.compile(r"\{\d+(?:,\d*)?\}\+|\\[hHZRXKGOyY]|\(\?~")
_LINE_ANCHOR = re.compile(r"[$^]")


def _outside_classes(regex: str) -> str:
    """`regex` without its character classes and escapes (an escape is read as one token)."""
    out, in_class, i = [], False, 0
    while i < len(regex):
        token = regex[i : i + 2] if regex[i] == "\\" else regex[i]
        if token == "[" and not in_class:
            in_class = True
        elif token == "]" and in_class:
            in_class = False
        elif not in_class and len(token) == 1:
            out.append(token)
        i += len(token)
    return "".join(out)
