"""The effective min.insync.replicas: where each source finds it, how a snapshot records it, and
what the planner says (value and origin) when a new RF is at or below it."""

from __future__ import annotations

import json

import pytest

from kreplica.errors import InputError, PlanInfeasible
from kreplica.model import MIN_ISR_NOT_RECORDED, Broker, ClusterSnapshot, Partition, Topic
from kreplica.planner import PlanOptions, TopicRequest, check_reassignment, make_plan
from kreplica.sources.admin import min_isr_from_config
from kreplica.sources.snapshot import dump_snapshot, parse_snapshot, parse_snapshot_text
from kreplica.sources.znodes import (
    MIN_ISR_ZK_DENIED,
    MIN_ISR_ZK_UNKNOWN,
    TopicAssignment,
    build_topic,
    effective_min_isr,
)


def _topic(
    configs: dict[str, str] | None = None,
    effective: int | None = None,
    source: str | None = None,
    rf: int = 3,
) -> Topic:
    parts = tuple(Partition("t", p, tuple((p + i) % 4 for i in range(rf))) for p in range(2))
    return Topic("t", parts, configs or {}, effective_min_isr=effective, min_isr_source=source)


def _snap(topic: Topic) -> ClusterSnapshot:
    return ClusterSnapshot(brokers=tuple(Broker(b) for b in range(4)), topics=(topic,))


# -- model ---------------------------------------------------------------------------------


def test_the_topic_override_wins_then_the_reported_value_then_kafkas_default():
    assert _topic({"min.insync.replicas": "3"}, 2, "cluster default").min_insync_replicas == 3
    assert _topic({"min.insync.replicas": "3"}).min_insync_replicas_source == "topic"
    reported = _topic({}, 2, "cluster default")
    assert (reported.min_insync_replicas, reported.min_insync_replicas_source) == (
        2,
        "cluster default",
    )
    assert not reported.min_insync_replicas_assumed
    unknown = _topic()
    assert unknown.min_insync_replicas == 1
    assert unknown.min_insync_replicas_source == MIN_ISR_NOT_RECORDED
    assert unknown.min_insync_replicas_assumed
    assert _topic({}, 1, MIN_ISR_ZK_UNKNOWN).min_insync_replicas_assumed
    assert not _topic({}, 1, "kafka default").min_insync_replicas_assumed
    assert reported.min_insync_replicas_text() == "min.insync.replicas=2 (cluster default)"


# -- AdminClient: DescribeConfigs' ConfigSource → origin --------------------------------------


@pytest.mark.parametrize(
    ("config_source", "expected"),
    [
        ("DYNAMIC_TOPIC_CONFIG", "topic"),
        ("DYNAMIC_DEFAULT_BROKER_CONFIG", "cluster default"),
        ("DYNAMIC_BROKER_CONFIG", "broker config"),
        ("STATIC_BROKER_CONFIG", "broker config"),
        ("DEFAULT_CONFIG", "kafka default"),
    ],
)
def test_describe_configs_sources_map_to_origins(config_source, expected):
    assert min_isr_from_config("2", config_source) == (2, expected)


def test_describe_configs_odd_values():
    assert min_isr_from_config(None, "DEFAULT_CONFIG") is None
    assert min_isr_from_config("two", "DEFAULT_CONFIG") is None
    assert min_isr_from_config("2", "UNKNOWN_9") == (2, "unknown_9 config")


def test_every_confluent_config_source_is_mapped_or_reported():
    from confluent_kafka.admin import ConfigSource  # type: ignore[attr-defined]

    for source in ConfigSource:
        result = min_isr_from_config("2", source.name)
        assert result is not None and result[1], source


# -- ZooKeeper: /config/topics/<t>, then /config/brokers/<default> ---------------------------


def test_zookeeper_layers():
    assert effective_min_isr({"min.insync.replicas": "3"}, {"min.insync.replicas": "2"}) == (
        3,
        "topic",
    )
    assert effective_min_isr({}, {"min.insync.replicas": "2"}) == (2, "cluster default")
    assert effective_min_isr({"retention.ms": "1"}, {}) == (1, MIN_ISR_ZK_UNKNOWN)
    assert effective_min_isr({}, None) == (1, MIN_ISR_ZK_DENIED)
    assert MIN_ISR_ZK_UNKNOWN.startswith("kafka default; static broker config not visible")


def test_build_topic_records_the_cluster_default():
    assignment = TopicAssignment(replicas={0: (1, 2, 3)}, adding={}, removing={})
    topic = build_topic("t", assignment, {}, {}, None, {"min.insync.replicas": "2"})
    assert topic.configs == {}  # overrides only, as before
    assert (topic.effective_min_isr, topic.min_isr_source) == (2, "cluster default")
    hidden = build_topic("t", assignment, {}, {}, None, None, cluster_default_readable=False)
    assert hidden.min_isr_source == MIN_ISR_ZK_DENIED


# -- snapshot file ---------------------------------------------------------------------------


def test_snapshot_round_trip_keeps_the_effective_value_and_its_source():
    snap = _snap(_topic({}, 2, "cluster default"))
    text = dump_snapshot(snap)
    raw = json.loads(text)["topics"][0]
    assert raw["configs"] == {}
    assert (raw["min_insync_replicas"], raw["min_insync_replicas_source"]) == (
        2,
        "cluster default",
    )
    again = parse_snapshot_text(text)
    assert again.topics[0] == snap.topics[0]
    assert dump_snapshot(again) == text


def test_old_snapshots_stay_valid_and_write_no_guess():
    old = {
        "kreplica_snapshot": 1,
        "brokers": [{"id": 0}],
        "topics": [{"name": "t", "partitions": [{"partition": 0, "replicas": [0]}]}],
    }
    topic = parse_snapshot(old).topics[0]
    assert topic.effective_min_isr is None and topic.min_insync_replicas == 1
    assert "min_insync_replicas" not in json.loads(dump_snapshot(parse_snapshot(old)))["topics"][0]


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("min_insync_replicas", "2", "topics[0].min_insync_replicas must be an integer"),
        (
            "min_insync_replicas",
            0,
            "topics[0].min_insync_replicas must be a min.insync.replicas from 1 to",
        ),
        ("min_insync_replicas_source", 3, "topics[0].min_insync_replicas_source must be a string"),
    ],
)
def test_snapshot_bad_values_name_the_path(key, value, message):
    data = {
        "kreplica_snapshot": 1,
        "brokers": [{"id": 0}],
        "topics": [{"name": "t", key: value, "partitions": [{"partition": 0, "replicas": [0]}]}],
    }
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_snapshot(data)


# -- planner ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("topic", "shown", "lower_first"),
    [
        (_topic({"min.insync.replicas": "2"}), "min.insync.replicas=2 (topic)", True),
        (_topic({}, 2, "cluster default"), "min.insync.replicas=2 (cluster default)", True),
        (_topic({}, 2, "broker config"), "min.insync.replicas=2 (broker config)", True),
        (_topic({}, 3, "cluster default"), "min.insync.replicas=3 (cluster default)", True),
    ],
)
def test_refusal_names_the_value_and_where_it_comes_from(topic, shown, lower_first):
    rf = 2
    with pytest.raises(PlanInfeasible) as exc:
        make_plan(_snap(topic), [TopicRequest("t", rf=rf)])
    text = str(exc.value)
    assert "\n" not in text
    assert f"RF {rf} <= {shown}, so producers with acks=all fail" in text
    assert ("lower min.insync.replicas first" in text) == lower_first
    assert f"ask for RF {topic.min_insync_replicas + 1} or more, or pass `force`" in text
    plan = make_plan(_snap(topic), [TopicRequest("t", rf=rf)], PlanOptions(force=True))
    assert [(f.code, f.level) for f in plan.findings if "min" in f.code] == [
        ("rf-below-min-isr", "warning")
    ]
    assert shown in plan.findings[0].message


@pytest.mark.parametrize(
    ("topic", "shown"),
    [
        (_topic({}, 1, "kafka default"), "min.insync.replicas=1 (kafka default)"),
        (_topic(), f"min.insync.replicas=1 ({MIN_ISR_NOT_RECORDED})"),
        (_topic({}, 1, MIN_ISR_ZK_UNKNOWN), f"min.insync.replicas=1 ({MIN_ISR_ZK_UNKNOWN})"),
    ],
)
def test_lowering_to_rf_1_is_checked_against_kafkas_default(topic, shown):
    with pytest.raises(PlanInfeasible) as exc:
        make_plan(_snap(topic), [TopicRequest("t", rf=1)])
    text = str(exc.value)
    assert f"RF 1 <= {shown}, so producers" in text
    assert "lower min.insync.replicas first" not in text  # it cannot go below 1
    assert text.endswith("ask for RF 2 or more, or pass `force`")


def test_an_assumed_value_is_named_when_lowering_passes_it():
    zk = _topic({}, 1, MIN_ISR_ZK_UNKNOWN)
    plan = make_plan(_snap(zk), [TopicRequest("t", rf=2)])
    [finding] = [f for f in plan.findings if f.code == "min-isr-assumed"]
    assert finding.level == "warning"
    assert "static broker config not visible in ZooKeeper" in finding.message
    assert "lowering RF to 2 was checked against min.insync.replicas=1" in finding.message
    read = _topic({}, 1, "kafka default")
    plan = make_plan(_snap(read), [TopicRequest("t", rf=2)])
    assert not [f for f in plan.findings if "min" in f.code]


def test_check_names_where_the_value_comes_from():
    snap = _snap(_topic({}, 2, "cluster default"))
    plan = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [0, 1]}]}
    [finding] = [f for f in check_reassignment(snap, plan) if f.code == "rf-below-min-isr"]
    assert "RF 2 <= min.insync.replicas=2 (cluster default)" in finding.message
