"""A small min-cost circulation solved by negative-cycle cancelling (pure, deterministic).

The broker operations start from a feasible placement (a greedy one) and need the placement
of least cost under separable convex costs: "replicas per broker as even as possible" is the
least sum of squared counts (on a flow network the vector of least squares is also the one
of the lowest max and highest min, Fujishige's lexicographically optimal base), then each
topic's squares, weighted below it. A flow is of least cost exactly when its residual graph
has no negative cycle, so cycles are found (Bellman-Ford with a queue, the parent graph
checked for a cycle every n relaxations) and one unit pushed around each until none is left.

Arcs carry [lower, cap] bounds and a cost: None (free) or a function of the arc's flow,
convex, whose marginal costs the residual graph shows (a unit more: f(x+1) - f(x); a unit
less: f(x-1) - f(x)). Starting near the optimum, few cycles are needed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

Cost = Callable[[int], int]


@dataclass
class Arc:
    tail: int
    head: int
    cap: int
    lower: int
    flow: int
    cost: Cost | None


class Circulation:
    def __init__(self) -> None:
        self.arcs: list[Arc] = []
        self.size = 0

    def node(self) -> int:
        self.size += 1
        return self.size - 1

    def arc(
        self,
        tail: int,
        head: int,
        cap: int,
        *,
        flow: int = 0,
        lower: int = 0,
        cost: Cost | None = None,
    ) -> int:
        if not lower <= flow <= cap:
            raise ValueError(f"arc {tail}->{head}: flow {flow} outside [{lower}, {cap}]")
        self.arcs.append(Arc(tail, head, cap, lower, flow, cost))
        return len(self.arcs) - 1

    def _residual_of(self, v: int, incident: list[int]) -> list[tuple[int, int, int, int]]:
        """Node v's residual arcs: (head, marginal cost, arc index, +1 forward / -1 backward),
        in arc order."""
        out = []
        for i in incident:
            a = self.arcs[i]
            f, c = a.flow, a.cost
            if a.tail == v and f < a.cap:
                out.append((a.head, 0 if c is None else c(f + 1) - c(f), i, 1))
            if a.head == v and f > a.lower:
                out.append((a.tail, 0 if c is None else c(f - 1) - c(f), i, -1))
        return out

    def negative_cycles(
        self,
        out: list[list[tuple[int, int, int, int]]],
        dist: list[int] | None = None,
        seeds: list[int] | None = None,
    ) -> list[list[tuple[int, int]]]:
        """Negative cycles of the residual graph `out` as (arc index, direction) steps: the
        cycles of Bellman-Ford's parent pointers once it finds one (node-disjoint); [] when
        none. `dist` (kept from the last search, changed in place) and `seeds` (the nodes
        whose arcs out may beat it now): a search starts where the last one left off, as
        any start converges (or shows a cycle); `seeds` ends as the nodes left to scan."""
        n = self.size
        if dist is None:
            dist = [0] * n
        parent: list[tuple[int, int, int] | None] = [None] * n  # (node, arc, direction)
        queue = deque(range(n) if seeds is None else seeds)
        queued = [False] * n
        for v in queue:
            queued[v] = True
        relaxed = 0
        cycles: list[list[tuple[int, int]]] = []
        while queue:
            u = queue.popleft()
            queued[u] = False
            du = dist[u]
            for v, c, i, d in out[u]:
                if du + c < dist[v]:
                    dist[v] = du + c
                    parent[v] = (u, i, d)
                    relaxed += 1
                    if not queued[v]:
                        queued[v] = True
                        queue.append(v)
                    if relaxed % n == 0:
                        cycles = _parent_cycles(parent)
                        if cycles:
                            break
            if cycles:
                queue.appendleft(u)  # its arcs were not all scanned
                break
        if seeds is not None:
            seeds[:] = list(dict.fromkeys(queue))
        return cycles or _parent_cycles(parent)

    def _step_cost(self, i: int, d: int) -> int | None:
        """The marginal cost of one more unit on arc i in direction d; None: no room."""
        a = self.arcs[i]
        f = a.flow
        if (d > 0 and f >= a.cap) or (d < 0 and f <= a.lower):
            return None
        return 0 if a.cost is None else a.cost(f + d) - a.cost(f)

    def cancel(self) -> int:
        """Push units around negative cycles until there is none; returns how many pushes.
        A cycle found is pushed again while it stays negative (its costs are convex, so it
        only gets dearer), and every cycle of one search is pushed (they share no node, so
        no arc): the search, the costly part, runs once for all those pushes."""
        incident: list[list[int]] = [[] for _ in range(self.size)]
        for i, a in enumerate(self.arcs):
            incident[a.tail].append(i)
            if a.head != a.tail:
                incident[a.head].append(i)
        out = [self._residual_of(v, incident[v]) for v in range(self.size)]
        done = 0
        dist = [0] * self.size
        seeds = list(range(self.size))
        while cycles := self.negative_cycles(out, dist, seeds):
            done += sum(self._push_while_negative(cycle) for cycle in cycles)
            # only the pushed arcs changed: their ends' residual arcs are made again, and
            # the next search starts from them (and what this one left unscanned)
            ends = {v for cycle in cycles for i, _ in cycle for v in self._ends(i)}
            for v in ends:
                out[v] = self._residual_of(v, incident[v])
            seeds.extend(ends)
        return done

    def _ends(self, i: int) -> tuple[int, int]:
        return self.arcs[i].tail, self.arcs[i].head

    def _push_while_negative(self, cycle: list[tuple[int, int]]) -> int:
        done = 0
        while True:
            total = 0
            for i, d in cycle:
                c = self._step_cost(i, d)
                if c is None:
                    total = 0
                    break
                total += c
            if total >= 0:
                return done
            for i, d in cycle:
                self.arcs[i].flow += d
            done += 1


def _parent_cycles(parent: list[tuple[int, int, int] | None]) -> list[list[tuple[int, int]]]:
    """The cycles of the parent pointers (each one is negative in Bellman-Ford)."""
    n = len(parent)
    state = [0] * n  # 0 unseen, 1 on the current walk, 2 done
    cycles = []
    for start in range(n):
        if state[start]:
            continue
        walk = []
        v: int | None = start
        while v is not None and state[v] == 0:
            state[v] = 1
            walk.append(v)
            p = parent[v]
            v = p[0] if p is not None else None
        if v is not None and state[v] == 1:
            steps = []
            w = v
            while True:
                p = parent[w]
                assert p is not None
                steps.append((p[1], p[2]))
                w = p[0]
                if w == v:
                    break
            steps.reverse()
            cycles.append(steps)
        for w in walk:
            state[w] = 2
    return cycles
