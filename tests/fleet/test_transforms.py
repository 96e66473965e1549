"""Each audit check on a small hand-made fleet (frames built from two tiny snapshots)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kreplica.fleet.frames import Frames, explode_snapshots, parse_snapshots
from kreplica.fleet.policy import parse_policy
from kreplica.fleet.transforms import audit, cluster_summary

pytestmark = pytest.mark.spark

BROKERS = [
    {"id": 1, "rack": "a"},
    {"id": 2, "rack": "b"},
    {"id": 3, "rack": "c"},
    {"id": 4, "rack": "a", "alive": False},
]


def _snap(cluster: str, topics: list[dict[str, Any]], brokers: Any = None) -> str:
    return json.dumps(
        {"kreplica_snapshot": 1, "cluster_id": cluster, "brokers": brokers or BROKERS,
         "topics": topics}
    )  # fmt: skip


def _p(n: int, replicas: list[int], **kw: Any) -> dict[str, Any]:
    return {"partition": n, "replicas": replicas, **kw}


@pytest.fixture(scope="module")
def findings(spark: Any) -> dict[tuple[str, str], list[dict[str, Any]]]:
    policy = parse_policy(
        {
            "rule": [{"topics": ".*", "rf": 3, "min_insync": 2, "max_partitions_per_broker": 3}],
            "clusters": {"bad": {"drain": [3], "exempt": ["ignored"]}},
        }
    )
    good = _snap(
        "good",
        [
            {"name": "t", "configs": {"min.insync.replicas": "2"},
             "partitions": [_p(0, [1, 2, 3]), _p(1, [2, 3, 1]), _p(2, [3, 1, 2])]},
        ],
        brokers=BROKERS[:3],
    )  # fmt: skip
    bad = _snap(
        "bad",
        [
            {"name": "low", "partitions": [_p(0, [1, 2]), _p(1, [2, 1])]},  # RF 2 < 3, min isr 1
            {"name": "racks", "configs": {"min.insync.replicas": "3"},
             "partitions": [_p(0, [1, 4, 2]), _p(1, [2, 1, 3], leader=1, isr=[2, 1])]},
            {"name": "ignored", "partitions": [_p(0, [1])]},
        ],
    )  # fmt: skip
    # with rates: broker 1 holds and leads four of six partitions written at 1,000 B/s
    # (fan-out 1): network in and out 4,000 B/s each, mean 2,000, band 2,000 + 1,000
    rated = [_p(n, [b], bytes_in_per_s=1000.0, fanout=1) for n, b in enumerate([1, 1, 1, 1, 2, 3])]
    hot = json.loads(_snap("hot", [{"name": "t", "partitions": rated}], brokers=BROKERS[:3]))
    hot["traffic"] = {"window_s": 60.0, "measured_at": "2026-11-28T00:00:00Z"}
    texts = spark.createDataFrame(
        [
            (f"/x/{n}.json", text)
            for n, text in (("good", good), ("bad", bad), ("hot", json.dumps(hot)))
        ],
        "file string, text string",
    )
    exploded = explode_snapshots(parse_snapshots(texts, policy))
    # persisted, as the pipeline does: every check reads the frames, the summary the findings
    frames = Frames(
        *(df.persist() for df in (exploded.brokers, exploded.topics, exploded.partitions)),
        clusters=exploded.clusters,
    )
    found = audit(frames).persist()
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in found.collect():
        out.setdefault((r["cluster_id"], r["code"]), []).append(r.asDict())
    sizes = [r.asDict() for r in frames.clusters.collect()]
    summary = {r["cluster_id"]: r for r in cluster_summary(found, sizes)}
    out[("summary", "")] = [summary["bad"], summary["good"]]
    # each broker's load, counted while parsing
    load = {(r["cluster_id"], r["broker"]): r.asDict() for r in frames.brokers.collect()}
    out[("load", "")] = [load[("bad", 1)], load[("bad", 4)]]
    for df in (found, frames.brokers, frames.topics, frames.partitions):
        df.unpersist()
    return out


def test_clean_cluster_has_no_findings(findings: dict[Any, Any]) -> None:
    assert [k for k in findings if k[0] == "good"] == []


def test_rf_findings(findings: dict[Any, Any]) -> None:
    (low,) = findings[("bad", "rf-below-policy")]
    assert (low["topic"], low["partitions"], low["value"], low["expected"]) == ("low", 2, 2, 3)
    at = {f["topic"]: f for f in findings[("bad", "rf-at-or-below-min-insync")]}
    assert set(at) == {"racks"}  # RF 3 <= min.insync 3; `low` has RF 2 > 1
    mins = {f["topic"] for f in findings[("bad", "min-insync-below-policy")]}
    assert mins == {"low"}


def test_racks_dead_and_state(findings: dict[Any, Any]) -> None:
    (rack,) = findings[("bad", "rack-violation")]
    assert (rack["topic"], rack["partition"], rack["value"], rack["expected"]) == (
        "racks", 0, 2, 3
    )  # fmt: skip
    (dead,) = findings[("bad", "replicas-on-dead-broker")]
    assert (dead["broker"], dead["value"]) == (4, 1)
    (drained,) = findings[("bad", "replicas-on-drained-broker")]
    assert drained["broker"] == 3
    (urp,) = findings[("bad", "under-replicated")]
    assert (urp["topic"], urp["partition"]) == ("racks", 1)
    (leader,) = findings[("bad", "leader-not-preferred")]
    assert (leader["topic"], leader["partition"]) == ("racks", 1)
    caps = {f["broker"]: f["value"] for f in findings[("bad", "max-partitions-per-broker")]}
    assert caps == {1: 4, 2: 4}  # exempt `ignored` not counted


def test_brokers_over_the_traffic_band(findings: dict[Any, Any]) -> None:
    over = sorted(
        (f["broker"], f["value"], f["expected"], f["message"].split(" ")[3])
        for f in findings[("hot", "traffic-over-band")]
    )
    assert over == [(1, 4000, 3000, "in"), (1, 4000, 3000, "out")]
    assert not any(code == "traffic-over-band" for cluster, code in findings if cluster != "hot")


def test_summary_and_load(findings: dict[Any, Any]) -> None:
    bad, good = findings[("summary", "")]
    assert (good["errors"], good["warnings"], good["partitions"]) == (0, 0, 3)
    assert bad["errors"] >= 4 and bad["brokers_down"] == 1
    assert bad["by_code"]["rf-below-policy"] == 1
    b1, b4 = findings[("load", "")]
    # leads low-0, racks-0, ignored-0 (no leader recorded: the preferred) and racks-1 (recorded)
    assert (b1["replicas"], b1["leaders"]) == (5, 4)
    assert (b4["replicas"], b4["alive"]) == (1, False)
