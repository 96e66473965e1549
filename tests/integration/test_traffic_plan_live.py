"""`rebalance --by traffic --traffic-window` on the shared clusters (issue 34): a topic of this
test's own, ten partitions on brokers 1 and 2 or 1 and 3 (racks a, b, c), each written at
8 kB/s by paced producers and read by one committing group, all led by broker 1: broker 1
takes twice the mean network in and three times the mean network out. The command measures
live, plans and applies; then, from the true rates (the producers' own) and the assignment
and leaders the cluster reports, every broker's network in and out is within the band and
every partition keeps its two racks; the dry run's bytes moved are within 1.2x of its lower
bound."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kreplica.sandbox import SandboxInfo
from kreplica.testing import TopicSpec, create_topics
from tests.support.cli import run_kreplica
from tests.support.groups import per_mode
from tests.support.traffic_load import traffic_load

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

RATE = 8_000  # B/s written to each partition (record values)
PARTITIONS = 10
WINDOW = "6"


def _band(loads: dict[int, float], largest: float) -> float:
    mean = sum(loads.values()) / len(loads)
    return max(1.05 * mean, mean + largest)


def _true_loads(snapshot: dict[str, Any], topic: str) -> tuple[dict[int, float], dict[int, float]]:
    """Network in and out per broker from the producers' rates and the one committing group
    (fan-out 1): in, RATE per replica held; out, RATE x (followers + 1) per partition led."""
    brokers = [b["id"] for b in snapshot["brokers"]]
    nw_in, nw_out = dict.fromkeys(brokers, 0.0), dict.fromkeys(brokers, 0.0)
    (entry,) = [t for t in snapshot["topics"] if t["name"] == topic]
    for p in entry["partitions"]:
        for b in p["replicas"]:
            nw_in[b] += RATE
        nw_out[p["leader"]] += RATE * (len(p["replicas"]) - 1 + 1)
    return nw_in, nw_out


def _snapshot(bootstrap: str, topic: str) -> dict[str, Any]:
    taken = run_kreplica("snapshot", "--bootstrap-server", bootstrap, "--topic", topic)
    assert taken.returncode == 0, taken.stderr
    return dict(json.loads(taken.stdout))


@pytest.mark.parametrize("mode", per_mode("cluster"))
def test_rebalance_by_traffic_live_brings_every_broker_within_the_band(
    mode: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    cluster: SandboxInfo = request.getfixturevalue(f"{mode}_cluster")
    bootstrap = cluster.bootstrap_servers
    topic = f"traffic-plan-{mode}"
    layout = {p: [1, 2 if p % 2 == 0 else 3] for p in range(PARTITIONS)}
    create_topics(bootstrap, [TopicSpec(topic, assignment=layout)])
    racks = {b.id: b.rack for b in cluster.brokers}
    before_in, before_out = _true_loads(_snapshot(bootstrap, topic), topic)
    assert before_in[1] > _band(before_in, RATE) and before_out[1] > _band(before_out, 2 * RATE)

    spec = {"read": dict.fromkeys(range(PARTITIONS), RATE), "silent": 0, "record": 2000}
    with traffic_load(bootstrap, topic, "-", f"traffic-plan-{mode}", spec):
        # a dry run first: from a cold start to a plan, what it costs beyond the window
        begun = time.monotonic()
        dry = run_kreplica(
            "rebalance", "--bootstrap-server", bootstrap, "--by", "traffic",
            "--traffic-window", WINDOW, "--skip-in-flight", "--dry-run", "--output", "json",
        )  # fmt: skip
        took = time.monotonic() - begun
        assert dry.returncode == 0, dry.stderr
        assert "measuring traffic:" in dry.stderr
        report = json.loads(dry.stdout)["data"]["report"]["traffic"]
        print(f"\n{mode}: window {WINDOW} s, cold start to plan {took:.1f} s")  # the figure
        assert report["replica_moves"] > 0 and report["leader_changes"] > 0
        assert report["bytes_lower_bound"] <= report["bytes_moved"]
        assert report["bytes_moved"] <= 1.2 * report["bytes_lower_bound"]  # the goal

        applied = run_kreplica(
            "rebalance", "--bootstrap-server", bootstrap, "--by", "traffic",
            "--traffic-window", WINDOW, "--skip-in-flight", "--yes",
            "--out", str(tmp_path / "plan.json"),
        )  # fmt: skip
        assert applied.returncode == 0, (applied.stdout, applied.stderr)

    after = _snapshot(bootstrap, topic)
    nw_in, nw_out = _true_loads(after, topic)
    assert max(nw_in.values()) <= _band(nw_in, RATE), nw_in
    assert max(nw_out.values()) <= _band(nw_out, 2 * RATE), nw_out
    (entry,) = [t for t in after["topics"] if t["name"] == topic]
    for p in entry["partitions"]:
        assert len({racks[b] for b in p["replicas"]}) == 2, p  # racks kept
        assert p["leader"] == p["replicas"][0], p  # the plan's leaders elected
    moved = Counter(b for p in entry["partitions"] for b in p["replicas"])
    assert moved[1] < PARTITIONS  # broker 1 gave replicas away
