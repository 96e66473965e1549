"""Known traffic for test_traffic_live, from a process of its own: paced producers on the read
topic's partitions and on the silent topic, a consumer group committing as it reads one and a
group that never commits reading the other. It prints `ready` once the committing group has
offsets on every written partition and the silent group holds its partition, then runs until
its standard input closes.

Its own process, because librdkafka clients with threads of their own in the pytest process
crashed it now and then (a segfault with no Python frame, after one mode's case and before the
next) and took the whole worker down; here a crash fails only the case that used it.

    python -m tests.support.traffic_load BOOTSTRAP READ_TOPIC SILENT_TOPIC GROUP SPEC_JSON

SILENT_TOPIC `-`: none (no silent topic, no group that does not commit); SPEC_JSON without
"silent": producers only (no group). The tests start it with `traffic_load` (test_traffic_live,
test_traffic_plan_live, test_traffic_prometheus, test_apply_write_rate).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kreplica.testing import group_reader, paced_producer
from tests.support.cli import kreplica_env

ROOT = Path(__file__).resolve().parents[2]


def committed(bootstrap: str, group: str) -> set[int]:
    """The partitions `group` has committed offsets on."""
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
    try:
        return {tp.partition for tp in future.result(30).topic_partitions if tp.offset >= 0}
    except KafkaException:  # the coordinator still loading, on a cluster just started
        return set()


def assigned(bootstrap: str, group: str) -> set[int]:
    """The partitions `group`'s members hold now."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        described = admin.describe_consumer_groups([group])[group].result(30)
    except KafkaException:  # the coordinator still loading, on a cluster just started
        return set()
    return {
        tp.partition
        for member in described.members
        if member.assignment
        for tp in member.assignment.topic_partitions
    }


def _wait(check: object, what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise SystemExit(f"not ready: {what} within {timeout_s:.0f} s")
        time.sleep(0.5)


@contextmanager
def traffic_load(
    bootstrap: str, read: str, silent: str, group: str, spec: dict[str, Any]
) -> Iterator[str]:
    """tests/support/traffic_load.py's producers and groups, in a process of their own, for the
    duration of the block, from the moment they are ready; yields the committing group's name.
    A load process that dies before it is ready (librdkafka's own crash, seen now and then on a
    KRaft cluster just started: see the module) is started again, with groups of new names (a
    dead member would hold its partitions until its session times out), twice at most."""
    for attempt in range(3):
        name = f"{group}-{attempt}"
        load = subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-m", "tests.support.traffic_load", bootstrap,
             read, silent, name, json.dumps(spec)],
            cwd=ROOT, env=kreplica_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert load.stdin is not None and load.stdout is not None
        try:
            if load.stdout.readline() == "ready\n":
                yield name
                return
        finally:
            load.stdin.close()
            try:
                load.wait(90)
            except subprocess.TimeoutExpired:
                load.kill()
                load.wait()
    raise AssertionError(f"the traffic load did not start in 3 tries (last exit {load.returncode})")


def main() -> None:
    bootstrap, read, silent, group, spec = sys.argv[1:6]
    rates = json.loads(spec)  # {"read": {partition: B/s}, "silent": B/s, "record": bytes}
    targets = {(read, int(p)): int(r) for p, r in rates["read"].items()}
    if "silent" not in rates:  # producers only: no group at all
        with paced_producer(bootstrap, targets, record_bytes=int(rates["record"])):
            time.sleep(1.0)
            print("ready", flush=True)
            sys.stdin.read()
        return
    quiet = silent == "-"  # no silent topic, no group that does not commit
    if not quiet:
        targets[(silent, 0)] = int(rates["silent"])
    with contextlib.ExitStack() as running:
        running.enter_context(paced_producer(bootstrap, targets, record_bytes=int(rates["record"])))
        running.enter_context(group_reader(bootstrap, group, read, commit=True))
        if not quiet:
            running.enter_context(group_reader(bootstrap, f"{group}-silent", silent, commit=False))
        wanted = {int(p) for p in rates["read"]}
        _wait(lambda: committed(bootstrap, group) >= wanted, f"{group} committed on {wanted}")
        if not quiet:
            _wait(
                lambda: assigned(bootstrap, f"{group}-silent") == {0}, "the silent group's member"
            )
        print("ready", flush=True)
        sys.stdin.read()  # until the test closes it


if __name__ == "__main__":
    main()
