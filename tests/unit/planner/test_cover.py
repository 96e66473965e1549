"""kreplica.planner.cover against exhaustive search on small instances: the chosen set covers
the need at no more than the cheapest cover of a need one grid step per item larger, and
the bound is never above the cheapest cover (a true bound)."""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from kreplica.planner.cover import STEPS, cheapest_cover, cover_bound, fractional_cover

ITEMS = st.lists(st.tuples(st.floats(0.5, 100.0), st.floats(1.0, 1000.0)), min_size=1, max_size=9)


def _cheapest(items: list[tuple[float, float]], need: float) -> float:
    best = math.inf
    for n in range(len(items) + 1):
        for chosen in itertools.combinations(items, n):
            if sum(w for w, _ in chosen) >= need:
                best = min(best, sum(c for _, c in chosen))
    return best


@settings(max_examples=150, deadline=None)
@given(ITEMS, st.floats(0.01, 0.99))
def test_the_cover_is_exact_up_to_a_step_per_item(
    items: list[tuple[float, float]], share: float
) -> None:
    need = share * sum(w for w, _ in items)
    chosen = cheapest_cover(items, need)
    assert chosen is not None
    assert sum(items[i][0] for i in chosen) >= need
    cost = sum(items[i][1] for i in chosen)
    # any set covering need + one step per item is on the grid's reach
    assert cost <= _cheapest(items, need * (1 + len(items) / STEPS)) + 1e-6
    assert cover_bound(items, need) <= _cheapest(items, need) + 1e-6


@settings(max_examples=100, deadline=None)
@given(ITEMS, st.floats(0.01, 0.99))
def test_the_bound_is_at_least_the_fractional_optimum(
    items: list[tuple[float, float]], share: float
) -> None:
    need = share * sum(w for w, _ in items)
    assert cover_bound(items, need) >= fractional_cover(items, need) - 1e-6


def test_by_hand() -> None:
    items = [(40.0, 400.0), (30.0, 600.0), (100.0, 5000.0)]
    # 50 covered: {40, 30} at 1,000 beats {100} at 5,000; fractionally 400 + 1/3 x 600
    assert cheapest_cover(items, 50.0) == [0, 1]
    assert cover_bound(items, 50.0) == 1000.0
    assert fractional_cover(items, 50.0) == 600.0
    assert cheapest_cover(items, 171.0) is None and cover_bound(items, 171.0) == math.inf
    assert cheapest_cover(items, 0.0) == [] and cover_bound(items, 0.0) == 0.0


def test_items_below_the_grid_are_taken_cheapest_per_weight_first() -> None:
    # 3,000 items of weight 1 against a need of 1,500: each is under a grid step (1.5)
    items = [(1.0, float(1 + i % 3)) for i in range(3000)]
    chosen = cheapest_cover(items, 1500.0)
    assert chosen is not None and len(chosen) == 1500
    # the 1,000 at cost 1, then 500 of those at 2 (none at 3)
    assert sum(items[i][1] for i in chosen) == 1000 * 1 + 500 * 2
