"""Category 2: the compiler never crashes and every module it emits imports and resets."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.lang.cases import BASE
from tests.robustness.hostile import SPEC_CASES, Hang, env_class, time_limit
from tracec.compiler import codegen, layout
from tracec.compiler.api import compile_text
from tracec.runtime.env import SpecRuntimeError

RESET_SECONDS = 20


def compile_import_reset(text: str, seeds: int = 3):
    """Compile; when it compiles, import the module and reset it (guarded against hangs).
    Returns the CompileResult; raises only on a compiler bug (crash, bad module, hang)."""
    result = compile_text(text, "fuzz.tracec")
    if not result.ok:
        assert result.diagnostics and result.rendered.startswith("fuzz.tracec:")
        return result, None
    module = result.module  # imports the generated source from a real (UTF-8) file
    assert module is not None
    env = env_class(module)()
    error = None
    with time_limit(RESET_SECONDS):
        for seed in range(seeds):
            try:
                env.reset(seed=seed)
            except SpecRuntimeError as exc:  # a located spec bug, not a crash
                assert "task `" in str(exc) and f"seed {seed}" in str(exc)
                error = exc
                break
    return result, error


@pytest.mark.parametrize("name", sorted(SPEC_CASES))
def test_hostile_spec(name):
    text, expected = SPEC_CASES[name]
    result, error = compile_import_reset(text)
    codes = {d.code for d in result.diagnostics if d.severity == "error"}
    if expected is None:
        assert result.ok, result.rendered
        assert error is None, error
    elif expected == "SpecRuntimeError":
        assert result.ok, result.rendered
        assert error is not None
    else:
        assert not result.ok and expected in codes, (codes, result.rendered[:500])
        assert "\n" not in result.diagnostics[0].message


def test_non_finite_floats_never_become_bare_names():
    assert codegen.lit(float("inf")) == 'float("inf")'
    assert codegen.lit(float("-inf")) == 'float("-inf")'
    assert codegen.lit(float("nan")) == 'float("nan")'
    assert eval(codegen.lit([1.5, float("inf")]))[1] == float("inf")  # noqa: S307 - our own literal


@pytest.mark.parametrize("text", ['ends in "', 'a """ b', "back\\", "\x00\r\u2028\ud800", '"' * 7])
def test_docstrings_escape_everything(text):
    src = layout.docstring(text)
    compiled = compile(src, "<doc>", "eval")
    assert eval(compiled) == text  # noqa: S307 - our own literal
    src.encode("utf-8")  # no lone surrogate reaches the file


# ---------------------------------------------------------------- fuzz: generated specs

NAMES = st.one_of(st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
                  st.sampled_from(["rng", "rt", "db", "v", "o", "__class__", "len", "class",
                                   "x" * 70, "users", "r", "total"]))
NUMS = st.one_of(st.integers(-3, 3), st.integers(0, 10**6), st.integers(10**30, 10**45),
                 st.floats(0, 1e6, allow_nan=False).map(lambda f: round(f, 3)))


def _expr(depth: int):
    leaf = st.one_of(NUMS.map(repr), st.sampled_from(['"text"', "True", "None", "len(r.flights)",
                                                      "r.reservation_id", "total"]))
    if depth == 0:
        return leaf
    sub = _expr(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(sub, st.sampled_from(["+", "-", "*", "/", "//", "%"]), sub).map(" ".join),
        st.lists(sub, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        sub.map(lambda x: "{\"k\": " + x + "}"),
        st.tuples(NAMES, sub).map(lambda t: f"[{t[1]} for {t[0]} in r.flights]"),
        st.integers(1, 80).map(lambda n: "[" * n + "]" * n),
        st.integers(0, 64).map(lambda n: f'fresh_id("G", {n})'),
        sub.map(lambda x: f"sum(f.price for f in r.flights) + 0 * len([{x}])"),
    )


@st.composite
def specs(draw):
    text = BASE
    desc = draw(st.text(max_size=40))
    text = text.replace('"A demo."', '"' + desc.replace("\\", "\\\\").replace('"', '\\"')
                        .replace("\n", "\\n") + '"')
    count = draw(st.one_of(st.integers(0, 5), st.integers(0, 2000)))
    text = text.replace("users = user[2..3]", f"users = user[2..{max(2, count)}]")
    lets = draw(st.lists(st.tuples(NAMES, _expr(3)), max_size=4))
    extra = "".join(f"\n    let {n} = {e}" for n, e in lets)
    text = text.replace("let total = sum(f.price for f in r.flights)",
                        "let total = sum(f.price for f in r.flights)" + extra)
    if draw(st.booleans()):
        text = text.replace("1.0 when progress == 1", "1.0 when progress / " + draw(
            st.sampled_from(["total", "1", "2.5", "len(r.flights)"])) + " >= 0 and progress == 1")
    return text


FUZZ = settings(max_examples=120, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(specs())
def test_fuzzed_specs_compile_import_and_reset(text):
    try:
        compile_import_reset(text, seeds=2)
    except Hang:
        pytest.fail(f"reset() ran past {RESET_SECONDS}s")
