"""Differential test: kreplica.impact against the Java client's own classes in a JVM.

A tiny harness (below, in the package of the assignors so it can reach StickyAssignor's user
data encoding) calls the unmodified kafka-clients 3.9 ``Utils.murmur2``,
``BuiltInPartitioner.partitionForKey`` and the four assignors through their public
``assign(Cluster, GroupSubscription)`` on thousands of random keys and random groups (members,
static members, subscriptions, previous ownership with generations, partitions claimed twice);
every answer, including the order of each member's partitions, must match ours. Needs a JDK and
the Kafka jars from Maven (``python -m kreplica.sandbox fetch``).
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from kreplica.errors import KreplicaError
from kreplica.impact.assignors import ASSIGNORS, GroupMember, GroupSpec, assign
from kreplica.impact.partitioner import murmur2, partition_for_key
from tests.support.jvm import java_harness

pytestmark = pytest.mark.integration
PACKAGE = "org.apache.kafka.clients.consumer"

HARNESS = r"""
package org.apache.kafka.clients.consumer;

import java.io.*;
import java.nio.ByteBuffer;
import java.util.*;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.*;
import org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor.MemberData;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.*;
import org.apache.kafka.common.utils.Utils;

public class ImpactHarness {
    static byte[] hex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return b;
    }

    static List<String> split(String s, String sep) {
        return s.isEmpty() ? new ArrayList<>() : new ArrayList<>(Arrays.asList(s.split(sep, -1)));
    }

    static ConsumerPartitionAssignor assignor(String name) {
        switch (name) {
            case "range": return new RangeAssignor();
            case "roundrobin": return new RoundRobinAssignor();
            case "sticky": return new StickyAssignor();
            default: return new CooperativeStickyAssignor();
        }
    }

    // A assignor topics(T:n,...) members(id|instance|topics|owned|generation;...) ; "~" = none
    static String group(String[] f) {
        String name = f[1];
        Node node = new Node(0, "localhost", 9092);
        List<PartitionInfo> infos = new ArrayList<>();
        for (String t : split(f[2], ",")) {
            String[] tn = t.split(":");
            for (int p = 0; p < Integer.parseInt(tn[1]); p++)
                infos.add(new PartitionInfo(tn[0], p, node, new Node[] {node}, new Node[] {node}));
        }
        Cluster cluster = new Cluster("c", Collections.singletonList(node), infos,
            Collections.emptySet(), Collections.emptySet());
        Map<String, Subscription> subs = new HashMap<>();
        List<String> ids = new ArrayList<>();
        for (String m : split(f[3], ";")) {
            String[] p = m.split("\\|", -1);
            List<String> topics = split(p[2], ",");
            List<TopicPartition> owned = new ArrayList<>();
            boolean hasOwned = !p[3].equals("~");
            if (hasOwned) for (String tp : split(p[3], ",")) {
                int dash = tp.lastIndexOf('-');
                owned.add(new TopicPartition(tp.substring(0, dash), Integer.parseInt(tp.substring(dash + 1))));
            }
            int generation = hasOwned ? Integer.parseInt(p[4]) : -1;
            ByteBuffer userData = null;
            List<TopicPartition> ownedForSubscription = owned;
            if (name.equals("sticky") && hasOwned)
                userData = StickyAssignor.serializeTopicPartitionAssignment(
                    new MemberData(owned, Optional.of(generation)));
            Subscription s = new Subscription(topics, userData, ownedForSubscription, generation, Optional.empty());
            if (!p[1].equals("~")) s.setGroupInstanceId(Optional.of(p[1]));
            subs.put(p[0], s);
            ids.add(p[0]);
        }
        Map<String, Assignment> result;
        try {
            result = assignor(name).assign(cluster, new GroupSubscription(subs)).groupAssignment();
        } catch (Exception e) {
            return "ERR";
        }
        Collections.sort(ids);
        StringBuilder sb = new StringBuilder("OK ");
        for (String id : ids) {
            sb.append(id).append('=');
            Assignment a = result.get(id);
            if (a != null) for (TopicPartition tp : a.partitions()) sb.append(tp.topic()).append('-').append(tp.partition()).append(',');
            sb.append(';');
        }
        return sb.toString();
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split(" ", -1);
            try {
                if (f[0].equals("M")) {
                    byte[] key = hex(f[1]);
                    out.println("OK " + Utils.murmur2(key) + " " + BuiltInPartitioner.partitionForKey(key, Integer.parseInt(f[2])));
                } else if (f[0].equals("A")) {
                    out.println(group(f));
                } else {
                    out.println("ERR unknown");
                }
            } catch (Exception e) {
                out.println("ERR " + e);
            }
        }
        out.flush();
    }
}
"""  # noqa: E501 - Java source


@pytest.fixture(scope="module")
def jvm(tmp_path_factory: pytest.TempPathFactory) -> Callable[[list[str]], list[str]]:
    from kreplica.sandbox import DEFAULT_ZK_VERSION

    return java_harness(
        tmp_path_factory,
        DEFAULT_ZK_VERSION,
        "org.apache.kafka.clients.consumer.ImpactHarness",
        HARNESS,
    )


def test_murmur2_and_partition_match_the_java_client(jvm: Callable[[list[str]], list[str]]) -> None:
    rnd = random.Random(2026)
    cases: list[tuple[bytes, int]] = []
    for i in range(5000):
        length = rnd.choice([0, 1, 2, 3, 4, 5, 7, 8, 13, rnd.randint(0, 200)])
        if i % 3 == 0:
            key = "".join(rnd.choice("abcxyz-_0123456789é漢") for _ in range(length)).encode()
        else:
            key = rnd.randbytes(length)
        cases.append((key, rnd.choice([1, 2, 3, 6, 12, 100, rnd.randint(1, 5000)])))
    answers = jvm([f"M {key.hex()} {n}" for key, n in cases])
    ours = [f"OK {murmur2(key)} {partition_for_key(key, n)}" for key, n in cases]
    mismatches = [(c, a, o) for c, a, o in zip(cases, answers, ours, strict=True) if a != o]
    assert not mismatches, mismatches[:3]


NAMES = ["a", "b", "c", "C1", "C2", "consumer-1-aaa", "consumer-1-bbb", "Zed", "é", "m10", "m2"]
TOPICS = ["orders", "payments", "T0", "T1", "t", "x.y", "é-topic"]


def _random_group(rnd: random.Random) -> GroupSpec:
    big = rnd.random() < 0.1  # larger groups: more HashMap resizes and partition movements
    sizes = [0, 1, 2, 3, 5, 8, 12, rnd.randint(1, 40)] + ([rnd.randint(50, 300)] * 4 if big else [])
    topics = {t: rnd.choice(sizes) for t in rnd.sample(TOPICS, rnd.randint(1, 4))}
    names = list(topics) + (["missing"] if rnd.random() < 0.1 else [])
    same = rnd.random() < 0.5
    common = rnd.sample(names, rnd.randint(1, len(names)))
    members: list[GroupMember] = []
    ids = rnd.sample(NAMES, rnd.randint(1, 7))
    if big:
        ids += [f"consumer-{i}-{rnd.getrandbits(32):08x}" for i in range(rnd.randint(5, 30))]
    instances = rnd.sample(["i-1", "i-2", "i-3", "i-9"], 4)
    all_tps = [(t, p) for t, n in topics.items() for p in range(n)]
    with_history = rnd.random() < 0.7
    for member_id in ids:
        subscribed = common if same else rnd.sample(names, rnd.randint(1, len(names)))
        owned = None
        generation = None
        if with_history and rnd.random() < 0.85:
            owned = tuple(tp for tp in all_tps if rnd.random() < 1.5 / len(ids))
            if rnd.random() < 0.2 and all_tps:  # claimed by two members
                owned += tuple(tp for tp in rnd.sample(all_tps, 1) if tp not in owned)
            generation = rnd.choice([1, 1, 1, 2, 3])
        instance = instances.pop() if rnd.random() < 0.2 and instances else None
        members.append(GroupMember(member_id, tuple(subscribed), owned, generation, instance))
    return GroupSpec(tuple(members), topics)


def _request(name: str, group: GroupSpec) -> str:
    topics = ",".join(f"{t}:{n}" for t, n in group.topics.items())
    members = ";".join(
        "|".join(
            [
                m.id,
                m.instance or "~",
                ",".join(m.topics),
                "~" if m.owned is None else ",".join(f"{t}-{p}" for t, p in m.owned),
                str(m.owned_generation),
            ]
        )
        for m in group.members
    )
    return f"A {name} {topics} {members}"


def _ours(name: str, group: GroupSpec) -> str:
    try:
        result = assign(name, group)
    except KreplicaError:
        return "ERR"
    return "OK " + "".join(
        f"{m}=" + "".join(f"{t}-{p}," for t, p in result.get(m, [])) + ";"
        for m in sorted(m.id for m in group.members)
    )


@pytest.mark.parametrize("name", ASSIGNORS)
def test_assignors_match_the_java_client(name: str, jvm: Callable[[list[str]], list[str]]) -> None:
    rnd = random.Random(f"assignors-{name}")
    groups = [_random_group(rnd) for _ in range(1500)]
    answers = jvm([_request(name, g) for g in groups])

    mismatches = []
    for group, answer in zip(groups, answers, strict=True):
        ours = _ours(name, group)
        if ours != answer:
            mismatches.append((group, answer, ours))
    assert not mismatches, (len(mismatches), mismatches[:2])
