"""Calls, rules and the outcome of an episode (what reward rules are evaluated on)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracec.runtime.lib import fmt
from tracec.runtime.rivals import NO_RIVALS


@dataclass(frozen=True)
class Call:
    """A tool call: gold action, agent action, or (``args=None``: any args) forbidden action."""

    name: str
    args: Mapping[str, Any] | None = None

    @property
    def arguments(self) -> dict:
        return dict(self.args or {})


@dataclass(frozen=True)
class Reply:
    """A scripted user reply, given once, to the first agent message containing a keyword."""

    keywords: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class Rule:
    """``level when cond``; ``value(o)`` gives the reward of fractional rules."""

    level: float
    text: str
    cond: Callable[[Outcome], Any]
    value: Callable[[Outcome], float] | None = None


# ---------------------------------------------------------------- value comparison


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


# `==` on these (and on the JSON values inside) implies `values_equal` (NaN aside: not JSON)
_EXACT = frozenset({str, int, dict, list})


def values_equal(a: Any, b: Any) -> bool:
    """Deep equality where numbers compare numerically (``100 == 100.0``, 1e-6 tolerance)."""
    if type(a) is type(b) and type(a) in _EXACT and a == b:  # equal as JSON too: at C speed
        return True
    if _is_num(a) and _is_num(b):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b))
    return a == b


def args_match(want: Mapping[str, Any] | None, got: Mapping[str, Any]) -> bool:
    """``got`` has every argument of ``want`` with an equal value (``None``: anything)."""
    if want is None:
        return True
    for k, v in want.items():
        if k not in got or not values_equal(v, got[k]):
            return False
    return True


def matched_count(gold: Sequence[Call], calls: Sequence[Call]) -> int:
    """How many gold calls are matched by distinct agent calls (multiset, greedy in order)."""
    used = [False] * len(calls)
    n = 0
    for g in gold:
        for i, c in enumerate(calls):
            if not used[i] and c.name == g.name and args_match(g.args or {}, c.args or {}):
                used[i] = True
                n += 1
                break
    return n


# ---------------------------------------------------------------- communication


def _normalize(text: str) -> str:
    return text.replace(",", "").replace("$", "").lower()


# a number standing alone: not part of a longer number, a word or id ("56" in "56B3FV") or a
# date or range ("22" in "2024-05-22")
_NUMBER = re.compile(r"(?<![\w.])(?<!\d-)(-?)((?:0|[1-9]\d*)(?:\.\d+)?)(?!\w|\.\d|-\d)")


_NUMBERS: dict[str, tuple[tuple[bool, float], ...]] = {}  # _numbers by text
_NUMBERS_MAX = 4096


def _numbers(text: str) -> tuple[tuple[bool, float], ...]:
    """Every number standing alone in ``text``: (written with a minus, its value without it);
    a pure function of the text, asked once per value a rule or check looks for."""
    hit = _NUMBERS.get(text)
    if hit is None:
        if len(_NUMBERS) >= _NUMBERS_MAX:
            _NUMBERS.clear()
        hit = _NUMBERS[text] = tuple((bool(m.group(1)), float(m.group(2)))
                                     for m in _NUMBER.finditer(text))
    return hit


def _says_number(x: float, text: str) -> bool:
    """A number in ``text`` that is ``x`` to 2 decimals: ``13.04`` and ``13.044`` for 13.044125
    (a more precise rendering that rounds to the same cents), ``12.50`` for 12.5."""
    want = round(float(x), 2)
    for minus, y in _numbers(text):
        if minus and x < 0:
            y = -y
        elif x < 0:
            continue
        if round(y, 2) == want or math.isclose(y, x, rel_tol=1e-9, abs_tol=1e-6):
            return True
    return False


def mentioned(value: Any, texts: Sequence[str]) -> bool:
    """τ²-style: ``value`` rendered appears (case-insensitively, commas and $ removed) in a text.

    Numbers match standing alone (not inside a longer number or an id) in any of their renderings (``1234``, ``1,234.00``,
    ``$12.5`` for 12.50), to 2 decimals (a more precise rendering that rounds to the same value
    counts: ``13.044`` for 13.044125); lists need every element; strings are substrings.
    """
    if isinstance(value, (list, tuple)):
        return all(mentioned(v, texts) for v in value)
    if _is_num(value):
        return any(_says_number(value, _normalize(t)) for t in texts)
    needle = _normalize(fmt(value)).strip()
    if not needle:
        return True
    return any(needle in _normalize(t) for t in texts)


# ---------------------------------------------------------------- one claim, not a list

# a word that negates the value right after it ("not cancelled", "isn't delayed", "no longer
# on time", "neither landed nor ...")
_NEGATION = re.compile(r"(?:\bnot|n['’]t|\bno|\bnever|\bneither|\bnor|\bwithout)"
                       r"(?:\s+(?:yet|longer|been|be|being|currently|marked|shown|as|a|an))*\s*$")


def _occurrences(needle: str, text: str) -> list[int]:
    out, i = [], text.find(needle)
    while i >= 0:
        out.append(i)
        i = text.find(needle, i + 1)
    return out


def _affirmed(needle: str, text: str) -> bool:
    """``needle`` occurs in ``text`` (both normalized) at least once not negated."""
    return any(not _NEGATION.search(text[max(0, i - 40):i]) for i in _occurrences(needle, text))


_WORD_OF: dict[str, re.Pattern[str]] = {}  # a rival as a word of its own, compiled once


def _names(rival: str, text: str) -> bool:
    """``text`` names ``rival`` as a word of its own, not negated."""
    if rival not in text:  # the pattern needs the rival's text: no search without it
        return False
    pattern = _WORD_OF.get(rival)
    if pattern is None:
        pattern = re.compile(rf"(?<!\w){re.escape(rival)}(?!\w)")
        if len(_WORD_OF) < 4096:
            _WORD_OF[rival] = pattern
    return any(not _NEGATION.search(text[max(0, m.start() - 40):m.start()])
               for m in pattern.finditer(text))


def claimed(value: Any, texts: Sequence[str], rivals: Any = NO_RIVALS,
            told: Sequence[Any] = ()) -> bool:
    """``value`` was said as a claim, not in a list of alternatives: :func:`mentioned`, and for a
    text value, a message says it not negated ("not cancelled" does not say "cancelled") and
    names none of its ``rivals`` (:class:`tracec.runtime.rivals.Rivals`) beside it, other than
    the values in ``told`` (the other values the task asks for: "HAT001 is landed and HAT002 is
    delayed" says both)."""
    if not mentioned(value, texts):
        return False
    if isinstance(value, (list, tuple)):
        return all(claimed(v, texts, rivals, told) for v in value)
    if not isinstance(value, str):
        return True
    needle = _normalize(fmt(value)).strip()
    if not needle:
        return True
    others = rivals(value)
    keep = {_normalize(fmt(t)).strip() for t in told if isinstance(t, str)} | {needle}
    others = [n for n in (_normalize(r).strip() for r in others) if n and n not in keep]
    for t in texts:
        low = _normalize(t)
        if needle not in low or not _affirmed(needle, low):
            continue
        rest = low
        for said in sorted(keep, key=len, reverse=True):
            rest = rest.replace(said, " ")  # "on time" is the value's, not a rival "time"'s
        # a rival holding a value ("delayed_departure" beside "delayed"): in the message as is
        if not any(_names(r, low if any(k in r for k in keep) else rest) for r in others):
            return True
    return False


# ---------------------------------------------------------------- the agent's own words

# a tool-call or tool-response block the agent wrote into a message (an unclosed one runs to
# the end of the message), and stray tags of either
_MARKUP = re.compile(r"<(tool_call|tool_response)>.*?(?:</\1>|\Z)|</?(?:tool_call|tool_response)>",
                     re.DOTALL | re.IGNORECASE)
_WORD = re.compile(r"\w")


def _structured(result: str) -> bool:
    r = result.strip()
    return len(r) >= 2 and r[0] in "{[" and r[-1] in "}]"


_OWN_WORDS: dict[tuple[str, tuple[str, ...]], str] = {}  # own_words by (text, results)
_OWN_WORDS_MAX = 1024


def own_words(text: str, results: Sequence[str] = ()) -> str:
    """What the agent said in its own words in one message: ``<tool_call>``/``<tool_response>``
    markup (with what it holds) removed, every verbatim copy of a structured tool result (a JSON
    object or array the tools returned) removed, and nothing left when what remains is only a
    copy of tool results (``landed`` pasted back from ``get_flight_status``, or two outputs
    one per line; case ignored)."""
    key = (text, tuple(results))
    hit = _OWN_WORDS.get(key)
    if hit is None:  # a pure function of its texts: each probe's message is judged twice
        if len(_OWN_WORDS) >= _OWN_WORDS_MAX:
            _OWN_WORDS.clear()
        hit = _OWN_WORDS[key] = _own_words(text, key[1])
    return hit


def _own_words(text: str, results: Sequence[str]) -> str:
    out = _MARKUP.sub(" ", text)
    for r in results:
        if _structured(r):
            out = out.replace(r.strip(), " ")
    rest = out.lower()
    for r in sorted({r.strip().lower() for r in results if r.strip()}, key=len, reverse=True):
        rest = rest.replace(r, " ")
    if rest != out.lower() and not _WORD.search(rest):  # nothing but pasted tool results
        return ""
    return out


def spoken(texts: Sequence[str], results: Sequence[str] = (), raw: bool = False) -> tuple[str, ...]:
    """The texts ``communicated()`` reads: each message's :func:`own_words` (``raw``: the
    messages as written, for a spec that declares `communicate raw`)."""
    if raw:
        return tuple(texts)
    return tuple(w for w in (own_words(t, results) for t in texts) if w.strip())


# ---------------------------------------------------------------- outcome


@dataclass
class Outcome:
    """What the reward rules see. Construct directly (probes) or with :meth:`from_calls`."""

    state_matches: bool = False
    progress: float = 0.0
    forbidden_called: bool = False
    v: dict = field(default_factory=dict)
    texts: Sequence[str] = ()  # what the agent said (see :func:`spoken`)
    calls: Sequence[Call] = ()  # the agent's successful tool calls, in order
    # the other possible values of a value (None: τ²'s rule, a mention is enough: `communicate raw`)
    rivals: Callable[[Any], frozenset[str]] | None = None
    # communicated() by the values asked (the same values' objects, the same texts, rivals
    # and task values): the env's reward breakdown and a rule's `communicated()` ask alike
    _said: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def communicated(self, *vals: Any) -> bool:
        """Every value was told to the user: :func:`mentioned`, and with ``rivals`` as a claim
        (:func:`claimed`: not negated, not beside other possible values of the same field)."""
        comm = self.v.get("_communicate", ())
        key = tuple(map(id, vals))
        hit = self._said.get(key)
        if hit is not None and hit[1] is self.texts and hit[2] is self.rivals and hit[3] is comm:
            return hit[4]  # hit[0] keeps the values alive: their ids stay theirs
        if self.rivals is None:
            said = all(mentioned(v, self.texts) for v in vals)
        else:
            told = [*vals, *comm]
            said = all(claimed(v, self.texts, self.rivals, told) for v in vals)
        self._said[key] = (vals, self.texts, self.rivals, comm, said)
        return said

    def called(self, name: str, args: Mapping[str, Any] | None = None) -> bool:
        """A successful call of ``name`` whose arguments include ``args``."""
        return any(c.name == name and args_match(args, c.args or {}) for c in self.calls)

    @classmethod
    def from_calls(
        cls,
        *,
        state_matches: bool,
        gold: Sequence[Call],
        calls: Sequence[Call],
        forbid: Iterable[Call],
        writes: frozenset[str] | set[str],
        texts: Sequence[str],
        v: dict,
        rivals: Callable[[Any], frozenset[str]] | None = None,
    ) -> Outcome:
        """Derive progress and forbidden_called from the gold, agent and forbidden calls."""
        return cls(
            state_matches=state_matches,
            progress=progress(gold, calls, writes),
            forbidden_called=any(
                c.name == f.name and args_match(f.args, c.args or {}) for f in forbid for c in calls
            ),
            v=v,
            texts=tuple(texts),
            calls=tuple(calls),
            rivals=rivals,
        )

    def communicated_all(self) -> bool:
        """`communicated()` in a reward rule: every value the task lists under `communicate`."""
        return self.communicated(*self.v.get("_communicate", ()))


def progress(gold: Sequence[Call], calls: Sequence[Call], writes: frozenset[str] | set[str]) -> float:
    """Share of gold write calls matched by agent calls (all gold calls when none writes)."""
    target = [g for g in gold if g.name in writes] or list(gold)
    if not target:
        return 1.0
    return matched_count(target, calls) / len(target)


def judge(rules: Sequence[Rule], o: Outcome) -> tuple[float, int | None]:
    """(reward, index of the first rule that holds); ``(0.0, None)`` when none holds."""
    for i, rule in enumerate(rules):
        if rule.cond(o):
            r = rule.value(o) if rule.value is not None else rule.level
            return float(r), i
    return 0.0, None
