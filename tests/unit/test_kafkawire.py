"""kreplica.sources.kafkawire against kafka-python's own protocol classes (the oracle): the
request bodies it writes are the bytes kafka-python writes, and what it decodes from
kafka-python-encoded answers is kafka-python's decoding, for every version it speaks, random
answers included (hypothesis). The real brokers are in tests/integration/test_live_reads.py."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kreplica.sources import kafkawire

admin = pytest.importorskip("kafka.protocol.admin")
Response = admin.DescribeLogDirsResponse
Request = admin.DescribeLogDirsRequest
Result = Response.DescribeLogDirsResult
TopicEntry = Result.DescribeLogDirsTopic
PartitionEntry = TopicEntry.DescribeLogDirsPartition

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
partition_entries = st.builds(
    dict,
    partition_index=st.integers(0, 2**31 - 1),
    partition_size=st.integers(0, 2**62),
    offset_lag=st.integers(0, 2**40),
    is_future_key=st.booleans(),
)
topic_entries = st.builds(dict, name=names, partitions=st.lists(partition_entries, max_size=4))
results = st.builds(
    dict,
    error_code=st.sampled_from([0, 57]),  # 57: KAFKA_STORAGE_ERROR, an offline dir
    log_dir=names.map(lambda n: f"/data/{n}"),
    topics=st.lists(topic_entries, max_size=3),
    total_bytes=st.integers(-1, 2**50),
    usable_bytes=st.integers(-1, 2**50),
)


def _encoded(answer: list[dict[str, Any]], version: int) -> bytes:
    response = Response(
        throttle_time_ms=0,
        error_code=0,
        results=[
            Result(
                error_code=r["error_code"],
                log_dir=r["log_dir"],
                topics=[
                    TopicEntry(
                        name=t["name"], partitions=[PartitionEntry(**p) for p in t["partitions"]]
                    )
                    for t in r["topics"]
                ],
                total_bytes=r["total_bytes"],
                usable_bytes=r["usable_bytes"],
            )
            for r in answer
        ],
    )
    return bytes(response.encode(version=version))


@settings(max_examples=30, deadline=None)
@given(answer=st.lists(results, max_size=3), version=st.integers(1, 4))
def test_log_dirs_decode_as_kafka_python_does(answer: list[dict[str, Any]], version: int) -> None:
    body = _encoded(answer, version)
    ours = kafkawire.log_dirs(body, version, broker=7)
    theirs = Response.decode(body, version=version).to_dict()["results"]
    if version < 4:  # no disk figures before v4: kafka-python fills in its default
        for entry in theirs:
            entry.pop("total_bytes", None)
            entry.pop("usable_bytes", None)
    for entry in theirs:
        entry.pop("is_cordoned", None)
    assert ours == {"broker": 7, "log_dirs": theirs}


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_log_dirs_request_body_is_kafka_pythons(version: int) -> None:
    topics = {"orders": [0, 3, 7], "événements": [1]}
    request = Request(
        topics=[Request.DescribableLogDirTopic(topic=t, partitions=p) for t, p in topics.items()]
    )
    assert kafkawire.log_dirs_body(topics, version) == bytes(request.encode(version=version))


def test_an_unauthorized_principal_is_told_apart_from_other_errors() -> None:
    refused = bytes(Response(throttle_time_ms=0, error_code=31, results=[]).encode(version=4))
    with pytest.raises(kafkawire.NotAuthorized):
        kafkawire.log_dirs(refused, 4, broker=1)
    failed = bytes(Response(throttle_time_ms=0, error_code=35, results=[]).encode(version=4))
    with pytest.raises(kafkawire.WireError) as info:
        kafkawire.log_dirs(failed, 4, broker=1)
    assert not isinstance(info.value, kafkawire.NotAuthorized)


def test_reassignments_decode_as_kafka_python_does() -> None:
    listed = admin.ListPartitionReassignmentsResponse
    topic = listed.OngoingTopicReassignment
    part = topic.OngoingPartitionReassignment
    response = listed(
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        topics=[
            topic(
                name="orders",
                partitions=[
                    part(
                        partition_index=2,
                        replicas=[1, 2, 3],
                        adding_replicas=[3],
                        removing_replicas=[],
                    ),
                    part(
                        partition_index=5,
                        replicas=[4, 1],
                        adding_replicas=[],
                        removing_replicas=[2],
                    ),
                ],
            )
        ],
    )
    body = bytes(response.encode(version=0))
    assert kafkawire.reassignments(body) == {
        ("orders", 2): {"replicas": (1, 2, 3), "adding_replicas": (3,), "removing_replicas": ()},
        ("orders", 5): {"replicas": (4, 1), "adding_replicas": (), "removing_replicas": (2,)},
    }
    failed = listed(throttle_time_ms=0, error_code=41, error_message="not controller", topics=[])
    with pytest.raises(kafkawire.WireError, match="not controller"):
        kafkawire.reassignments(bytes(failed.encode(version=0)))


def test_request_frame_and_version_choice() -> None:
    frame = kafkawire.request_frame(35, 4, 9, b"BODY", flexible=True)
    size, key, version, correlation, id_len = struct.unpack_from(">ihhih", frame)
    assert (size, key, version, correlation) == (len(frame) - 4, 35, 4, 9)
    assert frame[14 : 14 + id_len] == b"kreplica" and frame[14 + id_len :] == b"\0BODY"
    conn = kafkawire.BrokerConnection.__new__(kafkawire.BrokerConnection)
    conn.versions = {35: (1, 5)}
    assert conn.version_of(35, kafkawire.LOG_DIRS_VERSIONS) == 4
    conn.versions = {35: (0, 1)}
    assert conn.version_of(35, kafkawire.LOG_DIRS_VERSIONS) == 1
    conn.versions = {}
    with pytest.raises(kafkawire.WireError):
        conn.version_of(35, kafkawire.LOG_DIRS_VERSIONS)


def test_zookeeper_mode_and_plain_listeners() -> None:
    assert kafkawire.zookeeper_mode({4: (0, 7), 5: (0, 4), 6: (0, 8), 35: (1, 4)})
    assert not kafkawire.zookeeper_mode({35: (1, 4)})
    assert kafkawire.plain_listener(None)
    assert kafkawire.plain_listener({"security.protocol": "plaintext"})
    assert not kafkawire.plain_listener({"security.protocol": "SASL_PLAINTEXT"})
    assert not kafkawire.plain_listener({"security.protocol": "SSL"})
    assert not kafkawire.plain_listener({"sasl.mechanism": "PLAIN"})


def test_described_cluster_decodes_as_kafka_python_does() -> None:
    cluster = pytest.importorskip("kafka.protocol.admin").DescribeClusterResponse
    broker = cluster.DescribeClusterBroker
    response = cluster(
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        endpoint_type=1,
        cluster_id="abc",
        controller_id=2,
        brokers=[
            broker(broker_id=1, host="h1", port=9092, rack="a", is_fenced=False),
            broker(broker_id=4, host="h4", port=9093, rack=None, is_fenced=True),
        ],
    )
    body = bytes(response.encode(version=2))
    ours = kafkawire.described_cluster(body, 2)
    theirs = cluster.decode(body, version=2).to_dict()
    assert ours["cluster_id"] == theirs["cluster_id"] == "abc"
    assert ours["controller_id"] == theirs["controller_id"] == 2
    keys = ("broker_id", "host", "port", "rack", "is_fenced")
    assert ours["brokers"] == [{k: b[k] for k in keys} for b in theirs["brokers"]]
    request = admin.DescribeClusterRequest(
        include_cluster_authorized_operations=False, endpoint_type=1, include_fenced_brokers=True
    )
    assert bytes(request.encode(version=2)) == b"\0\x01\x01\0"


def test_a_silent_broker_is_a_timeout_and_a_closed_one_an_error() -> None:
    import socket

    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        silent = kafkawire.BrokerConnection("127.0.0.1", port, 0.3)
        with silent, pytest.raises(kafkawire.WireTimeout):
            silent.ask_versions()  # accepted (in the backlog), never answered
        with kafkawire.BrokerConnection("127.0.0.1", port, 5) as closing:
            server.accept()[0].close()  # the first one's
            server.accept()[0].close()  # this one's: it reads the end of the stream
            with pytest.raises(kafkawire.WireError) as info:
                closing.ask_versions()
            assert not isinstance(info.value, kafkawire.WireTimeout)
    with pytest.raises(kafkawire.WireError, match="cannot connect"):
        kafkawire.BrokerConnection("127.0.0.1", port, 1)


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_a_log_dirs_request_for_every_partition_is_kafka_pythons(version: int) -> None:
    assert kafkawire.log_dirs_body(None, version) == bytes(Request(topics=None).encode(version))


Configs = admin.DescribeConfigsRequest
ConfigsAnswer = admin.DescribeConfigsResponse
ConfigResult = ConfigsAnswer.DescribeConfigsResult
ConfigEntry = ConfigResult.DescribeConfigsResourceResult

config_entries = st.builds(
    dict,
    name=names,
    value=st.none() | names,
    read_only=st.booleans(),
    config_source=st.sampled_from([0, 1, 2, 3, 4, 5, 6, 8]),
    is_sensitive=st.booleans(),
)


@pytest.mark.parametrize("version", [1, 2])
def test_configs_request_body_is_kafka_pythons(version: int) -> None:
    topics = ["orders", "événements"]
    request = Configs(
        resources=[
            Configs.DescribeConfigsResource(
                resource_type=2, resource_name=t, configuration_keys=None
            )
            for t in topics
        ],
        include_synonyms=False,
    )
    assert kafkawire.configs_body(topics) == bytes(request.encode(version=version))


@settings(max_examples=30, deadline=None)
@given(
    topics=st.dictionaries(names, st.lists(config_entries, max_size=5), max_size=4),
    version=st.integers(1, 2),
    synonyms=st.booleans(),
)
def test_configs_decode_as_kafka_python_does(
    topics: dict[str, list[dict[str, Any]]], version: int, synonyms: bool
) -> None:
    synonym = ConfigEntry.DescribeConfigsSynonym(name="s", value="v", source=4)
    answer = ConfigsAnswer(
        throttle_time_ms=0,
        results=[
            ConfigResult(
                error_code=0,
                error_message=None,
                resource_type=2,
                resource_name=name,
                configs=[ConfigEntry(**e, synonyms=[synonym] if synonyms else []) for e in entries],
            )
            for name, entries in topics.items()
        ],
    )
    body = bytes(answer.encode(version=version))
    theirs = ConfigsAnswer.decode(body, version=version).to_dict()["results"]
    assert kafkawire.topic_configs(body) == {
        r["resource_name"]: [(c["name"], c["value"], c["config_source"]) for c in r["configs"]]
        for r in theirs
    }


def test_a_topic_the_broker_will_not_describe_is_a_wire_error() -> None:
    answer = ConfigsAnswer(
        throttle_time_ms=0,
        results=[
            ConfigResult(
                error_code=29,  # TOPIC_AUTHORIZATION_FAILED: confluent-kafka then names it
                error_message="denied",
                resource_type=2,
                resource_name="secret",
                configs=[],
            )
        ],
    )
    with pytest.raises(kafkawire.WireError, match="secret"):
        kafkawire.topic_configs(bytes(answer.encode(version=1)))


metadata_module = pytest.importorskip("kafka.protocol.metadata")
MetadataAnswer = metadata_module.MetadataResponse
MetaBroker = MetadataAnswer.MetadataResponseBroker
MetaTopic = MetadataAnswer.MetadataResponseTopic
MetaPartition = MetaTopic.MetadataResponsePartition

ids = st.lists(st.integers(-1, 2**31 - 1), max_size=4)
meta_partitions = st.builds(
    dict,
    error_code=st.sampled_from([0, 5]),
    partition_index=st.integers(0, 2**31 - 1),
    leader_id=st.integers(-1, 2**31 - 1),
    leader_epoch=st.integers(-1, 99),
    replica_nodes=ids,
    isr_nodes=ids,
    offline_replicas=ids,
)


@pytest.mark.parametrize("version", [4, 5, 6, 7, 8])
def test_metadata_request_body_is_kafka_pythons(version: int) -> None:
    request = metadata_module.MetadataRequest(
        topics=None,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    assert kafkawire.metadata_body(version) == bytes(request.encode(version=version))


@settings(max_examples=40, deadline=None)
@given(
    brokers=st.lists(
        st.builds(
            dict,
            node_id=st.integers(0, 99),
            host=names,
            port=st.integers(1, 65535),
            rack=st.none() | names,
        ),
        max_size=3,
    ),
    topics=st.dictionaries(
        names,
        st.tuples(st.sampled_from([0, 3, 17]), st.lists(meta_partitions, max_size=4)),
        max_size=4,
    ),
    cluster_id=st.none() | names,
    version=st.integers(4, 8),
)
def test_metadata_decodes_as_kafka_python_does(
    brokers: list[dict[str, Any]],
    topics: dict[str, tuple[int, list[dict[str, Any]]]],
    cluster_id: str | None,
    version: int,
) -> None:
    answer = MetadataAnswer(
        throttle_time_ms=0,
        brokers=[MetaBroker(**b) for b in brokers],
        cluster_id=cluster_id,
        controller_id=3,
        topics=[
            MetaTopic(
                error_code=error,
                name=name,
                is_internal=False,
                partitions=[MetaPartition(**p) for p in parts],
            )
            for name, (error, parts) in topics.items()
        ],
    )
    body = bytes(answer.encode(version=version))
    theirs = MetadataAnswer.decode(body, version=version).to_dict()
    got_brokers, got_cluster, controller, got_topics = kafkawire.metadata(body, version)
    assert got_brokers == [
        {k: b[k] for k in ("node_id", "host", "port", "rack")} for b in theirs["brokers"]
    ]
    assert (got_cluster, controller) == (theirs["cluster_id"], theirs["controller_id"])
    assert got_topics == {
        t["name"]: (
            t["error_code"],
            {
                p["partition_index"]: (p["replica_nodes"], p["isr_nodes"], p["leader_id"])
                for p in t["partitions"]
            },
        )
        for t in theirs["topics"]
    }


@pytest.mark.parametrize("version", [4, 8])
def test_a_metadata_request_for_the_brokers_alone_is_kafka_pythons(version: int) -> None:
    request = metadata_module.MetadataRequest(
        topics=[],
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    assert kafkawire.metadata_body(version, topics=False) == bytes(request.encode(version=version))
