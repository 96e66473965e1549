"""`--traffic-from prometheus://...` against a real Prometheus scraping real brokers (issue 34
item 6): a KRaft sandbox started with --metrics (the JMX exporter agent with the Kafka example
rules on each broker, Debian's Prometheus scraping them every 5 s), paced producers of known
rates (tests/support/traffic_load.py) on three partitions of one topic, a fourth idle, a group
committing as it reads and, on a second topic, a group that reads without committing.

Each written partition's rate read from Prometheus must be within 10% of what was produced,
the idle one 0; fan-out 1 on both topics (metrics see bytes read, committed or not). After
the producers stop, a range that reaches back to them still gives their peak; a range of the
quiet time alone gives 0. The shared clusters run without the agent (it would scrape every
test's topics on every broker), hence a cluster of this module's own (its xdist group)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kreplica import sandbox
from kreplica.errors import ExitCode
from kreplica.sandbox import SandboxInfo
from kreplica.sandbox.metrics import SCRAPE_INTERVAL_S
from kreplica.sandbox.procs import is_ours
from kreplica.testing import TopicSpec, create_topics
from tests.integration.conftest import private_cluster
from tests.support.cli import run_kreplica
from tests.support.traffic_load import traffic_load

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]

RECORD = 2000
RATES = {0: 64_000, 1: 32_000, 2: 16_000}  # B/s per partition of the read topic; 3 is idle
SILENT_RATE = 24_000
WINDOW_S = 4 * SCRAPE_INTERVAL_S  # the source's rate window on the sandbox: 4 scrapes
READ, SILENT = "prom-read", "prom-silent"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster.json"


def _metrics_missing() -> str | None:
    """Why `sandbox up --metrics` cannot run on this machine (None: it can)."""
    from kreplica.sandbox import metrics

    missing = [why for _, _, why in metrics.fetch_each() if why is not None]
    return "sandbox --metrics cannot run here: " + "; ".join(missing) if missing else None


@pytest.fixture(scope="module")
def cluster() -> Iterator[SandboxInfo]:
    missing = _metrics_missing()
    if missing is not None:
        pytest.skip(missing)
    with private_cluster("prom", "kraft", metrics=True) as info:
        prometheus = [p for p in sandbox.processes(info.name) if p.role == "prometheus"]
        create_topics(
            info.bootstrap_servers,
            [
                TopicSpec(READ, partitions=4, replication_factor=2),
                TopicSpec(SILENT, partitions=1, replication_factor=3),
            ],
        )
        yield info
    assert [p.alive for p in prometheus] == [True]  # it ran, and `down` stopped it:
    assert not is_ours(prometheus[0].pid, info.state_dir)


def _traffic(cluster: SandboxInfo, *args: str) -> Any:
    assert cluster.prometheus is not None
    return run_kreplica(
        "traffic", "--bootstrap-server", cluster.bootstrap_servers,
        "--traffic-from", f"prometheus://{cluster.prometheus}", *args,
    )  # fmt: skip


def _rows(document: dict[str, Any], topic: str) -> dict[int, dict[str, Any]]:
    return {r["partition"]: r for r in document["data"]["partitions"] if r["topic"] == topic}


def _check_peaks(document: dict[str, Any]) -> None:
    rows = _rows(document, READ)
    for partition, rate in RATES.items():
        row = rows[partition]
        assert abs(row["bytes_in_per_s"] - rate) <= 0.10 * rate, (partition, row, rate)
        assert row["fanout"] == 1 and "fanout-topic" in row["notes"], row
        followers = len(row["replicas"]) - 1
        assert row["bytes_out_per_s"] == pytest.approx(
            row["bytes_in_per_s"] * (followers + 1), abs=1.0
        )
    assert rows[3]["bytes_in_per_s"] == 0 and rows[3]["fanout"] == 0
    assert "idle" in rows[3]["notes"]
    unread = _rows(document, SILENT)[0]
    assert abs(unread["bytes_in_per_s"] - SILENT_RATE) <= 0.10 * SILENT_RATE, unread
    assert unread["fanout"] == 1  # read without committing: bytes out still show it
    everything = document["data"]["partitions"]
    for broker in document["data"]["brokers"]:
        held = sum(r["bytes_in_per_s"] for r in everything if broker["id"] in r["replicas"])
        assert broker["nw_in"] == pytest.approx(held, abs=1.0)


def test_rates_from_prometheus_are_the_produced_rates_at_their_peak(
    cluster: SandboxInfo, tmp_path: Path
) -> None:
    topics = ("--topic", READ, "--topic", SILENT)
    spec = {"read": RATES, "silent": SILENT_RATE, "record": RECORD}
    with traffic_load(cluster.bootstrap_servers, READ, SILENT, "prom-readers", spec):
        # two whole rate windows of steady writes, scraped
        time.sleep(2 * WINDOW_S + 2 * SCRAPE_INTERVAL_S)
        now = _traffic(cluster, "--traffic-range", "1m", *topics, "--output", "json")
        assert now.returncode == 0, now.stderr
        _check_peaks(json.loads(now.stdout))
        stored = tmp_path / "snap.json"
        taken = run_kreplica(
            "snapshot", "--bootstrap-server", cluster.bootstrap_servers,
            "--traffic-from", f"prometheus://{cluster.prometheus}", "--traffic-range", "1m",
            *topics, "-o", str(stored),
        )  # fmt: skip
        assert taken.returncode == 0, taken.stderr
        stopped = time.monotonic()
    # the snapshot keeps the rates and where they came from; read offline, the same figures
    data = json.loads(stored.read_text())
    assert data["traffic"]["from"] == f"prometheus://{cluster.prometheus}"
    assert data["traffic"]["window_s"] == 60 and data["traffic"]["peak_of_s"] == WINDOW_S
    offline = run_kreplica("traffic", "--snapshot", str(stored), "--output", "json")
    assert offline.returncode == 0, offline.stderr
    _check_peaks(json.loads(offline.stdout))

    # quiet for a whole window (and its scrapes): the last window is idle, the range's peak not
    time.sleep(max(0.0, stopped + WINDOW_S + 2 * SCRAPE_INTERVAL_S - time.monotonic()))
    quiet = _traffic(cluster, "--traffic-range", f"{WINDOW_S}s", *topics, "--output", "json")
    assert quiet.returncode == 0, quiet.stderr
    assert all(
        r["bytes_in_per_s"] == 0 and "idle" in r["notes"]
        for r in json.loads(quiet.stdout)["data"]["partitions"]
    )
    # a week's range: 42-minute windows, none of which a cluster minutes old has whole; not
    # measured, and said so (never 0); the 2-minute range still has whole busy windows
    week = _traffic(cluster, "--traffic-range", "7d", *topics, "--output", "json")
    assert week.returncode == 0, week.stderr
    document = json.loads(week.stdout)
    assert document["data"]["peak_of_s"] == 2520
    assert all(
        r["bytes_in_per_s"] is None and r["notes"] == ["no-series"]
        for r in document["data"]["partitions"]
    )
    recent = _traffic(cluster, "--traffic-range", "2m", *topics, "--output", "json")
    assert recent.returncode == 0, recent.stderr
    _check_peaks(json.loads(recent.stdout))
    shown = _traffic(cluster, "--traffic-range", "2m", *topics)
    assert shown.returncode == 0, shown.stderr
    assert f"peak of {WINDOW_S}s rates over the 2m before" in shown.stdout

    # rebalance --by traffic plans from the same rates (a dry run: nothing written)
    plan = run_kreplica(
        "rebalance", "--by", "traffic", "--bootstrap-server", cluster.bootstrap_servers,
        "--traffic-from", f"prometheus://{cluster.prometheus}", "--traffic-range", "2m",
        "--output", "json",
    )  # fmt: skip
    assert plan.returncode == 0, plan.stderr
    planned = json.loads(plan.stdout)["data"]
    assert planned["report"]["by"] == "traffic" and planned["report"]["traffic"]
    assert any(f["code"] == "traffic-balance" for f in planned["findings"])


def test_prometheus_without_the_topics_series_and_a_range_too_short(
    cluster: SandboxInfo,
) -> None:
    assert cluster.prometheus is not None
    where = f"prometheus://{cluster.prometheus}"
    # topics this cluster never had (the example snapshot's): no series for them
    absent = run_kreplica(
        "traffic", "--snapshot", str(EXAMPLE), "--topic", "orders", "--traffic-from", where
    )
    assert absent.returncode == ExitCode.SOURCE
    line = absent.stderr.strip()
    assert "\n" not in line and "Traceback" not in absent.stderr
    assert f"Prometheus at {where} has no series kafka_log_log_logendoffset" in line
    assert "for topic(s) orders in the last 5m" in line
    # shorter than 4 of this Prometheus's scrapes: refused, saying the least that works
    short = _traffic(cluster, "--traffic-range", "10s")
    assert short.returncode == ExitCode.USAGE
    assert f"give {WINDOW_S}s or more" in short.stderr.strip().splitlines()[-1]
