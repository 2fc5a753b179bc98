"""A Gymnasium space of free unicode text (observations and actions of capability envs)."""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from gymnasium.spaces import Space

_PRINTABLE = np.array(list(string.ascii_letters + string.digits + string.punctuation + " "))


class UnicodeText(Space[str]):
    """Any ``str`` of at most ``max_length`` characters; samples printable ASCII text."""

    def __init__(self, max_length: int = 1 << 20, sample_length: int = 64, seed: int | None = None):
        self.max_length = int(max_length)
        self.sample_length = int(min(sample_length, max_length))
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        n = int(self.np_random.integers(1, self.sample_length + 1))
        return "".join(self.np_random.choice(_PRINTABLE, size=n))

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText(max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnicodeText) and other.max_length == self.max_length

    def to_jsonable(self, sample_n: Any) -> list:
        return list(sample_n)

    def from_jsonable(self, sample_n: list) -> list:
        return list(sample_n)
