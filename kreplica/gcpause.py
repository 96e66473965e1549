"""Pausing Python's cyclic garbage collector around bulk work (standard library only).

Snapshots, plans and reports are trees of acyclic objects: reference counting frees them,
and the cyclic collector can free none of them. But it runs every few hundred allocations
and, as the heap grows, rescans everything that survived: with a million partitions in
memory, building the plan files spent three quarters of its time in it. `gc_paused()` stops
it for a block and restores the previous state after (also on errors); nested use is fine.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
