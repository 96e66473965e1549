"""The cheapest cover (pure): of items (weight, cost), the set whose weights add up to a need
at the least cost: a covering knapsack. A broker over its traffic band must shed replicas
whose rates add up to its excess; the bytes they hold are what moving them copies.

Solved exactly on a grid: weights in steps of need / STEPS, by dynamic programming over the
grid (numpy, imported when first used). Rounding weights down picks a set that truly covers
(a plan); rounding them up, and the need down, relaxes the problem, so its optimum is a true
lower bound on every cover's cost (a bound).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

STEPS = 1000  # grid steps per need: the plan's cover costs at most ~1/STEPS per item more


def cheapest_cover(items: Sequence[tuple[float, float]], need: float) -> list[int] | None:
    """Indices of `items` (weight, cost) whose weights add up to `need` or more at the least
    cost (on the grid: exact up to a weight of need / STEPS per item); None when all of them
    together fall short. Ties go to the earlier items (deterministic)."""
    if need <= 0:
        return []
    if sum(w for w, _ in items) < need:
        return None
    step = need / STEPS
    units = [int(w // step) for w, _ in items]
    if sum(units) < STEPS:  # items too small for the grid: the cheapest per weight first
        return _greedy(items, need)
    chosen = _solve(units, [c for _, c in items], STEPS, keep=True)
    assert isinstance(chosen, list)
    return sorted(chosen)


def cover_bound(items: Sequence[tuple[float, float]], need: float) -> float:
    """A lower bound on the cost of any cover of `need`: the grid's optimum with weights
    rounded up and the need down (every true cover is a cover there), and never below the
    fractional optimum (cheapest cost per weight first, the last item taken in part). `inf`
    when all items together fall short."""
    if need <= 0:
        return 0.0
    if sum(w for w, _ in items) < need:
        return math.inf
    step = need / STEPS
    units = [math.ceil(w / step) for w, _ in items]
    best = _solve(units, [c for _, c in items], STEPS, keep=False)
    assert isinstance(best, float)
    return max(best, fractional_cover(items, need))


def fractional_cover(items: Sequence[tuple[float, float]], need: float) -> float:
    """The cost when items may be taken in part: cheapest cost per weight first."""
    spent = 0.0
    for w, c in sorted((x for x in items if x[0] > 0), key=lambda x: x[1] / x[0]):
        take = min(1.0, need / w)
        spent += take * c
        need -= take * w
        if need <= 1e-9 * w:
            break
    return spent


def _greedy(items: Sequence[tuple[float, float]], need: float) -> list[int]:
    order = sorted(
        (i for i, (w, _) in enumerate(items) if w > 0), key=lambda i: items[i][1] / items[i][0]
    )
    chosen, carried = [], 0.0
    for i in order:
        if carried >= need:
            break
        chosen.append(i)
        carried += items[i][0]
    return sorted(chosen)


def _solve(units: Sequence[int], costs: Sequence[float], target: int, *, keep: bool) -> object:
    """best[j]: the least cost of weight >= j (capped at `target`), one item at a time; with
    `keep`, the items of the best cover of `target`, else its cost."""
    import numpy as np

    best = np.full(target + 1, np.inf)
    best[0] = 0.0
    taken = np.zeros((len(units), target + 1), dtype=bool) if keep else None
    for i, (w, c) in enumerate(zip(units, costs, strict=True)):
        if w <= 0:
            continue
        w = min(w, target)
        with_it = np.empty_like(best)
        with_it[:w] = c  # best[0] + c: this item alone reaches any j <= w
        with_it[w:] = best[: target + 1 - w] + c
        better = with_it < best
        if taken is not None:
            taken[i] = better
        np.minimum(best, with_it, out=best)
    if taken is None:
        return float(best[target])
    chosen, j = [], target
    for i in range(len(units) - 1, -1, -1):
        if j > 0 and taken[i, j]:
            chosen.append(i)
            j = max(0, j - min(units[i], target))
    return chosen
