"""Tokens as people read them, in every report and picture that shows one."""

from __future__ import annotations

# Tokens longer than this are shown cut, with their length: a corpus with one
# 5 MB pre-token must not print 5 MB to the terminal.
SHOWN_TOKEN_BYTES = 40


def show_token(token: bytes, limit: int = SHOWN_TOKEN_BYTES) -> str:
    """A token for humans: its text if it is UTF-8, else its escaped bytes;
    cut after `limit` bytes, with its length: `'aaaa…' (5,000,000 bytes)`."""
    head = token[:limit]
    try:
        token.decode("utf-8")
        shown = repr(head.decode("utf-8", errors="ignore"))  # a cut may split a char: drop its part
    except UnicodeDecodeError:
        shown = repr(head)
    if len(token) <= limit:
        return shown
    return f"{shown[:-1]}…{shown[-1]} ({len(token):,} bytes)"
