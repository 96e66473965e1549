"""The throttles kreplica set, as an apply's journal records them: which are still set,
listing the throttles on a cluster, restoring what kreplica set (a config someone changed
meanwhile keeps their value) and clearing what was left pending while a broker was down."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from kreplica.errors import ReassignmentInProgress
from kreplica.executor.events import Emit
from kreplica.executor.journal import Journal
from kreplica.executor.kafka_cluster import BrokerDown
from kreplica.executor.throttle_confirm import describe_missing, wait_applied
from kreplica.executor.throttles import (
    BROKER_KEYS,
    FOLLOWER_RATE,
    LEADER_RATE,
    TOPIC_KEYS,
    restore_plan,
)

Resource = tuple[str, str]


class ConfigCluster(Protocol):
    """What restoring throttles needs from a cluster (KafkaCluster is one)."""

    last_path: str | None  # how the last alter_configs reached its broker

    def live_broker_ids(self) -> set[int]: ...
    def configs(self, kind: str, names: Sequence[str]) -> dict[str, dict[str, str]]: ...
    def alter_configs(self, kind: str, name: str, values: Mapping[str, str | None]) -> None: ...


def journal_throttles(
    events: Sequence[Mapping[str, Any]],
) -> tuple[dict[Resource, dict[str, str]], dict[Resource, dict[str, str]]]:
    """(previous values, values kreplica set) of every throttle the journal says it set and has
    not restored yet."""
    previous: dict[Resource, dict[str, str]] = {}
    ours: dict[Resource, dict[str, str]] = {}
    for event in events:
        if event.get("event") in ("throttle-set", "throttle-pending"):
            resource = (str(event["kind"]), str(event["name"]))
            previous.setdefault(resource, dict(event.get("previous") or {}))
            ours.setdefault(resource, {}).update(event.get("values") or {})
        elif event.get("event") == "throttle-restored":
            previous.clear()
            ours.clear()
    return previous, ours


def journal_rate(events: Sequence[Mapping[str, Any]]) -> int | None:
    """The highest replication rate (bytes/s) the journal's apply set on a broker, restored
    since or not; None when it set none (an apply without a throttle)."""
    rates = [
        int(value)
        for event in events
        if event.get("event") in ("throttle-set", "throttle-pending")
        and event.get("kind") == "broker"
        for key, value in (event.get("values") or {}).items()
        if key in (LEADER_RATE, FOLLOWER_RATE) and str(value).isdigit()
    ]
    return max(rates, default=None)


def _earlier_values(
    events: Sequence[Mapping[str, Any]], ours: Mapping[Resource, Mapping[str, str]]
) -> dict[tuple[Resource, str], set[str]]:
    """(resource, config) -> the values kreplica set before its last one, since the last
    restore."""
    seen: dict[tuple[Resource, str], set[str]] = {}
    for event in events:
        if event.get("event") in ("throttle-set", "throttle-pending"):
            resource = (str(event["kind"]), str(event["name"]))
            for key, value in (event.get("values") or {}).items():
                seen.setdefault((resource, key), set()).add(str(value))
        elif event.get("event") == "throttle-restored":
            seen.clear()
    return {
        (resource, key): values - {ours[resource][key]}
        for (resource, key), values in seen.items()
        if key in ours.get(resource, {})
    }


def _read_throttles(
    cluster: ConfigCluster, resources: Iterable[Resource]
) -> dict[Resource, dict[str, str]]:
    current: dict[Resource, dict[str, str]] = {}
    by_kind: dict[str, list[str]] = {}
    for kind, name in resources:
        by_kind.setdefault(kind, []).append(name)
    for kind, names in by_kind.items():
        for name, values in cluster.configs(kind, sorted(names)).items():
            current[(kind, name)] = values
    return current


RESTORE_CONFIRM_S = 10.0  # how long a restore waits for the brokers to apply it


def _wait_restored(
    cluster: ConfigCluster,
    written: Mapping[str, Mapping[str, str | None]],
    emit: Emit,
    sleep: Callable[[float], None],
) -> None:
    """Wait (up to RESTORE_CONFIRM_S) until each broker reports the rates put back. A broker
    applies a config change a moment after it is written (ZooKeeper mode: a change
    notification); a command run right after this one would otherwise read the rate being
    removed as the one there before, put it back when it restores, and take it as proof that
    its own equal rate is in effect. A warning when one has not applied it yet."""
    slept = [0.0]  # the clock: what was slept (a test's sleep takes no time)

    def nap(seconds: float) -> None:
        sleep(seconds)
        slept[0] += seconds

    result = wait_applied(
        lambda names: cluster.configs("broker", names),
        written,
        timeout_s=RESTORE_CONFIRM_S,
        now=lambda: slept[0],
        sleep=nap,
    )
    if result.confirmed:
        return
    shown = describe_missing(result.missing)
    emit(
        {
            "event": "warning",
            "message": f"the restored throttle rates are not in effect yet after "
            f"{RESTORE_CONFIRM_S:g} s ({shown}); the brokers apply them when they process the "
            "change (`kreplica throttles` shows what they report)",
        }
    )


def list_throttles(
    cluster: ConfigCluster, topics: Sequence[str], brokers: Iterable[int]
) -> tuple[list[dict[str, str]], list[int]]:
    """Every replication throttle set (not Kafka's default) on these topics and brokers, as rows
    {kind, name, config, value}; and the brokers no way could read (down: unread, not none)."""
    topic_values = cluster.configs("topic", sorted(topics))
    names = [str(b) for b in sorted(set(brokers))]
    broker_values = cluster.configs("broker", names)
    unread = [int(n) for n in names if n not in broker_values]
    rows = [
        {"kind": "topic", "name": name, "config": key, "value": value}
        for name, values in sorted(topic_values.items())
        for key, value in sorted(values.items())
        if key in TOPIC_KEYS
    ] + [
        {"kind": "broker", "name": name, "config": key, "value": value}
        for name, values in sorted(broker_values.items(), key=lambda kv: int(kv[0]))
        for key, value in sorted(values.items())
        if key in BROKER_KEYS
    ]
    return rows, unread


def restore_journal_throttles(
    cluster: ConfigCluster,
    journal: Journal,
    emit: Emit,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Put back what was set before the throttles this journal recorded and has not restored
    yet (a config someone changed meanwhile keeps their value). Returns the configs changed.

    A broker applies a dynamic config a moment after it was written (ZooKeeper mode: through
    a change notification), so a value kreplica set seconds ago can still read as the old one;
    that is not someone else's change: wait for it (up to 5 s) before deciding."""
    events = journal.read()
    previous, ours = journal_throttles(events)
    if not ours:
        return 0
    earlier = _earlier_values(events, ours)
    for _ in range(5):
        current = _read_throttles(cluster, ours)
        for resource in ours:  # a down broker no way could read: it holds what we set
            current.setdefault(resource, dict(ours[resource]))
        unseen = [
            (resource, key)
            for resource, values in ours.items()
            for key, value in values.items()
            if current.get(resource, {}).get(key) != value
            and (
                current.get(resource, {}).get(key) == previous.get(resource, {}).get(key)
                or current.get(resource, {}).get(key) in earlier.get((resource, key), ())
            )
        ]
        if not unseen:
            break
        sleep(1.0)
    # A value kreplica set before its last one (--pace auto changes a rate many times) is
    # still ours when the broker has not applied the last one yet: restored all the same
    # (ZooKeeper mode applies them in order, so the restore lands after it).
    for resource, values in ours.items():
        now = current.get(resource, {})
        for key, value in values.items():
            if now.get(key) != value and now.get(key) in earlier.get((resource, key), ()):
                now[key] = value
    changes = restore_plan(previous, current, ours)
    done = 0
    via: dict[str, str] = {}  # broker -> the way its configs went, when not the Admin API
    pending: dict[Resource, str] = {}  # could not be written now: why
    for (kind, name), changed in sorted(changes.items()):
        try:
            cluster.alter_configs(kind, name, changed)
        except BrokerDown as exc:
            pending[(kind, name)] = str(exc)
            continue
        done += 1
        path = cluster.last_path
        if kind == "broker" and path and path != "the Admin API":
            via[name] = path
    journal.append({"event": "throttle-restored", "configs": done, "via": via})
    written = {
        name: dict(changed)
        for (kind, name), changed in changes.items()
        if kind == "broker" and name not in via and (kind, name) not in pending
    }
    _wait_restored(cluster, written, emit, sleep)
    for (kind, name), reason in sorted(pending.items()):
        # still ours to restore: resume, cancel, `throttles --clear` or the next command that
        # sees the broker back clears it
        journal.append(
            {
                "event": "throttle-pending",
                "kind": kind,
                "name": name,
                "previous": {
                    k: v for k, v in previous.get((kind, name), {}).items() if v is not None
                },
                "values": dict(ours[(kind, name)]),
                "reason": reason,
            }
        )
    emit(
        {
            "event": "throttle-restored",
            "configs": done,
            "via": via,
            "pending": {f"{k} {n}": why for (k, n), why in sorted(pending.items())},
        }
    )
    return done


def clear_pending_throttles(cluster: ConfigCluster, journals: Iterable[Journal], emit: Emit) -> int:
    """Throttles a restore could not write (their broker was down) and that are the only ones
    left of their journal: restore them now if their brokers are back. Returns configs put
    back. A journal an apply holds is skipped."""
    live: set[int] | None = None
    done = 0
    for journal in journals:
        state = journal.state()
        if not state.throttles_pending or set(state.throttles_pending) != set(state.throttles_set):
            continue
        if live is None:
            live = cluster.live_broker_ids()
        brokers = {int(n) for k, n in state.throttles_pending if k == "broker"}
        if not brokers & live:
            continue
        try:
            with journal.lock():
                done += restore_journal_throttles(cluster, journal, emit)
        except ReassignmentInProgress:
            continue
    return done
