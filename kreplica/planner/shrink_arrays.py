"""RF lowered by one replica on the arrays: which replica of each partition goes.

The object planner (strategies.shrink_balanced, pickers.pick_removal) drops, per partition
in turn, the replica ranked first by: not the current leader (never dropped), then on an
ineligible broker, then a follower over the preferred leader, then on a rack another replica
also uses, then the most loaded. The same rules rank the replicas here, all rows at once; the
replicas tied on every rule but load are a row's candidates. Which candidate goes is then
chosen for the whole topic, not partition by partition:

1. First choice: the candidate with the most replicas of the topic before the plan, then
   of the cluster, then the one nearest the tail (on a Kafka-placed topic each broker is
   last in as many partitions, so the tail is often even already).
2. Even out. A row with two or more candidates is an edge between them, held by the one it
   removes from. A path of edges s -> y1 -> ... -> t, each held by the next node, handed
   back one step (each edge now held by the node before) removes one more replica from s and
   one fewer from t, nothing else changes. So while a path runs from a broker at the topic's
   highest count m to one at m - 2 or lower, take it (breadth-first, several disjoint ones a
   pass); then, the same way, from brokers 2 above the lowest count to the lowest. When no
   such path is left, the highest count is the lowest any choice among the candidates gives
   (the brokers a top broker reaches hold every edge that touches them, so their total is as
   low as it goes) and likewise the lowest count.

So a topic's replica spread after is the lowest any choice among the same candidates
reaches: never above the object planner's, which chooses among the same candidates (and
its kafka and append placements, which rank the same rules first). The greedy's spread on a
Kafka-placed topic is often 3 where 2 is reachable.

Pure and deterministic; numpy is imported with the columns.
"""

from __future__ import annotations

import numpy as np

from kreplica.columns import NO_LEADER
from kreplica.planner.array_setup import I64, ArraySetup, Mask
from kreplica.planner.evaluate import removal_window


def candidates(setup: ArraySetup, lo: int, hi: int, rows: I64) -> Mask:
    """Per row (indexes into lo:hi) and slot: whether pick_removal's rules, all but load,
    rank that replica first."""
    dense = setup.dense[lo:hi][rows]
    width = dense.shape[1]
    valid = dense >= 0
    leader = setup.columns.leader[lo:hi][rows]
    lead = np.where(leader == NO_LEADER, dense[:, 0], setup.to_dense(np.maximum(leader, 0)))
    racks = setup.racks(dense)
    shared = ((racks[:, :, None] == racks[:, None, :]) & valid[:, None, :]).sum(axis=2) > 1
    follower = np.broadcast_to(np.arange(width)[None, :] > 0, dense.shape)
    ineligible = ~setup.eligible[np.maximum(dense, 0)]
    rank = ineligible.astype(np.int64) * 4 + follower * 2 + shared
    ok = valid & (dense != lead[:, None])
    rank = np.where(ok, rank, -1)
    out: Mask = ok & (rank == rank.max(axis=1)[:, None])
    return out


def drop_one(setup: ArraySetup, lo: int, hi: int, rows: I64) -> I64:
    """The slot each row (indexes into lo:hi, each lowered by one replica) drops."""
    dense = setup.dense[lo:hi][rows]
    n, width = dense.shape
    cand = candidates(setup, lo, hi, rows)
    block = setup.dense[lo:hi]
    counts = np.bincount(block[block >= 0], minlength=setup.nb).astype(np.int64)
    # first choice: the most topic replicas, then cluster replicas, then the tail
    pick = cand
    for load in (counts, setup.cluster):
        key = np.where(pick, load[np.maximum(dense, 0)], -1)
        pick = pick & (key == key.max(axis=1)[:, None])
    slot: I64 = (width - 1 - np.argmax(pick[:, ::-1], axis=1)).astype(np.int64)
    choice = cand.sum(axis=1) > 1
    if not bool(choice.any()):
        return slot
    after = counts - np.bincount(dense[np.arange(n), slot], minlength=setup.nb)
    scope = np.flatnonzero(setup.eligible | (counts > 0))
    low, high = removal_window(counts[scope].tolist(), int(after.sum()))
    if int(after[scope].max()) <= high and int(after[scope].min()) >= low:
        return slot  # already the lowest spread any removal reaches
    edge_rows = np.flatnonzero(choice)
    e_row, e_slot = np.nonzero(cand[edge_rows])  # row-major: each edge's brokers together
    brokers = dense[edge_rows[e_row], e_slot]
    order = np.argsort(brokers, kind="stable")
    by_broker = np.split(e_row[order], np.flatnonzero(np.diff(brokers[order])) + 1)
    incident = dict(zip(np.unique(brokers).tolist(), (b.tolist() for b in by_broker), strict=True))
    holder = dense[edge_rows, slot[edge_rows]].tolist()
    level = after.tolist()
    _even_out(level, scope.tolist(), incident, holder, (low, high))
    held = np.array(holder, dtype=np.int64)
    slot[edge_rows] = np.argmax(dense[edge_rows] == held[:, None], axis=1)
    return slot


def _even_out(
    level: list[int],
    scope: list[int],
    incident: dict[int, list[int]],
    holder: list[int],
    window: tuple[int, int],
) -> None:
    """Module doc, step 2: hand edges back along paths until no path lowers the highest
    count or raises the lowest (or both reach `window`, the bounds of any removal).
    `level` and `holder` are updated in place."""
    nodes = sorted(incident)
    low, high = window
    while True:  # lower the top
        top = max(level[b] for b in scope)
        sources = [b for b in nodes if level[b] == top]
        if top <= high or not sources:
            break
        if not _pass(level, incident, holder, sources, (-(1 << 62), top - 2)):
            break
    while True:  # raise the bottom
        bottom = min(level[b] for b in scope)
        if bottom >= low or not any(level[b] == bottom for b in nodes):
            break
        sources = [b for b in nodes if level[b] >= bottom + 2]
        if not sources or not _pass(level, incident, holder, sources, (bottom, bottom)):
            break


def _pass(
    level: list[int],
    incident: dict[int, list[int]],
    holder: list[int],
    sources: list[int],
    targets: tuple[int, int],
) -> bool:
    """One breadth-first search from `sources`; hands back every path to a target that
    shares no broker with a path taken before it (a target: a broker whose count is within
    `targets`). Whether any was taken."""
    least, most = targets
    parent: dict[int, tuple[int, int] | None] = dict.fromkeys(sources)
    queue = list(sources)
    found: list[int] = []
    for x in queue:
        for e in incident[x]:
            y = holder[e]
            if y in parent:
                continue
            parent[y] = (x, e)
            if least <= level[y] <= most:
                found.append(y)
            queue.append(y)
    used: set[int] = set()
    taken = False
    for t in found:
        path: list[tuple[int, int]] = []
        y = t
        step = parent[y]
        while step is not None:
            path.append(step)
            y = step[0]
            step = parent[y]
        on_path = {t, y, *(x for x, _ in path)}
        if on_path & used:
            continue
        used |= on_path
        for x, e in path:
            holder[e] = x
        level[y] -= 1
        level[t] += 1
        taken = True
    return taken
