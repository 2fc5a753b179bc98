"""``tracec fmt``: the canonical layout of a spec.

The formatter only changes whitespace between tokens; every token (strings, comments included)
is kept byte for byte, so a formatted spec parses to the same program. It keeps the author's
line breaks (at most one blank line in a row, none just inside a block's braces), indents two
spaces per open bracket line, puts one space around binary operators, `=` and keywords, none
inside brackets or around `.`, `..` and unary `-`, and aligns the `=` of consecutive
assignments (`NAME = ...`, `let NAME = ...`) in one block. Idempotent: ``format(format(s)) ==
format(s)``.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass

from lark import Lark, Token, Tree

from tracec.core.diagnostics import Span, SpecError
from tracec.lang.fragments import use_lines
from tracec.lang.parser import GRAMMAR_PATH, parse_source

INDENT = "  "
MAX_ALIGN = 24  # an assignment target longer than this is not padded (keeps runs readable)
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {")", "]", "}"}
_BINARY_RULES = {"comp_op", "add_op", "mul_op"}
_TIGHT_BRACKET_RULES = {"index", "type_ref", "call", "call_gen", "tool_call", "tool_decl",
                        "task_params"}
_DICT_RULES = {"dict", "dict_comp"}


@dataclass
class _Tok:
    text: str
    type: str
    rule: str  # the grammar rule the token belongs to ("" for comments)
    line: int
    column: int
    end_line: int


@functools.lru_cache(maxsize=1)
def _layout_parser() -> tuple[Lark, list[Token]]:
    comments: list[Token] = []
    parser = Lark(
        GRAMMAR_PATH.read_text(encoding="utf-8"),
        parser="lalr",
        lexer="contextual",
        start="start",
        keep_all_tokens=True,
        propagate_positions=True,
        maybe_placeholders=False,
        lexer_callbacks={"COMMENT": comments.append},
    )
    return parser, comments


def _one_token(node: Tree | Token) -> bool:
    return isinstance(node, Token) or (len(node.children) == 1 and _one_token(node.children[0]))


def _tokens(source: str) -> list[_Tok]:
    parser, comments = _layout_parser()
    comments.clear()
    tree = parser.parse(source)
    out: list[_Tok] = []
    stack: list[Tree] = [tree]
    while stack:
        node = stack.pop()
        rule = str(node.data)
        if rule == "range" and not all(_one_token(c) for c in node.children):
            rule = "range_spaced"  # `a + 1 .. b`: spaces when an operand is not one token
        for child in node.children:
            if isinstance(child, Tree):
                stack.append(child)
            elif isinstance(child, Token):
                out.append(_Tok(str(child), child.type, rule, child.line or 1,
                                child.column or 1, child.end_line or child.line or 1))
    for c in comments:
        out.append(_Tok(str(c).rstrip(), "COMMENT", "", c.line or 1, c.column or 1,
                        c.line or 1))
    comments.clear()
    out.sort(key=lambda t: (t.line, t.column))
    return out


def _is_block_brace(tok: _Tok) -> bool:
    return tok.text in ("{", "}") and tok.rule not in _DICT_RULES


def _space_between(prev: _Tok, tok: _Tok) -> str:
    a, b = prev.text, tok.text
    if tok.type == "COMMENT":
        return "  "
    if b in (",", ";", ":") or a == "." or b == ".":
        return ""
    if (a == ".." and prev.rule == "range") or (b == ".." and tok.rule == "range"):
        return ""
    if a == "-" and prev.rule == "neg":
        return ""
    if a in _OPENERS:
        return " " if _is_block_brace(prev) else ""
    if b in _CLOSERS:
        return " " if _is_block_brace(tok) else ""
    if b in ("(", "[") and tok.rule in _TIGHT_BRACKET_RULES and prev.type in (
            "NAME", "RPAR", "RSQB", "STRING") and a not in ("for", "in"):
        return ""
    return " "


def _logical_lines(source: str) -> list[tuple[int, list[_Tok]]]:
    """Tokens grouped by the source line they start on (a multi-line string's end line joins
    the line it started on); each group with the number of blank lines before it."""
    lines: list[tuple[int, list[_Tok]]] = []
    last_end = 0
    for tok in _tokens(source):
        if lines and tok.line <= last_end:
            lines[-1][1].append(tok)
        else:
            gap = max(0, tok.line - last_end - 1) if lines else 0
            lines.append((gap, [tok]))
        last_end = max(last_end, tok.end_line)
    return lines


def _render(toks: list[_Tok]) -> str:
    out = toks[0].text
    for prev, tok in itertools.pairwise(toks):
        out += _space_between(prev, tok) + tok.text
    return out


def _assign_key(toks: list[_Tok]) -> int | None:
    """For `NAME = ...` / `let NAME = ...`, the index of the `=` token."""
    if len(toks) >= 3 and toks[0].type == "NAME" and toks[1].text == "=" \
            and toks[0].rule in ("seed_stmt", "field_assign"):
        return 1
    if len(toks) >= 4 and toks[0].text == "let" and toks[1].type == "NAME" \
            and toks[2].text == "=":
        return 2
    return None


_USE_MARK = "#\x00use "  # a `use` line is laid out as a comment, then restored


def mask_uses(source: str) -> str:
    """The spec with each `use "..."` line turned into a comment (so that it parses); a line
    inside a triple-quoted string is text, not a `use`."""
    uses = use_lines(source)
    return "\n".join(_USE_MARK + line.strip() if i in uses else line
                     for i, line in enumerate(source.split("\n")))


def _newline(text: str) -> str:
    """The file's line ending: CRLF, CR (old Mac) or LF."""
    if "\r\n" in text:
        return "\r\n"
    return "\r" if "\r" in text else "\n"


def format_file_text(text: str, fragment: bool = False) -> str:
    """`format_source` (or `format_fragment`) of a file's text, keeping its line endings
    (CRLF and CR files stay so) and a leading byte-order mark."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    nl = _newline(text)
    plain = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    out = format_fragment(plain) if fragment else format_source(plain)
    return bom + (out.replace("\n", nl) if nl != "\n" else out)


def format_source(source: str) -> str:
    """The canonical layout of a spec. Raises ``SpecError`` (located) for text that does not
    parse; the result parses to the same program. `use "..."` lines are indented like the
    statements around them."""
    out = _format(mask_uses(source))
    return "\n".join(re.sub(r"^( *)#\x00use (.*)$", r"\1\2", line) for line in out.split("\n"))


# Where a fragment's lines can stand in a spec, tried in this order: (what, text before, after).
_FRAGMENT_CONTEXTS = (
    ("capability items", "capability _fragment {", "}"),
    ("seed statements", "capability _fragment {\nseed {", "}\n}"),
    ("field-block items", "capability _fragment {\nseed {\n_record = _kind[1] {", "}\n}\n}"),
    ("task statements", "capability _fragment {\ntask _task {", "}\n}"),
    ("gold calls", "capability _fragment {\ntask _task {\ngold {", "}\n}\n}"),
    ("setup operations", "capability _fragment {\ntask _task {\nsetup {", "}\n}\n}"),
    ("distractor statements", "capability _fragment {\ndistractor _distractor {", "}\n}"),
    ("reward rules", "capability _fragment {\nreward {", "}\n}"),
    ("tool statements", "capability _fragment {\ntool _tool() {", "}\n}"),
)
_BEGIN, _END = "#\x00fragment-begin", "#\x00fragment-end"


def format_fragment(source: str) -> str:
    """The canonical layout of a shared fragment (a ``.tracec-frag`` file): its lines laid out
    as they would be where a spec `use`s them (capability items, seed statements, field-block
    items, task statements, gold calls, setup operations, distractor statements, reward rules
    or tool statements: the first of these that parses), flush left. Raises ``SpecError``
    (located in the fragment) when the text is none of them."""
    body = mask_uses(source).rstrip("\n")
    best: SpecError | None = None  # the error of the context that parsed furthest
    for _what, before, after in _FRAGMENT_CONTEXTS:
        wrapped = f"{before}\n{_BEGIN}\n{body}\n{_END}\n{after}\n"
        offset = before.count("\n") + 2  # lines before the fragment's first line
        try:
            rows = _format_rows(wrapped)
        except SpecError as err:
            moved = _moved(err, offset, source)
            if best is None or _where(moved) > _where(best):
                best = moved
            continue
        start = next(i for i, r in enumerate(rows) if r.strip() == _BEGIN)
        end = next(i for i, r in enumerate(rows) if r.strip() == _END)
        depth = len(rows[start]) - len(rows[start].lstrip(" "))
        inner = [r[depth:] if r.startswith(" " * depth) else r for r in rows[start + 1:end]]
        while inner and not inner[0].strip():
            inner.pop(0)
        while inner and not inner[-1].strip():
            inner.pop()
        out = "\n".join(inner) + "\n" if inner else ""
        return "\n".join(re.sub(r"^( *)#\x00use (.*)$", r"\1\2", line) for line in out.split("\n"))
    assert best is not None
    raise best


def _where(err: SpecError) -> tuple[int, int]:
    span = err.diagnostics[0].span if err.diagnostics else None
    return (span.line, span.column) if span is not None else (0, 0)


def _moved(err: SpecError, offset: int, source: str) -> SpecError:
    """``err`` (from a wrapped fragment) in the fragment's own lines, saying what was tried."""
    lines = source.rstrip("\n").split("\n")
    tried = ", ".join(w for w, _, _ in _FRAGMENT_CONTEXTS)
    hint = f"a fragment holds lines a spec could `use` in one place: {tried}"
    diags = []
    for d in err.diagnostics:
        line = d.span.line - offset
        if line > len(lines):  # in the text after the fragment: it left a bracket open or closed one too many
            last = len(lines[-1]) + 1
            diags.append(d.model_copy(update={
                "span": Span.at(len(lines), last), "hint": hint,
                "message": "the fragment ends with an unfinished statement or unbalanced "
                           "brackets (`{` `}` `(` `)` `[` `]`)"}))
            continue
        line = max(line, 1)
        end = min(max(d.span.end_line - offset, line), len(lines))
        span = d.span.model_copy(update={"line": line, "end_line": end})
        diags.append(d.model_copy(update={
            "span": span, "hint": (d.hint + "; " if d.hint else "") + hint}))
    return SpecError(diags)


def _format(source: str) -> str:
    return "\n".join(_format_rows(source)) + "\n"


def _format_rows(source: str) -> list[str]:
    """The formatted rows (one per logical line; a multi-line string stays in its row)."""
    parse_source(source)  # located syntax errors, bounds (size, nesting)
    rows: list[tuple[int, int, list[_Tok]]] = []  # (blank lines before, depth, tokens)
    open_lines: list[int] = []  # for each open bracket, the row that opened it
    for index, (gap, toks) in enumerate(_logical_lines(source)):
        lead = 0
        while lead < len(toks) and toks[lead].text in _CLOSERS and open_lines:
            lead += 1
        stack = open_lines[: len(open_lines) - lead] if lead else open_lines
        depth = len(dict.fromkeys(stack))
        for tok in toks:
            if tok.type in ("STRING", "LONG_STRING", "COMMENT"):
                continue
            if tok.text in _OPENERS:
                open_lines.append(index)
            elif tok.text in _CLOSERS and open_lines:
                open_lines.pop()
        rows.append((gap, depth, toks))
    out: list[str] = []
    texts = [_render(toks) for _, _, toks in rows]
    _align(rows, texts)
    for i, ((gap, depth, toks), text) in enumerate(zip(rows, texts)):
        after_open = i > 0 and rows[i - 1][2][-1].text == "{" \
            and _is_block_brace(rows[i - 1][2][-1])
        before_close = toks[0].text == "}"
        if gap and out and not after_open and not before_close:
            out.append("")
        out.append(INDENT * depth + text)
    return out


def _align(rows: list[tuple[int, int, list[_Tok]]], texts: list[str]) -> None:
    """Pad the targets of consecutive assignments at one depth so their `=` line up."""
    run: list[tuple[int, int]] = []  # (row, width of the target)

    def flush() -> None:
        if len(run) > 1:
            width = max(w for _, w in run)
            for row, w in run:
                head, tail = texts[row][:w], texts[row][w:]
                texts[row] = head + " " * (width - w) + tail
        run.clear()

    for i, (gap, depth, toks) in enumerate(rows):
        key = _assign_key(toks)
        if key is None or gap or (run and rows[run[-1][0]][1] != depth):
            flush()
        if key is None:
            continue
        width = len(_render(toks[:key]))
        if width > MAX_ALIGN:
            flush()
            continue
        run.append((i, width))
    flush()
