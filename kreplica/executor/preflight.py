"""Before apply writes anything: is this plan for this cluster, as it is now, and safe to start?

Pure (standard library only): it reads a snapshot, the plan file, the partitions the cluster
reports in flight and what the journal says was submitted. Each refusal is one line with its
exit code, and nothing has been written when it is raised:

    cluster id differs from the plan document's                     StalePlan (5)
    the plan has errors `kreplica check` reports (unknown broker...) VerificationFailed (7)
    a target broker is not alive                                    PlanInfeasible (4)
    the journal says the plan was applied, and the cluster changed since StalePlan (5)
    a partition changed since the plan (--on-drift skip: left out;   StalePlan (5)
      a topic whose RF or partition count the plan changes is left out whole)
    a partition of the plan is being moved by someone else          ReassignmentInProgress (6)
    other reassignments in flight, without --additional             ReassignmentInProgress (6)
    a partition under its min.insync.replicas (--allow-under-min-isr) PlanInfeasible (4)
    a broker or named log dir left under the disk headroom            PlanInfeasible (4)
      (fresh figures, the plan's headroom; without figures: `disk_unchecked` says why)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kreplica.errors import (
    PlanInfeasible,
    ReassignmentInProgress,
    StalePlan,
    VerificationFailed,
)
from kreplica.executor.moves import Move
from kreplica.executor.planfile import PlanFile
from kreplica.model import ClusterSnapshot, Partition
from kreplica.planner.check import check_reassignment
from kreplica.planner.disk import headroom_of_report, recheck

if TYPE_CHECKING:
    from kreplica.executor.options import OnDrift

Key = tuple[str, int]
SHOWN = 5


def _names(keys: Sequence[Key]) -> str:
    shown = ", ".join(f"{t}-{p}" for t, p in sorted(keys)[:SHOWN])
    return shown + (f" and {len(keys) - SHOWN} more" if len(keys) > SHOWN else "")


@dataclass
class Preflight:
    todo: list[Move] = field(default_factory=list)  # to submit, in plan order
    waiting: list[Key] = field(default_factory=list)  # submitted before (journal), still moving
    done: list[Key] = field(default_factory=list)  # already as planned
    skipped: list[str] = field(default_factory=list)  # drifted and left out (--on-drift skip)
    create: dict[Key, tuple[int, ...]] = field(default_factory=dict)  # new partitions to make
    warnings: list[str] = field(default_factory=list)
    disk_unchecked: str | None = None  # why the disk re-check could not run (no figures)


def _live_in_sync(part: Partition, live: Collection[int]) -> int:
    return sum(1 for b in part.in_sync if b in live)


def _mid_move(before: Sequence[int], target: Sequence[int]) -> tuple[int, ...]:
    """The replicas Kafka shows while moving `before` to `target` (both modes): the target's,
    then the ones it removes."""
    return (*target, *(b for b in before if b not in target))


def preflight(
    snapshot: ClusterSnapshot,
    plan: PlanFile,
    in_flight: Collection[Key],
    *,
    submitted: Collection[Key] = (),
    additional: bool = False,
    on_drift: OnDrift = "fail",
    allow_under_min_isr: bool = False,
    finished_on: str | None = None,
) -> Preflight:
    """`finished_on`: when the plan's journal says an apply of it finished (its date)."""
    result = Preflight()
    if plan.document is None:
        result.warnings.append(
            f"{plan.path} is a bare reassignment JSON: without a plan document "
            "(PLAN.kreplica.json) kreplica cannot check that it was made for this cluster "
            "or that the partitions have not changed since"
        )
    elif plan.cluster_id and snapshot.cluster_id and plan.cluster_id != snapshot.cluster_id:
        raise StalePlan(
            f"this plan was made for cluster {plan.cluster_id}, but this is cluster "
            f"{snapshot.cluster_id}; point kreplica at the right cluster or make a new plan here"
        )
    parts = {(t.name, p.partition): p for t in snapshot.topics for p in t.partitions}
    live = snapshot.live_broker_ids()
    if finished_on is not None:
        _refuse_changed_since_applied(plan, parts, finished_on)

    remaining = {
        k: v for k, v in plan.targets.items() if parts.get(k) is None or parts[k].replicas != v
    }
    rows = [
        {"topic": t, "partition": p, "replicas": list(r)} for (t, p), r in sorted(remaining.items())
    ]
    findings = check_reassignment(snapshot, {"version": 1, "partitions": rows})
    dead = [f for f in findings if f.code == "offline-broker"]
    if dead:
        raise PlanInfeasible(
            f"{dead[0].message}" + (f" (and {len(dead) - 1} more)" if len(dead) > 1 else "")
        )
    errors = [f for f in findings if f.level == "error" and f.code != "reassignment-in-progress"]
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise VerificationFailed(
            f"the plan has errors: {errors[0].message}{more}; run kreplica check for all of them"
        )

    ours_moving: list[Key] = []
    drifted: list[tuple[Key, str]] = []
    for key, target in plan.targets.items():
        part = parts[key]
        if key in in_flight:
            if key in submitted:
                result.waiting.append(key)
            else:
                ours_moving.append(key)
            continue
        if part.replicas == target:
            result.done.append(key)
            continue
        was = plan.before.get(key)
        if key in submitted and was is not None and part.replicas == _mid_move(was, target):
            # our move, submitted before an interruption: mid-way, or just done and read from
            # a broker whose metadata still shows it moving (the controller no longer lists it)
            result.waiting.append(key)
            continue
        if was is not None and was != part.replicas:
            drifted.append(
                (key, f"{key[0]}-{key[1]} was {list(was)} and is now {list(part.replicas)}")
            )
            continue
        result.todo.append(Move(key[0], key[1], part.replicas, target, part.size_bytes))
    if ours_moving:
        raise ReassignmentInProgress(
            f"{_names(ours_moving)} of this plan are being reassigned by someone else; wait "
            "until kafka-reassign-partitions --verify reports them complete"
        )
    for key, replicas in sorted(plan.new_partitions.items()):
        existing = parts.get(key)
        if existing is None:
            result.create[key] = replicas
        elif existing.replicas == replicas:
            result.done.append(key)
        else:
            drifted.append(
                (
                    key,
                    f"{key[0]}-{key[1]} was to be created and exists as {list(existing.replicas)}",
                )
            )
    if drifted:
        whole = {key[0] for key, _ in drifted} & plan.resized_topics
        skipped = _leave_out(result, drifted, whole)
        if on_drift != "skip":
            raise StalePlan(_drift_refusal(result, drifted, whole))
        result.skipped = skipped
    others = sorted(k for k in in_flight if k not in plan.targets)
    if others and not additional and (result.todo or result.create):
        raise ReassignmentInProgress(
            f"{len(others)} other partition(s) are being reassigned ({_names(others)}); "
            "wait for them, or pass `additional` to start this plan beside them"
        )
    low: list[Key] = []
    needed_text = ""
    topics = {t.name: t for t in snapshot.topics}
    for move in result.todo:
        topic = topics[move.topic]
        if _live_in_sync(parts[move.key], live) < topic.min_insync_replicas:
            low.append(move.key)
            needed_text = needed_text or topic.min_insync_replicas_text()
    if low and not allow_under_min_isr:
        raise PlanInfeasible(
            f"{_names(low)} have fewer live in-sync replicas than {needed_text}; moving them "
            "now adds load to partitions producers with acks=all cannot write to: repair them "
            "first, or pass `allow_under_min_isr`"
        )
    _disk_recheck(snapshot, plan, result)
    return result


def _drift_refusal(
    left: Preflight, drifted: Sequence[tuple[Key, str]], whole: Collection[str]
) -> str:
    """Why the plan is refused, and the safe ways on: a new plan, or `on_drift` skip when
    something of the plan did not change (`left`: what skip would still apply), never "apply
    the rest" of a topic's change."""
    more = f" (and {len(drifted) - 3} more)" if len(drifted) > 3 else ""
    text = (
        f"the cluster changed since this plan was made: {'; '.join(d for _, d in drifted[:3])}"
        f"{more}; make a new plan from the current state"
    )
    keys = [m.key for m in left.todo] + list(left.create)
    if not keys:
        return text
    topics = sorted({t for t, _ in keys})
    named = ", ".join(topics[:3]) + (f" and {len(topics) - 3} more" if len(topics) > 3 else "")
    also = (
        f" (and all of {', '.join(sorted(whole))}: a change of RF or partition count applies whole)"
        if whole
        else ""
    )
    return (
        f"{text}; `on_drift` skip leaves out what changed{also} and applies only the "
        f"{len(keys)} partition(s) that did not change, of {named}"
    )


def _leave_out(
    result: Preflight, drifted: Sequence[tuple[Key, str]], whole: Collection[str]
) -> list[str]:
    """`on_drift` skip: leave out the partitions that changed, and every partition of the
    topics in `whole` (their RF or partition count changes, and some partition of theirs
    changed). What is moving already (submitted before) or done stays as it is. Returns what
    was left out, as lines."""
    dropped = [m.key for m in result.todo if m.topic in whole]
    dropped += [k for k in result.create if k[0] in whole]
    result.todo = [m for m in result.todo if m.topic not in whole]
    result.create = {k: v for k, v in result.create.items() if k[0] not in whole}
    lines = [d for key, d in drifted if key[0] not in whole]
    for topic in sorted(whole):
        first = next(d for key, d in drifted if key[0] == topic)
        others = sum(1 for t, _ in dropped if t == topic)
        lines.append(
            f"topic {topic} whole ({first}; its RF or partition count changes all or nothing, "
            f"so its {others} other partition(s) were left too)"
        )
    return lines


def _refuse_changed_since_applied(
    plan: PlanFile, parts: Mapping[Key, Partition], finished_on: str
) -> None:
    """The journal says this plan was applied: if the cluster no longer looks as it made it,
    someone changed it since, and applying it again would undo their change."""
    wanted = {**plan.targets, **plan.new_partitions}
    changed = [
        f"{t}-{p} is now {list(parts[(t, p)].replicas) if (t, p) in parts else 'gone'}"
        for (t, p), target in sorted(wanted.items())
        if (t, p) not in parts or parts[(t, p)].replicas != target
    ]
    if changed:
        more = f" (and {len(changed) - 3} more)" if len(changed) > 3 else ""
        raise StalePlan(
            f"{plan.path} was applied on {finished_on[:10]}; the cluster changed since "
            f"({'; '.join(changed[:3])}{more}): applying it again would undo that change; "
            "make a new plan from the current state"
        )


def _disk_recheck(snapshot: ClusterSnapshot, plan: PlanFile, result: Preflight) -> None:
    """The disk guard again, on fresh figures: the bytes still to copy must leave the plan's
    headroom free on every broker (and named dir)."""
    placements = [
        (b, move.size_bytes, plan.dirs.get((move.topic, move.partition, b)))
        for move in result.todo
        for b in move.after
        if b not in move.before
    ]
    if not placements:
        return
    report = (plan.document or {}).get("report")
    refusal, unchecked = recheck(snapshot, placements, headroom_of_report(report))
    if refusal is not None:
        raise PlanInfeasible(f"{refusal} (checked again before applying)")
    result.disk_unchecked = unchecked
