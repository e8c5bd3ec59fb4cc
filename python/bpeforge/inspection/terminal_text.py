"""Text from files made safe to print on a terminal.

A corpus, a token, a file name or a pattern may hold ESC (which starts escape sequences that move the cursor,
recolour, retitle the window or, on some terminals, write files), BEL, a carriage return (which overwrites
the line shown), or the Unicode bidirectional overrides and isolates (U+202E shows `txt.exe` as `exe.txt`).
Printed raw, text could drive the terminal or disguise itself; here each such character is shown as a
visible stand-in instead: a C0 control as its Control Picture (ESC as `␛`, CR as `␍`), the others as `\\xNN`
or `\\uNNNN`.
"""

from __future__ import annotations

import re

# C0 controls, DEL and C1 controls; the bidirectional embeddings, overrides and isolates, and the marks.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL_PICTURES = 0x2400  # U+2400 + n is the picture of the C0 control n: ␀ … ␟


def _stand_in(char: str) -> str:
    code = ord(char)
    if code < 0x20:
        return chr(_CONTROL_PICTURES + code)
    if code == 0x7F:
        return "␡"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_safe(text: str, *, keep: str = "\n\t") -> str:
    """`text` with every control and bidirectional-override character shown as a visible stand-in; the
    characters in `keep` (newline and tab unless told) are left as they are."""
    return _UNSAFE.sub(lambda found: found[0] if found[0] in keep else _stand_in(found[0]), text)
