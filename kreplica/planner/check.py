"""`kreplica check`: lint any reassignment JSON against a snapshot.

A plan document for another cluster or a drifted cluster is refused (StalePlan, exit 5).
Codes (stable): unknown-partition, unknown-broker, duplicate-broker, duplicate-partition,
empty-replicas, offline-broker (a target on a dead broker), reassignment-in-progress,
unknown-log-dir (errors); rf-mismatch, rack-violation, rf-below-min-isr, leader-skew,
removes-replicas, movement (warnings or info).
"""

from __future__ import annotations

from typing import Any

from kreplica.model import Broker, ClusterSnapshot, Finding
from kreplica.planner.evaluate import (
    duplicate_brokers,
    has_rack_violation,
    leaders_per_broker,
    rack_count,
    spread,
)
from kreplica.planner.serialize import (
    parse_log_dirs,
    parse_new_partitions,
    parse_reassignment_json,
)
from kreplica.planner.staleness import ensure_plan_is_current

# Moving (replacing) more than this share of a topic's replicas is flagged as a warning (a
# rebalance rather than a minimal change); below it, an info line reports the share.
MOVEMENT_WARNING_SHARE = 0.5


def check_reassignment(snapshot: ClusterSnapshot, data: Any) -> list[Finding]:
    """Findings for a reassignment; a kreplica plan document made for another cluster, or
    for partitions that changed since, raises StalePlan instead."""
    rows = parse_reassignment_json(data)
    ensure_plan_is_current(snapshot, data)
    new_rows = parse_new_partitions(data)
    dirs = parse_log_dirs(data)
    racks = snapshot.racks()
    brokers = {b.id: b for b in snapshot.brokers}
    alive = [b.id for b in snapshot.brokers if b.alive]
    available_racks = rack_count(racks, alive)
    existing = {(t.name, p.partition): p for t in snapshot.topics for p in t.partitions}
    topics = {t.name: t for t in snapshot.topics}
    findings: list[Finding] = []
    after: dict[tuple[str, int], tuple[int, ...]] = {k: p.replicas for k, p in existing.items()}
    seen: set[tuple[str, int]] = set()
    new_keys = {(t, p) for t, p, _ in new_rows}

    for topic, pid, replicas in [*rows, *new_rows]:
        key = (topic, pid)
        is_new = key in new_keys and key not in existing and topic in topics
        where = f"{topic}-{pid}"
        if key in seen:
            findings.append(
                Finding("error", "duplicate-partition", f"{where} is listed twice", topic, pid)
            )
            continue
        seen.add(key)
        if key not in existing and not is_new:
            hint = (
                f"topic {topic!r} has {len(topics[topic].partitions)} partitions"
                if topic in topics
                else f"topic {topic!r} does not exist"
            )
            findings.append(
                Finding(
                    "error",
                    "unknown-partition",
                    f"{where} does not exist ({hint}); remove it or create it first",
                    topic,
                    pid,
                )
            )
            continue
        if not replicas:
            findings.append(
                Finding("error", "empty-replicas", f"{where} has no replicas", topic, pid)
            )
            continue
        unknown = sorted({b for b in replicas if b not in brokers})
        if unknown:
            findings.append(
                Finding(
                    "error",
                    "unknown-broker",
                    f"{where}: broker(s) {unknown} are not in this cluster "
                    f"(brokers: {sorted(brokers)})",
                    topic,
                    pid,
                )
            )
        dups = duplicate_brokers(replicas)
        if dups:
            findings.append(
                Finding(
                    "error",
                    "duplicate-broker",
                    f"{where}: broker(s) {dups} appear twice in {list(replicas)}",
                    topic,
                    pid,
                )
            )
        offline = sorted({b for b in replicas if b in brokers and not brokers[b].alive})
        if offline:
            findings.append(
                Finding(
                    "error",
                    "offline-broker",
                    f"{where}: broker(s) {offline} are down and Kafka rejects the whole file "
                    f"(Unknown broker id {offline[0]}); replan with --replace-dead or wait "
                    "until they are back",
                    topic,
                    pid,
                )
            )
        part = existing.get(key)
        if part is not None and part.reassigning:
            findings.append(
                Finding(
                    "error",
                    "reassignment-in-progress",
                    f"{where} is being reassigned already (adding {list(part.adding_replicas)}, "
                    f"removing {list(part.removing_replicas)}) and Kafka refuses a second move; "
                    "wait until kafka-reassign-partitions --verify reports it complete",
                    topic,
                    pid,
                )
            )
        findings.extend(_log_dir_findings(where, topic, pid, replicas, dirs.get(key), brokers))
        if not dups and has_rack_violation(racks, replicas, available_racks):
            findings.append(
                Finding(
                    "warning",
                    "rack-violation",
                    f"{where}: replicas {list(replicas)} span fewer racks than "
                    f"min(RF, {available_racks} racks)",
                    topic,
                    pid,
                )
            )
        after[key] = replicas

    touched = sorted({t for t, _ in seen} & set(topics) | {t for t, _, _ in new_rows})
    by_topic: dict[str, dict[tuple[str, int], tuple[int, ...]]] = {name: {} for name in touched}
    for key, reps in after.items():
        if key[0] in by_topic:
            by_topic[key[0]][key] = reps
    for name in touched:
        findings.extend(_topic_findings(snapshot, name, by_topic[name], existing, seen))
    findings.extend(_leader_skew(snapshot, existing, after))
    return findings


def _log_dir_findings(
    where: str,
    topic: str,
    pid: int,
    replicas: tuple[int, ...],
    dirs: tuple[str, ...] | None,
    brokers: dict[int, Broker],
) -> list[Finding]:
    """A log dir the broker does not have (only when the source knows the broker's dirs)."""
    findings: list[Finding] = []
    for broker, path in zip(replicas, dirs or (), strict=False):
        known = brokers[broker].log_dirs if broker in brokers else None
        if path == "any" or known is None or path in known:
            continue
        findings.append(
            Finding(
                "error",
                "unknown-log-dir",
                f"{where}: broker {broker} has no log dir {path!r} (it has "
                f'{", ".join(repr(d) for d in known) or "none"}); use one of those or "any"',
                topic,
                pid,
            )
        )
    return findings


def _topic_findings(
    snapshot: ClusterSnapshot,
    name: str,
    parts: dict[tuple[str, int], tuple[int, ...]],
    existing: dict[tuple[str, int], Any],
    seen: set[tuple[str, int]],
) -> list[Finding]:
    findings: list[Finding] = []
    rfs = sorted({len(v) for v in parts.values()})
    if len(rfs) > 1:
        findings.append(
            Finding(
                "warning",
                "rf-mismatch",
                f"topic {name!r}: partitions would have different replica counts {rfs}; "
                "Kafka reports partition 0's as the topic RF",
                topic=name,
            )
        )
    topic = next((t for t in snapshot.topics if t.name == name), None)
    min_isr = topic.min_insync_replicas if topic else None
    if topic is not None and min_isr is not None and parts:
        low = min(len(v) for v in parts.values())
        if low <= min_isr:
            findings.append(
                Finding(
                    "error" if low < min_isr else "warning",
                    "rf-below-min-isr",
                    f"topic {name!r}: RF {low} <= {topic.min_insync_replicas_text()}; producers "
                    "with acks=all fail when a replica is unavailable"
                    + (" (always, as RF < min.insync)" if low < min_isr else ""),
                    topic=name,
                )
            )
    total = copied = moved = dropped = 0
    shrunk: list[int] = []
    for key, reps in parts.items():
        part = existing.get(key)
        if part is None:
            continue
        total += len(part.replicas)
        if key in seen:
            added = len([b for b in reps if b not in part.replicas])
            removed = len([b for b in part.replicas if b not in reps])
            copied += added
            moved += min(added, removed)
            if removed > added:  # net removals; a replacement is a move, reported below
                dropped += removed - added
                shrunk.append(key[1])
    if dropped:
        shrunk.sort()
        findings.append(
            Finding(
                "warning",
                "removes-replicas",
                f"topic {name!r}: {dropped} replica(s) would be removed from {len(shrunk)} "
                f"partition(s) ({', '.join(map(str, shrunk[:10]))}"
                f"{', ...' if len(shrunk) > 10 else ''}); Kafka deletes their data once the "
                "move completes",
                topic=name,
            )
        )
    if total and copied:
        share = moved / total
        findings.append(
            Finding(
                "warning" if share > MOVEMENT_WARNING_SHARE else "info",
                "movement",
                f"topic {name!r}: {copied} replica(s) would be copied to new brokers; "
                f"{moved} of its {total} existing replicas ({share:.0%}) would move",
                topic=name,
            )
        )
    return findings


def _leader_skew(
    snapshot: ClusterSnapshot,
    existing: dict[tuple[str, int], Any],
    after: dict[tuple[str, int], tuple[int, ...]],
) -> list[Finding]:
    alive = [b.id for b in snapshot.brokers if b.alive]
    before_counts = leaders_per_broker({k: p.replicas for k, p in existing.items()}, alive)
    after_counts = leaders_per_broker(after, alive)
    before_spread, after_spread = spread(before_counts), spread(after_counts)
    if after_spread > max(before_spread, 1):
        busiest = max(after_counts, key=lambda b: (after_counts[b], -b))
        return [
            Finding(
                "warning",
                "leader-skew",
                f"preferred leaders per broker would differ by {after_spread} (was "
                f"{before_spread}); broker {busiest} would lead {after_counts[busiest]}",
            )
        ]
    return []
