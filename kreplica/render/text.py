"""Plain-text pieces shared by the table, markdown and JSON-adjacent output (no rich here)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kreplica.model import ClusterSnapshot, Finding, PartitionChange, Plan

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def plural(count: int, noun: str) -> str:
    """plural(1, 'replica') -> '1 replica'; plural(3, 'replica') -> '3 replicas'."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def format_bytes(n: int | None) -> str:
    """Binary units, one decimal: 3435973836 -> '3.2 GiB'. None means sizes are unknown."""
    if n is None:
        return "?"
    value = float(n)
    for unit in _UNITS:
        if abs(value) < 1024 or unit == _UNITS[-1]:
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_seconds(seconds: float) -> str:
    """A duration the way progress lines show it: '42s', '3m07s', '2h05m'."""
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def short_racks(racks: Mapping[int, str | None]) -> tuple[dict[int, str | None], str]:
    """Rack names without their common prefix ('eu-west-1a' -> 'a') and the legend that maps
    them back, so replica lists stay narrow. Names are kept whole when shortening is ambiguous."""
    names = sorted({r for r in racks.values() if r})
    if len(names) < 2:
        return dict(racks), ""
    prefix = os.path.commonprefix(names)  # noqa: RUF071 - character prefix is intended
    short = {name: name[len(prefix) :] for name in names}
    if not all(short.values()) or max(map(len, short.values())) > 6:
        return dict(racks), ""
    if all(short[n] == n for n in names):
        return dict(racks), ""  # already short: a legend would only repeat them
    legend = ", ".join(f"{short[n]} = {n}" for n in names)
    return {b: (short[r] if r else None) for b, r in racks.items()}, legend


def broker_label(broker: int, racks: Mapping[int, str | None]) -> str:
    rack = racks.get(broker)
    return f"{broker}({rack})" if rack else str(broker)


def replica_words(
    replicas: tuple[int, ...],
    other: tuple[int, ...] | None,
    racks: Mapping[int, str | None],
    *,
    side: str,
    leader: int | None = None,
    down: Collection[int] = (),
) -> list[tuple[str, str]]:
    """One replica list as (text, style) pairs. `*` marks the leader: on the 'before' side the
    one leading now (`leader`, else the first replica), on the 'after' side the first replica
    (the preferred leader Kafka elects). On the 'before' side brokers that go away are marked
    `-`; on the 'after' side brokers that arrive are marked `+`; brokers in `down` get `!`."""
    starred = leader if side == "before" and leader is not None else replicas[0]
    words: list[tuple[str, str]] = []
    for broker in replicas:
        mark, style = "", ""
        if side == "before" and other is not None and broker not in other:
            mark, style = "-", "removed"
        elif side == "after" and broker not in (other or ()):
            mark, style = "+", "added"
        star = "*" if broker == starred else ""
        dead = "!" if broker in down else ""
        words.append((f"{mark}{star}{broker_label(broker, racks)}{dead}", style))
    return words


def diff_legend(snapshot: ClusterSnapshot, *, code: bool = False) -> str:
    """The key above a diff: what each mark means (`code`: marks in backticks, for markdown)."""
    marks = [("*", "leader (before: now, after: preferred)"), ("+", "added"), ("-", "removed")]
    if any(not b.alive for b in snapshot.brokers):
        marks.append(("!", "broker down"))
    return ", ".join((f"`{m}`" if code else m) + f" {what}" for m, what in marks)


def per_broker(report: Mapping[str, Any], key: str, broker: int) -> int:
    """A broker's value from a report map; reports read back from JSON have string keys."""
    values = report.get(key) or {}
    if not isinstance(values, Mapping):
        return 0
    value = values.get(broker, values.get(str(broker), 0))
    return int(value or 0)


def _vs_bound(done: Any, bound: Any) -> str:
    if bound is None:
        return ""
    return f" = lower bound {bound}" if done == bound else f" (lower bound {bound})"


def optimality_line(report: Mapping[str, Any]) -> str:
    """The footer sentence an on-call engineer checks first, e.g.
    'adds 12 replicas = lower bound 12; removes 0 = lower bound 0; 0 existing replicas moved;
    0 leaders changed; 3.2 GiB to copy, 1.1 GiB across racks'."""
    added = report.get("replicas_added", 0)
    removed = report.get("replicas_removed", 0)
    parts = [
        "adds "
        + plural(int(added or 0), "replica")
        + _vs_bound(added, report.get("lower_bound_replicas_added")),
        f"removes {removed}" + _vs_bound(removed, report.get("lower_bound_replicas_removed")),
        plural(int(report.get("existing_replicas_moved") or 0), "existing replica") + " moved",
        plural(int(report.get("leaders_changed") or 0), "leader") + " changed",
    ]
    moved = report.get("bytes_to_move")
    if report.get("sizes_read") is False:
        parts.append("bytes: not read (--no-sizes)")
    elif moved is None:
        parts.append("data size unknown (the source has no partition sizes)")
    else:
        copy = f"{format_bytes(moved)} to copy"
        bound = report.get("bytes_lower_bound")
        if bound is not None and bound != moved:
            copy += f" (lower bound {format_bytes(bound)})"
        cross = report.get("cross_rack_bytes")
        if cross is not None:
            copy += f", {format_bytes(cross)} across racks"
        parts.append(copy)
    return "; ".join(parts)


def totals_line(report: Mapping[str, Any]) -> str:
    changed = report.get("partitions_changed", 0)
    created = report.get("partitions_created", 0)
    before = report.get("rack_violations_before")
    after = report.get("rack_violations_after")
    spread_before = report.get("cluster_spread_before")
    spread_after = report.get("cluster_spread_after")
    parts = [
        plural(int(changed or 0), "partition") + " reassigned",
        plural(int(created or 0), "partition") + " created",
    ]
    if before is not None and after is not None:
        parts.append(f"rack violations {before} → {after}")
    if spread_before is not None and spread_after is not None:
        parts.append(f"replica spread {spread_before} → {spread_after}")
    return "; ".join(parts)


def change_words(
    before: tuple[int, ...] | None,
    after: tuple[int, ...],
    racks: Mapping[int, str | None],
    leader: int | None = None,
) -> list[tuple[str, str]]:
    """What happened to one partition, as (text, style) pairs for the Change column."""
    if before is None:
        return [("new partition", "added")]
    words: list[tuple[str, str]] = []
    added = [b for b in after if b not in before]
    removed = [b for b in before if b not in after]
    if added:
        words.append(("add " + ",".join(map(str, added)), "added"))
    if removed:
        words.append(("drop " + ",".join(map(str, removed)), "removed"))
    if not added and not removed and before != after:
        words.append(("reorder", "leader.changed"))
    now = leader if leader is not None else (before[0] if before else None)
    if now is not None and after and now != after[0]:
        words.append((f"LEADER {now}→{after[0]}", "leader.changed"))
    return words


def ranges(numbers: list[int]) -> str:
    """[3, 4, 5, 9] -> '3-5, 9'."""
    out: list[str] = []
    start = prev = None
    for n in sorted(numbers):
        if start is None:
            start = prev = n
        elif prev is not None and n == prev + 1:
            prev = n
        else:
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = n
    if start is not None:
        out.append(str(start) if start == prev else f"{start}-{prev}")
    return ", ".join(out)


@dataclass(frozen=True)
class DiffRow:
    """One line of the diff: a changed partition, a collapsed run of unchanged ones, or the
    count of rows cut by --limit."""

    kind: str  # "change" | "unchanged" | "hidden"
    topic: str
    partitions: str
    before: tuple[int, ...] | None = None
    after: tuple[int, ...] | None = None
    count: int = 1
    leader: int | None = None  # the leader now, when known


def diff_rows(plan: Plan, snapshot: ClusterSnapshot, limit: int = 0) -> list[DiffRow]:
    """Rows in (topic, partition) order. Unchanged partitions between changed ones collapse into
    one row; with limit > 0 only that many changed partitions are listed."""
    if limit and getattr(plan.changes, "columnar", False):
        return _diff_rows_columnar(plan.changes, limit)
    by_topic: dict[str, dict[int, PartitionChange]] = {}
    for change in plan.changes:
        by_topic.setdefault(change.topic, {})[change.partition] = change
    partitions_of = {t.name: t.partitions for t in snapshot.topics}
    rows: list[DiffRow] = []
    shown = hidden = 0
    for topic in sorted(by_topic):
        changes = by_topic[topic]
        existing = {p.partition for p in partitions_of.get(topic, ())}
        run: list[int] = []
        for pid in [*sorted(existing | set(changes)), None]:  # None: end of topic
            found = changes.get(pid) if pid is not None else None
            if pid is not None and (found is None or not found.changed):
                run.append(pid)
                continue
            if run and not (limit and shown >= limit):
                rows.append(DiffRow("unchanged", topic, ranges(run), count=len(run)))
            run = []
            if found is None:
                continue
            if limit and shown >= limit:
                hidden += 1
                continue
            rows.append(
                DiffRow(
                    "change", topic, str(pid), found.before, found.after, leader=found.leader_now
                )
            )
            shown += 1
    if hidden:
        rows.append(DiffRow("hidden", "", "", count=hidden))
    return rows


def _diff_rows_columnar(changes: Any, limit: int) -> list[DiffRow]:
    """diff_rows for an array plan (kreplica/columns.py ArrayChanges): the same rows, reading
    only the topics and changes up to the limit, not a million of them."""
    columns = changes.columns
    topic_index = changes.topic_index
    rows: list[DiffRow] = []
    shown = 0
    k = 0  # the next change, in (topic, partition) order like the rows
    for t in dict.fromkeys(topic_index.tolist()):
        if shown >= limit:
            break
        name = columns.topics[t].name
        lo, hi = int(columns.start[t]), int(columns.start[t + 1])
        changed = changes.rows
        run: list[int] = []
        for r, pid in zip(range(lo, hi), columns.partition[lo:hi].tolist(), strict=True):
            if k >= len(changed) or int(changed[k]) != r:
                run.append(pid)
                continue
            if run and shown < limit:
                rows.append(DiffRow("unchanged", name, ranges(run), count=len(run)))
            run = []
            if shown >= limit:
                break
            c = changes[k]
            rows.append(DiffRow("change", name, str(pid), c.before, c.after, leader=c.leader_now))
            shown += 1
            k += 1
        else:
            if run and shown < limit:
                rows.append(DiffRow("unchanged", name, ranges(run), count=len(run)))
    hidden = len(changes) - shown
    if hidden:
        rows.append(DiffRow("hidden", "", "", count=hidden))
    return rows


def runbook_commands(
    plan: Plan,
    snapshot: ClusterSnapshot,
    *,
    bootstrap: str,
    command_config: str | None,
    out: Path | None,
    throttle_bytes: int = 50_000_000,
) -> list[tuple[str, str]]:
    """(label, shell command) pairs to apply, verify and roll back `plan` with Kafka's tools.
    Existing partitions move first; new partitions are created after the move completes, at
    their final RF (Kafka checks new partitions against partition 0's replica count).
    Every value a user chose is shell-quoted: the commands are meant to be pasted."""
    plan_path = str(out) if out else "PLAN.json"
    stem = plan_path[: -len(".json")] if plan_path.endswith(".json") else plan_path
    plan_file, rollback_file = shlex.quote(plan_path), shlex.quote(f"{stem}.rollback.json")
    auth = f" --command-config {shlex.quote(command_config)}" if command_config else ""
    connect = f"--bootstrap-server {shlex.quote(bootstrap)}{auth}"
    base = f"kafka-reassign-partitions.sh {connect}"
    reassignments = plan.reassignments  # a property that filters every change: read it once
    # Kafka's tool refuses to start beside a reassignment in flight unless told to; a
    # snapshot in columns holds none (kreplica/columns.py): its topics are not built for this
    columnar = getattr(snapshot, "columns", None) is not None
    moving = not columnar and any(p.reassigning for t in snapshot.topics for p in t.partitions)
    additional = " --additional" if moving else ""
    steps: list[tuple[str, str]] = []
    if reassignments:
        steps += [
            (
                f"apply ({plural(len(reassignments), 'partition')}; replication throttled "
                f"to {throttle_bytes / 1e6:g} MB/s per broker)",
                f"{base} --reassignment-json-file {plan_file} --execute "
                f"--throttle {throttle_bytes}{additional}",
            ),
            (
                "verify: repeat until every partition is complete (this also removes the throttle)",
                f"{base} --reassignment-json-file {plan_file} --verify",
            ),
            (
                "roll back: cancel while in flight, or restore the old replicas when done",
                f"{base} --reassignment-json-file {plan_file} --cancel   # or: "
                f"--reassignment-json-file {rollback_file} --execute",
            ),
        ]
    # Indexed once: per-topic scans of every topic and every move were quadratic.
    created = _after_by_topic(plan.new_partitions)
    partitions_of = {t.name: t.partitions for t in snapshot.topics} if created else {}
    moved_to = _after_by_topic(reassignments) if created else {}
    for topic_name, new in sorted(created.items()):
        full = {p.partition: p.replicas for p in partitions_of.get(topic_name, ())}
        full |= moved_to.get(topic_name, {})
        full |= new
        assignment = ",".join(":".join(map(str, full[p])) for p in sorted(full))
        steps.append(
            (
                ("once verify reports every partition complete: " if reassignments else "")
                + f"create {plural(len(new), 'partition')} of {topic_name} "
                "(cannot be undone: Kafka never "
                "removes partitions)",
                f"kafka-topics.sh {connect} --alter --topic {shlex.quote(topic_name)} "
                f"--partitions {len(full)} --replica-assignment {assignment}",
            )
        )
    if reassignments or plan.new_partitions:
        rate = f"{throttle_bytes / 1e6:g}MB/s"
        steps += [
            (
                "or with kreplica: apply (preflight, throttle, waves, journal; creates new "
                "partitions too), verify, cancel",
                f"kreplica apply {plan_file} {connect} --throttle {rate}{additional}",
            ),
            ("", f"kreplica verify {plan_file} {connect}"),
            ("", f"kreplica cancel {plan_file} {connect}   # while it runs: stops it"),
        ]
    return steps


def _after_by_topic(
    changes: Sequence[PartitionChange],
) -> dict[str, dict[int, tuple[int, ...]]]:
    """topic -> {partition: replicas after the change}."""
    after: dict[str, dict[int, tuple[int, ...]]] = {}
    for change in changes:
        after.setdefault(change.topic, {})[change.partition] = change.after
    return after


def finding_text(finding: Finding) -> str:
    """'orders-3: message', without repeating a location the message already names."""
    where = None
    if finding.topic is not None:
        where = finding.topic
        if finding.partition is not None:
            where += f"-{finding.partition}"
    if where is None or where in finding.message or f"'{finding.topic}'" in finding.message:
        return finding.message
    return f"{where}: {finding.message}"
