"""A forgiving JSON reader for load replies as they are published, not as JSON allows."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["RelaxedJSONError", "loads_at"]

# Tolerated, because published Stream Load replies contain them:
#   trailing commas, a missing comma at a line break, // -- and # comments to end of line,
#   Python-dict style single quotes and True/False/None.
# Not tolerated: anything else between tokens, and input that ends inside a value.
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_WORDS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
_WORD = re.compile(r"[A-Za-z]+")


class RelaxedJSONError(ValueError):
    """Raised when the text is not even relaxed JSON; `pos` is the offending offset."""

    def __init__(self, message: str, pos: int):
        super().__init__(message)
        self.pos = pos


class _Reader:
    def __init__(self, text: str, pos: int):
        self.text = text
        self.pos = pos

    def fail(self, message: str) -> RelaxedJSONError:
        if self.pos >= len(self.text):
            message += " (input ends here: truncated?)"
        return RelaxedJSONError(message, min(self.pos, max(len(self.text) - 1, 0)))

    def skip(self) -> bool:
        """Skip whitespace and comments; return True if a line break was crossed."""
        crossed = False
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch in " \t\r\u200b":
                self.pos += 1
            elif ch == "\n":
                crossed = True
                self.pos += 1
            elif text.startswith(("//", "--", "#"), self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            else:
                break
        return crossed

    def value(self) -> Any:
        self.skip()
        if self.pos >= len(self.text):
            raise self.fail("expected a value")
        ch = self.text[self.pos]
        if ch == "{":
            return self.container("{", "}")
        if ch == "[":
            return self.container("[", "]")
        if ch in "\"'":
            return self.string()
        number = _NUMBER.match(self.text, self.pos)
        if number:
            self.pos = number.end()
            return json.loads(number.group())
        word = _WORD.match(self.text, self.pos)
        if word and word.group() in _WORDS:
            self.pos = word.end()
            return _WORDS[word.group()]
        raise self.fail(f"unexpected {ch!r} where a value was expected")

    def string(self) -> str:
        quote = self.text[self.pos]
        out = []
        i = self.pos + 1
        while i < len(self.text):
            ch = self.text[i]
            if ch == "\\" and i + 1 < len(self.text):
                nxt = self.text[i + 1]
                if nxt == "u" and i + 6 <= len(self.text):
                    out.append(chr(int(self.text[i + 2 : i + 6], 16)))
                    i += 6
                    continue
                out.append({"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}.get(nxt, nxt))
                i += 2
                continue
            if ch == quote:
                self.pos = i + 1
                return "".join(out)
            if ch == "\n":
                self.pos = i
                raise self.fail("string is not closed on its line")
            out.append(ch)
            i += 1
        self.pos = len(self.text)
        raise self.fail("string is not closed")

    def container(self, open_: str, close: str) -> Any:
        self.pos += 1
        is_object = open_ == "{"
        out: Any = {} if is_object else []
        need_separator = False
        while True:
            crossed = self.skip()
            if self.pos >= len(self.text):
                raise self.fail(f"{open_!r} is never closed")
            ch = self.text[self.pos]
            if ch == close:
                self.pos += 1
                return out
            if ch == ",":
                self.pos += 1
                need_separator = False
                continue
            if need_separator and not crossed:
                raise self.fail(f"expected ',' or {close!r}, found {ch!r}")
            if is_object:
                if ch not in "\"'":
                    raise self.fail(f"expected a quoted key, found {ch!r}")
                key = self.string()
                self.skip()
                if self.pos >= len(self.text) or self.text[self.pos] != ":":
                    raise self.fail(f"expected ':' after key {key!r}")
                self.pos += 1
                out[key] = self.value()
            else:
                out.append(self.value())
            need_separator = True


def loads_at(text: str, pos: int) -> tuple[Any, int]:
    """Read one relaxed-JSON value starting at `pos`.

    Parameters
    ----------
    text : str
        The whole input.
    pos : int
        Offset of the value's first character (``{`` for a reply).

    Returns
    -------
    tuple of (object, int)
        The value and the offset just after it.

    Raises
    ------
    RelaxedJSONError
        With the offset of the problem.

    Examples
    --------
    >>> loads_at('{"a": 1,\\n "b": 2 // note\\n "c": \\'x\\',\\n}', 0)[0]
    {'a': 1, 'b': 2, 'c': 'x'}
    """
    reader = _Reader(text, pos)
    value = reader.value()
    return value, reader.pos
