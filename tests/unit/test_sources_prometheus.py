"""The pure parts of the Prometheus traffic source (kreplica.sources.prometheus): the address
and range a user gives, the rate windows, each partition's peak from the answer's series, the
topic's fan-out. What it reads from a real Prometheus: tests/integration/test_traffic_prometheus.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kreplica.errors import InputError, UsageError
from kreplica.planner.traffic import IDLE, NO_SIZE, duration_text
from kreplica.sources.prometheus import (
    MAX_POINTS,
    _selector,
    _series,
    check_range,
    parse_duration,
    parse_url,
    peak_rate,
    per_second,
    plan_windows,
    topic_fanout,
)


@pytest.mark.parametrize(
    ("given", "base"),
    [
        ("prometheus://127.0.0.1:9090", "http://127.0.0.1:9090"),
        ("prometheus://prom.example:80/prometheus/", "http://prom.example:80/prometheus"),
    ],
)
def test_an_address_becomes_the_api_base(given: str, base: str) -> None:
    assert parse_url(given) == base


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("http://127.0.0.1:9090", "is not a Prometheus address"),
        ("127.0.0.1:9090", "is not a Prometheus address"),
        ("prometheus://127.0.0.1", "needs a host and a port"),
        ("prometheus://:9090", "needs a host and a port"),
        ("prometheus://host:port", "needs a host and a port"),
        ("prometheus://host:9090?x=1", "needs a host and a port"),
    ],
)
def test_a_bad_address_is_a_usage_error(given: str, says: str) -> None:
    with pytest.raises(UsageError, match=says) as caught:
        parse_url(given)
    assert "prometheus://HOST:PORT" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("5m", 300), ("7d", 604800), ("1h30m", 5400), ("2w", 1209600), ("1500ms", 1.5)],
)
def test_durations_as_prometheus_writes_them(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["7", "7x", "d", "", "-1d", "1.5h", "7 d", "5m "])
def test_a_bad_range_names_the_units(text: str) -> None:
    with pytest.raises(UsageError, match="ms s m h d w y"):
        parse_duration(text)


def test_a_zero_range_is_refused() -> None:
    with pytest.raises(UsageError, match="longer than 0"):
        parse_duration("0s")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(604800, "1w"), (86400 * 3, "3d"), (300, "5m"), (90, "90s"), (1.5, "1.5s")],
)
def test_duration_text_takes_the_largest_whole_unit(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text


def test_a_window_spans_four_scrapes_and_a_week_has_at_most_max_points() -> None:
    assert plan_windows(300, 5, 10) == 20  # 4 scrapes of 5 s
    week = plan_windows(604800, 15, 10)
    assert week >= 604800 / MAX_POINTS and 604800 / week <= MAX_POINTS
    assert week % 15 == 0  # whole scrapes: a window's two ends at the same phase
    assert plan_windows(1000, 7, 10) % 7 == 0
    # many partitions: fewer, wider windows, so one answer stays bounded
    assert plan_windows(604800, 15, 100_000) > week


def test_a_range_shorter_than_a_window_is_refused_with_the_least_that_works() -> None:
    check_range(20, 20, "20s")
    with pytest.raises(UsageError, match=r"shorter than 4 of Prometheus's scrapes \(1m\)"):
        check_range(30, 60, "30s")


def test_offsets_per_second_are_each_windows_advance() -> None:
    ends = {100.05: 10.0, 112.05: 70.0, 124.05: 70.0, 136.05: 40.0, 160.05: 100.0}
    assert per_second(ends, 12.0) == {112.05: 5.0, 124.05: 0.0, 136.05: 0.0}
    # 136.05: the log end fell (a topic made again): no writes; 160.05: no value a window
    # before it (148.05 missing), so no window ends there


def test_the_peak_is_the_busiest_window_at_its_own_bytes_per_offset() -> None:
    offsets = {0.0: 10.0, 20.0: 40.0, 40.0: 20.0}
    per_offset = {0.0: 100.0, 20.0: 50.0, 40.0: 150.0}
    rate, notes = peak_rate(offsets, per_offset)
    assert rate == 3000.0  # 20 offsets/s x 150 B, not 40 x 150 nor 40 x 50
    assert notes == ()


def test_a_missing_size_at_a_moment_takes_the_nearest() -> None:
    rate, _ = peak_rate({0.0: 1.0, 20.0: 2.0, 40.0: 3.0}, {0.0: 10.0, 40.0: 100.0})
    assert rate == 300.0


def test_idle_and_unsized_partitions_say_so() -> None:
    assert peak_rate({0.0: 0.0, 20.0: 0.0}, {}) == (0.0, (IDLE,))
    assert peak_rate({0.0: 0.0, 20.0: 3.0}, {}) == (None, (NO_SIZE,))


def test_fanout_is_the_topics_bytes_out_over_in() -> None:
    assert topic_fanout(2950.0, 1000.0) == 3
    assert topic_fanout(0.0, 1000.0) == 0
    assert topic_fanout(None, 1000.0) is None
    assert topic_fanout(500.0, 0.0) is None  # nothing written in the range: no ratio


def test_series_keep_finite_points_of_labelled_partitions() -> None:
    result = [
        {"metric": {"topic": "a", "partition": "0"}, "values": [[1, "2"], [2, "NaN"], [3, "+Inf"]]},
        {"metric": {"topic": "a"}, "values": [[1, "5"]]},  # no partition: not a partition's
        {"metric": {"topic": "b", "partition": "x"}, "values": [[1, "5"]]},
    ]
    assert _series(result) == {("a", 0): {1.0: 2.0}}


def test_a_topic_selector_matches_names_literally() -> None:
    assert _selector(None) == ""
    assert _selector(["a.b", "c-d"]) == '{topic=~"a\\\\.b|c\\\\-d"}'


def test_a_snapshot_keeps_where_its_rates_came_from(tmp_path: Path) -> None:
    from kreplica.model import Broker, ClusterSnapshot, Partition, Topic, TrafficWindow
    from kreplica.sources.snapshot import dump_snapshot, load_snapshot

    window = TrafficWindow(604800.0, "2026-11-28T00:00:00Z", 2520.0, "prometheus://p:9090")
    part = Partition("t", 0, (1,), leader=1, bytes_in_per_s=5.0, fanout=1)
    snap = ClusterSnapshot((Broker(1),), (Topic("t", (part,)),), traffic=window)
    path = tmp_path / "s.json"
    path.write_text(dump_snapshot(snap))
    assert json.loads(path.read_text())["traffic"] == {
        "window_s": 604800.0,
        "measured_at": "2026-11-28T00:00:00Z",
        "peak_of_s": 2520.0,
        "from": "prometheus://p:9090",
    }
    assert load_snapshot(path).traffic == window
    data = json.loads(path.read_text())
    data["traffic"]["peak_of_s"] = "1h"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"traffic\.peak_of_s"):
        load_snapshot(path)
