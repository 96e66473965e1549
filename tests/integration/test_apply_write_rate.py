"""Apply knows the write rate (issue 34 item 5), on the shared clusters: a partition written at a
known rate by a paced producer (tests/support/traffic_load.py, in a process of its own) is
moved. Under a throttle below its write rate the apply is refused with exit 4 and one line,
and the cluster is unchanged: no journal, no throttle, no move, the replicas as they were;
with the rates measured now (`--rate-window`) and with the rates the plan carries (planned
from `snapshot --traffic`, no wait). With a throttle above the rate the same plan runs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kreplica.sandbox import SandboxInfo
from kreplica.testing import TopicSpec, create_topics
from tests.support.cli import run_kreplica
from tests.support.groups import per_mode
from tests.support.traffic_load import traffic_load

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

RATE = 64_000  # B/s written to the partition that moves
LOW, HIGH = "20KB/s", "2MB/s"  # throttles below and well above it


def _replicas(bootstrap: str, topic: str) -> list[int]:
    shown = run_kreplica("snapshot", "--bootstrap-server", bootstrap, "--topic", topic)
    assert shown.returncode == 0, shown.stderr
    (found,) = json.loads(shown.stdout)["topics"]
    return list(found["partitions"][0]["replicas"])


def _apply(bootstrap: str, plan: Path, throttle: str) -> subprocess.CompletedProcess[str]:
    """Apply `plan` (its journal beside it) under `throttle`, measuring for 5 s what the plan
    has no rate for."""
    return run_kreplica(
        "apply", str(plan), "--bootstrap-server", bootstrap, "--throttle", throttle,
        "--rate-window", "5", cwd=plan.parent,
    )  # fmt: skip


def _unchanged(bootstrap: str, topic: str, before: list[int], plan: Path) -> None:
    """Nothing written: no journal, no throttle anywhere, no move, the replicas as before."""
    assert not plan.with_name(plan.name.replace(".json", ".journal.jsonl")).exists()
    throttles = run_kreplica("throttles", "--bootstrap-server", bootstrap)
    assert throttles.returncode == 0, throttles.stderr
    assert "no replication throttles are set" in throttles.stdout
    assert _replicas(bootstrap, topic) == before
    verify = run_kreplica("verify", "--bootstrap-server", bootstrap, str(plan))
    assert verify.returncode == 7 and "(moving)" not in verify.stdout, verify.stdout


@pytest.mark.parametrize("mode", per_mode("cluster"))
def test_a_throttle_below_the_write_rate_is_refused_and_above_it_runs(
    mode: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    cluster: SandboxInfo = request.getfixturevalue(f"{mode}_cluster")
    bootstrap = cluster.bootstrap_servers
    topic = f"write-rate-{mode}"
    create_topics(bootstrap, [TopicSpec(topic, partitions=1, replication_factor=1)])
    before = _replicas(bootstrap, topic)
    plan = tmp_path / "rf2.json"
    planned = run_kreplica(
        "expand", "--bootstrap-server", bootstrap, "-t", topic, "--rf", "2", "--dry-run",
        "--out", str(plan),
    )  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    spec = {"read": {"0": RATE}, "record": 2000}
    with traffic_load(bootstrap, topic, "", f"write-rate-{mode}", spec):
        # measured now, on the moving partition only
        refused = _apply(bootstrap, plan, LOW)
        assert refused.returncode == 4, refused.stderr
        assert "measuring the write rates of 1 moving partition: " in refused.stdout
        (line,) = [x for x in refused.stderr.splitlines() if x.strip()]
        assert line.startswith("error: the moves would never finish: in wave 1 broker ")
        assert f"would receive the new replica of {topic}-0, written at " in line
        assert "at or above its follower throttle of 19.5 KiB/s" in line
        assert "raise --throttle above" in line and "--allow-under-write-rate" in line
        _unchanged(bootstrap, topic, before, plan)

        # the plan carries the rate it was made from: refused without measuring
        snap = tmp_path / "snap.json"
        taken = run_kreplica(
            "snapshot", "--bootstrap-server", bootstrap, "--traffic", "5", "-t", topic,
            "-o", str(snap),
        )  # fmt: skip
        assert taken.returncode == 0, taken.stderr
        carried = tmp_path / "carried.json"
        planned = run_kreplica(
            "expand", "--snapshot", str(snap), "-t", topic, "--rf", "2", "--dry-run",
            "--out", str(carried),
        )  # fmt: skip
        assert planned.returncode == 0, planned.stderr
        document = json.loads(carried.with_name("carried.kreplica.json").read_text())
        (row,) = document["write_rates"]["partitions"]
        assert abs(row["bytes_in_per_s"] - RATE) <= 0.1 * RATE, row
        refused = _apply(bootstrap, carried, LOW)
        assert refused.returncode == 4, refused.stderr
        assert "measuring" not in refused.stdout  # the plan's rate: no wait
        _unchanged(bootstrap, topic, before, carried)

        applied = _apply(bootstrap, plan, HIGH)
        assert applied.returncode == 0, applied.stderr
        assert "write rates (measured now over 5" in applied.stdout
        assert "at the throttle the copy takes about" in applied.stdout
    assert len(_replicas(bootstrap, topic)) == 2
    journal = [json.loads(x) for x in plan.with_name("rf2.journal.jsonl").read_text().splitlines()]
    (rates,) = [e for e in journal if e["event"] == "write-rates"]
    (measured,) = rates["partitions"]
    assert abs(measured["bytes_in_per_s"] - RATE) <= 0.1 * RATE, measured
