"""Throttles: Kafka's own calculation (its test vector), rate parsing, merging and restoring."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kreplica.errors import ExitCode, UsageError
from kreplica.executor.moves import Move
from kreplica.executor.throttles import (
    BROKER,
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    TOPIC,
    InFlight,
    PartitionMove,
    format_rate,
    in_flight_from_partitions,
    merge_replica_list,
    move_map,
    parse_rate,
    reassigning_brokers,
    remove_from_replica_list,
    restore_plan,
    restore_value,
    throttle_plan,
    throttled_replicas,
)
from kreplica.model import Partition
from tests.conftest import VECTORS

_VECTOR_FILE = VECTORS / "kafka_assignment_vectors.json"
VECTOR: dict[str, Any] = next(
    v for v in json.loads(_VECTOR_FILE.read_text()) if v["algorithm"] == "reassign_throttles"
)


def _parts(entries: list[dict[str, Any]]) -> dict[tuple[str, int], list[int]]:
    return {(e["topic"], e["partition"]): e["replicas"] for e in entries}


def _vector_move_map() -> dict[str, dict[int, PartitionMove]]:
    in_flight = [
        InFlight(e["topic"], e["partition"], tuple(e["replicas"]), tuple(e["adding"]))
        for e in VECTOR["current_reassignments"]
    ]
    return move_map(_parts(VECTOR["current"]), _parts(VECTOR["proposed"]), in_flight)


# ------------------------------------------------------------------------- Kafka's test vector


def test_vector_move_map_matches_kafka() -> None:
    got = {
        topic: {
            str(p): {"sources": sorted(m.sources), "destinations": sorted(m.destinations)}
            for p, m in parts.items()
        }
        for topic, parts in _vector_move_map().items()
    }
    assert got == VECTOR["expected_move_map"]


def test_vector_throttle_strings_and_brokers_match_kafka_exactly() -> None:
    mm = _vector_move_map()
    got = throttled_replicas(mm)
    expected = VECTOR["expected"]
    assert {t: v[LEADER_REPLICAS] for t, v in got.items()} == expected[LEADER_REPLICAS]
    assert {t: v[FOLLOWER_REPLICAS] for t, v in got.items()} == expected[FOLLOWER_REPLICAS]
    assert reassigning_brokers(mm) == expected["reassigning_brokers"]


def test_vector_strings_sort_as_strings() -> None:
    # foo-10 would sort before foo-2 in Kafka's TreeSet<String>.
    moves = [Move("t", p, (1,), (2,)) for p in (2, 10, 1)]
    assert throttled_replicas(moves)["t"] == {
        LEADER_REPLICAS: "10:1,1:1,2:1",
        FOLLOWER_REPLICAS: "10:2,1:2,2:2",
    }


def test_vector_through_throttle_plan() -> None:
    current = _parts(VECTOR["current"])
    moves = [
        Move(t, p, tuple(current[(t, p)]), tuple(r))
        for (t, p), r in _parts(VECTOR["proposed"]).items()
    ]
    in_flight = [
        InFlight(e["topic"], e["partition"], tuple(e["replicas"]), tuple(e["adding"]))
        for e in VECTOR["current_reassignments"]
    ]
    plan = throttle_plan(moves, 50_000_000, in_flight)
    assert plan.topics["foo"][LEADER_REPLICAS] == VECTOR["expected"][LEADER_REPLICAS]["foo"]
    assert plan.topics["bar"][FOLLOWER_REPLICAS] == "0:1"
    assert sorted(plan.brokers) == VECTOR["expected"]["reassigning_brokers"]
    assert all(
        v == {LEADER_RATE: "50000000", FOLLOWER_RATE: "50000000"} for v in plan.brokers.values()
    )
    configs = plan.configs()
    assert (TOPIC, "foo") in configs and (BROKER, "8") in configs
    assert list(configs)[:2] == [(TOPIC, "bar"), (TOPIC, "foo")]  # sorted, deterministic


def test_in_flight_from_snapshot_partitions() -> None:
    parts = [
        Partition("foo", 0, (1, 2, 3, 4), adding_replicas=(4,), removing_replicas=(3,)),
        Partition("foo", 1, (1, 2)),
    ]
    assert in_flight_from_partitions(parts) == [InFlight("foo", 0, (1, 2, 3, 4), (4,), (3,))]


def test_proposed_partition_unknown_to_current_has_no_sources() -> None:
    mm = move_map({}, {("x", 0): [1, 2]})
    assert mm == {"x": {0: PartitionMove(frozenset(), frozenset({1, 2}))}}


def test_removal_only_move_throttles_sources_and_empty_follower_list() -> None:
    assert throttled_replicas([Move("t", 0, (1, 2, 3), (1, 2))]) == {
        "t": {LEADER_REPLICAS: "0:1,0:2,0:3", FOLLOWER_REPLICAS: ""}
    }


def test_throttle_plan_refuses_non_positive_rate() -> None:
    with pytest.raises(UsageError):
        throttle_plan([Move("t", 0, (1,), (2,))], 0)


# ----------------------------------------------------------------------------------- parse_rate


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("50MB/s", 50_000_000),
        ("50MB", 50_000_000),
        ("50mb/s", 50_000_000),
        ("50 MB / s", 50_000_000),
        ("10MiB/s", 10 * 2**20),
        ("10mib", 10 * 2**20),
        ("1.5GB/s", 1_500_000_000),
        ("2GiB", 2 * 2**30),
        ("500KiB/s", 500 * 1024),
        ("500KB/s", 500_000),
        ("1000000", 1_000_000),
        ("1000000/s", 1_000_000),
        ("1000000B", 1_000_000),
        ("1b/s", 1),
        ("50M", 50_000_000),
        ("0.5MiB", 2**19),
        (" 7 ", 7),
    ],
)
def test_parse_rate(text: str, expected: int) -> None:
    assert parse_rate(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "fast",
        "50XB/s",
        "MB",
        "0",
        "0MB/s",
        "-5MB",
        "1.5B",
        "0.1",
        "5MB/h",
        "5e6",
        "1,000",
        "9" * 30,
    ],
)
def test_parse_rate_rejects_with_one_line_naming_the_value(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_rate(text)
    message = str(caught.value)
    assert repr(text) in message
    assert "\n" not in message
    assert "50MB/s" in message  # an example
    assert caught.value.exit_code == ExitCode.USAGE


@given(st.integers(min_value=1, max_value=2**40))
def test_parse_rate_reads_what_format_rate_writes(rate: int) -> None:
    assert parse_rate(format_rate(rate)) == rate
    assert parse_rate(str(rate)) == rate


def test_format_rate() -> None:
    assert format_rate(50_000_000) == "50 MB/s"
    assert format_rate(10 * 2**20) == "10 MiB/s"
    assert format_rate(1234) == "1234 B/s"


# ------------------------------------------------------------------------- merge and restore


def test_merge_replica_list() -> None:
    assert merge_replica_list(None, "0:1,0:2") == "0:1,0:2"
    assert merge_replica_list("", "0:1") == "0:1"
    assert merge_replica_list("1:3, 0:2", "0:1,0:2") == "0:1,0:2,1:3"
    assert merge_replica_list("*", "0:1") == "*"
    assert merge_replica_list(" * ", "0:1") == "*"
    assert merge_replica_list("10:1", "2:1") == "10:1,2:1"


def test_remove_from_replica_list() -> None:
    assert remove_from_replica_list("0:1,0:2,1:3", "0:1,0:2") == "1:3"
    assert remove_from_replica_list("0:1,0:2", "0:1,0:2") is None
    assert remove_from_replica_list(None, "0:1") is None
    assert remove_from_replica_list("*", "0:1") == "*"


def test_restore_value_gives_back_exactly_what_was_there() -> None:
    assert restore_value(LEADER_REPLICAS, None, "0:1", "0:1") is None
    assert restore_value(LEADER_REPLICAS, "1:3 ,0:1", "0:1,1:3", "0:1,1:3") == "1:3 ,0:1"
    assert restore_value(LEADER_REPLICAS, "*", "*", "*") == "*"
    # someone added 5:5 meanwhile: only our additions go, theirs and the old ones stay
    assert restore_value(LEADER_REPLICAS, "1:3", "0:1,1:3,5:5", "0:1,1:3") == "1:3,5:5"
    # someone deleted it meanwhile: leave it deleted
    assert restore_value(LEADER_REPLICAS, "1:3", None, "0:1,1:3") is None
    # someone set "*": leave it
    assert restore_value(FOLLOWER_REPLICAS, None, "*", "0:1") == "*"
    assert restore_value(LEADER_RATE, None, "100", "100") is None
    assert restore_value(LEADER_RATE, "7", "100", "100") == "7"
    assert restore_value(LEADER_RATE, None, "999", "100") == "999"  # someone else's rate


def test_merge_then_restore_round_trip_on_a_plan() -> None:
    moves = [Move("orders", 0, (1, 2), (1, 3)), Move("logs", 1, (2,), (4,))]
    plan = throttle_plan(moves, 1000)
    existing = {
        (TOPIC, "orders"): {LEADER_REPLICAS: "7:7", FOLLOWER_REPLICAS: None},
        (BROKER, "1"): {LEADER_RATE: "5", FOLLOWER_RATE: None},
    }
    to_set = plan.merged_with(existing)
    assert to_set[(TOPIC, "orders")] == {
        LEADER_REPLICAS: "0:1,0:2,7:7",
        FOLLOWER_REPLICAS: "0:3",
    }
    assert to_set[(BROKER, "1")] == {LEADER_RATE: "1000", FOLLOWER_RATE: "1000"}
    # the cluster now holds existing overlaid with to_set
    now: dict[tuple[str, str], dict[str, str | None]] = {r: dict(v) for r, v in existing.items()}
    for resource, values in to_set.items():
        now.setdefault(resource, {}).update(values)
    undo = restore_plan(existing, now, to_set)
    assert undo[(TOPIC, "orders")] == {LEADER_REPLICAS: "7:7", FOLLOWER_REPLICAS: None}
    assert undo[(BROKER, "1")] == {LEADER_RATE: "5", FOLLOWER_RATE: None}
    assert undo[(BROKER, "4")] == {LEADER_RATE: None, FOLLOWER_RATE: None}
    for resource, values in undo.items():
        now[resource].update(values)
    assert restore_plan(existing, now, to_set) == {}
    for resource, values in now.items():
        before = existing.get(resource, {})
        assert {k: v for k, v in values.items() if v is not None} == {
            k: v for k, v in before.items() if v is not None
        }


def test_merged_with_skips_configs_already_right_and_empty_lists() -> None:
    plan = throttle_plan([Move("t", 0, (1, 2), (1,))], 10)
    assert plan.merged_with({})[(TOPIC, "t")] == {LEADER_REPLICAS: "0:1,0:2"}
    existing = {(TOPIC, "t"): {LEADER_REPLICAS: "0:1,0:2"}}
    assert (TOPIC, "t") not in plan.merged_with(existing)


entry = st.builds(lambda p, b: f"{p}:{b}", st.integers(0, 30), st.integers(0, 9))
replica_list = st.lists(entry, max_size=8).map(lambda xs: ",".join(xs))
maybe_list = st.none() | replica_list


@given(maybe_list, replica_list, st.lists(entry, max_size=4), st.lists(entry, max_size=4))
def test_restore_removes_only_what_we_added(
    previous: str | None, ours_new: str, others_add: list[str], others_remove: list[str]
) -> None:
    """Whatever others do meanwhile, restoring never drops an entry that was not ours."""
    ours = merge_replica_list(previous, ours_new)
    current_set = (set(ours.split(",")) - {""} | set(others_add)) - set(others_remove)
    current = ",".join(sorted(current_set)) if current_set else None
    restored = restore_value(LEADER_REPLICAS, previous, current, ours)
    restored_set = set(restored.split(",")) - {""} if restored else set()
    prev_set = set(previous.split(",")) - {""} if previous else set()
    ours_added = (set(ours.split(",")) - {""}) - prev_set
    assert restored_set == current_set - ours_added or (
        not others_add and not others_remove and restored == previous
    )
    theirs = prev_set | (set(others_add) - set(ours.split(",")))
    assert restored_set >= current_set & theirs  # what was there and what others added survive
    if not others_add and not others_remove:
        assert restored == previous or (restored is None and not prev_set)


@given(
    st.lists(
        st.tuples(
            st.integers(0, 5),
            st.lists(st.integers(0, 7), min_size=1, max_size=4, unique=True),
            st.lists(st.integers(0, 7), min_size=1, max_size=4, unique=True),
        ),
        max_size=6,
        unique_by=lambda x: x[0],
    )
)
def test_throttles_cover_every_mover(raw: list[tuple[int, list[int], list[int]]]) -> None:
    moves = [Move("t", p, tuple(b), tuple(a)) for p, b, a in raw]
    got = throttled_replicas(moves)
    brokers = reassigning_brokers(moves)
    for m in moves:
        leaders = got["t"][LEADER_REPLICAS].split(",")
        followers = got["t"][FOLLOWER_REPLICAS].split(",")
        assert all(f"{m.partition}:{b}" in leaders for b in m.before)
        assert all(f"{m.partition}:{b}" in followers for b in m.added)
        assert set(m.before) | set(m.added) <= set(brokers)


def test_fifty_thousand_partition_plan_stays_within_the_config_limit() -> None:
    """KAFKA-17993: a list over 32767 bytes cannot be set. 50,000 partitions of one topic
    widen to '*' (noted); the same spread over 100 topics keep their exact lists."""
    from kreplica.executor.throttles import MAX_CONFIG_VALUE, fit_to_limit

    def moves(topics: int) -> list[Move]:
        per = 50_000 // topics
        return [
            Move(f"t{t}", p, (p % 30 + 1, (p + 1) % 30 + 1), (p % 30 + 1, (p + 7) % 30 + 1))
            for t in range(topics)
            for p in range(per)
        ]

    one = throttle_plan(moves(1), 10_000_000)
    raw = one.merged_with({})
    assert len(raw[("topic", "t0")][FOLLOWER_REPLICAS]) > MAX_CONFIG_VALUE  # would be refused
    fitted, widened = fit_to_limit(raw)
    assert widened == ["t0"]
    assert fitted[("topic", "t0")] == {LEADER_REPLICAS: "*", FOLLOWER_REPLICAS: "*"}
    assert fitted[("broker", "1")] == raw[("broker", "1")]  # rates untouched
    spread, widened = fit_to_limit(throttle_plan(moves(100), 10_000_000).merged_with({}))
    assert widened == []
    lists = [vs for (kind, _), vs in spread.items() if kind == "topic"]
    assert len(lists) == 100
    assert all(len(v.encode()) <= MAX_CONFIG_VALUE for vs in lists for v in vs.values())
    # exact lists: 2 sources and 1 destination for each of the topic's 500 partitions
    assert all(vs[LEADER_REPLICAS].count(":") == 1000 for vs in lists)
    assert all(vs[FOLLOWER_REPLICAS].count(":") == 500 for vs in lists)


def test_a_widened_list_restores_what_was_there() -> None:

    # kreplica set '*' over an earlier list: the earlier list comes back
    assert restore_value(FOLLOWER_REPLICAS, "0:1", "*", "*") == "0:1"
    assert restore_value(FOLLOWER_REPLICAS, None, "*", "*") is None
