"""Exact balance for replicas that must go somewhere (a drain) and for preferred leaders.

Units come in groups of interchangeable partitions: the same topic and the same choices
(for a drain: the same units leaving and the same layers, so partitions with other staying
replicas share a group when their choices are the same; for leaders: the same candidates).
The network, one node per group, per (group, layer) or pool, per (topic, broker) fed by more
than one arc, per broker, and a sink:

    group g -> (g, layer l)    [n_g * lo_l, n_g * hi_l]  a layer is a rack a partition may use,
                                                          lo/hi units per partition
    (g, l) -> (topic, b)       n_g                        b on the layer (each partition once,
                                                          or g.caps[b])
    group g -> pool (t, l)     [n_g * lo_l, n_g]          a layer of hi 1 (no caps): a partition
    pool -> (topic, b)         unbounded                  gives it one unit at most, so the
                                                          groups of one topic share it
    (topic, b) -> b            convex: (topic base + y)^2
    b -> sink                  convex: W * (base + x)^2   W above any topic cost: brokers first

solved from a feasible start (improved first by single moves, `_improve`) by
`flow.Circulation`. A pool's units per broker go back to its groups in turn. The result is
split back into partitions round robin (`split`): each broker's units are consecutive and at
most n_g, so they land on distinct partitions; a layer holding >= n_g units gives every
partition one, <= n_g * hi at most hi to each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kreplica.planner.flow import Circulation

_BIG = 1 << 40


@dataclass
class Group:
    topic: str
    units: int  # per partition
    layers: list[tuple[int, int, list[int]]]  # (lo, hi, brokers) per partition
    members: list[tuple[str, int]] = field(default_factory=list)  # partitions
    start: dict[int, int] = field(default_factory=dict)  # broker -> units (a feasible start)
    caps: dict[int, int] | None = None  # broker -> units at most (default: one per partition)


def _square(base: int, weight: int = 1) -> Callable[[int], int]:
    return lambda x: weight * (base + x) * (base + x)


def solve(
    groups: Sequence[Group],
    base: Mapping[int, int],
    topic_base: Mapping[str, Mapping[int, int]],
) -> list[dict[int, int]]:
    """Per group, units per broker at the least cost (brokers' squares, then topics')."""
    _improve(groups, base, topic_base)
    net = Circulation()
    sink = net.node()
    source = net.node()
    brokers = sorted(base)
    units_of: dict[str, int] = {}
    for g in groups:
        units_of[g.topic] = units_of.get(g.topic, 0) + g.units * len(g.members)
    # W bounds every topic cost from above, so one unit of broker cost outweighs them all
    weight = 1 + sum(
        len(brokers) * (max(topic_base.get(t, {}).values(), default=0) + n) ** 2
        for t, n in units_of.items()
    )
    node_b = {b: net.node() for b in brokers}
    # arcs into (topic, broker), made at the end: one alone goes straight to the broker
    # with the topic's cost, several meet at a node first
    tb_in: dict[tuple[str, int], list[tuple[int, int, int, int]]] = {}
    arc_of: list[int] = []  # slot -> arc index

    def to_tb(tail: int, t: str, b: int, cap: int, x: int) -> int:
        tb_in.setdefault((t, b), []).append((tail, cap, x, len(arc_of)))
        arc_of.append(-1)
        return len(arc_of) - 1

    # a layer of one unit per partition at most never gives a broker two units of one
    # partition: its groups of one topic share a pool node, one arc per broker (not per
    # group and broker), and the pool's units per broker are handed back to them after
    pools: dict[tuple[str, tuple[int, ...]], tuple[int, dict[int, int]]] = {}
    unit_arcs: list[list[tuple[int, int]]] = []
    pooled: list[list[tuple[int, tuple[str, tuple[int, ...]]]]] = []
    for g in groups:
        n = len(g.members)
        gn = net.node()
        net.arc(source, gn, n * g.units, flow=n * g.units, lower=n * g.units)
        arcs = []
        into_pools = []
        for lo, hi, layer in g.layers:
            inflow = sum(g.start.get(b, 0) for b in layer)
            if hi == 1 and g.caps is None:
                pk = (g.topic, tuple(layer))
                if pk not in pools:
                    pools[pk] = (net.node(), {})
                node, pool_start = pools[pk]
                into_pools.append((net.arc(gn, node, n, flow=inflow, lower=n * lo), pk))
                for b in layer:
                    pool_start[b] = pool_start.get(b, 0) + g.start.get(b, 0)
                continue
            ln = net.node()
            net.arc(gn, ln, n * hi, flow=inflow, lower=n * lo)
            for b in layer:
                cap = n if g.caps is None else g.caps.get(b, n)
                arcs.append((to_tb(ln, g.topic, b, cap, g.start.get(b, 0)), b))
        unit_arcs.append(arcs)
        pooled.append(into_pools)
    pool_arcs = {
        pk: [(to_tb(node, pk[0], b, _BIG, start.get(b, 0)), b) for b in pk[1]]
        for pk, (node, start) in pools.items()
    }
    b_flow = dict.fromkeys(brokers, 0)
    for (t, b), entries in tb_in.items():
        cost = _square(topic_base.get(t, {}).get(b, 0))
        flow = sum(x for _, _, x, _ in entries)
        b_flow[b] += flow
        if len(entries) == 1:
            tail, cap, x, slot = entries[0]
            arc_of[slot] = net.arc(tail, node_b[b], cap, flow=x, cost=cost)
            continue
        node = net.node()
        for tail, cap, x, slot in entries:
            arc_of[slot] = net.arc(tail, node, cap, flow=x)
        net.arc(node, node_b[b], _BIG, flow=flow, cost=cost)
    total = 0
    for b in brokers:
        net.arc(node_b[b], sink, _BIG, flow=b_flow[b], cost=_square(base[b], weight))
        total += b_flow[b]
    net.arc(sink, source, total, flow=total, lower=total)
    net.cancel()
    # each pool's units, broker by broker in its order, handed to its groups in turn
    pool_units = {
        pk: iter([b for i, b in arcs for _ in range(net.arcs[arc_of[i]].flow)])
        for pk, arcs in pool_arcs.items()
    }
    out = []
    for arcs, into_pools in zip(unit_arcs, pooled, strict=True):
        per: dict[int, int] = {}
        for i, b in arcs:
            f = net.arcs[arc_of[i]].flow
            if f:
                per[b] = per.get(b, 0) + f
        for i, pk in into_pools:
            for _ in range(net.arcs[i].flow):
                b = next(pool_units[pk])
                per[b] = per.get(b, 0) + 1
        out.append(per)
    return out


def _improve(
    groups: Sequence[Group],
    base: Mapping[int, int],
    topic_base: Mapping[str, Mapping[int, int]],
) -> None:
    """The start improved by moving single units of a group between its brokers while that
    lowers the cost (brokers, then topics): the short cycles, found cheaply, so the
    circulation's searches are left the long ones."""
    counts = dict(base)
    tcounts: dict[tuple[str, int], int] = {}
    for t, per in topic_base.items():
        for b, c in per.items():
            tcounts[(t, b)] = c
    for g in groups:
        for b, x in g.start.items():
            counts[b] += x
            tcounts[(g.topic, b)] = tcounts.get((g.topic, b), 0) + x

    for _ in range(len(groups) + 1):  # each pass lowers the cost; a bound for safety only
        moved = False
        for g in groups:
            n = len(g.members)
            t = g.topic
            layer_of = {b: i for i, (_, _, bs) in enumerate(g.layers) for b in bs}
            totals = [0] * len(g.layers)
            for b, x in g.start.items():
                totals[layer_of[b]] += x
            caps = dict.fromkeys(layer_of, n) if g.caps is None else g.caps
            for a in sorted(g.start):
                while g.start.get(a, 0) > 0:
                    la = layer_of[a]
                    leave = totals[la] - 1 >= n * g.layers[la][0]
                    room = [
                        b
                        for b, lb in layer_of.items()
                        if b != a
                        and g.start.get(b, 0) < caps.get(b, n)
                        and (lb == la or (leave and totals[lb] < n * g.layers[lb][1]))
                    ]
                    if not room:
                        break
                    # a unit from a to b changes the squares by 2 (c_b - c_a + 1), brokers
                    # first: the least loaded b is the best move, if any lowers the cost
                    b = min(room, key=lambda b: (counts[b], tcounts.get((t, b), 0)))
                    broker_gain = counts[b] - counts[a] + 1
                    topic_gain = tcounts.get((t, b), 0) - tcounts[(t, a)] + 1
                    if (broker_gain, topic_gain) >= (0, 0):
                        break
                    g.start[a] -= 1
                    g.start[b] = g.start.get(b, 0) + 1
                    counts[a] -= 1
                    counts[b] += 1
                    tcounts[(t, a)] -= 1
                    tcounts[(t, b)] = tcounts.get((t, b), 0) + 1
                    totals[la] -= 1
                    totals[layer_of[b]] += 1
                    moved = True
        if not moved:
            return


def split(group: Group, per_broker: Mapping[int, int]) -> list[list[int]]:
    """The group's units handed to its partitions (members order), round robin: layers in
    order, each broker's units consecutive."""
    n = len(group.members)
    out: list[list[int]] = [[] for _ in range(n)]
    i = 0
    seen: set[int] = set()
    for _, _, layer in group.layers:
        for b in layer:
            if b in seen:
                continue
            seen.add(b)
            for _ in range(per_broker.get(b, 0)):
                out[i % n].append(b)
                i += 1
    return out
