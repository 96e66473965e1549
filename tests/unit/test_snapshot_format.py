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
