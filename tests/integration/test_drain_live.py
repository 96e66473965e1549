"""`kreplica drain` applied to a real ZooKeeper-mode cluster (issue 21): destinations and
preferred leaders at the balance optimum, read back from the cluster's own metadata.

A private sandbox of 6 brokers on racks a, b, c, a, b, c (Kafka 3.9, ZooKeeper mode). Topics
placed by Kafka itself: `orders` (12 partitions, RF 2) and `audit` (6 partitions, RF 3). Broker
6 is drained with `--yes` (plan, apply, preferred leader election). Then, from the AdminClient's
metadata: no replica on broker 6, the replicas per staying broker as the plan said and at the
optimum a max-flow over the same choices reaches (networkx, the unit tests' oracle), each
drained leader's partition led by its new preferred replica, and the preferred leaders' max-min
at the optimum of those choices.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from kreplica.sandbox import SandboxInfo
from kreplica.testing import TopicSpec, create_topics
from tests.integration.conftest import private_cluster
from tests.integration.test_apply import Kafka, Operator, _ok

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

TOPICS = (
    TopicSpec("orders", partitions=12, replication_factor=2),
    TopicSpec("audit", partitions=6, replication_factor=3),
)
RACK = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
STAY = [1, 2, 3, 4, 5]


@pytest.fixture(scope="module")
def cluster() -> Iterator[SandboxInfo]:
    with private_cluster("drainlive", "zk", brokers=6) as info:
        create_topics(info.bootstrap_servers, TOPICS)
        yield info


def _rule(rest: list[int], k: int) -> list[tuple[int, int, list[int]]]:
    """The rack rule (as in the unit oracle): new replicas on racks the staying ones do not
    use, one each (no spill here: 3 racks, RF <= 3)."""
    used = {RACK[b] for b in rest}
    assert k <= 3 - len(used)
    return [(0, 1, [b for b in STAY if RACK[b] == r]) for r in "abc" if r not in used]


def _spread(values: list[int]) -> int:
    return max(values) - min(values)


def test_drain_lands_at_the_optimum(cluster: SandboxInfo, tmp_path: Path) -> None:
    from tests.unit.planner.test_drain_balance import window_optimum

    kafka = Kafka(cluster)
    try:
        names = [t.name for t in TOPICS]
        before = {(t, p): v for t in names for p, v in kafka.partitions(t).items()}
        assert any(6 in reps for reps, _, _ in before.values())
        op = Operator(cluster, tmp_path)
        proc = _ok(op.run("drain", "--brokers", "6", "--yes", "--out", "drain.json", *op.source))
        report = json.loads((tmp_path / "drain.kreplica.json").read_text())["report"]

        def now() -> dict[tuple[str, int], tuple[list[int], int, list[int]]]:
            return {(t, p): v for t in names for p, v in kafka.partitions(t).items()}

        kafka.wait(
            "preferred leaders elected",
            lambda: all(leader == reps[0] for reps, leader, _ in now().values()),
        )
        after = now()
        per_broker = Counter(b for reps, _, _ in after.values() for b in reps)
        assert per_broker[6] == 0
        moved = sum(1 for reps, _, _ in before.values() if 6 in reps)
        assert report["replicas_added"] == report["lower_bound_replicas_added"] == moved
        for b in STAY:  # as planned
            assert per_broker[b] == report["broker_replicas_after"][str(b)]
        # replicas per staying broker at the optimum of the same choices
        base = dict.fromkeys(STAY, 0)
        groups = []
        for reps, _, _ in before.values():
            rest = [b for b in reps if b != 6]
            for b in rest:
                base[b] += 1
            if len(rest) < len(reps):
                groups.append((1, _rule(rest, 1), 1))
        assert _spread([per_broker[b] for b in STAY]) == window_optimum(groups, base)
        # preferred leaders: every partition on 6 is led by an in-sync staying replica or its
        # new one, the others kept theirs; the max-min at the optimum of those choices
        lead_base = dict.fromkeys(STAY, 0)
        lgroups = []
        for key, (reps, _, isr) in before.items():
            new = after[key][0]
            if 6 in reps:
                cands = [b for b in new if b in isr or b not in reps]
                assert new[0] in cands
                lgroups.append((1, [(0, 1, cands)], 1))
            else:
                assert new[0] == reps[0]
                lead_base[reps[0]] += 1
        assert lgroups
        leaders = Counter(leader for _, leader, _ in after.values())
        assert _spread([leaders[b] for b in STAY]) == window_optimum(lgroups, lead_base)
        changed = report["preferred_leader_changes"]
        assert {k for k, (reps, _, _) in before.items() if reps[0] != after[k][0][0]} == {
            (name.rsplit("-", 1)[0], int(name.rsplit("-", 1)[1])) for name in changed
        }
        print(proc.stdout[-1500:])
    finally:
        kafka.close()
