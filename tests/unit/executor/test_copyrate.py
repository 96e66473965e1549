"""Progress that tells the truth (issue 33 item 6): the copy rate over a sliding window, never
above what the throttle lets the receiving brokers take, the ETA from it, the same cap in
`kreplica status`, and a progress line at least every 5 s off a terminal. Against a real
throttled move: tests/integration/test_oncall.py."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path
from typing import Any

from kreplica.executor.copyrate import CopyRate, capped, eta_s, throttle_cap
from kreplica.executor.status import Throttle, plan_status
from kreplica.model import ClusterSnapshot
from kreplica.render.console import make_console
from kreplica.render.progress import ProgressPrinter
from tests.unit.executor.test_apply_loop import GrowingCluster, _applier, ticking
from tests.unit.executor.test_status import MB, moving, new_replica


def test_the_rate_is_over_the_last_window_not_since_the_start() -> None:
    rate = CopyRate(window_s=10)
    assert rate.rate() is None
    rate.add(0, 0)
    assert rate.rate() is None  # one reading: no time between
    rate.add(1, 5_000_000)  # the first fetch's burst
    assert rate.rate() == 5_000_000
    for t in range(2, 31):
        rate.add(t, 5_000_000 + (t - 1) * 1000)  # then the throttle's 1000 B/s
    assert rate.rate() == 1000  # the burst has left the window


def test_the_cap_is_the_receiving_brokers_throttles_together() -> None:
    assert throttle_cap([1000, 1000, 500]) == 2500
    assert throttle_cap([]) is None  # nobody receiving
    assert throttle_cap([1000, None]) is None  # one broker unthrottled: no cap
    assert capped(5_000_000, 2500) == 2500
    assert capped(100, 2500) == 100 and capped(None, 2500) is None
    assert capped(100, None) == 100
    assert eta_s(10_000, 2500) == 4 and eta_s(0, None) == 0 and eta_s(1, None) is None


def test_status_never_reports_more_than_the_throttle_lets_through() -> None:
    """The figure apply's progress now shares with `kreplica status`, which had it right."""
    # two partitions into broker 3, each measured at 1 MiB/s (a burst), throttle 512 KiB/s
    facts = [
        moving(),
        moving(partition=1, new_replicas=(new_replica(rate=1 * MB),)),
    ]
    _, unthrottled = plan_status(facts, {})
    assert unthrottled.rate == 2 * MB
    _, summary = plan_status(facts, {3: Throttle(follower_rate=MB // 2)})
    assert summary.rate == MB // 2 == throttle_cap([MB // 2])
    assert summary.eta_s == (summary.total - summary.copied) / summary.rate


class BurstCluster(GrowingCluster):
    """New replicas of 10 MB: empty at the first read after a submit, 1 MB at the second
    (Kafka's first fetch bursts past the throttle), then 1000 bytes more per read."""

    def snapshot(self, topics: Any = None) -> ClusterSnapshot:
        snap = super().snapshot(topics)
        topics_ = tuple(
            replace(t, partitions=tuple(replace(p, size_bytes=10_000_000) for p in t.partitions))
            for t in snap.topics
        )
        return replace(snap, topics=topics_)

    def replica_bytes(self, topics: Any, brokers: Any) -> dict[tuple[str, int, int], int]:
        for key, state in self.moving.items():
            for broker in state[0]:
                if broker not in state[2]:
                    where = (key[0], key[1], broker)
                    size = self.sizes.get(where)
                    self.sizes[where] = 0 if size is None else size + (1000 if size else 1_000_000)
        return dict(self.sizes)


def test_apply_progress_is_capped_at_the_throttle_with_its_eta(tmp_path: Path) -> None:
    cluster = BurstCluster(stuck=set())
    applier = _applier(tmp_path, cluster, throttle=1000)
    ticking(applier, 2.0)  # apply's 2-s polls
    applier.run()
    lines = [e for e in applier.events if e["event"] == "progress"]  # type: ignore[attr-defined]
    rated = [e for e in lines if e["rate_bytes_per_s"] is not None]
    assert rated, lines
    # four partitions, each with one new replica on its own broker: 4 x 1000 B/s at most,
    # although 4 MB arrived in the first two seconds
    assert all(0 < e["rate_bytes_per_s"] <= 4 * 1000 for e in rated), rated
    for e in rated:
        left = e["bytes_total"] - e["bytes_copied"]
        assert abs(e["eta_s"] - left / e["rate_bytes_per_s"]) < 1, e


def test_off_a_terminal_a_progress_line_at_least_every_5_s() -> None:
    out = io.StringIO()
    now = {"t": 0.0}
    printer = ProgressPrinter(make_console(out, width=200), clock=lambda: now["t"])
    for i in range(16):  # apply's 2-s polls for 30 s
        now["t"] = 2.0 * i
        printer(
            {
                "event": "progress",
                "wave": 1,
                "done": 0,
                "total": 12,
                "bytes_copied": 1_500_000 + i * 1000,
                "bytes_total": 22_000_000,
                "elapsed_s": now["t"],
                "rate_bytes_per_s": 500_000.0,
                "eta_s": 41.0,
            }
        )
    lines = out.getvalue().splitlines()
    assert len(lines) == 8  # at 0, 4, 8, ... 28 s
    # the event's figures, not bytes over time since the start (which the burst inflates)
    assert all(line.endswith("488.3 KiB/s, ETA 41s") for line in lines), lines
