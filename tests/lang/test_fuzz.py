"""Fuzzing: random text and mutations of valid specs give diagnostics or success, never a crash."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.lang.cases import BASE
from tracec.compiler.api import compile_text

ALL = (Path(__file__).parent / "specs" / "all_constructs.tracec").read_text()
TOKENS = ["{", "}", "(", ")", "[", "]", ",", ".", "..", "=", "==", "\"", '"""', "#", "\n", "{x}",
          "task", "seed", "reward", "when", "otherwise", "let", "user", "gold", "tool", "python",
          "pick(", "sum(", "1.5", "-", "not", "and", "in", "for", "if", "else", "__import__",
          "\\", "'", "\x00", "é", "𝔘"]
FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _assert_graceful(text: str) -> None:
    result = compile_text(text, "fuzz.tracec")
    if result.ok:
        assert result.code is not None
    else:
        assert result.diagnostics, "a failed compile must say why"
        rendered = result.rendered
        assert rendered.startswith("fuzz.tracec:")


@FUZZ
@given(st.text(max_size=300))
def test_random_text(text: str) -> None:
    _assert_graceful(text)


@FUZZ
@given(base=st.sampled_from([BASE, ALL]), data=st.data())
def test_mutated_specs(base: str, data: st.DataObject) -> None:
    text = base
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["delete", "insert", "duplicate", "swap"]))
        i = data.draw(st.integers(0, len(text)))
        j = data.draw(st.integers(i, min(len(text), i + 40)))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + data.draw(st.sampled_from(TOKENS)) + text[i:]
        elif op == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        else:
            k = data.draw(st.integers(0, len(text)))
            text = text[:i] + text[k:k + 10] + text[j:]
    _assert_graceful(text)


def test_deep_nesting_is_a_diagnostic() -> None:
    deep = BASE.replace("let total = sum(f.price for f in r.flights)",
                        "let total = " + "(" * 3000 + "1" + ")" * 3000)
    _assert_graceful(deep)
    long_chain = BASE.replace("let total = sum(f.price for f in r.flights)",
                              "let total = " + " + ".join(["1"] * 5000))
    _assert_graceful(long_chain)
