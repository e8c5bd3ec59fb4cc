"""Checks of arguments that several entry points share (training and the tokenizer)."""

from __future__ import annotations


def check_positive(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
