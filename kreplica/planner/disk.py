"""The disk guard: no plan may fill a broker's disk (issue 17).

Every new replica copies its partition's whole local log to its new broker, so the bytes a
plan sends to a broker must leave at least the headroom free there (10% of the disk by
default), and, when the plan names log dirs (`balanced`), on the chosen dir too. Bytes that
leave a broker do not count: the old copy is deleted only after the new one is in sync.

    DiskGuard.build(snapshot, headroom)   -> the guard, or None when no broker has figures
    guard.fits(broker, size) / take(...)  -> the pickers' hook (PlanContext.disk)
    finish_plan(plan, snapshot, ...)      -> dirs chosen (balanced), the guard checked over the
                                             whole plan (refusal: PlanInfeasible, exit 4), and
                                             plan.report["disk"] for the diff

Pure (standard library only) and deterministic: dirs are chosen in the plan's (topic,
partition) order, ties to the lowest path.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field

from kreplica.errors import PlanInfeasible, UsageError
from kreplica.model import ClusterSnapshot, Partition, PartitionChange, Plan

LOG_DIR_MODES: tuple[str, ...] = ("any", "balanced")
REMOTE_STORAGE = "remote.storage.enable"


@dataclass(frozen=True, slots=True)
class Headroom:
    """Bytes to keep free on each log dir: a percentage of its total, or a fixed size."""

    percent: float | None = 10.0
    fixed_bytes: int | None = None

    def of(self, total: int) -> int:
        if self.fixed_bytes is not None:
            return self.fixed_bytes
        return -(-int(total * (self.percent or 0.0) * 100) // 10_000)  # ceil, no float drift

    def text(self) -> str:
        if self.fixed_bytes is not None:
            return human_bytes(self.fixed_bytes)
        value = self.percent or 0.0
        return f"{value:g}%"


DEFAULT_HEADROOM = Headroom()


def human_bytes(n: int) -> str:
    """1536 -> '1.5 KiB' (binary units, one decimal)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover - the loop always returns


@dataclass(slots=True)
class _Dir:
    path: str
    total: int
    usable: int
    keep: int  # the headroom in bytes
    incoming: int = 0
    received: bool = False  # a replica (even an empty new partition) was placed here

    @property
    def room(self) -> int:
        """Bytes that may still arrive."""
        return self.usable - self.keep - self.incoming


# DiskGuard.mark(): incoming per broker, brokers that received, (dir, incoming, received).
DiskMark = tuple[dict[int, int], set[int], list[tuple[_Dir, int, bool]]]


@dataclass
class DiskGuard:
    """Per broker (and per dir) bytes arriving during one planning run. Brokers without
    figures are not guarded (`unchecked` lists them)."""

    headroom: Headroom
    dirs: dict[int, list[_Dir]]  # brokers with figures: their dirs that have them
    unchecked: dict[int, str] = field(default_factory=dict)  # broker -> why not guarded
    incoming: dict[int, int] = field(default_factory=dict)
    received: set[int] = field(default_factory=set)  # brokers a replica was placed on
    per_dir: bool = False  # dirs are named (`balanced`): a replica must fit in its dir

    @classmethod
    def build(
        cls, snapshot: ClusterSnapshot, headroom: Headroom, *, per_dir: bool = False
    ) -> DiskGuard | None:
        """The guard for this snapshot, or None when no live broker reports disk figures.
        `per_dir`: the replica must fit in the dir `balanced` would name (the broker's dir
        with the most usable bytes), not only in the broker's dirs together."""
        dirs: dict[int, list[_Dir]] = {}
        unchecked: dict[int, str] = {}
        for b in snapshot.brokers:
            if not b.alive:
                continue
            known = [
                _Dir(d.path, d.total_bytes, d.usable_bytes, headroom.of(d.total_bytes))
                for d in b.disks or ()
                if d.total_bytes is not None and d.usable_bytes is not None
            ]
            if known:
                dirs[b.id] = sorted(known, key=lambda d: d.path)
            else:
                unchecked[b.id] = "no log dirs read" if b.disks is None else "no total/usable bytes"
        if not dirs:
            return None
        return cls(headroom, dirs, unchecked, per_dir=per_dir)

    def mark(self) -> DiskMark:
        """The bookkeeping now, for `restore` (a planner that tries a placement and undoes it)."""
        dirs = [(d, d.incoming, d.received) for ds in self.dirs.values() for d in ds]
        return dict(self.incoming), set(self.received), dirs

    def restore(self, mark: DiskMark | None) -> None:
        if mark is None:
            return
        incoming, received, dirs = mark
        self.incoming, self.received = dict(incoming), set(received)
        for d, value, got in dirs:
            d.incoming, d.received = value, got

    def admits(self, placements: Iterable[tuple[int, int | None]]) -> bool:
        """Would these (broker, size) placements all fit, one after the other? The
        bookkeeping is left as it was."""
        saved = self.mark()
        try:
            for broker, size in placements:
                if not self.fits(broker, size):
                    return False
                self.take(broker, size)
            return True
        finally:
            self.restore(saved)

    def room(self, broker: int) -> int | None:
        """Bytes that may still arrive on the broker (None: not guarded)."""
        dirs = self.dirs.get(broker)
        if dirs is None:
            return None
        return sum(d.usable - d.keep for d in dirs) - self.incoming.get(broker, 0)

    def fits(self, broker: int, size_bytes: int | None) -> bool:
        """Can a replica of this size still arrive on the broker, headroom kept?"""
        if self.per_dir:
            chosen = self._roomiest(broker)
            return chosen is None or (size_bytes or 0) <= chosen.room
        room = self.room(broker)
        return room is None or (size_bytes or 0) <= room

    def take(self, broker: int, size_bytes: int | None) -> None:
        """A replica of this size lands on the broker (and, per dir, on its roomiest dir);
        a negative size takes one back."""
        size = size_bytes or 0
        self.incoming[broker] = self.incoming.get(broker, 0) + size
        if size < 0:  # a placement undone: the bytes leave the dir that received most
            if self.per_dir and self.dirs.get(broker):
                fullest = max(self.dirs[broker], key=lambda d: (d.incoming, d.path))
                fullest.incoming += size
            return
        self.received.add(broker)
        if self.per_dir:
            self.choose_dir(broker, size)

    def refusal(self, broker: int, size_bytes: int | None) -> str:
        """The one-line refusal when a replica of this size fits on no broker (`broker`: the
        first one tried)."""
        dirs = self.dirs.get(broker, [])
        chosen = self._roomiest(broker) if self.per_dir else None
        if chosen is not None:
            return _refusal(
                broker,
                f"dir {chosen.path}",
                size_bytes or 0,
                chosen.usable,
                chosen.keep,
                chosen.incoming,
            )
        usable = sum(d.usable for d in dirs)
        keep = sum(d.keep for d in dirs)
        already = self.incoming.get(broker, 0)
        return _refusal(broker, _where(dirs), size_bytes or 0, usable, keep, already)

    def _roomiest(self, broker: int) -> _Dir | None:
        """The broker's dir with the most usable bytes after the placements so far (ties: the
        lowest path)."""
        dirs = self.dirs.get(broker)
        if not dirs:
            return None
        return min(dirs, key=lambda d: (-(d.usable - d.incoming), d.path))

    def choose_dir(self, broker: int, size_bytes: int | None) -> _Dir | None:
        """The dir `balanced` names for a new replica on the broker (`_roomiest`); the
        replica's bytes are counted on it."""
        best = self._roomiest(broker)
        if best is None:
            return None
        best.incoming += size_bytes or 0
        best.received = True
        return best

    def first_overflow(self, per_dir: bool) -> str | None:
        """One line naming the first broker (and dir) that receives a replica and would end
        under the headroom (a new, empty partition counts: it grows there)."""
        for broker in sorted(self.dirs):
            dirs = self.dirs[broker]
            if per_dir:
                for d in dirs:
                    if d.received and d.room < 0:
                        return _refusal(broker, f"dir {d.path}", d.incoming, d.usable, d.keep)
                continue
            incoming = self.incoming.get(broker, 0)
            room = self.room(broker)
            if broker in self.received and room is not None and room < 0:
                where = _where(dirs)
                usable = sum(d.usable for d in dirs)
                keep = sum(d.keep for d in dirs)
                return _refusal(broker, where, incoming, usable, keep)
        return None


def _where(dirs: list[_Dir]) -> str:
    paths = ", ".join(d.path for d in dirs)
    return f"dir {paths}" if len(dirs) == 1 else f"dirs {paths}"


def _refusal(broker: int, where: str, needed: int, usable: int, keep: int, already: int = 0) -> str:
    free = max(usable - keep - already, 0)
    earlier = f", {human_bytes(already)} already arriving" if already else ""
    return (
        f"disk: broker {broker} {where} would receive {human_bytes(needed)} ({needed} bytes) "
        f"but has {human_bytes(free)} ({free} bytes) free above the headroom "
        f"({human_bytes(usable)} usable, {human_bytes(keep)} kept free{earlier}); no placement "
        "fits: add brokers or disk, move less at once, or lower the headroom"
    )


def unchecked_reason(snapshot: ClusterSnapshot) -> str | None:
    """Why the disk guard cannot run on this snapshot (None: some broker has figures)."""
    live = [b for b in snapshot.brokers if b.alive]
    if any(
        d.total_bytes is not None and d.usable_bytes is not None
        for b in live
        for d in b.disks or ()
    ):
        return None
    if not live:
        return "no live brokers"
    if all(b.disks is None for b in live):
        if snapshot.source == "zookeeper":
            return "read from ZooKeeper, which holds no disk sizes; read through a broker"
        if snapshot.source == "admin":
            return "the brokers reported no log dirs (DescribeLogDirs not allowed?)"
        return "the snapshot records no log dir sizes"
    return "the brokers report no total/usable bytes (Kafka before 3.3)"


def copy_size(part: Partition | None, change: PartitionChange) -> int:
    """Bytes a new replica of this partition copies: the leader's own log when known, else
    the partition's largest replica."""
    if part is not None and part.replica_sizes is not None:
        leader = part.current_leader
        if leader is not None and leader in part.replicas:
            own = part.replica_sizes[part.replicas.index(leader)]
            if own is not None:
                return own
    return change.size_bytes or 0


def _remote_topics(snapshot: ClusterSnapshot, plan: Plan) -> list[str]:
    moved = {c.topic for c in plan.changes if c.added}
    return sorted(
        t.name
        for t in snapshot.topics
        if t.name in moved and str(t.configs.get(REMOTE_STORAGE, "")).lower() == "true"
    )


def finish_plan(
    plan: Plan,
    snapshot: ClusterSnapshot,
    headroom: Headroom = DEFAULT_HEADROOM,
    log_dirs: str = "any",
) -> Plan:
    """The plan with its new replicas' log dirs named (`balanced`), checked against the disk
    guard over all its arriving bytes, and `report["disk"]` filled. Raises PlanInfeasible
    (exit 4) when some broker or dir would end under the headroom; UsageError when
    `balanced` is asked of a snapshot without dir figures."""
    if log_dirs not in LOG_DIR_MODES:
        raise UsageError(f"unknown log dirs mode {log_dirs!r}; use one of any, balanced")
    balanced = log_dirs == "balanced"
    guard = DiskGuard.build(snapshot, headroom)
    reason = unchecked_reason(snapshot)
    parts = {(t.name, p.partition): p for t in snapshot.topics for p in t.partitions}
    if balanced:
        _need_dirs(plan, guard, reason)
    changes = list(plan.changes)
    if guard is not None:
        for i, c in enumerate(changes):
            added = c.added
            if not added:
                continue
            size = 0 if c.is_new else copy_size(parts.get((c.topic, c.partition)), c)
            named: dict[int, str] = {}
            for b in added:
                guard.take(b, size)
                if balanced and not c.is_new:
                    chosen = guard.choose_dir(b, size)
                    if chosen is not None:
                        named[b] = chosen.path
            if named:
                dirs = tuple(named.get(b, "any") for b in c.after)
                changes[i] = dataclasses.replace(c, log_dirs=dirs)
        refusal = guard.first_overflow(per_dir=balanced)
        if refusal is not None:
            raise PlanInfeasible(refusal)
    report = plan.report.copy()
    report["disk"] = disk_report(snapshot, guard, reason, headroom, log_dirs, plan)
    return dataclasses.replace(plan, changes=tuple(changes), report=report)


def _need_dirs(plan: Plan, guard: DiskGuard | None, reason: str | None) -> None:
    if guard is None:
        raise UsageError(
            f"balanced log dirs need each broker's log dirs with usable bytes: {reason}"
        )
    receiving = sorted({b for c in plan.changes if not c.is_new for b in c.added})
    missing = [b for b in receiving if b in guard.unchecked or b not in guard.dirs]
    if missing:
        raise UsageError(
            "balanced log dirs need each receiving broker's log dirs with usable bytes; "
            f"broker(s) {', '.join(map(str, missing))} have none"
        )


def disk_report(
    snapshot: ClusterSnapshot,
    guard: DiskGuard | None,
    reason: str | None,
    headroom: Headroom,
    log_dirs: str,
    plan: Plan | None,
    *,
    remote: list[str] | None = None,
) -> dict[str, object]:
    """What the diff shows about disks: checked or why not, and per broker and dir the bytes
    usable now, arriving and free after, flagged when under the headroom."""
    out: dict[str, object] = {
        "checked": guard is not None,
        "headroom": headroom.text(),
        "headroom_percent": headroom.percent if headroom.fixed_bytes is None else None,
        "headroom_bytes": headroom.fixed_bytes,
        "log_dirs": log_dirs,
    }
    if guard is None:
        out["unchecked"] = reason
    else:
        if guard.unchecked:
            out["unchecked_brokers"] = {str(b): why for b, why in sorted(guard.unchecked.items())}
        brokers: dict[str, object] = {}
        for b, dirs in sorted(guard.dirs.items()):
            incoming = guard.incoming.get(b, 0)
            rows = []
            # Per dir: what arrives there when dirs are named; otherwise a dir's share is
            # unknown (the broker picks), so rows show the dir now and the broker its total.
            for d in dirs:
                arriving = d.incoming if log_dirs == "balanced" else None
                free_after = d.usable - (arriving or 0)
                rows.append(
                    {
                        "path": d.path,
                        "total_bytes": d.total,
                        "usable_bytes": d.usable,
                        "incoming_bytes": arriving,
                        "free_after_bytes": free_after,
                        "under_headroom": free_after < d.keep,
                    }
                )
            usable = sum(d.usable for d in dirs)
            keep = sum(d.keep for d in dirs)
            brokers[str(b)] = {
                "usable_bytes": usable,
                "incoming_bytes": incoming,
                "free_after_bytes": usable - incoming,
                "under_headroom": usable - incoming < keep,
                "dirs": rows,
            }
        out["brokers"] = brokers
    if plan is not None:  # else `remote`: the array planner names them from its columns
        remote = _remote_topics(snapshot, plan)
    if remote:
        out["remote_storage_topics"] = remote
    return out


def headroom_of_report(report: object) -> Headroom:
    """The headroom a plan was made with (its report's "disk"), else the default."""
    disk = report.get("disk") if isinstance(report, dict) else None
    if not isinstance(disk, dict):
        return DEFAULT_HEADROOM
    fixed = disk.get("headroom_bytes")
    percent = disk.get("headroom_percent")
    if isinstance(fixed, int) and not isinstance(fixed, bool) and fixed >= 0:
        return Headroom(None, fixed)
    if isinstance(percent, int | float) and not isinstance(percent, bool) and 0 <= percent < 100:
        return Headroom(float(percent))
    return DEFAULT_HEADROOM


def recheck(
    snapshot: ClusterSnapshot,
    placements: Iterable[tuple[int, int | None, str | None]],
    headroom: Headroom,
) -> tuple[str | None, str | None]:
    """Apply's re-check against fresh disk figures: (broker, bytes, named dir or None) for
    every replica about to be copied. Returns (refusal line, None), (None, None) when it all
    fits, or (None, why unchecked) without figures."""
    guard = DiskGuard.build(snapshot, headroom)
    if guard is None:
        return None, unchecked_reason(snapshot)
    named = False
    for broker, size, path in placements:
        guard.take(broker, size)
        for d in guard.dirs.get(broker, []):
            if path is not None and d.path == path:
                d.incoming += size or 0
                d.received = named = True
    if named:
        for broker in sorted(guard.dirs):
            for d in guard.dirs[broker]:
                if d.received and d.room < 0:
                    return _refusal(broker, f"dir {d.path}", d.incoming, d.usable, d.keep), None
    return guard.first_overflow(per_dir=False), None
