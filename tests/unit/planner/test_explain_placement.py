"""`explain`: which Kafka placement a topic follows (ZooKeeper mode or KRaft striped), only when
most partitions fit it; add-partitions history only with evidence; mixed replication factors."""

from __future__ import annotations

import io
import json
import random

from planner_helpers import cluster

from kreplica.kafka import JavaRandom, KafkaLayout, assign_replicas, infer_layout, striped_place
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic
from kreplica.planner import explain_topic
from kreplica.planner.explain import added_partitions

SIX: dict[int, str | None] = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}


def _snapshot(matrix: dict[int, list[int]], racks: dict[int, str | None]) -> ClusterSnapshot:
    partitions = tuple(Partition("t", p, tuple(matrix[p])) for p in sorted(matrix))
    return ClusterSnapshot(
        brokers=tuple(Broker(b, racks[b]) for b in sorted(racks)),
        topics=(Topic("t", partitions),),
    )


def _striped(partitions: int, rf: int, seed: int, racks: dict[int, str | None]):
    usable = [(b, racks[b], False) for b in sorted(racks)]
    return striped_place(usable, partitions, rf, rng=JavaRandom(seed))


def test_a_topic_kraft_placed_is_kafkas_striped_layout():
    # Seed 0, RF 3: ZooKeeper-mode inference alone made this "Kafka's layout except 8
    # partitions, 6 and 9 added later" (the KRaft sandbox report).
    matrix = _striped(12, 3, 0, SIX)
    zk = infer_layout(matrix, list(SIX), SIX)
    assert zk is not None and zk.added_ranges and len(zk.conforming) < 6  # the old misreading
    doc = explain_topic(_snapshot(matrix, SIX), "t")
    layout = doc["layout"]
    assert layout["placement"] == "kraft-striped" == layout["closest_placement"]
    assert layout["kafka_default"] is True
    assert layout["nonconforming_partitions"] == [] and layout["added_partitions"] == []
    assert layout["fitting_partitions"] == 12
    assert layout["placement_fits"] == {"zookeeper": len(zk.conforming), "kraft-striped": 12}
    assert layout["striped_cycle"] == 6 and layout["rack_aware"] is True
    assert layout["broker_list"] is None and layout["start_index"] is None
    assert "Kafka's default layout, KRaft's striped placement" in doc["summary"]
    assert "add-partitions" not in doc["summary"]
    json.dumps(doc)


def test_striped_topics_of_every_seed_are_recognised():
    for seed in range(25):
        for rf in (1, 2, 3):
            doc = explain_topic(_snapshot(_striped(12, rf, seed, SIX), SIX), "t")
            assert doc["layout"]["kafka_default"] is True, (seed, rf)
            assert doc["layout"]["added_partitions"] == [], (seed, rf)


def test_a_zookeeper_reading_that_needs_add_partitions_loses_to_a_striped_one():
    # RF 1 on 6 brokers: ZooKeeper mode explains every partition only with add-partitions
    # calls after partition 0; the striped placer explains them all from one creation.
    matrix = _striped(12, 1, 3, SIX)
    zk = infer_layout(matrix, list(SIX), SIX)
    assert zk is not None and len(zk.conforming) == 12 and zk.added_ranges
    layout = explain_topic(_snapshot(matrix, SIX), "t")["layout"]
    assert layout["placement_fits"] == {"zookeeper": 12, "kraft-striped": 12}
    assert layout["placement"] == "kraft-striped" and layout["added_partitions"] == []


def test_a_rackless_kraft_topic():
    racks: dict[int, str | None] = dict.fromkeys(range(5))
    doc = explain_topic(_snapshot(_striped(10, 2, 3, racks), racks), "t")
    assert doc["layout"]["kafka_default"] is True
    assert doc["layout"]["placement"] in ("kraft-striped", "zookeeper")
    assert doc["layout"]["added_partitions"] == []


def test_a_topic_most_partitions_miss_is_not_called_kafkas_layout():
    rng = random.Random(7)
    matrix = {p: rng.sample(sorted(SIX), 3) for p in range(12)}
    doc = explain_topic(_snapshot(matrix, SIX), "t")
    layout = doc["layout"]
    fitting = layout["fitting_partitions"]
    assert 0 < fitting <= 6
    assert layout["placement"] is None and layout["kafka_default"] is False
    assert layout["closest_placement"] in ("zookeeper", "kraft-striped")
    assert fitting == max(layout["placement_fits"].values())
    assert len(layout["nonconforming_partitions"]) == 12 - fitting
    assert f"not Kafka's default placement: only {fitting} of 12 partition(s) fit" in doc["summary"]
    assert "Kafka's layout" not in doc["summary"]
    assert layout["added_partitions"] == []


def test_half_the_partitions_is_not_most():
    created = assign_replicas([0, 1, 2, 3, 4, 5], 6, 2, fixed_start_index=0)
    matrix = {p: created[p] for p in range(3)} | {3: [1, 1], 4: [2, 2], 5: [3, 3]}
    layout = explain_topic(cluster({"t": [matrix[p] for p in range(6)]}, brokers=6), "t")["layout"]
    assert layout["fitting_partitions"] == 3
    assert layout["placement"] is None and layout["kafka_default"] is False


def test_more_than_half_is_kafkas_layout_with_exceptions():
    created = assign_replicas([0, 1, 2, 3, 4, 5], 6, 2, fixed_start_index=0)
    matrix = [created[p] for p in range(5)] + [[2, 0]]
    doc = explain_topic(cluster({"t": matrix}, brokers=6), "t")
    assert doc["layout"]["placement"] == "zookeeper"
    assert doc["layout"]["kafka_default"] is False
    assert doc["layout"]["nonconforming_partitions"] == [5]
    assert "Kafka's layout, ZooKeeper-mode placement" in doc["summary"]
    assert "except 1 partition(s) [5]" in doc["summary"]


def test_add_partitions_are_claimed_only_where_the_creation_layout_fails():
    # A layout whose inferred add-partitions call covers 2..3; partition 2 is also exactly what
    # creation placed, so only 3 needs the later call.
    layout = KafkaLayout(
        broker_list=(0, 1, 2),
        start_index=0,
        replica_shift=0,
        rack_aware=False,
        conforming=(0, 1, 2, 3),
        nonconforming=(),
        added_ranges=((2, 2, 4),),
    )
    created = layout.extend(4, 2)
    assignment = {0: (0, 1), 1: (1, 2), 2: tuple(created[2]), 3: (1, 0)}
    assert list(assignment[3]) != created[3]
    assert added_partitions(layout, assignment) == [3]
    assert added_partitions(KafkaLayout((0, 1, 2), 0, 0, False, (0,), ()), assignment) == []


def test_mixed_replication_factors_are_flagged():
    matrix = _striped(12, 3, 4, SIX)
    matrix[10] = matrix[10][:2]
    matrix[11] = matrix[11][:2]
    doc = explain_topic(_snapshot(matrix, SIX), "t")
    assert doc["mixed_rf"] is True
    assert doc["replication_factors"] == {3: 10, 2: 2}
    assert list(doc["replication_factors"]) == [3, 2]  # most partitions first
    assert doc["replication_factor"] == 3  # as Kafka reports it: partition 0's
    assert (
        "mixed replication factors: RF 3 on 10 partition(s), RF 2 on 2 partition(s)"
        in (doc["summary"])
    )


def test_one_replication_factor_is_not_mixed():
    doc = explain_topic(_snapshot(_striped(6, 2, 1, SIX), SIX), "t")
    assert doc["mixed_rf"] is False and doc["replication_factors"] == {2: 6}
    assert "mixed" not in doc["summary"]


def test_a_hand_made_topic_nothing_explains():
    doc = explain_topic(cluster({"t": [[0, 0]]}, brokers=3), "t")
    layout = doc["layout"]
    assert layout["placement"] is None and layout["closest_placement"] is None
    assert layout["fitting_partitions"] == 0 and layout["nonconforming_partitions"] == [0]
    assert "not a Kafka default layout" in doc["summary"]


def _rendered(snapshot: ClusterSnapshot) -> tuple[str, str]:
    from kreplica.render.console import make_console
    from kreplica.render.explain import explain_view
    from kreplica.render.markdown import explain_markdown

    results = [explain_topic(snapshot, "t")]
    buffer = io.StringIO()
    make_console(buffer, no_color=True, width=200).print(explain_view(results, snapshot))
    return buffer.getvalue(), explain_markdown(results, snapshot)


def test_renderers_name_the_striped_placement_and_the_mixed_rf():
    matrix = _striped(12, 3, 4, SIX)
    matrix[11] = matrix[11][:2]
    text, markdown = _rendered(_snapshot(matrix, SIX))
    assert "t  12 partitions · RF mixed (3 on 11, 2 on 1)" in text
    assert "layout: Kafka default placement (KRaft striped, reshuffled every 6 partitions)" in text
    assert "added later" not in text
    assert "| t | 12 | mixed (3 on 11, 2 on 1) | Kafka default placement (KRaft striped, " in (
        markdown
    )


def test_renderers_say_how_few_partitions_fit():
    rng = random.Random(7)
    snapshot = _snapshot({p: rng.sample(sorted(SIX), 3) for p in range(12)}, SIX)
    fitting = explain_topic(snapshot, "t")["layout"]["fitting_partitions"]
    text, markdown = _rendered(snapshot)
    line = f"not Kafka's default placement (hand-assigned or rebalanced); only {fitting} of 12"
    assert line in text and line in markdown
    assert "partitions off the pattern" not in text


def test_renderers_list_the_partitions_off_a_kafka_layout():
    matrix = _striped(12, 3, 2, SIX)
    matrix[5] = list(reversed(matrix[5]))
    doc = explain_topic(_snapshot(matrix, SIX), "t")
    odd = doc["layout"]["nonconforming_partitions"]
    assert 5 in odd and len(odd) < 6
    text, _ = _rendered(_snapshot(matrix, SIX))
    assert f"(KRaft striped, reshuffled every 6 partitions) except {len(odd)} partition" in text
    assert "partitions off the pattern: " in text
