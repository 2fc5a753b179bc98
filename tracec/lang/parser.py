"""Parse spec text into the AST (`tracec.lang.ast`), with precise syntax diagnostics.

Lark parses with the grammar `tracec.lark` (start rules `start`, a whole spec, and `expr`, one
`{...}` interpolation); `tracec.lang.to_ast.ToAst` turns the tree into the AST. Resource
bounds (specs are untrusted): source size, nesting depth, number-literal length, tasks per
parameterised task.
"""

from __future__ import annotations

import contextlib
import functools
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lark import Lark, Tree
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
    VisitError,
)

from tracec.core.diagnostics import Diagnostic, Span, SpecError
from tracec.lang import ast as A
from tracec.lang.strings import Segment, decode_string
from tracec.lang.to_ast import MAX_NUMBER_CHARS, MAX_TASK_INSTANCES, ToAst, span_of

__all__ = ["GRAMMAR_PATH", "MAX_NESTING", "MAX_NUMBER_CHARS", "MAX_SOURCE_BYTES",
           "MAX_TASK_INSTANCES", "decode_string", "keeping_trees", "kept_tree", "parse_expr",
           "parse_source"]

GRAMMAR_PATH = Path(__file__).resolve().parent / "tracec.lark"  # package data (the only copy)
MAX_SOURCE_BYTES = 1_000_000
MAX_NESTING = 60  # levels of nested expressions, types and literals

# Friendly names for terminals in "expected ..." messages.
_TOKEN_NAMES = {
    "NAME": "a name", "INT": "an integer", "FLOAT": "a number", "STRING": "a string",
    "LONG_STRING": "a string", "LBRACE": "`{`", "RBRACE": "`}`", "LPAR": "`(`", "RPAR": "`)`",
    "LSQB": "`[`", "RSQB": "`]`", "COMMA": "`,`", "EQUAL": "`=`", "COLON": "`:`", "DOT": "`.`",
    "$END": "end of file", "SEMICOLON": "`;`", "_SEP": "`;`", "MINUS": "`-`", "PLUS": "`+`",
    "STAR": "`*`", "SLASH": "`/`", "PERCENT": "`%`", "MORETHAN": "`>`", "LESSTHAN": "`<`",
}

_STATEMENT_HINTS = {
    "capability": "a spec starts with `capability NAME {`",
    "task": "a task holds: let, user, gold { ... }, communicate, forbid, reply, hint, distractor",
    "seed": "a seed block holds assignments such as `users = user[3..5]`",
    "reward": "a reward block holds rules such as `1.0 when state_matches` and `0.0 otherwise`",
}


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = GRAMMAR_PATH.read_text(encoding="utf-8")
    return Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        start=["start", "expr"],
        propagate_positions=True,
        maybe_placeholders=True,
        cache=True,  # lark caches the LALR tables in the temp dir, keyed by grammar hash
    )


def _describe_expected(expected: set[str]) -> str:
    names = sorted({_TOKEN_NAMES.get(e, f"`{e.lower()}`" if e.isupper() else f"`{e}`")
                    for e in expected if not e.startswith("__")})
    anon = [e for e in expected if e.startswith("__")]
    if anon:
        names.append("an operator")
    if len(names) > 8:
        names = names[:8] + ["..."]
    return ", ".join(names)


def _syntax_diagnostic(err: UnexpectedInput, source: str) -> Diagnostic:
    line, col = err.line or 1, err.column or 1
    if line < 1:
        lines = source.splitlines() or [""]
        line, col = len(lines), len(lines[-1]) + 1
    if isinstance(err, UnexpectedCharacters):
        ch = source[err.pos_in_stream] if err.pos_in_stream < len(source) else "?"
        hint = None
        if ch in "'":
            hint = "strings use double quotes: \"...\""
        elif ch == '"':
            hint = "this string is not closed on its line; use \"\"\"...\"\"\" for text over several lines"
        return Diagnostic(message=f"unexpected character {ch!r}", span=Span.at(line, col), hint=hint,
                          code="E001")
    if isinstance(err, UnexpectedEOF):
        return Diagnostic(message="unexpected end of file",
                          span=Span.at(line, col),
                          hint=f"expected {_describe_expected(set(err.expected))}; is a `}}` missing?",
                          code="E002")
    assert isinstance(err, UnexpectedToken)
    tok = err.token
    if tok.type == "$END":
        return Diagnostic(message="unexpected end of file", span=Span.at(line, col),
                          hint=f"expected {_describe_expected(set(err.expected))}; is a `}}` missing?",
                          code="E002")
    shown = str(tok).replace("\n", "\\n")
    if len(shown) > 30:
        shown = shown[:27] + "..."
    hint = f"expected {_describe_expected(set(err.expected))}"
    keyword = str(tok)
    if keyword in _STATEMENT_HINTS:
        hint += f"; {_STATEMENT_HINTS[keyword]}"
    return Diagnostic(message=f"unexpected `{shown}`", span=span_of(tok), hint=hint, code="E003")


def _check_depth(cap: A.Capability) -> None:
    """Expressions, types and literals nested deeper than MAX_NESTING are an error (the
    generated module must stay within Python's own parser limits)."""
    stack: list[tuple[Any, int]] = [(cap, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, list):
            stack.extend((x, depth) for x in node)
            continue
        if not isinstance(node, A.Node):
            continue
        if depth > MAX_NESTING:
            raise SpecError([Diagnostic(
                message=f"nested more than {MAX_NESTING} levels deep", span=node.span,
                hint="split the expression with `let`", code="E005")])
        for value in vars(node).values():
            if isinstance(value, (A.Node, list)):
                stack.append((value, depth + 1))


def _to_ast(tree: Tree, line_offset: int = 0, column_offset: int = 0) -> Any:
    """Run the transformer; raises the rejected construct that starts first in the source."""
    to_ast = ToAst(_interpolation, line_offset, column_offset)
    try:
        node = to_ast.transform(tree)
    except VisitError as err:  # lark wraps what a transformer method raises
        raise err.orig_exc from None
    error = to_ast.first_error
    if error is not None:
        raise error
    return node


def parse_source(source: str) -> A.Capability:
    """Parse a whole spec. Raises SpecError with diagnostics on a syntax error."""
    if len(source.encode("utf-8", "surrogatepass")) > MAX_SOURCE_BYTES:
        raise SpecError([Diagnostic(message="spec is larger than 1 MB", span=Span(), code="E004")])
    try:
        cap = _to_ast(_parser().parse(source, start="start"))
        _check_depth(cap)
        if _keeping:
            _keep(source, cap)
        return cap
    except UnexpectedInput as err:
        raise SpecError([_syntax_diagnostic(err, source)]) from None
    except RecursionError:
        raise SpecError([Diagnostic(message="spec is nested too deeply", span=Span(),
                                    code="E005")]) from None


# Trees parsed while `keeping_trees()` is on, pickled as parsed (the compiler later annotates its
# own tree in place: `Field.ref`), for `kept_tree` to hand a second reader of the same text
# (`tracec check`'s spans) instead of parsing it again: a pickle round trip costs ~1/4 of a parse.
_KEPT: dict[str, bytes] = {}
_KEPT_MAX = 8
_keeping = False


def _keep(source: str, cap: A.Capability) -> None:
    if len(_KEPT) >= _KEPT_MAX:
        del _KEPT[next(iter(_KEPT))]
    _KEPT[source] = pickle.dumps(cap, pickle.HIGHEST_PROTOCOL)


@contextlib.contextmanager
def keeping_trees() -> Iterator[None]:
    """While on, `parse_source` keeps a copy of each whole spec it parses for `kept_tree`."""
    global _keeping
    before, _keeping = _keeping, True
    try:
        yield
    finally:
        _keeping = before


def kept_tree(source: str) -> A.Capability | None:
    """The tree `parse_source(source)` returned while `keeping_trees()` was on, as parsed (a
    fresh copy, handed out once), or None."""
    blob = _KEPT.pop(source, None)
    return None if blob is None else pickle.loads(blob)


def parse_expr(source: str, line: int = 1, column: int = 1) -> A.Expr:
    """Parse one expression (the grammar's `expr` start rule), its spans as if it started at
    (line, column). Raises lark's UnexpectedInput on a syntax error."""
    return _to_ast(_parser().parse(source, start="expr"), line - 1, column - 1)


def _interpolation(segment: Segment) -> A.Expr:
    """The expression of a `{...}` in a text; a syntax error in it is located in the spec."""
    try:
        return parse_expr(segment.text, segment.line, segment.column)
    except UnexpectedInput as exc:
        diag = _syntax_diagnostic(exc, segment.text)
        diag.span = Span.at(segment.line, segment.column + max(diag.span.column - 1, 0))
        diag.message += " in interpolation"
        raise SpecError([diag]) from None
