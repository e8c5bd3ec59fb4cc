"""Showing where a tokenizer cuts a text: coloured token boundaries, in a
terminal or as a self-contained HTML page (`bpeforge show`).

A token can end inside a UTF-8 character (byte-level BPE does that with rare
characters). Such tokens are shown together with the ones that complete the
character, as one piece listing all their ids, so that every piece is text.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

from bpeforge.formats.atomic import write_text_atomically
from bpeforge.inspection.terminal_text import terminal_safe
from bpeforge.inspection.token_text import show_token
from bpeforge.tokenizer import Tokenizer

# Pastel backgrounds, readable with black text; neighbours always differ.
PALETTE = ["#ffd6a5", "#caffbf", "#9bf6ff", "#bdb2ff", "#ffadad", "#fdffb6"]
ANSI_BACKGROUNDS = [223, 157, 159, 183, 217, 229]  # the palette in xterm-256 colours
SHOWN_PIECE_CHARS = 80  # a longer token is shown cut, with its length
SHOWN_IDS = 200  # ids listed after the text; the rest are counted


@dataclass(frozen=True)
class Piece:
    ids: list[int]
    raw: bytes
    text: str


def pieces(tokenizer: Tokenizer, text: str) -> list[Piece]:
    """The text's tokens in order, those splitting a character joined with their neighbours."""
    out: list[Piece] = []
    ids: list[int] = []
    raw = b""
    for token_id in tokenizer.encode(text):
        ids.append(token_id)
        raw += tokenizer.id_to_token(token_id)
        try:
            decoded = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue  # a character continues in the next token
        out.append(Piece(ids, raw, decoded))
        ids, raw = [], b""
    if ids:
        out.append(Piece(ids, raw, raw.decode("utf-8", errors="replace")))
    return out


def terminal(pieces_: list[Piece], *, color: bool) -> str:
    """Pieces on coloured backgrounds (or between `|` without colour), then their ids. Control characters
    and bidirectional overrides are shown as visible stand-ins, never sent to the terminal."""
    shown = []
    for index, piece in enumerate(pieces_):
        text = terminal_safe(_cut(piece.text).replace("\n", "↵\n").replace("\t", "→"), keep="\n")
        if color:
            shown.append(f"\x1b[30;48;5;{ANSI_BACKGROUNDS[index % len(ANSI_BACKGROUNDS)]}m{text}\x1b[0m")
        else:
            shown.append(text)
    ids = [token_id for piece in pieces_ for token_id in piece.ids]
    joined = "".join(shown) if color else "|".join(shown)
    listed = ids if len(ids) <= SHOWN_IDS else f"{ids[:SHOWN_IDS]} … ({len(ids) - SHOWN_IDS:,} more)"
    return f"{joined}\n\n{len(ids)} tokens: {listed}"


def _cut(text: str) -> str:
    """A piece as shown: cut after `SHOWN_PIECE_CHARS`, with its length."""
    if len(text) <= SHOWN_PIECE_CHARS:
        return text
    return f"{text[:SHOWN_PIECE_CHARS]}… ({len(text.encode('utf-8')):,} bytes)"


def html_page(pieces_: list[Piece], *, title: str) -> str:
    """A page with no external resources: every token coloured, its ids and bytes on hover.

    A token is also shown as hovered when the page's address ends in `#tN`
    (its position), so a tooltip can be linked to, and checked in a browser.
    """
    spans = "".join(_span(index, piece) for index, piece in enumerate(pieces_))
    tokens = sum(len(piece.ids) for piece in pieces_)
    size = sum(len(piece.raw) for piece in pieces_)
    ratio = f"{size / tokens:.2f}" if tokens else "-"
    colours = "".join(f".c{i}{{background:{c}}}" for i, c in enumerate(PALETTE))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body{{margin:24px;background:#fff;color:#111;font:17px/2.1 "DejaVu Sans Mono",ui-monospace,monospace}}
header{{font:14px/1.4 "DejaVu Sans",sans-serif;color:#444;margin-bottom:14px}}
.text{{white-space:pre-wrap;overflow-wrap:anywhere}}
.t{{position:relative;border-radius:3px;padding:3px 0}}
{colours}
.t:hover,.t:target{{outline:2px solid #222}}
.t:hover::after,.t:target::after{{content:attr(data-tip);position:absolute;left:0;top:110%;z-index:1;
background:#222;color:#fff;padding:1px 7px;border-radius:3px;white-space:pre;font-size:13px;line-height:1.6}}
.nl{{color:#777}}
</style></head>
<body><header>{html.escape(title)} &middot; {tokens} tokens, {size} bytes, {ratio} bytes/token &middot;
hover a token for its ids</header>
<div class="text">{spans}</div>
</body></html>
"""


def _span(index: int, piece: Piece) -> str:
    ids = " ".join(str(i) for i in piece.ids)
    tip = f"id {ids}  {show_token(piece.raw)}"
    text = html.escape(terminal_safe(_cut(piece.text))).replace("\n", '<span class="nl">↵</span>\n')
    return f'<span class="t c{index % len(PALETTE)}" id="t{index}" data-tip="{html.escape(tip)}">{text}</span>'


def save_html(pieces_: list[Piece], path: Path, *, title: str, overwrite: bool, inputs: tuple = ()) -> Path:
    return write_text_atomically(path, html_page(pieces_, title=title), overwrite=overwrite, inputs=inputs)
