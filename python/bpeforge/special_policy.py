"""The special-token policy of `encode`, tiktoken's, shared by `Tokenizer` and `bpeforge.tiktoken`: which
special tokens in a text are tokens, and which refuse the text.

`allowed_special` ("all" or a set) are encoded as their ids; the others are
plain text. `disallowed_special` ("all": every special not allowed; or a
collection; `()` for none) make `encode` raise ValueError when they occur in
the text: a special token in user text is a prompt-injection risk, so tiktoken
refuses it unless the caller says what it means.

Both run in the Rust core over one Aho-Corasick search of all the special
tokens, given as masks: no vocabulary is copied and no encoder is built per
call. Searching all of them and skipping a match that is not wanted (by one
char, as tiktoken does) finds exactly the leftmost wanted one when no special
token is a prefix of another; when one is, or when `disallowed_special` names
strings that are not special tokens, the check runs tiktoken's way instead (a
regex over the disallowed strings), so that no disallowed occurrence slips by.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable
from typing import Any, NoReturn

Mask = list[bool]


class SpecialPolicy:
    """The special tokens of one encoder, in the encoder's order, with the masks calls pass to the core."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = list(names)
        self.name_set = frozenset(self.names)
        self.none: Mask = [False] * len(self.names)
        self.all: Mask = [True] * len(self.names)
        self._core_search_is_exact = not any(a != b and b.startswith(a) for a in self.names for b in self.names)

    def resolve(self, allowed_special: Any, disallowed_special: Any) -> tuple[Mask, Collection[str]]:
        """The mask of allowed specials and the strings to refuse, from tiktoken's two arguments."""
        if disallowed_special == "all" and not allowed_special and not isinstance(allowed_special, str):
            # The defaults, first: on one sentence the general path below was a fifth of the call.
            return self.none, self.name_set
        if allowed_special == "all":
            allowed_special = self.name_set
        elif isinstance(allowed_special, str):
            raise TypeError(f'allowed_special must be "all" or a set of special tokens, not {allowed_special!r}')
        if disallowed_special == "all":
            disallowed_special = self.name_set - set(allowed_special)
        elif isinstance(disallowed_special, str):
            raise TypeError(
                f'disallowed_special must be "all" or a collection of special tokens, not {disallowed_special!r}'
            )
        if not allowed_special:
            return self.none, disallowed_special
        return [name in allowed_special for name in self.names], disallowed_special

    def check(self, core: Any, text: str, disallowed: Collection[str]) -> None:
        """Raise tiktoken's ValueError if a `disallowed` string occurs in `text`."""
        if not disallowed:
            return
        if disallowed is self.name_set and self._core_search_is_exact:
            found = core.find_special(text, self.all)
        elif self._core_search_is_exact and all(token in self.name_set for token in disallowed):
            found = core.find_special(text, [name in disallowed for name in self.names])
        else:
            match = _regex_of(frozenset(disallowed)).search(text)
            found = match.group() if match else None
        if found is not None:
            raise_disallowed_special_token(found)


@functools.lru_cache(maxsize=128)
def _regex_of(tokens: frozenset[str]) -> Any:
    try:
        import regex as re
    except ImportError:
        import re
    return re.compile("|".join(re.escape(token) for token in sorted(tokens, key=len, reverse=True)))


def raise_disallowed_special_token(token: str) -> NoReturn:
    """tiktoken's error, word for word: code that matches on its text keeps working."""
    raise ValueError(
        f"Encountered text corresponding to disallowed special token {token!r}.\n"
        "If you want this text to be encoded as a special token, "
        f"pass it to `allowed_special`, e.g. `allowed_special={{{token!r}, ...}}`.\n"
        f"If you want this text to be encoded as normal text, disable the check for this token "
        f"by passing `disallowed_special=(enc.special_tokens_set - {{{token!r}}})`.\n"
        "To disable this check for all special tokens, pass `disallowed_special=()`.\n"
    )
