"""``old_objects_frozen``: cheaper garbage collection while a loop allocates many short-lived
worlds.

``tracec check`` builds and copies thousands of JSON worlds; each one is freed by reference
counting, but the allocations trigger the cyclic collector, whose full collections walk every
object the process holds (the compiler, pydantic, lark: ~60k objects) and took ~20 % of a
256-seed check. Inside the block the objects that existed before it are frozen (left out of
collections, :func:`gc.freeze`) and young collections run less often; both are restored on
exit, so nothing outlives the block uncollected.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 10_000  # allocations between young collections inside the block (default 700)


@contextmanager
def old_objects_frozen() -> Iterator[None]:
    """Run the block with the objects older than it frozen and fewer young collections."""
    if gc.get_freeze_count() or not gc.isenabled():  # someone else manages the collector
        yield
        return
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(thresholds[0], YOUNG_THRESHOLD), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
