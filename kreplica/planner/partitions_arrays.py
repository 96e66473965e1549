"""New partitions on the arrays: `plan --partitions N` on a ColumnarSnapshot, with no object
per existing partition.

make_plan sends a request here when every topic asked only gains partitions and `refusal()`
finds nothing outside what this engine does (brokers alive and with racks, or for `kafka`
none with a rack; the default strategy or `kafka` without --seed; log dirs left to the
brokers; no disk capacities to steer around; partition ids 0..n-1; every partition in sync;
at least as many eligible racks as replicas for `balanced`); anything else goes to the
object planner (plan.py).

`kafka`: Kafka's ZooKeeper-mode add-partitions placement (kafka/zk.py `add_partitions`) for
every topic at once: the rack-alternated list of the eligible brokers, partition 0's leader's
position among them as start index and shift, the shift bumped each time a partition id
crosses a multiple of the list's length, and Kafka's follower scan vectorised
(layout_arrays.aware_replicas). Bit for bit what the object planner's KafkaStrategy gives.

`balanced`, per topic in name order as the object planner goes:

1. Leaders: the new partitions' leaders raise the topic's fewest-leader brokers to a common
   level (water filling over the eligible brokers, as pick_leader's first key does, so the
   topic's leader spread is the lowest there is); within a level one broker per rack in turn
   (pick_leader's rack rotation), each rack's brokers by topic replicas (read as the
   followers' fill will leave them, at least the water level: pick_leader sees the followers
   placed so far), then cluster leaders, cluster replicas, cluster bytes and id.
2. Followers: each new partition's other replicas are units of the array planner's topic
   step (arrays._Topic: the lowest topic spread the rack rule admits with the leaders fixed,
   each unit on a rack its partition lacks, least loaded brokers first), the same objective
   as the object planner's exact balance (balance.py) with its leaders fixed. Where that
   leaves the topic above the water-filling floor, leaders read by the topic's replicas now
   are placed too, and the lower topic spread is kept.

So a topic's leader spread is the lowest any placement gives, and its replica spread the
lowest with those leaders; the object planner reaches the same spreads when its leaders
leave the same room (tests/unit/planner/test_partitions_arrays.py compares them on random
clusters). Which broker of a tie gets a leader may differ. The report is measured from the
arrays (planner/measure.py); the new partitions are PartitionChange objects (what the plan
files, the diff and apply read), one per new partition only.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat

import numpy as np
import numpy.typing as npt

from kreplica.columns import ISR_OTHER, PAD, ArrayChanges, PartitionColumns
from kreplica.kafka.zk import rack_alternated_brokers, zk_add_start_index
from kreplica.model import ClusterSnapshot, Finding, PartitionChange, Plan, PlanReport
from kreplica.planner.array_setup import popcount
from kreplica.planner.arrays import (
    _cluster_bytes,
    _floor,
    _Setup,
    _Topic,
    _water_level,
    setup_of,
    shared_refusal,
)
from kreplica.planner.disk import DiskGuard
from kreplica.planner.evaluate import spread, spread_floor
from kreplica.planner.layout_arrays import aware_replicas
from kreplica.planner.measure import Created, measure_disk, measure_report
from kreplica.planner.options import PlanOptions, TopicRequest
from kreplica.planner.report import LowerBound, imbalance_note
from kreplica.planner.requests import _min_isr_findings

I64 = npt.NDArray[np.int64]

TAKEN = "partitions to create, which the array planner takes (planner/partitions_arrays.py)"


def adds_partitions_only(requests: Sequence[TopicRequest]) -> bool:
    """Whether every request only asks for more partitions (this engine's kind)."""
    return bool(requests) and all(
        r.partitions is not None and r.rf is None and not r.fix_racks for r in requests
    )


class _Request:
    """What refusal() found: the setup, and per requested topic (name order) its index,
    rows and the partitions to create."""

    def __init__(self, setup: _Setup, topics: list[tuple[int, int, int, int]]) -> None:
        self.setup = setup
        self.topics = topics  # (topic index, lo, hi, partitions after)


def refusal(
    snapshot: ClusterSnapshot, requests: Sequence[TopicRequest], options: PlanOptions
) -> str | None:
    """Why this engine does not take the request (None: it does)."""
    return _prepare(snapshot, requests, options)[0]


def plan_if_taken(
    snapshot: ClusterSnapshot, requests: Sequence[TopicRequest], options: PlanOptions
) -> tuple[Plan | None, str]:
    """The plan when refusal() finds nothing, else None, and why (make_plan's dispatch)."""
    why, request = _prepare(snapshot, requests, options)
    if why is not None or request is None:
        return None, why or "no request"
    return plan_partitions(snapshot, requests, options, request), TAKEN


def _prepare(
    snapshot: ClusterSnapshot, requests: Sequence[TopicRequest], options: PlanOptions
) -> tuple[str | None, _Request | None]:
    columns: PartitionColumns | None = getattr(snapshot, "columns", None)
    if columns is None:
        return "the snapshot is not in columns", None
    if not adds_partitions_only(requests):
        return "not new partitions alone", None
    if options.strategy not in ("balanced", "kafka"):
        return f"strategy {options.strategy}", None
    if any(not b.alive for b in snapshot.brokers):
        return "a broker is down", None
    racked = sum(b.rack is not None for b in snapshot.brokers)
    if racked < len(snapshot.brokers) and (options.strategy == "balanced" or racked):
        return "a broker without a rack", None  # kafka: all or none (Kafka refuses a mix)
    why = shared_refusal(snapshot, columns, requests, options)
    if why is not None:
        return why, None
    if DiskGuard.build(snapshot, options.disk_headroom) is not None:
        return "disk capacities known (new partitions steer around full disks)", None
    why, setup = setup_of(snapshot, columns, options)
    if setup is None:
        return why, None
    eligible = setup.eligible_ids
    index = {t.name: i for i, t in enumerate(columns.topics)}
    elig_racks = int(popcount(np.array([setup.elig_rack_mask], dtype=np.int64))[0])
    topics: list[tuple[int, int, int, int]] = []
    for req in sorted(requests, key=lambda r: r.topic):
        i = index[req.topic]
        lo, hi = int(columns.start[i]), int(columns.start[i + 1])
        total = int(req.partitions or 0)
        if lo == hi or total < hi - lo:
            return "no partitions, or fewer asked than there are", None
        if not np.array_equal(columns.partition[lo:hi], np.arange(hi - lo)):
            return "partition ids not 0..n-1", None
        if bool((columns.isr_kind[lo:hi] == ISR_OTHER).any()):
            return "replicas out of sync", None
        rf = int(columns.rf[lo])
        if total > hi - lo:
            if rf > len(eligible):
                return "too few eligible brokers", None
            if options.strategy == "balanced" and rf > elig_racks:
                return "more replicas than eligible racks", None
        topics.append((i, lo, hi, total))
    return None, _Request(setup, topics)


def plan_partitions(
    snapshot: ClusterSnapshot,
    requests: Sequence[TopicRequest],
    options: PlanOptions,
    request: _Request,
) -> Plan:
    """The plan of a request refusal() accepted (see the module doc)."""
    setup = request.setup
    columns = setup.columns
    findings: list[Finding] = []
    for req in requests:
        shell = columns.topics[[t.name for t in columns.topics].index(req.topic)]
        findings.extend(_min_isr_findings(shell, req, options, False))
    growing = [t for t in request.topics if t[3] > t[2] - t[1]]
    if options.strategy == "kafka":
        aware = all(b.rack is not None for b in snapshot.brokers)
        blocks = _kafka(setup, growing, aware)
    else:
        blocks = _balanced(setup, growing)
    topic_index = np.concatenate(
        [np.full(t[3] - (t[2] - t[1]), t[0], dtype=np.int64) for t in growing]
        or [np.zeros(0, dtype=np.int64)]
    )
    width = max([b.shape[1] for b in blocks] or [1])
    dense = np.full((len(topic_index), width), -1, dtype=np.int64)
    at = 0
    for block in blocks:
        dense[at : at + len(block), : block.shape[1]] = block
        at += len(block)
    ids = np.where(dense >= 0, setup.ids[np.maximum(dense, 0)], PAD)
    changes: list[PartitionChange] = []
    for (i, lo, hi, total), block in zip(growing, blocks, strict=True):
        # a topic's new partitions all have its RF: the block has no padding
        rows = ids[len(changes) : len(changes) + len(block), : block.shape[1]].tolist()
        pids = range(hi - lo, total)
        n = len(pids)
        name = repeat(columns.topics[i].name, n)
        changes.extend(
            map(PartitionChange, name, pids, repeat(None, n), map(tuple, rows), repeat(0, n))
        )
    created = Created(topic_index, dense)
    empty = ArrayChanges(
        columns,
        np.zeros(0, dtype=np.int64),
        np.zeros((0, columns.replicas.shape[1]), dtype=np.int32),
        np.zeros(0, dtype=np.int64),
    )
    added = int((dense >= 0).sum())
    topics = [r.topic for r in requests]
    eligible = setup.eligible_ids
    report = measure_report(
        snapshot, options, eligible, topics, setup, empty, LowerBound(added, 0, 0), None, created
    )
    report["disk"] = measure_disk(snapshot, options, setup, empty)
    findings.extend(_imbalance(report, setup, created, options.strategy))
    return Plan(
        cluster_id=snapshot.cluster_id,
        snapshot_fingerprint=snapshot.fingerprint(),
        strategy=options.strategy,
        changes=tuple(changes),
        report=report,
        findings=tuple(findings),
    )


def _kafka(setup: _Setup, topics: list[tuple[int, int, int, int]], aware: bool) -> list[I64]:
    """Kafka's add-partitions placement of every topic's new partitions (dense indexes);
    `aware`: the brokers have racks (refusal(): all of them, or none)."""
    columns = setup.columns
    elig_idx = np.flatnonzero(setup.eligible)
    ids = setup.ids[elig_idx].tolist()
    sorted_ids = sorted(ids)
    names = [setup.rack_names[int(r)] for r in setup.rack_of[elig_idx].tolist()]
    order = rack_alternated_brokers(dict(zip(ids, names, strict=True))) if aware else sorted_ids
    order_dense = setup.to_dense(np.array(order, dtype=np.int64))
    rack_pos = setup.rack_of[order_dense]
    n_racks = len(set(names))
    n = len(order)
    out: list[I64] = []
    for _i, lo, hi, total in topics:
        current = hi - lo
        rf = int(columns.rf[lo])
        start = zk_add_start_index(sorted_ids, int(columns.replicas[lo, 0]))
        pid = np.arange(current, total, dtype=np.int64)
        # Kafka bumps the shift each time the partition id crosses a multiple of n
        lowest = max(current, 1)
        bumps = np.where(pid >= lowest, pid // n - (lowest - 1) // n, 0)
        first = (pid + start) % n
        shift = start + bumps
        if aware:
            positions = aware_replicas(
                np.arange(n, dtype=np.int64), rack_pos, n_racks, rf, first, shift
            )
        else:  # zk.replica_index for each follower
            j = np.arange(rf - 1, dtype=np.int64)[None, :]
            follow = (first[:, None] + 1 + (shift[:, None] + j) % max(n - 1, 1)) % n
            positions = np.concatenate([first[:, None], follow], axis=1)
        out.append(order_dense[positions])
    return out


def _balanced(setup: _Setup, topics: list[tuple[int, int, int, int]]) -> list[I64]:
    """Leaders, then followers by the topic step, per topic in name order (module doc)."""
    columns = setup.columns
    nb = setup.nb
    first = setup.dense[:, 0]
    cluster_leaders = np.bincount(first[first >= 0], minlength=nb).astype(np.int64)
    cluster_bytes = _cluster_bytes(setup)
    elig_idx = np.flatnonzero(setup.eligible)
    out: list[I64] = []
    for _i, lo, hi, total in topics:
        k = total - (hi - lo)
        rf = int(columns.rf[lo])
        block = setup.dense[lo:hi]
        base = np.bincount(block[block >= 0], minlength=nb).astype(np.int64)
        lead_now = np.bincount(block[:, 0][block[:, 0] >= 0], minlength=nb)[elig_idx]
        key = np.lexsort(
            (elig_idx, cluster_bytes[elig_idx], setup.cluster[elig_idx], cluster_leaders[elig_idx])
        )  # the topic's replicas come first, in _leader_slots
        srank = np.empty(len(elig_idx), dtype=np.int64)
        srank[key] = np.arange(len(elig_idx))
        # pick_leader reads a broker's topic replicas with the followers placed so far, and
        # the emptiest brokers get followers first: their count nears the water level. That
        # estimate spreads leaders over the cluster as pick_leader does; where it leaves the
        # topic above its floor, the leaders by the replicas now are tried too (the lower
        # topic spread wins)
        replicas = base[elig_idx]
        level = _water_level(np.sort(replicas), k * rf)
        leaders = _leader_slots(lead_now, replicas, level, srank, k, setup)
        placed, spread_after = _place(setup, base, leaders, rf)
        scope = setup.eligible | (base > 0)
        floor = _floor(base[setup.eligible], base[scope & ~setup.eligible], k * rf)
        if spread_after > floor:
            other, other_spread = _place(
                setup, base, _leader_slots(lead_now, replicas, 0, srank, k, setup), rf
            )
            if other_spread < spread_after:
                placed = other
        added = np.bincount(placed[placed >= 0], minlength=nb)
        setup.cluster += added
        cluster_leaders += np.bincount(placed[:, 0], minlength=nb)
        out.append(placed)
    return out


def _place(setup: _Setup, base: I64, leaders: I64, rf: int) -> tuple[I64, int]:
    """A topic's new partitions with these leaders (dense indexes), the followers by the
    topic step, and the topic's spread after; setup's counts are left as they were."""
    nb = setup.nb
    k = len(leaders)
    placed = np.full((k, rf), -1, dtype=np.int64)
    placed[:, 0] = leaders
    per_leader = np.bincount(leaders, minlength=nb)
    with_leaders = base + per_leader
    if rf > 1:
        bit = np.left_shift(np.int64(1), setup.rack_of[leaders])
        setup.cluster += per_leader  # the fill breaks ties by cluster load, leaders included
        topic = _Topic(
            setup,
            with_leaders,
            np.arange(k, dtype=np.int64),
            np.ones(k, dtype=np.int64),
            np.int64(setup.elig_rack_mask) & ~bit,
            np.full(k, rf - 1, dtype=np.int64),
        )
        rows, slots, brokers, _delta = topic.plan()
        setup.cluster -= per_leader
        placed[rows, slots] = brokers
    after = base + np.bincount(placed[placed >= 0], minlength=nb)
    scope = setup.eligible | (base > 0)
    return placed, int(after[scope].max() - after[scope].min())


def _leader_slots(
    counts: I64, replicas: I64, estimate: int, srank: I64, k: int, setup: _Setup
) -> I64:
    """The `k` new leaders (dense indexes), in partition order; `counts`, `replicas` and
    `srank` are per eligible broker:
    the brokers with the fewest topic leaders raised to a common level W, the remainder at
    W as pick_leader takes them (the racks with the fewest topic leaders first, one broker
    each in turn, by topic `replicas` (at least `estimate`) then `srank`); the slots of a level
    one rack per turn."""
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    elig_idx = np.flatnonzero(setup.eligible)
    rack = setup.rack_of[elig_idx]
    ordered = np.sort(counts)
    n = len(ordered)
    reach = (k + np.cumsum(ordered)) // np.arange(1, n + 1)  # level if the lowest i+1 share k
    nxt = np.append(ordered[1:], np.iinfo(np.int64).max)
    w = int(reach[int(np.argmax((reach < nxt) | (np.arange(n) == n - 1)))])
    below = np.maximum(0, w - counts)
    rest = k - int(below.sum())
    owner = np.repeat(np.arange(n), below)
    level = counts[owner] + (np.arange(len(owner)) - np.repeat(np.cumsum(below) - below, below))
    at_w = np.flatnonzero(np.maximum(counts, w) == w)
    rack_total = np.bincount(rack, weights=counts + below).astype(np.int64)
    held = np.maximum(replicas + below, estimate)[at_w]  # topic replicas when picked
    within = np.empty(len(at_w), dtype=np.int64)
    within[np.lexsort((srank[at_w], held))] = np.arange(len(at_w))
    turn = _turns(rack[at_w], within)
    pick = at_w[np.lexsort((srank[at_w], held, rack_total[rack[at_w]] + turn))[:rest]]
    owner = np.concatenate([owner, pick])
    level = np.concatenate([level, np.full(len(pick), w, dtype=np.int64)])
    turn = np.zeros(len(owner), dtype=np.int64)
    for lv in np.unique(level).tolist():
        mine = np.flatnonzero(level == lv)
        turn[mine] = _turns(rack[owner[mine]], srank[owner[mine]])
    result: I64 = elig_idx[owner[np.lexsort((srank[owner], turn, level))]]
    return result


def _turns(rack: I64, srank: I64) -> I64:
    """Each broker's place among its rack's (by `srank`, distinct ranks): its turn."""
    order = np.lexsort((srank, rack))
    sorted_rack = rack[order]
    first = np.searchsorted(sorted_rack, sorted_rack)
    out = np.empty(len(rack), dtype=np.int64)
    out[order] = np.arange(len(rack)) - first
    return out


def _imbalance(report: PlanReport, setup: _Setup, created: Created, strategy: str) -> list[Finding]:
    """plan._imbalance_findings for new partitions: topics left with a spread above 1, and
    whether the old layout alone forces it (no placement of the new replicas does better
    even without per-partition rules)."""
    spreads = report["topic_spread_after"]
    uneven = sorted((value, topic) for topic, value in spreads.items() if value > 1)
    if not uneven:
        return []
    columns = setup.columns
    index = {t.name: i for i, t in enumerate(columns.topics)}
    ids = setup.ids.tolist()
    forced = 0
    for _, name in uneven:
        i = index[name]
        lo, hi = int(columns.start[i]), int(columns.start[i + 1])
        block = setup.dense[lo:hi]
        tb = np.bincount(block[block >= 0], minlength=setup.nb).tolist()
        mine = created.dense[created.topic_index == i]
        new = np.bincount(mine[mine >= 0], minlength=setup.nb).tolist()
        elig = setup.eligible.tolist()
        counts = {ids[b]: tb[b] for b in range(setup.nb) if tb[b] or elig[b]}
        eligible_counts = {ids[b]: tb[b] for b in range(setup.nb) if elig[b]}
        fixed = {b: n for b, n in counts.items() if b not in eligible_counts}
        after = {ids[b]: tb[b] + new[b] for b in range(setup.nb) if tb[b] or elig[b] or new[b]}
        forced += spread(after) <= spread_floor(fixed, eligible_counts, int(sum(new)))
    if forced == len(uneven):
        why = (
            "with every existing replica where it is, no placement of the new ones does "
            "better; only moving existing replicas would, and this plan moves none"
        )
    elif strategy == "balanced":
        why = (
            "balanced gives new partitions' leaders the lowest spread first, which leaves "
            "their replicas less even here; no existing replica moves to even them out"
        )
    else:
        why = "--strategy balanced may place the new replicas more evenly"
    return [imbalance_note(uneven, why)]
