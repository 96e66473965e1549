from __future__ import annotations

import json

import pytest

from kreplica.errors import InputError
from kreplica.sources.snapshot import dump_snapshot, parse_snapshot, parse_snapshot_text

MINIMAL = {
    "kreplica_snapshot": 1,
    "brokers": [{"id": 2, "rack": "b"}, {"id": 1}],
    "topics": [{"name": "orders", "partitions": [{"partition": 0, "replicas": [1, 2]}]}],
}


def test_minimal_snapshot_defaults() -> None:
    snap = parse_snapshot(MINIMAL)
    assert [b.id for b in snap.brokers] == [1, 2]
    assert snap.brokers[0].rack is None and snap.brokers[0].alive
    part = snap.topic("orders").partitions[0]
    assert part.in_sync == (1, 2) and part.current_leader == 1


def test_round_trip_is_byte_stable() -> None:
    snap = parse_snapshot(MINIMAL)
    text = dump_snapshot(snap)
    assert dump_snapshot(parse_snapshot_text(text)) == text


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (
            lambda d: d["topics"][0]["partitions"][0].update(replicas="1,2"),
            "topics[0].partitions[0].replicas",
        ),
        (
            lambda d: d["topics"][0]["partitions"][0].update(replicas=[1, "x"]),
            "topics[0].partitions[0].replicas[1]",
        ),
        (lambda d: d["brokers"][1].pop("id"), "brokers[1].id"),
        (lambda d: d.pop("kreplica_snapshot"), "kreplica_snapshot"),
        (
            lambda d: d["topics"][0]["partitions"][0].update(replicas=[1, 1]),
            "topics[0].partitions[0].replicas",
        ),
        (  # a negative size would make a broker look emptier than it is
            lambda d: d["topics"][0]["partitions"][0].update(size_bytes=-1),
            "topics[0].partitions[0].size_bytes",
        ),
    ],
)
def test_bad_values_name_their_path(mutate, path) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(json.dumps(MINIMAL))
    mutate(data)
    with pytest.raises(InputError) as err:
        parse_snapshot(data)
    assert path in str(err.value)


def test_truncated_json_is_input_error() -> None:
    with pytest.raises(InputError, match="not valid JSON"):
        parse_snapshot_text(json.dumps(MINIMAL)[:40])


def test_absurdly_nested_json_is_input_error_not_a_crash() -> None:
    with pytest.raises(InputError, match="nested too deeply"):
        parse_snapshot_text("[" * 100_000)


def _part(**values: object) -> object:
    return lambda d: d["topics"][0]["partitions"][0].update(values)


def _min_isr(value: object) -> object:
    return lambda d: d["topics"][0].update(configs={"min.insync.replicas": value})


OUT_OF_KAFKAS_RANGE = [  # (mutation, path, what the message says)
    (_part(partition=2**63), "topics[0].partitions[0].partition", "partition id from 0 to"),
    (_part(partition=2**31), "topics[0].partitions[0].partition", "2147483647"),
    (_part(replicas=[1, 2**31]), "topics[0].partitions[0].replicas[1]", "broker id"),
    (_part(replicas=[-3, 2]), "topics[0].partitions[0].replicas[0]", "broker id"),
    (_part(isr=[1, 2**40]), "topics[0].partitions[0].isr[1]", "broker id"),
    (_part(leader=-2), "topics[0].partitions[0].leader", "from -1 to"),
    (_part(leader=2**31), "topics[0].partitions[0].leader", "from -1 to"),
    (lambda d: d["brokers"][0].update(id=-1), "brokers[0].id", "broker id"),
    (lambda d: d["brokers"][0].update(id=2**32), "brokers[0].id", "broker id"),
    (_min_isr("x"), "topics[0].configs.min.insync.replicas", 'got "x"'),
    (_min_isr("-1"), "topics[0].configs.min.insync.replicas", 'got "-1"'),
    (_min_isr("0"), "topics[0].configs.min.insync.replicas", 'got "0"'),
    (_min_isr("1.5"), "topics[0].configs.min.insync.replicas", 'got "1.5"'),
    (_min_isr(1.5), "topics[0].configs.min.insync.replicas", 'got "1.5"'),
    (_min_isr(""), "topics[0].configs.min.insync.replicas", 'got ""'),
    (_min_isr("٣"), "topics[0].configs.min.insync.replicas", "got"),  # a digit, not ASCII
    (_min_isr(str(2**31)), "topics[0].configs.min.insync.replicas", "got"),  # Java's int
    (
        lambda d: d["topics"][0].update(min_insync_replicas=0),
        "topics[0].min_insync_replicas",
        "1 to",
    ),
    (
        lambda d: d["topics"][0].update(min_insync_replicas=2**40),
        "topics[0].min_insync_replicas",
        "1 to",
    ),
]


@pytest.mark.parametrize(("mutate", "path", "said"), OUT_OF_KAFKAS_RANGE)
def test_values_kafka_would_refuse_are_refused(mutate, path, said) -> None:  # type: ignore[no-untyped-def]
    """Ids outside Kafka's 32-bit ranges and a `min.insync.replicas` Kafka would not take
    (not an int >= 1) are refused with the path, by the object and the columnar readers
    alike (the columnar one leaves anything odd to the object one)."""
    from kreplica.sources.snapshot import parse_snapshot_text_columnar

    data = json.loads(json.dumps(MINIMAL))
    mutate(data)
    for parse in (parse_snapshot_text, parse_snapshot_text_columnar):
        with pytest.raises(InputError) as err:
            parse(json.dumps(data))
        assert path in str(err.value) and said in str(err.value), str(err.value)


@pytest.mark.parametrize(("value", "taken"), [("2", 2), (" 2 ", 2), ("+3", 3), (3, 3)])
def test_min_isr_is_read_as_kafka_reads_it(value: object, taken: int) -> None:
    data = json.loads(json.dumps(MINIMAL))
    _min_isr(value)(data)  # type: ignore[operator]
    topic = parse_snapshot(data).topic("orders")
    assert topic.min_insync_replicas == taken and topic.min_insync_replicas_source == "topic"


def test_the_largest_ids_kafka_allows_are_taken() -> None:
    data = json.loads(json.dumps(MINIMAL))
    data["brokers"][0]["id"] = 2**31 - 1
    data["topics"][0]["partitions"][0].update(partition=2**31 - 1, replicas=[2**31 - 1, 2])
    part = parse_snapshot(data).topic("orders").partitions[0]
    assert part.partition == 2**31 - 1 and part.replicas == (2**31 - 1, 2)
