"""Differential test: kreplica.kafka against Kafka's own classes running in a JVM.

A tiny Java harness (below) calls the unmodified Kafka 3.9 ``AdminUtils`` (with its static
``RAND`` swapped for a seeded ``java.util.Random``) and ``StripedReplicaPlacer``, plus the JDK's
``Random``, ``HashMap`` and ``String``, on a few thousand generated cases; every answer must
match ours exactly, errors included. Needs Java 17 (javac) and the Kafka jars from Maven
(``python -m kreplica.sandbox fetch``, run by ``scripts/test``).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator

import pytest

from kreplica.errors import NotImplementedYet
from kreplica.kafka import (
    JavaRandom,
    KafkaAssignmentError,
    MockRandom,
    assign_replicas,
    java_compare_strings,
    java_hashmap_order,
    java_string_hash,
    striped_place,
)
from tests.support.jvm import java_harness

pytestmark = pytest.mark.integration

HARNESS = r"""
import java.io.*;
import java.lang.reflect.Field;
import java.util.*;
// zk-only-begin
import org.apache.kafka.admin.AdminUtils;
import org.apache.kafka.admin.BrokerMetadata;
// zk-only-end
import org.apache.kafka.common.Uuid;
import org.apache.kafka.metadata.placement.*;


public class Harness {
    // zk-only-begin
    static sun.misc.Unsafe unsafe;
    static Object randBase;
    static long randOffset;

    // AdminUtils.RAND is static final: initialise the class first, then overwrite the field.
    static void setRand(Random r) throws Exception {
        if (unsafe == null) {
            Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
            f.setAccessible(true);
            unsafe = (sun.misc.Unsafe) f.get(null);
            Class.forName("org.apache.kafka.admin.AdminUtils", true, Harness.class.getClassLoader());
            Field rand = AdminUtils.class.getDeclaredField("RAND");
            randBase = unsafe.staticFieldBase(rand);
            randOffset = unsafe.staticFieldOffset(rand);
        }
        unsafe.putObject(randBase, randOffset, r);
    }
    // zk-only-end

    static String fmt(Map<Integer, List<Integer>> m) {
        StringBuilder sb = new StringBuilder("OK ");
        for (Map.Entry<Integer, List<Integer>> e : new TreeMap<>(m).entrySet()) {
            sb.append(e.getKey()).append('=');
            for (int i = 0; i < e.getValue().size(); i++) {
                if (i > 0) sb.append('.');
                sb.append(e.getValue().get(i));
            }
            sb.append(';');
        }
        return sb.toString();
    }

    static String err(Throwable t) {
        return "ERR " + t.getClass().getSimpleName() + "|" + t.getMessage();
    }

    static Random rng(String kind, long seed) {
        if (kind.equals("J")) return new Random(seed);
        final long[] state = {seed};  // org.apache.kafka.server.util.MockRandom
        return new Random() {
            @Override protected int next(int bits) {
                state[0] = state[0] * 2862933555777941757L + 3037000493L;
                return (int) (state[0] >>> (64 - bits));
            }
        };
    }

    static Optional<String> rack(String s) {
        return s.equals("-") ? Optional.empty() : Optional.of(s);
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split(" ", -1);
            try {
                if (f[0].equals("-")) {
                    out.println("ERR Unknown|-");
                // zk-only-begin
                } else if (f[0].equals("Z")) {
                    long seed = Long.parseLong(f[1]);
                    int fixed = Integer.parseInt(f[2]), startPid = Integer.parseInt(f[3]);
                    int nPart = Integer.parseInt(f[4]), rf = Integer.parseInt(f[5]);
                    List<BrokerMetadata> brokers = new ArrayList<>();
                    for (String b : f[6].split(",")) {
                        String[] p = b.split(":");
                        brokers.add(new BrokerMetadata(Integer.parseInt(p[0]), rack(p[1])));
                    }
                    setRand(new Random(seed));
                    try {
                        out.println(fmt(AdminUtils.assignReplicasToBrokers(brokers, nPart, rf, fixed, startPid)));
                    } catch (Exception e) {
                        out.println(err(e));
                    }
                // zk-only-end
                } else if (f[0].equals("S")) {
                    StripedReplicaPlacer placer = new StripedReplicaPlacer(rng(f[1], Long.parseLong(f[2])));
                    List<String> results = new ArrayList<>();
                    for (String call : f[3].split("\\|")) {
                        String[] c = call.split("/", -1);
                        List<UsableBroker> usable = new ArrayList<>();
                        if (!c[2].isEmpty()) for (String b : c[2].split(",")) {
                            String[] p = b.split(":");
                            usable.add(new UsableBroker(Integer.parseInt(p[0]), rack(p[1]), p[2].equals("1")));
                        }
                        ClusterDescriber cluster = new ClusterDescriber() {
                            public Iterator<UsableBroker> usableBrokers() { return usable.iterator(); }
                            public Uuid defaultDir(int id) { return Uuid.ZERO_UUID; }
                        };
                        try {
                            TopicAssignment ta = placer.place(
                                new PlacementSpec(0, Integer.parseInt(c[1]), Short.parseShort(c[0])), cluster);
                            Map<Integer, List<Integer>> m = new HashMap<>();
                            for (int i = 0; i < ta.assignments().size(); i++) m.put(i, ta.assignments().get(i).replicas());
                            results.add(fmt(m));
                        } catch (Exception e) {
                            results.add(err(e));
                        }
                    }
                    out.println(String.join(" || ", results));
                } else if (f[0].equals("H")) {
                    Map<Optional<String>, Integer> m = new HashMap<>();
                    for (String k : f[1].split(",")) m.put(rack(k), 0);
                    List<String> keys = new ArrayList<>();
                    for (Optional<String> k : m.keySet()) keys.add(k.orElse("-"));
                    out.println("OK " + String.join(",", keys));
                } else if (f[0].equals("I")) {
                    Map<Integer, Integer> m = new HashMap<>();
                    for (String k : f[1].split(",")) m.put(Integer.parseInt(k), 0);
                    List<String> keys = new ArrayList<>();
                    for (Integer k : m.keySet()) keys.add(k.toString());
                    out.println("OK " + String.join(",", keys));
                } else if (f[0].equals("R")) {
                    Random r = rng(f[1], Long.parseLong(f[2]));
                    StringBuilder sb = new StringBuilder("OK ");
                    for (String b : f[3].split(",")) sb.append(r.nextInt(Integer.parseInt(b))).append(',');
                    out.println(sb);
                } else if (f[0].equals("T")) {
                    String a = new String(hex(f[1]), "UTF-8"), b = new String(hex(f[2]), "UTF-8");
                    out.println("OK " + a.hashCode() + "," + Integer.signum(a.compareTo(b)));
                } else {
                    out.println("ERR Unknown|" + f[0]);
                }
            } catch (Exception e) {
                out.println(err(e));
            }
        }
        out.flush();
    }

    static byte[] hex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return b;
    }
}
"""  # noqa: E501 - Java source


def _kraft_only(source: str) -> str:
    """The harness without AdminUtils, which Kafka 4 (KRaft only) no longer ships."""
    kept, skipping = [], False
    for line in source.splitlines():
        if line.strip() == "// zk-only-begin":
            skipping = True
        elif line.strip() == "// zk-only-end":
            skipping = False
        elif not skipping:
            kept.append(line)
    return "\n".join(kept) + "\n"


def _harness(
    tmp_path_factory: pytest.TempPathFactory, version: str, source: str
) -> Callable[[list[str]], list[str]]:
    """Compile the harness against Kafka `version`; returns a request-lines -> answers call."""
    # -Xint: compiled code would constant-fold the swapped static final RAND.
    return java_harness(tmp_path_factory, version, "Harness", source, ("-Xint",))


@pytest.fixture(scope="module")
def jvm(tmp_path_factory: pytest.TempPathFactory) -> Callable[[list[str]], list[str]]:
    """Kafka 3.9 (the last line with ZooKeeper mode and AdminUtils)."""
    from kreplica.sandbox import DEFAULT_ZK_VERSION

    return _harness(tmp_path_factory, DEFAULT_ZK_VERSION, HARNESS)


@pytest.fixture(scope="module")
def kraft_jvm(tmp_path_factory: pytest.TempPathFactory) -> Callable[[list[str]], list[str]]:
    """The Kafka 4.x line the KRaft sandbox runs."""
    from kreplica.sandbox import DEFAULT_KRAFT_VERSION

    return _harness(tmp_path_factory, DEFAULT_KRAFT_VERSION, _kraft_only(HARNESS))


def _fmt(result: dict[int, list[int]]) -> str:
    return "OK " + "".join(f"{p}={'.'.join(map(str, r))};" for p, r in sorted(result.items()))


def _outcome(run: Callable[[], dict[int, list[int]]]) -> str:
    try:
        return _fmt(run())
    except KafkaAssignmentError as exc:
        return f"ERR {exc.kafka_exception}|{exc}"


RACK_NAMES = ["a", "b", "c", "B", "rack1", "rack2", "rack10", "dc-1", "Zz", "é"]


def _zk_cases(
    rnd: random.Random,
) -> Iterator[tuple[list[tuple[int, str | None]], int, int, int, int, int]]:
    for _ in range(1500):
        n = rnd.randint(1, 14)
        ids = rnd.sample(range(0, 40 if rnd.random() < 0.8 else 3000), n)
        mode = rnd.random()
        racks: list[str | None]
        if mode < 0.4:
            racks = [None] * n
        else:
            names = rnd.sample(RACK_NAMES, rnd.randint(1, min(5, n)))
            racks = [rnd.choice(names) for _ in ids]
            if mode > 0.95 and n > 1:
                racks[rnd.randrange(n)] = None  # mixed: Kafka refuses
        rf = rnd.choice([rnd.randint(1, n), rnd.randint(0, n + 1)])
        partitions = rnd.choice([rnd.randint(1, 30), rnd.randint(0, 3), rnd.randint(20, 120)])
        fixed = rnd.choice([-1, -1, rnd.randint(0, 2 * n)])
        start_pid = rnd.choice([-1, 0, rnd.randint(1, 50)])
        seed = rnd.randint(-(2**40), 2**40)
        yield list(zip(ids, racks, strict=True)), rf, partitions, fixed, start_pid, seed


def test_assign_replicas_matches_kafka_adminutils(jvm: Callable[[list[str]], list[str]]) -> None:
    cases = list(_zk_cases(random.Random(20261121)))
    requests = [
        f"Z {seed} {fixed} {start_pid} {partitions} {rf} "
        + ",".join(f"{b}:{r or '-'}" for b, r in brokers)
        for brokers, rf, partitions, fixed, start_pid, seed in cases
    ]
    answers = jvm(requests)
    mismatches = []
    for case, answer in zip(cases, answers, strict=True):
        brokers, rf, partitions, fixed, start_pid, seed = case

        def run(
            brokers: list[tuple[int, str | None]] = brokers,
            rf: int = rf,
            partitions: int = partitions,
            fixed: int = fixed,
            start_pid: int = start_pid,
            seed: int = seed,
        ) -> dict[int, list[int]]:
            return assign_replicas(
                [b for b, _ in brokers],
                partitions,
                rf,
                racks=dict(brokers),
                fixed_start_index=fixed,
                start_partition_id=start_pid,
                rng=JavaRandom(seed),
            )

        ours = _outcome(run)
        if ours != answer:
            mismatches.append((case, answer, ours))
    assert not mismatches, (len(mismatches), mismatches[:3])
    assert sum(a.startswith("ERR") for a in answers) >= 20  # the error paths were exercised


def _striped_case(
    rnd: random.Random,
) -> tuple[str, int, list[tuple[int, list[tuple[int, str | None, bool]], int]]]:
    kind = rnd.choice(["J", "M"])
    seed = rnd.randint(0, 2**40)
    calls = []
    for _ in range(rnd.randint(1, 3)):
        n = rnd.randint(0, 14) if rnd.random() < 0.1 else rnd.randint(1, 14)
        ids = rnd.sample(range(0, 60), n)
        names: list[str | None] = [None, *rnd.sample(RACK_NAMES, rnd.randint(1, 5))]
        if rnd.random() < 0.5:
            names = names[1:]
        usable = [(b, rnd.choice(names), rnd.random() < 0.25) for b in ids]
        rf = rnd.choice([rnd.randint(1, max(1, n)), rnd.randint(-1, n + 1)])
        calls.append((rf, usable, rnd.choice([rnd.randint(0, 5), rnd.randint(1, 60)])))
    return kind, seed, calls


@pytest.mark.parametrize("kafka_line", ["jvm", "kraft_jvm"])
def test_striped_place_matches_kafka_striped_replica_placer(
    kafka_line: str,
    jvm: Callable[[list[str]], list[str]],
    kraft_jvm: Callable[[list[str]], list[str]],
) -> None:
    from kreplica.sandbox import DEFAULT_KRAFT_VERSION, DEFAULT_ZK_VERSION

    # both harnesses asked for by name, so that xdist keeps this module on one worker
    if kafka_line == "kraft_jvm":
        jvm = kraft_jvm
    version = DEFAULT_ZK_VERSION if kafka_line == "jvm" else DEFAULT_KRAFT_VERSION
    rnd = random.Random(4242)
    cases = [_striped_case(rnd) for _ in range(600)]
    requests = [
        f"S {kind} {seed} "
        + "|".join(
            f"{rf}/{partitions}/" + ",".join(f"{b}:{r or '-'}:{int(f)}" for b, r, f in usable)
            for rf, usable, partitions in calls
        )
        for kind, seed, calls in cases
    ]
    answers = jvm(requests)
    mismatches = []
    for (kind, seed, calls), answer in zip(cases, answers, strict=True):
        rng = JavaRandom(seed) if kind == "J" else MockRandom(seed)
        ours = []
        for rf, usable, partitions in calls:

            def run(
                usable: list[tuple[int, str | None, bool]] = usable,
                partitions: int = partitions,
                rf: int = rf,
                rng: JavaRandom = rng,
            ) -> dict[int, list[int]]:
                return striped_place(usable, partitions, rf, rng=rng, kafka_version=version)

            ours.append(_outcome(run))
        if " || ".join(ours) != answer:
            mismatches.append(((kind, seed, calls), answer, ours))
    assert not mismatches, mismatches[:2]


def test_java_random_hashmap_and_strings_match_the_jdk(
    jvm: Callable[[list[str]], list[str]],
) -> None:
    rnd = random.Random(7)
    bounds_pool = [1, 2, 3, 5, 7, 16, 1000, 2**30, 2**30 + 1, 2**31 - 1, 1_500_000_000]
    random_cases = [
        (
            rnd.choice("JM"),
            rnd.randint(-(2**63), 2**63 - 1),
            [rnd.choice(bounds_pool) for _ in range(40)],
        )
        for _ in range(200)
    ]
    rack_sets = [
        rnd.sample([*RACK_NAMES, *(f"r{i}" for i in range(80))], rnd.randint(1, 70))
        + (["-"] if rnd.random() < 0.5 else [])
        for _ in range(150)
    ]
    int_sets = [
        rnd.sample(range(0, rnd.choice([80, 500, 5000])), rnd.randint(1, 60)) for _ in range(150)
    ]
    int_sets += [
        [k * 16 for k in range(12)],
        [k * 64 for k in range(10)],
        [k * 32 for k in range(40)],
    ]
    alphabet = ["a", "B", "é", "中", "\U0001f600", "\uffff", "z", "0"]
    strings = [
        (
            "".join(rnd.choices(alphabet, k=rnd.randint(0, 6))),
            "".join(rnd.choices(alphabet, k=rnd.randint(0, 6))),
        )
        for _ in range(300)
    ]
    requests = (
        [f"R {kind} {seed} {','.join(map(str, bounds))}" for kind, seed, bounds in random_cases]
        + [f"H {','.join(keys)}" for keys in rack_sets]
        + [f"I {','.join(map(str, keys))}" for keys in int_sets]
        + [f"T {a.encode().hex()} {b.encode().hex()}" for a, b in strings]
    )
    answers = iter(jvm(requests))
    refused = 0
    for kind, seed, bounds in random_cases:
        rng = JavaRandom(seed) if kind == "J" else MockRandom(seed)
        assert next(answers) == "OK " + "".join(f"{rng.next_int(b)}," for b in bounds)
    for keys in rack_sets:
        order = java_hashmap_order([None if k == "-" else k for k in keys])
        assert next(answers) == "OK " + ",".join("-" if k is None else k for k in order), keys
    for int_keys in int_sets:
        answer = next(answers)
        try:
            ours = java_hashmap_order(int_keys)
        except NotImplementedYet:
            # Only a tree bin may be refused: 9+ keys sharing low bits in a 64+ table.
            assert max(Counter(k % 64 for k in int_keys).values()) >= 9, int_keys
            refused += 1
            continue
        assert answer == "OK " + ",".join(map(str, ours)), int_keys
    assert refused == 1  # the multiples of 32
    for a, b in strings:
        assert next(answers) == f"OK {java_string_hash(a)},{java_compare_strings(a, b)}", (a, b)
