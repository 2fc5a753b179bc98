"""String literals: escapes, and the `{expr}` segments of an interpolated text.

This module only scans text; the segments' expressions are parsed by the grammar's `expr` start
rule (`tracec.lang.parser`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from lark import Token

from tracec.core.diagnostics import Diagnostic, Span, SpecError

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "0": "\0", "{": "\\{",
            "}": "\\}"}
_HEX = frozenset("0123456789abcdefABCDEF")


def rejected(message: str, span: Span, hint: str | None = None) -> SpecError:
    """Text that parses but the language rejects (E006): bounds, duplicates, brace misuse."""
    return SpecError([Diagnostic(message=message, span=span, hint=hint, code="E006")])


def decode_string(raw: str) -> str:
    """The value of a STRING / LONG_STRING token (escapes: \\\\ \\" \\n \\t \\r \\uXXXX).

    `\\{` and `\\}` stay escaped so that interpolation can tell them from `{`; a plain string
    literal unescapes them."""
    body = raw[3:-3] if raw.startswith('"""') else raw[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt, hexits = body[i + 1], body[i + 2:i + 6]
            if nxt == "u" and len(hexits) == 4 and all(c in _HEX for c in hexits):
                out.append(chr(int(hexits, 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class Segment:
    """The source of one `{expr}` of a text, and where it starts in the spec."""

    text: str
    line: int
    column: int


def text_parts(tok: Token) -> Iterator[str | Segment]:
    """A STRING / LONG_STRING token as literal parts and `{expr}` segments, in order.

    `{{`, `}}`, `\\{` and `\\}` are literal braces; a single `}`, an unclosed `{` and an empty
    `{}` are errors at the brace."""
    raw = str(tok)
    quote = 3 if raw.startswith('"""') else 1
    value = decode_string(raw)
    buf: list[str] = []
    i = 0
    # position bookkeeping is on the raw text; escapes inside {...} are not allowed
    body_raw = raw[quote:-quote]
    raw_index = 0
    line, col = tok.line or 1, (tok.column or 1) + quote

    def advance(upto: int) -> None:
        nonlocal raw_index, line, col
        while raw_index < upto:
            if body_raw[raw_index] == "\n":
                line += 1
                col = 1
            else:
                col += 1
            raw_index += 1

    while i < len(value):
        ch = value[i]
        if value.startswith(("\\{", "\\}"), i):
            buf.append(value[i + 1])
            i += 2
            continue
        if value.startswith(("{{", "}}"), i):
            buf.append(ch)
            i += 2
            continue
        if ch == "}":
            advance(max(body_raw.find("}", raw_index), raw_index))
            raise rejected("single `}` in text", Span.at(line, col),
                           "write `}}` for a literal brace")
        if ch == "{":
            end = value.find("}", i)
            if end < 0:
                advance(max(body_raw.find("{", raw_index), raw_index))
                raise rejected("unclosed `{` in text", Span.at(line, col),
                               "close the interpolation with `}`, or write `{{` for a brace")
            inner = value[i + 1:end]
            pos = body_raw.find("{" + inner + "}", raw_index)
            if pos >= 0:
                advance(pos + 1)
            if buf:
                yield "".join(buf)
                buf = []
            if not inner.strip():
                raise rejected("empty `{}` in text", Span.at(line, col),
                               "put an expression inside, e.g. {r.reservation_id}")
            yield Segment(inner, line, col)
            i = end + 1
            continue
        buf.append(ch)
        i += 1
    if buf:
        yield "".join(buf)
