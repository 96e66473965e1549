"""Plans over time, on the session clusters (3 brokers, racks a, b, c; a topic per test): what
an on-call meets after the first apply (issue 33).

1. A plan the journal records as finished, applied again after the cluster changed (RF raised,
   then lowered back), is refused with exit 5 ("applied on DATE; the cluster changed since"),
   `--on-drift skip` or not, and nothing moves.
2. Drift in a plan that changes RF: refused with advice that never says "apply the rest";
   `--on-drift skip` leaves the drifted topic out whole (no partition of it at another RF) and
   applies the topic that did not change.
3. Cancel mid-apply says what stays ("N returned to their old replicas; M had finished and stay
   at RF 2: PLAN.rollback.json returns them"); `verify` then says the apply was cancelled;
   `cancel --rollback-finished` returns the finished ones, so the topic is whole at its old RF.
4. A rollback file and a plan file made stale by a later change: `check` and `apply` refuse
   them with exit 5 (the rollback has its own plan document; `check PLAN.json` reads the plan
   document beside it, as apply does).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kreplica.sandbox import SandboxInfo
from kreplica.testing import TopicSpec, create_topics
from tests.integration.conftest import produce
from tests.integration.test_apply import Kafka, Operator, _ok, _one_line

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def op(session_cluster: SandboxInfo, tmp_path: Path) -> Operator:
    return Operator(session_cluster, tmp_path)


@pytest.fixture
def kafka(session_cluster: SandboxInfo) -> Iterator[Kafka]:
    client = Kafka(session_cluster)
    yield client
    client.close()


def _rfs(kafka: Kafka, topic: str) -> dict[int, int]:
    return {p: len(replicas) for p, (replicas, _, _) in kafka.partitions(topic).items()}


def _unchanged(op: Operator, kafka: Kafka, topic: str, was: object) -> None:
    assert kafka.replicas(topic) == was
    assert not kafka.in_flight()
    assert kafka.throttles([topic]) == {}


def test_a_finished_plan_is_refused_once_the_cluster_changed_since(
    op: Operator, kafka: Kafka
) -> None:
    topic = f"finished-{op.info.mode}"
    create_topics(
        op.info.bootstrap_servers,
        [TopicSpec(topic, assignment={0: [1], 1: [2], 2: [3], 3: [1]})],
    )
    _ok(op.run("expand", "-t", topic, "--rf", "2", "--yes", "--out", "up.json", *op.source))
    assert set(_rfs(kafka, topic).values()) == {2}
    shrink = ["shrink", "-t", topic, "--rf", "1", "--force", "--yes", "--out", "down.json"]
    _ok(op.run(*shrink, *op.source))
    was = kafka.replicas(topic)
    assert set(_rfs(kafka, topic).values()) == {1}

    for extra in ([], ["--on-drift", "skip"]):
        line = _one_line(op.run("apply", "up.json", *extra, *op.source), 5)
        assert "up.json was applied on 20" in line and "the cluster changed since" in line, line
        assert "make a new plan" in line and "the rest" not in line, line
        _unchanged(op, kafka, topic, was)
    op.log.append(line)
    print("\n".join(op.log))


def test_drift_in_an_rf_change_leaves_the_topic_out_whole(op: Operator, kafka: Kafka) -> None:
    drifted, clean = f"drifted-{op.info.mode}", f"clean-{op.info.mode}"
    create_topics(
        op.info.bootstrap_servers,
        [
            TopicSpec(drifted, assignment={0: [1], 1: [2], 2: [3], 3: [1]}),
            TopicSpec(clean, assignment={0: [2], 1: [3]}),
        ],
    )
    plan = ["expand", "-t", drifted, "-t", clean, "--rf", "2", "--dry-run"]
    _ok(op.run(*plan, "--out", "two.json", *op.source))
    # someone moves one partition of `drifted` (another broker, same RF) after the plan
    bare = {"version": 1, "partitions": [{"topic": drifted, "partition": 0, "replicas": [2]}]}
    (op.cwd / "moved.json").write_text(json.dumps(bare))
    _ok(op.run("apply", "moved.json", *op.source))
    was = kafka.replicas(drifted)

    line = _one_line(op.run("apply", "two.json", *op.source), 5)
    assert f"{drifted}-0 was [1] and is now [2]" in line and "make a new plan" in line, line
    assert "the rest" not in line, line
    assert f"(and all of {drifted}: " in line and f"did not change, of {clean}" in line, line
    _unchanged(op, kafka, drifted, was)

    skipped = _ok(op.run("apply", "two.json", "--on-drift", "skip", *op.source))
    op.log += [line, skipped.stdout.strip()]
    assert f"topic {drifted} whole ({drifted}-0 was [1] and is now [2]" in skipped.stdout
    # the drifted topic as it was, at one RF; the other one applied
    assert kafka.replicas(drifted) == was
    assert set(_rfs(kafka, drifted).values()) == {1}
    assert set(_rfs(kafka, clean).values()) == {2}
    assert kafka.throttles([drifted, clean]) == {}
    print("\n".join(op.log))


def test_cancel_says_what_stays_and_rolls_back_the_finished(op: Operator, kafka: Kafka) -> None:
    topic = f"half-{op.info.mode}"
    create_topics(
        op.info.bootstrap_servers,
        [TopicSpec(topic, assignment={0: [1], 1: [2], 2: [3], 3: [1]})],
    )
    before = kafka.replicas(topic)
    for partition in (0, 1):  # these two copy slowly under the throttle; 2 and 3 are empty
        produce(op.info.bootstrap_servers, topic, 4 * 1024 * 1024, partition=partition)
    _ok(op.run("expand", "-t", topic, "--rf", "2", "--dry-run", "--out", "c.json", *op.source))
    # two waves, the empty partitions first: they finish before the full ones are submitted
    waves = ["--max-partitions", "2", "--order", "smallest"]
    apply = op.start("apply", "c.json", "--throttle", "30KB/s", *waves, *op.source)
    try:
        kafka.wait(
            "the empty partitions done, the full ones moving",
            lambda: kafka.in_flight() == {(topic, 0), (topic, 1)},
        )
        cancel = _ok(op.run("cancel", "c.json", *op.source))
        apply.communicate(timeout=120)
    finally:
        if apply.poll() is None:
            apply.kill()
            apply.communicate()
    assert cancel.stdout.strip() == (
        "c.json: 2 returned to their old replicas; 2 had finished and stay at RF 2: "
        "c.rollback.json returns them; the running apply stops and restores the throttles"
    ), cancel.stdout
    assert apply.returncode == 7
    kafka.wait("no move in flight", lambda: not kafka.in_flight())
    assert _rfs(kafka, topic) == {0: 1, 1: 1, 2: 2, 3: 2}

    verify = op.run("verify", "c.json", *op.source)
    line = verify.stderr.strip().splitlines()[-1]
    assert verify.returncode == 7 and "its apply was cancelled on 20" in line, verify.stderr
    assert "kreplica cancel" not in line and "c.rollback.json" in line, line

    back = _ok(op.run("cancel", "c.json", "--rollback-finished", *op.source))
    assert "2 had finished and c.rollback.json returned 2 of them" in back.stdout, back.stdout
    assert kafka.replicas(topic) == before
    assert kafka.throttles([topic]) == {}
    op.log += [cancel.stdout.strip(), line, back.stdout.strip()]
    print("\n".join(op.log))


def test_check_and_apply_refuse_a_stale_rollback_and_a_stale_plan(
    op: Operator, kafka: Kafka
) -> None:
    topic = f"stale-{op.info.mode}"
    create_topics(op.info.bootstrap_servers, [TopicSpec(topic, assignment={0: [1], 1: [2]})])
    _ok(op.run("expand", "-t", topic, "--rf", "2", "--yes", "--out", "s.json", *op.source))
    _ok(op.run("check", "s.rollback.json", *op.source))  # current: it would undo s.json
    _ok(op.run("expand", "-t", topic, "--rf", "3", "--yes", "--out", "s3.json", *op.source))
    was = kafka.replicas(topic)

    lines = []
    for args in (["check", "s.rollback.json"], ["apply", "s.rollback.json"], ["check", "s.json"]):
        proc: subprocess.CompletedProcess[str] = op.run(*args, *op.source)
        line = _one_line(proc, 5)
        assert "the cluster changed since this plan was made" in line, line
        lines.append(line)
        _unchanged(op, kafka, topic, was)
    assert not [e for e in op.journal("s.rollback.json") if e["event"] != "error"]
    op.log += lines
    print("\n".join(op.log))
