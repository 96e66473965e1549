"""Intra-broker moves on JBOD brokers: drain one log dir, or even out the dirs of each broker.

Pure (standard library only, deterministic). The input is, per broker, its log dirs with total
and usable bytes (DescribeLogDirs, KIP-827) and where each replica lives with its own size. The
output is a list of dir moves (a replica stays on its broker and changes dir), Kafka's
reassignment JSON for them (the replicas stay put, `log_dirs` names the new dir of each moved
replica and "any" for the others: what `kafka-reassign-partitions --execute` accepts for
intra-broker moves), and per-dir rows before and after.

The headroom guard: a dir that receives bytes must keep at least `headroom` × its total bytes
usable after them (the source dir keeps its copy until the move is done, so nothing it frees
counts). A dir whose total or usable bytes are unknown is not checked.

drain_dir: every replica of the dir moves exactly once (the fewest bytes any drain can move:
all of them), largest first, each to the broker's other dir with the most usable bytes after
the earlier placements that still keeps its headroom (ties: the path). When one fits nowhere,
PlanInfeasible names the broker, the dir, the bytes needed and the most that is free.

balance_dirs: per broker, each dir's target is its share of the replica bytes on the broker,
in proportion to its total bytes (equal shares when totals are unknown or equal, as for dirs on
one filesystem). Greedy, largest replica first: a replica moves only from a dir above its target
to a dir below its target, and only when it fits in both gaps (never overshoots a target); so
each replica moves at most once, a dir never goes from above to below its target, and the bytes
moved are at most the sum of the excesses over the targets, which is the least any plan must
move to reach the targets exactly. It stops when no replica left in a dir above target fits the
smaller of its excess and some dir's deficit (the remaining imbalance is then below the size of
the replicas that would have to move).
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kreplica.errors import PlanInfeasible, UsageError
from kreplica.model import ClusterSnapshot, LogDir
from kreplica.planner.serialize import rollback_document

DEFAULT_HEADROOM = 0.10
ANY = "any"


class KeepFree(Protocol):
    """A headroom rule (kreplica.planner.disk.Headroom): bytes a dir of `total` bytes keeps."""

    def of(self, total: int) -> int: ...

    def text(self) -> str: ...


Headroom = float | KeepFree  # a fraction of each dir's total bytes, or a rule


def _keep(headroom: Headroom, total: int) -> int:
    if isinstance(headroom, float | int):
        return -(-int(total * headroom * 10_000) // 10_000)  # ceil
    return headroom.of(total)


def _headroom_text(headroom: Headroom) -> str:
    if isinstance(headroom, float | int):
        return f"{headroom:.0%}"
    return headroom.text()


@dataclass(frozen=True)
class ReplicaDir:
    """One replica: which dir of its broker holds it, and its own log size."""

    topic: str
    partition: int
    broker: int
    path: str
    size_bytes: int = 0


@dataclass(frozen=True)
class DirMove:
    topic: str
    partition: int
    broker: int
    source: str
    target: str
    size_bytes: int

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class DirRow:
    """One dir before and after the plan (replica bytes as kreplica counts them)."""

    broker: int
    path: str
    total_bytes: int | None
    usable_before: int | None
    usable_after: int | None  # after every move completed (sources freed)
    min_usable: int | None  # the least usable while moves run (copies land before sources go)
    bytes_before: int
    bytes_after: int
    incoming: int
    outgoing: int
    replicas_before: int
    replicas_after: int
    under_headroom: bool


@dataclass(frozen=True)
class DirPlan:
    command: str  # "drain-dir" | "balance-dirs"
    moves: tuple[DirMove, ...]
    rows: tuple[DirRow, ...]
    headroom: str  # as the user gave it: "10%", "50.0 GiB"
    brokers: tuple[int, ...]
    guarantee: str
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def bytes_moved(self) -> int:
        return sum(m.size_bytes for m in self.moves)

    # drain: every byte in the dir; balance: the excess over the targets (sizes ignored)
    lower_bound_bytes: int = 0


def _fits(d: LogDir, incoming: int, size: int, headroom: Headroom) -> bool:
    if d.total_bytes is None or d.usable_bytes is None:
        return True
    return d.usable_bytes - incoming - size >= _keep(headroom, d.total_bytes)


def _room(d: LogDir, incoming: int, headroom: Headroom) -> int:
    """The most bytes `d` can still take and keep its headroom (unbounded when unknown)."""
    if d.total_bytes is None or d.usable_bytes is None:
        return 2**63
    return d.usable_bytes - incoming - _keep(headroom, d.total_bytes)


def _free(d: LogDir, incoming: int) -> int | None:
    if d.usable_bytes is None:
        return None
    return d.usable_bytes - incoming


def _check_headroom(headroom: Headroom) -> None:
    if isinstance(headroom, float | int) and not 0 <= headroom < 1:
        raise UsageError(f"`disk_headroom` {headroom} must be at least 0 and below 1 (e.g. 0.1)")


def replica_dirs(snapshot: ClusterSnapshot) -> list[ReplicaDir]:
    """Every replica whose dir the snapshot knows, with its own size (0 when unknown)."""
    out: list[ReplicaDir] = []
    for t in snapshot.topics:
        for p in t.partitions:
            if p.replica_dirs is None:
                continue
            sizes = p.replica_sizes or ()
            for i, (broker, path) in enumerate(zip(p.replicas, p.replica_dirs, strict=False)):
                if path is None:
                    continue
                size = sizes[i] if i < len(sizes) else None
                if size is None:
                    size = p.size_bytes or 0
                out.append(ReplicaDir(t.name, p.partition, broker, path, size))
    return out


def _by_broker(
    snapshot: ClusterSnapshot,
) -> tuple[dict[int, dict[str, LogDir]], dict[int, list[ReplicaDir]]]:
    by_broker: dict[int, dict[str, LogDir]] = {
        b.id: {d.path: d for d in b.disks} for b in snapshot.brokers if b.disks
    }
    reps: dict[int, list[ReplicaDir]] = {}
    for r in replica_dirs(snapshot):
        reps.setdefault(r.broker, []).append(r)
    return by_broker, reps


def _no_dirs(snapshot: ClusterSnapshot, brokers: Sequence[int], known: Iterable[int]) -> UsageError:
    listed = ", ".join(str(b) for b in sorted(known)) or "none"
    ids = {b.id for b in snapshot.brokers}
    unknown = [b for b in brokers if b not in ids]
    if unknown:
        return UsageError(
            f"broker(s) {', '.join(map(str, unknown))} are not in this cluster "
            f"(brokers: {', '.join(str(i) for i in sorted(ids)) or 'none'})"
        )
    return UsageError(
        f"broker(s) {', '.join(map(str, brokers))} have no log dirs this source can see "
        f"(brokers with log dirs: {listed}); read the cluster from the brokers "
        "(`bootstrap_server`: DescribeLogDirs), or a snapshot that recorded log_dirs"
    )


def _order(r: ReplicaDir) -> tuple[int, str, int]:
    return (-r.size_bytes, r.topic, r.partition)


def drain_dir(
    snapshot: ClusterSnapshot,
    *,
    broker: int,
    path: str,
    headroom: Headroom = DEFAULT_HEADROOM,
) -> DirPlan:
    """Move every replica out of `path` on `broker` into its other dirs (see the module)."""
    _check_headroom(headroom)
    by_broker, reps = _by_broker(snapshot)
    mine = by_broker.get(broker)
    if not mine:
        raise _no_dirs(snapshot, [broker], by_broker)
    if path not in mine:
        raise UsageError(
            f"broker {broker} has no log dir {path!r} (its dirs: {', '.join(sorted(mine))})"
        )
    others = [d for p, d in sorted(mine.items()) if p != path]
    if not others:
        raise PlanInfeasible(
            f"broker {broker} has one log dir only ({path}): there is no other dir to drain it to"
        )
    incoming = {d.path: 0 for d in others}
    moves: list[DirMove] = []
    leaving = sorted((r for r in reps.get(broker, []) if r.path == path), key=_order)
    for r in leaving:
        fitting = [d for d in others if _fits(d, incoming[d.path], r.size_bytes, headroom)]
        if not fitting:
            best = max(others, key=lambda d: (_free(d, incoming[d.path]) or 0, d.path))
            free = _free(best, incoming[best.path])
            total = best.total_bytes or 0
            raise PlanInfeasible(
                f"cannot drain {path} on broker {broker}: {r.topic}-{r.partition} needs "
                f"{r.size_bytes} bytes plus {_headroom_text(headroom)} headroom, and the "
                f"most free is {free} bytes in {best.path} (total {total}) after "
                f"{len(moves)} earlier move(s); free space or lower `disk_headroom`"
            )
        # the most usable bytes after earlier placements; max keeps the first (path order)
        target = max(fitting, key=lambda d: _free(d, incoming[d.path]) or 0)
        incoming[target.path] += r.size_bytes
        moves.append(DirMove(r.topic, r.partition, broker, path, target.path, r.size_bytes))
    rows = _rows({broker: mine}, reps, moves, headroom)
    return DirPlan(
        command="drain-dir",
        moves=tuple(sorted(moves, key=lambda m: (m.topic, m.partition, m.broker))),
        rows=rows,
        headroom=_headroom_text(headroom),
        brokers=(broker,),
        guarantee="every replica of the dir moves once: the fewest bytes a drain can move",
        lower_bound_bytes=sum(r.size_bytes for r in leaving),
    )


def balance_dirs(
    snapshot: ClusterSnapshot,
    *,
    brokers: Collection[int] | None = None,
    headroom: Headroom = DEFAULT_HEADROOM,
) -> DirPlan:
    """Even out the dirs of each broker (all, or `brokers`) with the fewest bytes (see the
    module for the guarantee)."""
    _check_headroom(headroom)
    by_broker, reps = _by_broker(snapshot)
    chosen = sorted(by_broker) if brokers is None else sorted(set(brokers))
    missing = [b for b in chosen if b not in by_broker]
    if missing or not chosen:
        raise _no_dirs(snapshot, missing, by_broker)
    moves: list[DirMove] = []
    lower = 0
    warnings: list[str] = []
    for b in chosen:
        bmoves, excess = _balance_broker(by_broker[b], reps.get(b, []), headroom)
        moves += bmoves
        lower += excess
        if len(by_broker[b]) < 2:
            warnings.append(f"broker {b} has one log dir: nothing to balance")
    rows = _rows({b: by_broker[b] for b in chosen}, reps, moves, headroom)
    return DirPlan(
        command="balance-dirs",
        moves=tuple(sorted(moves, key=lambda m: (m.topic, m.partition, m.broker))),
        rows=rows,
        headroom=_headroom_text(headroom),
        brokers=tuple(chosen),
        guarantee="each replica moves at most once, only from a dir above its target share to "
        "one below it, never past a target: bytes moved <= the excess over the targets",
        warnings=tuple(warnings),
        lower_bound_bytes=lower,
    )


def _balance_broker(
    dirs: Mapping[str, LogDir], replicas: Sequence[ReplicaDir], headroom: Headroom
) -> tuple[list[DirMove], int]:
    paths = sorted(dirs)
    if len(paths) < 2:
        return [], 0
    used = dict.fromkeys(paths, 0)
    held: dict[str, list[ReplicaDir]] = {p: [] for p in paths}
    for r in replicas:
        if r.path in used:
            used[r.path] += r.size_bytes
            held[r.path].append(r)
    totals = [dirs[p].total_bytes for p in paths]
    if all(t is not None and t > 0 for t in totals):
        weights = {p: dirs[p].total_bytes or 0 for p in paths}
    else:
        weights = dict.fromkeys(paths, 1)
    all_bytes = sum(used.values())
    weight_sum = sum(weights.values())
    # Integer targets summing to all_bytes (remainders to the first dirs in path order).
    target = {p: all_bytes * weights[p] // weight_sum for p in paths}
    for p in paths[: all_bytes - sum(target.values())]:
        target[p] += 1
    excess_total = sum(max(0, used[p] - target[p]) for p in paths)
    # Per dir: the movable replicas (size > 0) ascending by size, for bisect on the gap.
    pool = {
        p: sorted(
            (r for r in held[p] if r.size_bytes > 0),
            key=lambda r: (r.size_bytes, r.topic, r.partition),
        )
        for p in paths
    }
    sizes = {p: [r.size_bytes for r in pool[p]] for p in paths}
    incoming = dict.fromkeys(paths, 0)
    moves: list[DirMove] = []
    while True:
        over = sorted(
            (p for p in paths if used[p] > target[p]), key=lambda p: (target[p] - used[p], p)
        )
        under = sorted(
            (p for p in paths if used[p] < target[p]), key=lambda p: (used[p] - target[p], p)
        )
        if not over or not under:
            break
        found: tuple[str, int, str] | None = None
        for src in over:
            gap_src = used[src] - target[src]
            for dst in under:
                # the largest replica that fits both gaps and the destination's headroom
                cap = min(
                    gap_src, target[dst] - used[dst], _room(dirs[dst], incoming[dst], headroom)
                )
                i = bisect.bisect_right(sizes[src], cap) - 1
                if i >= 0:
                    found = (src, i, dst)
                    break
            if found:
                break
        if found is None:
            break
        src, i, dst = found
        r = pool[src].pop(i)
        sizes[src].pop(i)
        used[src] -= r.size_bytes
        used[dst] += r.size_bytes
        incoming[dst] += r.size_bytes
        moves.append(DirMove(r.topic, r.partition, r.broker, src, dst, r.size_bytes))
    return moves, excess_total


def _rows(
    dirs: Mapping[int, Mapping[str, LogDir]],
    replicas: Mapping[int, Sequence[ReplicaDir]],
    moves: Sequence[DirMove],
    headroom: Headroom,
) -> tuple[DirRow, ...]:
    rows: list[DirRow] = []
    for b in sorted(dirs):
        for p, d in sorted(dirs[b].items()):
            held = [r for r in replicas.get(b, []) if r.path == p]
            before = sum(r.size_bytes for r in held)
            inc = [m for m in moves if m.broker == b and m.target == p]
            out = [m for m in moves if m.broker == b and m.source == p]
            incoming = sum(m.size_bytes for m in inc)
            outgoing = sum(m.size_bytes for m in out)
            usable_after = None if d.usable_bytes is None else d.usable_bytes - incoming + outgoing
            min_usable = None if d.usable_bytes is None else d.usable_bytes - incoming
            under = (
                d.total_bytes is not None
                and min_usable is not None
                and min_usable < _keep(headroom, d.total_bytes)
            )
            rows.append(
                DirRow(
                    broker=b,
                    path=p,
                    total_bytes=d.total_bytes,
                    usable_before=d.usable_bytes,
                    usable_after=usable_after,
                    min_usable=min_usable,
                    bytes_before=before,
                    bytes_after=before + incoming - outgoing,
                    incoming=incoming,
                    outgoing=outgoing,
                    replicas_before=len(held),
                    replicas_after=len(held) + len(inc) - len(out),
                    under_headroom=under,
                )
            )
    return tuple(rows)


# ----------------------------------------------------------------------------- as files


def replicas_of(snapshot: ClusterSnapshot) -> dict[tuple[str, int], tuple[int, ...]]:
    return {(t.name, p.partition): p.replicas for t in snapshot.topics for p in t.partitions}


def reassignment_json(
    plan: DirPlan, replicas_of: Mapping[tuple[str, int], Sequence[int]]
) -> dict[str, Any]:
    """Kafka's reassignment JSON: each partition with a dir move keeps its replicas; `log_dirs`
    names the target dir of each moved replica and "any" for the others."""
    targets: dict[tuple[str, int], dict[int, str]] = {}
    for m in plan.moves:
        targets.setdefault(m.key, {})[m.broker] = m.target
    partitions = []
    for key in sorted(targets):
        replicas = list(replicas_of[key])
        partitions.append(
            {
                "topic": key[0],
                "partition": key[1],
                "replicas": replicas,
                "log_dirs": [targets[key].get(b, ANY) for b in replicas],
            }
        )
    return {"version": 1, "partitions": partitions}


def rollback_json(
    plan: DirPlan, replicas_of: Mapping[tuple[str, int], Sequence[int]]
) -> dict[str, Any]:
    """The same partitions with each moved replica back in its source dir."""
    sources: dict[tuple[str, int], dict[int, str]] = {}
    for m in plan.moves:
        sources.setdefault(m.key, {})[m.broker] = m.source
    return {
        "version": 1,
        "partitions": [
            {
                "topic": key[0],
                "partition": key[1],
                "replicas": list(replicas_of[key]),
                "log_dirs": [sources[key].get(b, ANY) for b in replicas_of[key]],
            }
            for key in sorted(sources)
        ],
    }


def report(plan: DirPlan) -> dict[str, Any]:
    """The plan's figures and per-dir rows, as the plan document and --output json carry them."""
    return {
        "command": plan.command,
        "brokers": list(plan.brokers),
        "moves": len(plan.moves),
        "bytes_moved": plan.bytes_moved,
        "lower_bound_bytes": plan.lower_bound_bytes,
        "headroom": plan.headroom,
        "guarantee": plan.guarantee,
        "warnings": list(plan.warnings),
        "dir_moves": [
            {
                "topic": m.topic,
                "partition": m.partition,
                "broker": m.broker,
                "from": m.source,
                "to": m.target,
                "size_bytes": m.size_bytes,
            }
            for m in plan.moves
        ],
        "dirs": [
            {
                "broker": r.broker,
                "path": r.path,
                "total_bytes": r.total_bytes,
                "usable_before": r.usable_before,
                "usable_after": r.usable_after,
                "min_usable": r.min_usable,
                "bytes_before": r.bytes_before,
                "bytes_after": r.bytes_after,
                "incoming": r.incoming,
                "outgoing": r.outgoing,
                "replicas_before": r.replicas_before,
                "replicas_after": r.replicas_after,
                "under_headroom": r.under_headroom,
            }
            for r in plan.rows
        ],
    }


def plan_files(
    plan: DirPlan,
    replicas_of: Mapping[tuple[str, int], Sequence[int]],
    *,
    cluster_id: str | None,
) -> dict[str, Any]:
    """The four plan files' documents by sibling key, as serialize.plan_files gives them for
    a replica plan: the rollback's plan document has each moved replica in its target dir."""
    document = plan_document(plan, replicas_of, cluster_id=cluster_id)
    after_dirs = [
        {"topic": m.topic, "partition": m.partition, "broker": m.broker, "log_dir": m.target}
        for m in plan.moves
    ]
    return {
        "reassignment": document["reassignment"],
        "rollback": document["rollback"],
        "plan_document": document,
        "rollback_document": rollback_document(document, document["before"], after_dirs),
    }


def plan_document(
    plan: DirPlan,
    replicas_of: Mapping[tuple[str, int], Sequence[int]],
    *,
    cluster_id: str | None,
) -> dict[str, Any]:
    """The kreplica envelope beside the reassignment JSON: apply reads the cluster id, the
    before-state (replicas, unchanged, and each moved replica's dir) and the reassignment."""
    before = [
        {"topic": k[0], "partition": k[1], "replicas": list(replicas_of[k])}
        for k in sorted({m.key for m in plan.moves})
    ]
    return {
        "kreplica_plan": 1,
        "cluster_id": cluster_id,
        "strategy": plan.command,
        "before": before,
        "before_dirs": [
            {"topic": m.topic, "partition": m.partition, "broker": m.broker, "log_dir": m.source}
            for m in plan.moves
        ],
        "reassignment": reassignment_json(plan, replicas_of),
        "new_partitions": [],
        "rollback": rollback_json(plan, replicas_of),
        "report": report(plan),
        "findings": [],
    }
