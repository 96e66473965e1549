"""Rack repair (--fix-racks, no RF change) on the arrays: strategies.repair_racks, row by row.

Only the rows spanning fewer racks than they can (rack_target: min(replicas, racks of the
eligible brokers and of its replicas)) are visited, found all at once; each is repaired as
repair_racks does it, in partition order with the loads kept current:

    while racks(row) < target:
        source: a replica sharing its rack (pickers.pick_rack_move_source: a follower that
                is not leading now, else the first replica if it is not leading, else any
                follower; then ineligible, then most loaded: topic, cluster, bytes, last
                in broker order)
        dest:   the eligible broker outside the row on a rack it does not use, least loaded
                (topic, cluster, bytes, first in broker order); same slot

A row that cannot reach its target is left to the object planner (`Unrepaired`), whose
lower bound then differs from the moves.

Pure and deterministic; numpy is imported with the columns.
"""

from __future__ import annotations

import numpy as np

from kreplica.columns import NO_LEADER
from kreplica.planner.array_setup import I64, ArraySetup, Mask, popcount


class Unrepaired(Exception):
    """A row rack repair cannot bring to its target (the object planner takes the request)."""


def needs_repair(setup: ArraySetup, dense: I64) -> Mask:
    """Rows spanning fewer racks than rack_target gives them."""
    racks = setup.racks(dense)
    bits = np.where(racks >= 0, np.left_shift(np.int64(1), np.maximum(racks, 0)), 0)
    used = np.bitwise_or.reduce(bits, axis=1)
    reach = popcount(used | np.int64(setup.elig_rack_mask))
    held = popcount(used)
    size = (dense >= 0).sum(axis=1)
    out: Mask = held < np.minimum(size, reach)
    return out


def repair(setup: ArraySetup, lo: int, hi: int, after: I64, cluster_bytes: I64) -> I64:
    """Repair topic lo:hi's rows in `after` (dense broker indexes); the rows changed. The
    cluster counts and bytes move with each replica."""
    block = after[lo:hi]
    rows = np.flatnonzero(needs_repair(setup, block))
    if not rows.size:
        return rows
    columns = setup.columns
    topic = np.bincount(block[block >= 0], minlength=setup.nb).astype(np.int64)
    rack_of = setup.rack_of.tolist()
    eligible = setup.eligible
    elig_list = eligible.tolist()
    cluster, nbytes = setup.cluster, cluster_bytes
    sizes = np.maximum(columns.size[lo:hi], 0).tolist()
    leaders = columns.leader[lo:hi].tolist()
    for r in rows.tolist():
        reps = [b for b in block[r].tolist() if b >= 0]
        lead = leaders[r]
        leader = reps[0] if lead == NO_LEADER else int(setup.to_dense(np.array([lead]))[0])
        size = sizes[r]
        target = min(len(reps), len({rack_of[b] for b in reps} | _elig_racks(setup)))
        for _ in range(len(reps)):
            if len({rack_of[b] for b in reps}) >= target:
                break
            source = _move_source(reps, leader, rack_of, elig_list, topic, cluster, nbytes)
            if source is None:
                break
            rest = [b for b in reps if b != source]
            used = {rack_of[b] for b in rest}
            pool = eligible.copy()
            pool[[*rest, source]] = False
            pool &= ~np.isin(setup.rack_of, list(used))
            options = np.flatnonzero(pool)
            if not options.size:
                break
            dest = int(
                options[np.lexsort((options, nbytes[options], cluster[options], topic[options]))[0]]
            )
            reps = [dest if b == source else b for b in reps]
            for b, sign in ((source, -1), (dest, 1)):
                topic[b] += sign
                cluster[b] += sign
                nbytes[b] += sign * size
        if len({rack_of[b] for b in reps}) < target:
            raise Unrepaired
        block[r, : len(reps)] = reps
    return rows


def _elig_racks(setup: ArraySetup) -> set[int]:
    mask = setup.elig_rack_mask
    return {r for r in range(mask.bit_length()) if mask >> r & 1}


def _move_source(
    reps: list[int],
    leader: int,
    rack_of: list[int],
    eligible: list[bool],
    topic: I64,
    cluster: I64,
    nbytes: I64,
) -> int | None:
    """pickers.pick_rack_move_source (nothing preferred: the request adds no replica;
    `leader` -1: none leads now)."""
    use: dict[int, int] = {}
    for b in reps:
        use[rack_of[b]] = use.get(rack_of[b], 0) + 1
    shared = [b for b in reps if use[rack_of[b]] > 1]
    first = reps[0]
    candidates = (
        [b for b in shared if b != first and b != leader]
        or [b for b in shared if b != leader]
        or [b for b in shared if b != first]
    )
    if not candidates:
        return None
    return max(
        candidates,
        key=lambda b: (not eligible[b], int(topic[b]), int(cluster[b]), int(nbytes[b]), -b),
    )
