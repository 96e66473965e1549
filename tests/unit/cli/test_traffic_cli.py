"""`kreplica traffic` from snapshot files, and its bad input (issue 34 item 7): one line, an exit
code from the enum, nothing read from or written to a cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kreplica.model import Broker, ClusterSnapshot, Partition, Topic, TrafficWindow
from kreplica.sources.snapshot import dump_snapshot, load_snapshot


def _with_rates(tmp_path: Path) -> Path:
    snap = ClusterSnapshot(
        brokers=(Broker(1, "a"), Broker(2, "b"), Broker(3, "c")),
        topics=(
            Topic(
                "t",
                (
                    Partition(
                        "t", 0, (1, 2), leader=1, size_bytes=10, bytes_in_per_s=100.0, fanout=2
                    ),
                    Partition(
                        "t", 1, (2, 3), leader=2, size_bytes=10, bytes_in_per_s=0.0, fanout=0
                    ),
                    Partition(
                        "t", 2, (3, 1), leader=3, size_bytes=10, bytes_in_per_s=40.0, fanout=None
                    ),
                ),
            ),
        ),
        traffic=TrafficWindow(60.2, "2026-11-28T00:00:00Z"),
    )
    path = tmp_path / "rates.json"
    path.write_text(dump_snapshot(snap))
    return path


def test_a_snapshot_with_rates_round_trips(tmp_path: Path) -> None:
    path = _with_rates(tmp_path)
    data = json.loads(path.read_text())
    assert data["traffic"] == {"window_s": 60.2, "measured_at": "2026-11-28T00:00:00Z"}
    assert data["topics"][0]["partitions"][2]["fanout"] is None
    back = load_snapshot(path)
    assert back.traffic == TrafficWindow(60.2, "2026-11-28T00:00:00Z")
    assert [(p.bytes_in_per_s, p.fanout) for p in back.topics[0].partitions] == [
        (100.0, 2),
        (0.0, 0),
        (40.0, None),
    ]


def test_traffic_from_a_snapshot_as_json(cli: Any, tmp_path: Path) -> None:
    run = cli(["traffic", "--snapshot", str(_with_rates(tmp_path)), "--output", "json"])
    assert run.code == 0, run.stderr
    data = run.json()["data"]
    rows = {r["partition"]: r for r in data["partitions"]}
    assert rows[0]["bytes_out_per_s"] == 100.0 * (1 + 2)
    assert rows[2]["fanout"] is None and rows[2]["bytes_out_per_s"] is None
    brokers = {b["id"]: b for b in data["brokers"]}
    assert brokers[1]["nw_in"] == 140.0 and brokers[1]["nw_out"] == 300.0
    assert brokers[3]["fanout_unknown"] == 1
    assert data["notes"] == {"fanout-unknown": 1, "idle": 1}


def test_traffic_table_names_what_it_could_not_measure(cli: Any, tmp_path: Path) -> None:
    run = cli(["traffic", "--snapshot", str(_with_rates(tmp_path)), "--no-color"])
    assert run.code == 0, run.stderr
    assert "t-0" in run.stdout and "Net out" in run.stdout
    assert "1 partition(s): idle in the window (0 B/s)" in run.stdout
    assert "fan-out unknown" in run.stdout


def test_capacities_add_utilisation(cli: Any, tmp_path: Path) -> None:
    caps = tmp_path / "caps.json"
    caps.write_text(json.dumps({"1": {"nw_in": 1400, "nw_out": 600}}))
    snap = str(_with_rates(tmp_path))
    run = cli(["traffic", "--snapshot", snap, "--capacity", str(caps), "--output", "json"])
    assert run.code == 0, run.stderr
    one = run.json()["data"]["brokers"][0]
    assert (one["nw_in_util"], one["nw_out_util"]) == (0.1, 0.5)


def _one_line_error(run: Any, code: int, words: str) -> None:
    assert run.code == code, (run.code, run.stdout, run.stderr)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), run.stderr
    assert words in lines[0]
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["traffic", "--window", "4", "--bootstrap-server", "127.0.0.1:1"],
        ["snapshot", "--traffic", "2", "--bootstrap-server", "127.0.0.1:1"],
    ],
)
def test_a_window_under_five_seconds_is_refused_before_connecting(
    cli: Any, args: list[str]
) -> None:
    _one_line_error(cli(args), 2, "too short to measure a rate; give 5 seconds or more")


def test_a_snapshot_without_rates_is_refused(cli: Any, example: Path) -> None:
    run = cli(["traffic", "--snapshot", str(example)])
    _one_line_error(run, 2, "carries no traffic rates; take one with kreplica snapshot --traffic")


def test_capacities_of_unknown_brokers_are_refused(cli: Any, tmp_path: Path) -> None:
    caps = tmp_path / "caps.json"
    caps.write_text(json.dumps({"7": {"nw_in": 1000}}))
    run = cli(["traffic", "--snapshot", str(_with_rates(tmp_path)), "--capacity", str(caps)])
    _one_line_error(run, 2, "broker 7 is not in this cluster (brokers: 1, 2, 3)")


def test_measuring_needs_the_brokers(cli: Any, example: Path, tmp_path: Path) -> None:
    out = tmp_path / "never.json"
    run = cli(["snapshot", "--snapshot", str(example), "--traffic", "6", "-o", str(out)])
    _one_line_error(run, 2, "traffic is measured through the brokers: give --bootstrap-server")
    assert not out.exists()


def test_an_unreachable_cluster_is_one_line(cli: Any) -> None:
    run = cli(["traffic", "--bootstrap-server", "127.0.0.1:1", "--window", "5", "--timeout", "1"])
    _one_line_error(run, 3, "127.0.0.1:1")


def test_rebalance_by_traffic_needs_a_snapshot_with_rates(cli: Any, example: Path) -> None:
    run = cli(["rebalance", "--by", "traffic", "--snapshot", str(example)])
    _one_line_error(run, 2, "plans from measured rates and this snapshot has none")


def test_rebalance_by_traffic_reports_the_figures(cli: Any, tmp_path: Path) -> None:
    run = cli(["rebalance", "--by", "traffic", "--snapshot", str(_with_rates(tmp_path))])
    assert run.code == 0, run.stderr
    report = cli(
        ["rebalance", "--by", "traffic", "--snapshot", str(_with_rates(tmp_path)), "--output",
         "json"]
    ).json()["data"]  # fmt: skip
    assert "network in max/mean" in run.stdout
    figures = report["report"]["traffic"]
    assert report["report"]["by"] == "traffic" and figures["brokers_over_band"] == []
    # network in per broker: t-0 (100 B/s) on 1, 2; t-1 idle; t-2 (40 B/s) on 3, 1
    assert figures["before"]["nw_in"]["per_broker"] == {"1": 140.0, "2": 100.0, "3": 40.0}


def test_rebalance_names_every_by(cli: Any, example: Path) -> None:
    run = cli(["rebalance", "--by", "speed", "--snapshot", str(example)])
    _one_line_error(run, 2, "--by 'speed': use count, bytes or traffic")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (
            ["--bootstrap-server", "127.0.0.1:1", "--by", "traffic", "--traffic-window", "4"],
            "a traffic window of 4s is too short to measure a rate; give 5 seconds or more",
        ),
        (
            ["--bootstrap-server", "127.0.0.1:1", "--traffic-window", "10"],
            "--traffic-window measures traffic: it goes with --by traffic, not --by count",
        ),
    ],
)
def test_rebalance_traffic_window_bad_input_before_connecting(
    cli: Any, args: list[str], words: str, tmp_path: Path
) -> None:
    # 127.0.0.1:1 refuses connections: exit 2, not 3, shows nothing was reached
    out = tmp_path / "plan.json"
    _one_line_error(cli(["rebalance", *args, "--out", str(out)]), 2, words)
    assert not list(tmp_path.iterdir())  # no plan, rollback or plan document written


def test_rebalance_traffic_window_with_a_snapshot_is_refused(cli: Any, tmp_path: Path) -> None:
    snap = str(_with_rates(tmp_path))
    run = cli(["rebalance", "--by", "traffic", "--snapshot", snap, "--traffic-window", "10"])
    _one_line_error(run, 2, "--traffic-window measures a live cluster; a --snapshot file carries")


def test_rebalance_by_traffic_with_capacities_reports_utilisation(cli: Any, tmp_path: Path) -> None:
    caps = tmp_path / "caps.json"
    caps.write_text(json.dumps({b: {"nw_in": 200 * b, "nw_out": 300 * b} for b in (1, 2, 3)}))
    snap = str(_with_rates(tmp_path))
    args = ["rebalance", "--by", "traffic", "--snapshot", snap, "--capacity", str(caps)]
    run = cli([*args, "--output", "json"])
    assert run.code == 0, run.stderr
    report = run.json()["data"]["report"]["traffic"]
    # broker 1: 140 B/s in (t-0 and t-2) on 200 B/s; the bands are per broker, by capacity
    assert report["before"]["nw_in_util"]["per_broker"]["1"] == 0.7
    assert set(report["band_nw_in"]) == {"1", "2", "3"}
    text = cli([*args, "--no-color"])
    assert text.code == 0, text.stderr
    assert "utilisation in max/mean" in text.stdout and "scaled by capacity" in text.stdout


@pytest.mark.parametrize(
    ("content", "code", "words"),
    [
        ('{"7": {"nw_in": 1000, "nw_out": 1000}}', 2, "broker 7 is not in this cluster"),
        ('{"1": {"nw_in": 1000, "nw_out": 1000}', 2, "caps.json"),
        ('{"1": {"nw_in": 1000, "nw_out": 1000}}', 2, "no nw_in and nw_out for broker(s) 2, 3"),
        ('{"1": {"nw_in": -5}}', 2, "broker 1 nw_in must be bytes per second > 0"),
    ],
)
def test_rebalance_refuses_a_bad_capacity_file_and_writes_nothing(
    cli: Any, tmp_path: Path, content: str, code: int, words: str
) -> None:
    caps = tmp_path / "caps.json"
    caps.write_text(content)
    out = tmp_path / "plan.json"
    snap = str(_with_rates(tmp_path))
    run = cli(
        ["rebalance", "--by", "traffic", "--snapshot", snap, "--capacity", str(caps),
         "--out", str(out)]
    )  # fmt: skip
    _one_line_error(run, code, words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["caps.json", "rates.json"]  # no plan


def test_capacities_go_with_by_traffic_only(cli: Any, example: Path, tmp_path: Path) -> None:
    caps = tmp_path / "caps.json"
    caps.write_text("{}")
    run = cli(["rebalance", "--snapshot", str(example), "--capacity", str(caps)])
    _one_line_error(run, 2, "--capacity scales --by traffic's band, not --by count")


def test_a_cluster_entry_names_its_capacity_file(cli: Any, tmp_path: Path) -> None:
    _with_rates(tmp_path)
    (tmp_path / "caps.json").write_text(
        json.dumps({b: {"nw_in": 200 * b, "nw_out": 300 * b} for b in (1, 2, 3)})
    )
    config = tmp_path / "clusters.toml"
    config.write_text('[clusters.x]\nsnapshot = "rates.json"\ncapacity = "caps.json"\n')
    env = {"KREPLICA_CONFIG": str(config)}
    run = cli(["rebalance", "--by", "traffic", "--cluster", "x", "--output", "json"], env)
    assert run.code == 0, run.stderr
    per = run.json()["data"]["report"]["traffic"]["before"]["nw_in_util"]["per_broker"]
    assert per["1"] == 0.7  # 140 B/s on the file's 200
    flag = tmp_path / "flag.json"  # --capacity wins over the entry's file
    flag.write_text(json.dumps({b: {"nw_in": 1400, "nw_out": 1400} for b in (1, 2, 3)}))
    run = cli(
        ["rebalance", "--by", "traffic", "--cluster", "x", "--capacity", str(flag),
         "--output", "json"],
        env,
    )  # fmt: skip
    assert run.json()["data"]["report"]["traffic"]["before"]["nw_in_util"]["per_broker"]["1"] == 0.1
    traffic = cli(["traffic", "--cluster", "x", "--output", "json"], env)
    assert traffic.json()["data"]["brokers"][0]["nw_in_util"] == 0.7
    count = cli(["rebalance", "--cluster", "x", "--output", "json"], env)  # not by traffic: unread
    assert count.code == 0, count.stderr
    config.write_text('[clusters.x]\nsnapshot = "rates.json"\ncapacity = "nope.json"\n')
    missing = cli(["rebalance", "--by", "traffic", "--cluster", "x"], env)
    _one_line_error(missing, 2, "nope.json")
