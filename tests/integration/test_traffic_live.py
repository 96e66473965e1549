"""`kreplica traffic` and `snapshot --traffic` against the shared clusters (issue 34): paced
producers of known rates on three partitions of a topic of this test's own, a fourth idle, one
consumer group committing as it reads; on a second topic a group that reads without committing.
Each non-idle partition's measured rate must be within 10% of what was produced, the idle one
0, fan-out exact (1 where the committing group read, 0 on the idle partition, unknown where
only the silent group read)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kreplica.sandbox import SandboxInfo
from kreplica.testing import TopicSpec, create_topics
from tests.support.cli import run_kreplica
from tests.support.groups import per_mode
from tests.support.traffic_load import traffic_load

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

RECORD = 2000  # bytes of each record's value (random: incompressible)
RATES = {0: 64_000, 1: 32_000, 2: 16_000}  # B/s per partition of the read topic; 3 is idle
SILENT_RATE = 24_000  # B/s to partition 0 of the topic only a non-committing group reads
WINDOW = "6"


def _rows(document: dict[str, Any], topic: str) -> dict[int, dict[str, Any]]:
    return {r["partition"]: r for r in document["data"]["partitions"] if r["topic"] == topic}


def _check(document: dict[str, Any], read: str, silent: str) -> None:
    rows = _rows(document, read)
    for partition, rate in RATES.items():
        measured = rows[partition]["bytes_in_per_s"]
        assert abs(measured - rate) <= 0.10 * rate, (partition, measured, rate)
        assert rows[partition]["fanout"] == 1, rows[partition]
        followers = len(rows[partition]["replicas"]) - 1
        expected_out = measured * (followers + 1)
        assert rows[partition]["bytes_out_per_s"] == pytest.approx(expected_out, abs=1.0)
    assert rows[3]["bytes_in_per_s"] == 0
    assert rows[3]["fanout"] == 0
    assert "idle" in rows[3]["notes"]
    unread = _rows(document, silent)[0]
    assert abs(unread["bytes_in_per_s"] - SILENT_RATE) <= 0.10 * SILENT_RATE, unread
    assert unread["fanout"] is None and "fanout-unknown" in unread["notes"]
    assert unread["bytes_out_per_s"] is None
    # per broker: network in is the sum of the rates of the replicas it holds
    everything = list(document["data"]["partitions"])
    for broker in document["data"]["brokers"]:
        held = sum(r["bytes_in_per_s"] for r in everything if broker["id"] in r["replicas"])
        assert broker["nw_in"] == pytest.approx(held, abs=1.0)
        led = sum(r["bytes_in_per_s"] for r in everything if r["leader"] == broker["id"])
        assert broker["leader_bytes_in"] == pytest.approx(led, abs=1.0)


@pytest.mark.parametrize("mode", per_mode("cluster"))
def test_traffic_measures_paced_producers_and_fanout(
    mode: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    cluster: SandboxInfo = request.getfixturevalue(f"{mode}_cluster")
    bootstrap = cluster.bootstrap_servers
    read, silent = f"traffic-read-{mode}", f"traffic-silent-{mode}"
    create_topics(
        bootstrap,
        [
            TopicSpec(read, partitions=4, replication_factor=2),
            TopicSpec(silent, partitions=1, replication_factor=3),
        ],
    )
    group = f"traffic-readers-{mode}"
    spec = {"read": RATES, "silent": SILENT_RATE, "record": RECORD}
    with traffic_load(bootstrap, read, silent, group, spec):
        topics = ("--topic", read, "--topic", silent)
        live = run_kreplica(
            "traffic", "--bootstrap-server", bootstrap, "--window", WINDOW, *topics,
            "--output", "json",
        )  # fmt: skip
        assert live.returncode == 0, live.stderr
        assert "measuring traffic:" in live.stderr  # progress while it waits
        _check(json.loads(live.stdout), read, silent)

        if cluster.zookeeper is not None:  # ZooKeeper's assignment, the brokers' offsets
            both = run_kreplica(
                "traffic", "--zookeeper", cluster.zookeeper, "--bootstrap-server", bootstrap,
                "--window", WINDOW, *topics, "--output", "json",
            )  # fmt: skip
            assert both.returncode == 0, both.stderr
            _check(json.loads(both.stdout), read, silent)

        stored = tmp_path / "snap.json"
        taken = run_kreplica(
            "snapshot", "--bootstrap-server", bootstrap, "--traffic", WINDOW, *topics,
            "-o", str(stored),
        )  # fmt: skip
        assert taken.returncode == 0, taken.stderr
    # capacities of a broker the cluster does not have: refused before the window starts
    caps = tmp_path / "caps.json"
    caps.write_text(json.dumps({"42": {"nw_in": 1000}}))
    typo = run_kreplica(
        "traffic", "--bootstrap-server", bootstrap, "--window", "60", "--capacity", str(caps)
    )
    assert typo.returncode == 2, typo.stderr
    assert typo.stderr.startswith("error: ") and "broker 42 is not in this cluster" in typo.stderr
    assert "measuring traffic" not in typo.stderr  # it never waited
    data = json.loads(stored.read_text())
    assert data["traffic"]["window_s"] >= 6
    offline = run_kreplica("traffic", "--snapshot", str(stored), "--output", "json")
    assert offline.returncode == 0, offline.stderr
    _check(json.loads(offline.stdout), read, silent)
