"""Parsing Kafka's znode JSON (examples as Kafka writes them, from kafka-internals §5.6)."""

from __future__ import annotations

import pytest

from kreplica.errors import SourceError
from kreplica.model import Broker
from kreplica.sources.znodes import (
    PartitionState,
    TopicAssignment,
    build_topic,
    parse_broker,
    parse_cluster_id,
    parse_partition_state,
    parse_reassign_partitions,
    parse_topic_assignment,
    parse_topic_config,
)

TOPIC_V3 = (
    b'{"partitions":{"0":[0,2,3],"1":[2,3,0]},"topic_id":"aSFJVxF7SIaTCptmWn_GgA",'
    b'"adding_replicas":{},"removing_replicas":{},"version":3}'
)
BROKER_V5 = (
    b'{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
    b'"endpoints":["PLAINTEXT://node01:9092"],"jmx_port":-1,"features":{},"host":"node01",'
    b'"timestamp":"1643692590218","port":9092,"version":5}'
)


def test_topic_znode_v3_with_topic_id() -> None:
    parsed = parse_topic_assignment(TOPIC_V3, "/brokers/topics/foo")
    assert parsed == TopicAssignment(
        replicas={0: (0, 2, 3), 1: (2, 3, 0)},
        adding={},
        removing={},
        topic_id="aSFJVxF7SIaTCptmWn_GgA",
    )


def test_topic_znode_v1_has_no_reassignment_maps() -> None:
    parsed = parse_topic_assignment(b'{"version":1,"partitions":{"1":[2,1],"0":[1,2]}}', "/t")
    assert parsed.replicas == {0: (1, 2), 1: (2, 1)}
    assert list(parsed.replicas) == [0, 1]  # sorted whatever order Jackson wrote
    assert parsed.adding == {} and parsed.removing == {} and parsed.topic_id is None


def test_topic_znode_v2_during_reassignment() -> None:
    # KIP-455: replicas = target ++ origin-only; adding/removing hold only moving partitions
    raw = (
        b'{"version":2,"partitions":{"0":[3,2,1],"1":[2,3]},'
        b'"adding_replicas":{"0":[3]},"removing_replicas":{"0":[1]}}'
    )
    parsed = parse_topic_assignment(raw, "/brokers/topics/t")
    topic = build_topic("t", parsed, {0: None, 1: None}, {})
    assert topic.partitions[0].adding_replicas == (3,)
    assert topic.partitions[0].removing_replicas == (1,)
    assert topic.partitions[0].reassigning
    assert not topic.partitions[1].reassigning


def test_partition_state() -> None:
    raw = b'{"version":1,"leader":2,"leader_epoch":0,"controller_epoch":1,"isr":[2,3,1]}'
    assert parse_partition_state(raw, "/s") == PartitionState(leader=2, isr=(2, 3, 1))


def test_offline_partition_state_keeps_leader_minus_one() -> None:
    raw = b'{"version":1,"leader":-1,"leader_epoch":5,"controller_epoch":1,"isr":[3]}'
    state = parse_partition_state(raw, "/s")
    topic = build_topic(
        "t", TopicAssignment(replicas={0: (3, 1)}, adding={}, removing={}), {0: state}, {}
    )
    assert topic.partitions[0].leader == -1
    assert topic.partitions[0].current_leader is None
    assert topic.partitions[0].out_of_sync == (1,)


def test_broker_v5_plaintext() -> None:
    assert parse_broker(7, BROKER_V5) == Broker(id=7, rack=None, host="node01", port=9092)


def test_broker_with_rack_and_only_sasl_listener_uses_first_endpoint() -> None:
    # host/port are null/-1 when there is no PLAINTEXT listener
    raw = (
        b'{"version":5,"host":null,"port":-1,"rack":"eu-1a","jmx_port":-1,"features":{},'
        b'"endpoints":["SASL_SSL://[::1]:9094","INTERNAL://10.0.0.5:9095"],'
        b'"listener_security_protocol_map":{"SASL_SSL":"SASL_SSL","INTERNAL":"PLAINTEXT"},'
        b'"timestamp":"1"}'
    )
    assert parse_broker(1, raw) == Broker(id=1, rack="eu-1a", host="::1", port=9094)


def test_broker_v1_host_port_only() -> None:
    assert parse_broker(0, b'{"version":1,"host":"h","port":9092,"jmx_port":-1}') == Broker(
        id=0, host="h", port=9092
    )


def test_cluster_id_version_is_a_string() -> None:
    assert parse_cluster_id(b'{"version":"1","id":"4L6g3nShT-eMCtK--X86sw"}') == (
        "4L6g3nShT-eMCtK--X86sw"
    )
    assert parse_cluster_id(None) is None


def test_topic_config_overrides_sorted() -> None:
    raw = b'{"version":1,"config":{"retention.ms":"1000","min.insync.replicas":"2"}}'
    assert list(parse_topic_config(raw, "/config/topics/t").items()) == [
        ("min.insync.replicas", "2"),
        ("retention.ms", "1000"),
    ]
    assert parse_topic_config(None, "/config/topics/t") == {}


def test_reassign_partitions_znode() -> None:
    raw = b'{"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2]}]}'
    assert parse_reassign_partitions(raw, "/admin/reassign_partitions") == {("foo", 0): (1, 2)}


def test_pending_znode_reassignment_not_yet_picked_up() -> None:
    assignment = TopicAssignment(replicas={0: (1, 2), 1: (2, 3)}, adding={}, removing={})
    topic = build_topic("foo", assignment, {}, {}, pending={("foo", 0): (3, 2)})
    assert topic.partitions[0].adding_replicas == (3,)
    assert topic.partitions[0].removing_replicas == (1,)
    assert topic.partitions[0].replicas == (1, 2)  # the current assignment is not rewritten
    assert not topic.partitions[1].reassigning


def test_state_isr_sorted_and_missing_state_unknown() -> None:
    assignment = TopicAssignment(replicas={0: (1, 2, 3), 1: (2, 3, 1)}, adding={}, removing={})
    states: dict[int, PartitionState | None] = {0: PartitionState(leader=3, isr=(3, 1, 2))}
    topic = build_topic("t", assignment, states, {"min.insync.replicas": "2"})
    assert topic.partitions[0].isr == (1, 2, 3)
    assert topic.partitions[0].leader == 3
    assert topic.partitions[1].leader is None and topic.partitions[1].isr is None
    assert topic.min_insync_replicas == 2


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b"", "is empty"),
        (b"not json", "does not hold JSON"),
        (b"[1]", "JSON object"),
        (b'{"version":3}', "no 'partitions'"),
        (b'{"partitions":{"x":[1]}}', "non-numeric partition 'x'"),
        (b'{"partitions":{"0":[1,"2"]}}', "non-integer"),
    ],
)
def test_bad_topic_znode_names_the_path(raw: bytes, fragment: str) -> None:
    with pytest.raises(SourceError) as err:
        parse_topic_assignment(raw, "/brokers/topics/orders")
    assert "/brokers/topics/orders" in str(err.value)
    assert fragment in str(err.value)
    assert "\n" not in str(err.value)


def test_bad_state_and_reassign_znodes() -> None:
    with pytest.raises(SourceError, match="lacks 'leader' or 'isr'"):
        parse_partition_state(b'{"version":1}', "/s")
    with pytest.raises(SourceError, match="without a topic"):
        parse_reassign_partitions(b'{"version":1,"partitions":[{"partition":0}]}', "/r")
    with pytest.raises(SourceError, match="non-string rack"):
        parse_broker(1, b'{"version":5,"host":"h","port":1,"rack":3}')


@pytest.mark.parametrize("raw", [b"", b"{oops", b"[]"])
def test_invalid_reassign_znode_says_how_to_clear_it(raw: bytes) -> None:
    with pytest.raises(SourceError) as err:
        parse_reassign_partitions(raw, "/admin/reassign_partitions")
    assert "blocks reassignments" in str(err.value)
    assert "delete /admin/reassign_partitions" in str(err.value)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"leader":2,"isr":[2,3],"leader_epoch":NaN}',  # orjson refuses NaN, json reads it
        b'{"leader":2,"isr":[2,3],"big":100000000000000000000000}',  # over 64 bits
        '{"leader":2,"isr":[2,3]}'.encode("utf-16"),  # not UTF-8
        b'{"leader":2,"isr":[3,2],"isr":[2,3]}',  # a key twice: the last one counts
    ],
)
def test_json_orjson_refuses_is_read_as_json_reads_it(raw: bytes) -> None:
    """The ZooKeeper source reads state znodes with orjson, and gives what
    parse_partition_state gives for anything else."""
    from kreplica.sources.zookeeper import _partition_state

    assert _partition_state(raw, "/s") == parse_partition_state(raw, "/s")
    assert _partition_state(raw, "/s") == PartitionState(leader=2, isr=(2, 3))


@pytest.mark.parametrize(
    "raw",
    [
        b'{"version":1,"leader":2,"leader_epoch":0,"controller_epoch":1,"isr":[2,3,1]}',
        b'{"leader":-1,"isr":[]}',
        b'{"leader":true,"isr":[1]}',
        b'{"leader":1,"isr":[1,false]}',
        b'{"leader":1}',
        b"[1]",
        b"not json",
        b"",
    ],
)
def test_the_zookeeper_sources_state_reader_is_parse_partition_state(raw: bytes) -> None:
    from kreplica.sources.zookeeper import _partition_state

    try:
        expected = parse_partition_state(raw, "/brokers/topics/t/partitions/0/state")
    except SourceError as exc:
        with pytest.raises(SourceError) as got:
            _partition_state(raw, "/brokers/topics/t/partitions/0/state")
        assert str(got.value) == str(exc)
        return
    assert _partition_state(raw, "/brokers/topics/t/partitions/0/state") == expected


def test_integer_lists_refuse_booleans_and_other_types() -> None:
    for bad in (b'{"leader":2,"isr":[2,true]}', b'{"leader":2,"isr":[2,"3"]}'):
        with pytest.raises(SourceError, match="non-integer isr"):
            parse_partition_state(bad, "/s")
