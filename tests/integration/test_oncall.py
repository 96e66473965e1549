"""What an on-call meets after the first apply (issue 33), on the shared ZooKeeper-mode
cluster, each test on topics of its own: a drained broker stays out of later plans until
undrained, and a plan with nothing to change writes nothing."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kreplica.sandbox import SandboxInfo
from kreplica.testing import TopicSpec, create_topics
from tests.integration.conftest import produce
from tests.support.cli import run_kreplica

pytestmark = pytest.mark.integration


def kreplica(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # the state folder (drained brokers, plans kept) is this test's: tests/conftest.py
    return run_kreplica(*args, cwd=cwd, env={"KREPLICA_POLL_INTERVAL": "0.3"}, timeout=120)


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _data(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_ok(proc))["data"]
    return data


def _added(data: dict[str, Any]) -> dict[int, list[int]]:
    """Partition -> the brokers the plan adds to it."""
    before = {p["partition"]: p["replicas"] for p in data["rollback"]["partitions"]}
    return {
        p["partition"]: [b for b in p["replicas"] if b not in before[p["partition"]]]
        for p in data["reassignment"]["partitions"]
    }


def test_a_drained_broker_stays_out_of_later_plans_until_undrained(
    zk_cluster: SandboxInfo, tmp_path: Path
) -> None:
    source = ["--bootstrap-server", zk_cluster.bootstrap_servers]
    create_topics(
        zk_cluster.bootstrap_servers,
        [
            TopicSpec("oncall-drained", assignment={0: [3, 1], 1: [3, 2]}),
            # broker 3 holds none of this topic: the least loaded for its new replicas
            TopicSpec("oncall-grow", assignment={0: [1], 1: [2], 2: [1], 3: [2]}),
        ],
    )
    grow = ["expand", "-t", "oncall-grow", "--rf", "2", "--dry-run", *source, "--output", "json"]
    before = _added(_data(kreplica(tmp_path, *grow)))
    assert any(3 in added for added in before.values()), before

    out = _ok(
        kreplica(
            tmp_path,
            "drain",
            "--brokers",
            "3",
            "-t",
            "oncall-drained",
            "--yes",
            "--out",
            "d.json",
            *source,
        )
    )
    assert (
        f"broker 3 drained: later plans on cluster {zk_cluster.cluster_id} leave it out until "
        "`kreplica brokers undrain 3`"
    ) in out
    listed = _data(kreplica(tmp_path, "brokers", "list", "--output", "json"))["drained"]
    assert [(r["cluster_id"], r["broker"]) for r in listed] == [(zk_cluster.cluster_id, 3)]
    assert listed[0]["plan"].endswith("d.json")

    left_out = _data(kreplica(tmp_path, *grow))
    assert all(3 not in added and added for added in _added(left_out).values()), left_out
    notes = [f["message"] for f in left_out["findings"] if f["code"] == "drained-left-out"]
    assert len(notes) == 1 and notes[0].startswith("broker 3 left out: drained on ")
    table = _ok(kreplica(tmp_path, *grow[:-2]))
    assert table.count("info: broker 3 left out") == 1

    _ok(kreplica(tmp_path, "brokers", "undrain", "3"))
    assert _data(kreplica(tmp_path, "brokers", "list", "--output", "json"))["drained"] == []
    again = _data(kreplica(tmp_path, *grow))
    # broker 3 holds none of the topic again: the least loaded for it, as before the drain
    # (the exact plan may differ: the drain and other tests' topics changed the cluster's loads)
    assert any(3 in added for added in _added(again).values()), again
    assert "drained-left-out" not in [f["code"] for f in again["findings"]]


def test_nothing_to_change_writes_no_plan(zk_cluster: SandboxInfo, tmp_path: Path) -> None:
    source = ["--bootstrap-server", zk_cluster.bootstrap_servers]
    create_topics(zk_cluster.bootstrap_servers, [TopicSpec("oncall-still", assignment={0: [2]})])
    # broker 1 holds nothing of the topic: a drain scoped to it has nothing to move
    proc = kreplica(
        tmp_path,
        "drain",
        "--brokers",
        "1",
        "-t",
        "oncall-still",
        "--out",
        "p.json",
        "--yes",
        *source,
    )
    assert _ok(proc) == (
        "drain broker(s) 1 (oncall-still): nothing to change, the cluster already has this "
        "shape; no plan written to p.json\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_controller_age_note_once_per_cluster(zk_cluster: SandboxInfo, tmp_path: Path) -> None:
    """A ZooKeeper-mode cluster applied to through a broker only (no --zookeeper) cannot tell
    its controller's age, nor whether it is the first: every apply said so; now the first one
    on a cluster. (A KRaft cluster on its first quorum leader is settled: no note at all.)"""
    source = ["--bootstrap-server", zk_cluster.bootstrap_servers]
    topics = ["oncall-note-1", "oncall-note-2"]
    create_topics(zk_cluster.bootstrap_servers, [TopicSpec(t, assignment={0: [1]}) for t in topics])
    said = []
    for topic in topics:
        out = _ok(
            kreplica(
                tmp_path,
                "expand",
                "-t",
                topic,
                "--rf",
                "2",
                "--yes",
                "--controller-settle",
                "30",
                *source,
            )
        )
        said.append(" ".join(out.split()))  # one line, however the terminal wrapped it
    assert (
        "note: not checked before starting: the controller's age: this cluster does not answer "
        "DescribeQuorum (ZooKeeper mode?); pass --zookeeper to check it (shown once per cluster)"
    ) in said[0]
    assert "applied " in said[1] and "controller's age" not in said[1]


_PROGRESS = re.compile(
    r"wave 1: \d+/\d+ partitions, ([\d.]+ \w+) of ([\d.]+ \w+) copied, ([\d.]+ \w+)/s, ETA (\S+)"
)
_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


def _bytes(text: str) -> float:
    number, unit = text.split()
    return float(number) * _UNITS[unit]


def test_progress_under_a_throttle_tells_the_truth(zk_cluster: SandboxInfo, tmp_path: Path) -> None:
    """Under a throttle the progress lines' rate never exceeds what it lets the receiving
    brokers take (main said 15.8 MiB/s under 488 KiB/s: the first fetch's burst over the
    first seconds), the ETA follows from it, and off a terminal a line comes at least every
    5 s."""
    source = ["--bootstrap-server", zk_cluster.bootstrap_servers]
    topic = "oncall-progress"
    create_topics(zk_cluster.bootstrap_servers, [TopicSpec(topic, assignment={0: [1], 1: [2]})])
    for partition in (0, 1):
        produce(zk_cluster.bootstrap_servers, topic, 2 * 1024 * 1024, partition=partition)
    _ok(
        kreplica(
            tmp_path, "expand", "-t", topic, "--rf", "2", "--dry-run", "--out", "p.json", *source
        )
    )
    plan = json.loads((tmp_path / "p.json").read_text())
    receivers = {b for p in plan["partitions"] for b in p["replicas"][1:]}
    throttle = 100_000
    out = _ok(kreplica(tmp_path, "apply", "p.json", "--throttle", "100KB/s", *source))
    lines = [m for m in map(_PROGRESS.search, out.splitlines()) if m]
    took = float(re.search(r"in 1 wave\(s\), 0 created, ([\d.]+) s", out).group(1))  # type: ignore[union-attr]
    assert took > 8, out  # 4 MiB at 2 x 97.7 KiB/s: long enough to be measured
    # a line at least every 5 s: every progress line counts, those before a rate is known
    # ("?, ETA ?", the first seconds' burst) too
    every = [x for x in out.splitlines() if re.match(r"wave 1: \d+/\d+ partitions, ", x)]
    assert len(every) >= int(took // 5), out
    cap = throttle * len(receivers)
    for m in lines:
        rate = _bytes(m.group(3))
        assert rate <= cap * 1.01, (m.group(0), cap)
        left = _bytes(m.group(2)) - _bytes(m.group(1))
        eta = m.group(4)
        minutes, _, seconds = eta.rpartition("m")
        eta_s = int(minutes or 0) * 60 + int(seconds.rstrip("s"))
        assert abs(eta_s - left / rate) <= max(2, 0.05 * eta_s), (m.group(0), left / rate)
