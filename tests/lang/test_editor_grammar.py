"""editors/tracec.tmLanguage.json: valid, its regexes compile, it knows every keyword."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tracec.lang import builtins as B
from tracec.lang.parser import GRAMMAR_PATH

GRAMMAR = Path(__file__).resolve().parents[2] / "editors" / "tracec.tmLanguage.json"


def _patterns(node: object):
    if isinstance(node, dict):
        for key in ("match", "begin", "end"):
            if isinstance(node.get(key), str):
                yield node.get("name", ""), node[key]
        for value in node.values():
            yield from _patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _patterns(value)


def _lark_keywords() -> set[str]:
    text = re.sub(r"//[^\n]*", "", GRAMMAR_PATH.read_text(encoding="utf-8"))
    return set(re.findall(r'"([A-Za-z_][A-Za-z_]*)"', text))


def test_grammar_is_valid_json_with_scope_and_file_type() -> None:
    g = json.loads(GRAMMAR.read_text(encoding="utf-8"))
    assert g["scopeName"] == "source.tracec" and g["fileTypes"] == ["tracec", "tracec-frag"]
    for ref in re.findall(r'"include": "#([a-z_]+)"', GRAMMAR.read_text(encoding="utf-8")):
        assert ref in g["repository"], ref


def test_every_regex_compiles() -> None:
    g = json.loads(GRAMMAR.read_text(encoding="utf-8"))
    pats = list(_patterns(g))
    assert len(pats) > 10
    for _, pattern in pats:
        re.compile(pattern)  # Oniguruma syntax used here is a subset Python's re accepts


def _scopes_of(word: str, g: dict) -> list[str]:
    return [name for name, p in _patterns(g) if name and re.fullmatch(p, word)]


def test_every_grammar_keyword_is_highlighted_as_a_keyword_or_constant() -> None:
    g = json.loads(GRAMMAR.read_text(encoding="utf-8"))
    keywords = _lark_keywords()
    assert {"capability", "seed", "gold", "forbid", "otherwise", "compact_tools"} <= keywords
    for word in sorted(keywords):
        scopes = _scopes_of(word, g)
        assert any(s.startswith(("keyword.", "constant.language", "storage.")) for s in scopes), \
            (word, scopes)


def test_builtins_and_reward_names_are_highlighted() -> None:
    g = json.loads(GRAMMAR.read_text(encoding="utf-8"))
    funcs = [p for name, p in _patterns(g) if name == "support.function.builtin.tracec"]
    for fn in set(B.BUILTINS) | set(B.PREDICATE_FUNCS):
        assert any(re.fullmatch(p, fn + "(") or re.match(p, fn + "(") for p in funcs), fn
    for name in B.PREDICATE_NAMES:
        assert "variable.language.reward.tracec" in _scopes_of(name, g), name


def test_string_interpolation_and_comments_are_scoped() -> None:
    text = GRAMMAR.read_text(encoding="utf-8")
    assert "meta.interpolation.tracec" in text and "comment.line.number-sign.tracec" in text
