"""Stream-identical fast forms of ``random.Random.randint`` and ``choice`` for generators.

World generation draws hundreds of thousands of small integers per ``tracec check``; the
standard methods spend most of their time in argument checks. These closures consume the
generator exactly as CPython's ``randint``/``choice`` do (``_randbelow_with_getrandbits``), so
worlds stay byte-identical; for any other ``Random`` subclass they fall back to the methods.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

_STANDARD = getattr(random.Random, "_randbelow_with_getrandbits", None)


def fast(rng: random.Random) -> bool:
    """Whether ``rng`` draws integers with ``getrandbits`` (the CPython default)."""
    return _STANDARD is not None and type(rng)._randbelow is _STANDARD  # type: ignore[attr-defined]


def randint(rng: random.Random) -> Callable[[int, int], int]:
    """``rint(lo, hi)``, equal to ``rng.randint(lo, hi)`` draw for draw."""
    if not fast(rng):
        return rng.randint
    getbits = rng.getrandbits

    def rint(lo: int, hi: int) -> int:
        n = hi - lo + 1
        k = n.bit_length()
        r = getbits(k)
        while r >= n:
            r = getbits(k)
        return lo + r

    return rint


def choice(rng: random.Random) -> Callable[[Sequence[Any]], Any]:
    """``pick(seq)``, equal to ``rng.choice(seq)`` draw for draw (non-empty sequences)."""
    if not fast(rng):
        return rng.choice
    getbits = rng.getrandbits

    def pick(seq: Sequence[Any]) -> Any:
        n = len(seq)
        if not n:
            raise IndexError("Cannot choose from an empty sequence")
        k = n.bit_length()
        r = getbits(k)
        while r >= n:
            r = getbits(k)
        return seq[r]

    return pick
