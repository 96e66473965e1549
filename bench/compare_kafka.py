"""kreplica side by side with Kafka's own code and tools, in one run (prints figures, no asserts).

    .venv/bin/python bench/compare_kafka.py [--only assign,generate,startup] [--quick]
                                            [--json-out FILE]

- assign: kreplica.kafka.assign_replicas against Kafka 3.9's AdminUtils.assignReplicasToBrokers
  (bench/java/AssignBench.java, compiled at run time into ~/.cache/kreplica/bench), same
  inputs, only the call timed on each side, outputs compared partition by partition.
- generate: a ZooKeeper-mode sandbox (6 brokers, racks a/b/c, 200 topics x 100 partitions at
  RF 2); `kreplica expand --rf 3 --dry-run --out F` end to end, through the AdminClient and (ZK
  mode) through `--zookeeper`, against `kafka-reassign-partitions --generate`, alternating:
  medians, ratios, the replicas each plan would copy for RF 2 -> 3, and a phase profile of one
  more kreplica run (start-up, read, plan, write, render). `--baseline DIR` also times the
  kreplica of another checkout (e.g. `git worktree add /tmp/base main`) in the same rotation.
  The sandbox is torn down unless `--sandbox NAME` named one that was already running.
- startup: `kreplica --help` against `python -c pass` (bench/bench_startup.py's measure()).

bench/bench_scale.py --with-kafka imports compare_assign, compare_generate and compare_startup:
each returns flat JSON-serialisable dict rows (keys in bench/README.md) and prints only with
verbose=True. Needs a JDK 17 (java, javac) and Maven for the jars (`python -m kreplica.sandbox
fetch`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
JAVA_SOURCES = BENCH / "java"
for _path in (str(REPO), str(BENCH)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from kreplica.kafka import JavaRandom, assign_replicas  # noqa: E402
from kreplica.sandbox.jars import (  # noqa: E402
    DEFAULT_ZK_VERSION,
    SandboxError,
    cache_dir,
    default_version,
    fetch,
    java_binary,
)

Row = dict[str, Any]
KREPLICA_CLI = [sys.executable, "-m", "kreplica"]
# One heap size for every AssignBench run: a growing heap adds noise to the timed calls.
ASSIGN_JVM = ["-Xms2g", "-Xmx2g", "-XX:+UseParallelGC"]
TARGET_PLACEMENTS_PER_S = 1_000_000
BROKER_HEAP = ["-Xms256m", "-Xmx1g"]


def _log(verbose: bool, text: str) -> None:
    if verbose:
        print(text, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- the Java driver


def compile_driver(main_class: str, kafka_version: str = DEFAULT_ZK_VERSION) -> tuple[str, str]:
    """Compile bench/java/MAIN_CLASS.java against Kafka `kafka_version`'s jars (once per source
    and version, into $KREPLICA_CACHE/bench, never into the repository); returns the directory
    of the class files and Kafka's classpath."""
    if shutil.which("javac") is None:
        raise SandboxError("javac is not on PATH: install a JDK 17+ (e.g. openjdk-17-jdk-headless)")
    classpath = fetch(kafka_version)
    source = JAVA_SOURCES / f"{main_class}.java"
    digest = hashlib.sha256(source.read_bytes() + kafka_version.encode()).hexdigest()[:12]
    out = cache_dir() / "bench" / f"{main_class}-{kafka_version}-{digest}"
    if not (out / f"{main_class}.class").exists():
        tmp = Path(tempfile.mkdtemp(prefix=f"{main_class}-", dir=out.parent.parent))
        done = subprocess.run(
            ["javac", "-nowarn", "-cp", classpath, "-d", str(tmp), str(source)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise SandboxError(f"javac {source.name} failed: {done.stderr.strip()[-1500:]}")
        out.parent.mkdir(parents=True, exist_ok=True)
        try:
            tmp.rename(out)
        except OSError:  # compiled by a concurrent run meanwhile
            shutil.rmtree(tmp, ignore_errors=True)
    return str(out), classpath


def _brokers_and_racks(n_brokers: int, n_racks: int) -> tuple[list[int], dict[int, str | None]]:
    """Brokers 1..N; broker i on rack r{(i-1) % racks} (as AssignBench.java builds them)."""
    brokers = list(range(1, n_brokers + 1))
    return brokers, {b: (f"r{(b - 1) % n_racks}" if n_racks else None) for b in brokers}


def _flat(result: Mapping[int, Sequence[int]]) -> bytes:
    """partition, replicas... in partition order, as little-endian int32 (AssignBench's file)."""
    ints = array("i")
    for partition in sorted(result):
        ints.append(partition)
        ints.extend(result[partition])
    if sys.byteorder != "little":
        ints.byteswap()
    return ints.tobytes()


def _kafka_assign(
    driver: tuple[str, str],
    n_brokers: int,
    n_racks: int,
    n_partitions: int,
    rf: int,
    fixed_start: int,
    warmup_partitions: int,
    repeats: int,
    out_file: Path,
) -> dict[str, str]:
    classes, classpath = driver
    cmd = [
        java_binary(),
        *ASSIGN_JVM,
        "-cp",
        f"{classes}{os.pathsep}{classpath}",
        "AssignBench",
        *map(str, (n_brokers, n_racks, n_partitions, rf, fixed_start)),
        str(warmup_partitions),
        str(repeats),
        str(out_file),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=1800)
    if done.returncode != 0:
        raise SandboxError(f"AssignBench failed: {done.stderr.strip()[-1500:]}")
    line = done.stdout.strip().splitlines()[-1]
    return dict(item.split("=", 1) for item in line.split())


def compare_assign(
    *,
    brokers: Iterable[int] = (6, 50, 500),
    racks: Iterable[int] = (0, 3, 6),
    partitions: Iterable[int] = (10_000, 100_000, 1_000_000),
    rf: int = 3,
    fixed_start: int = 0,
    repeats: int = 5,
    warmup_partitions: int = 2_000_000,
    kafka_version: str = DEFAULT_ZK_VERSION,
    verbose: bool = False,
) -> list[Row]:
    """One row per (brokers, racks, partitions): kreplica.kafka.assign_replicas against
    AdminUtils.assignReplicasToBrokers with the same brokers, racks, RF and fixed start index.

    kreplica: cold is the first call in this process, warm the median of up to `repeats`
    more calls (fewer for big calls: about 2M partitions in all). Kafka: cold is the first
    call in a fresh JVM, warm the median of `repeats` calls after warm-up calls totalling
    `warmup_partitions` partitions (JIT compiled by then). `identical` is True only when both
    sides gave the same replicas for every partition (and Kafka's warm calls equalled its cold
    one)."""
    driver = compile_driver("AssignBench", kafka_version)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="kreplica-assign-") as tmp:
        out_file = Path(tmp) / "kafka.bin"
        for n_partitions in partitions:
            for n_brokers in brokers:
                for n_racks in racks:
                    if rf > n_brokers or n_racks > n_brokers:
                        continue
                    row = _assign_row(
                        driver,
                        n_brokers,
                        n_racks,
                        n_partitions,
                        rf,
                        fixed_start,
                        repeats,
                        warmup_partitions,
                        out_file,
                    )
                    row["kafka_version"] = kafka_version
                    rows.append(row)
                    _log(verbose, _assign_line(row))
    return rows


def _assign_row(
    driver: tuple[str, str],
    n_brokers: int,
    n_racks: int,
    n_partitions: int,
    rf: int,
    fixed_start: int,
    repeats: int,
    warmup_partitions: int,
    out_file: Path,
) -> Row:
    broker_ids, rack_of = _brokers_and_racks(n_brokers, n_racks)

    def ours() -> tuple[float, dict[int, list[int]]]:
        start = time.perf_counter()
        result = assign_replicas(
            broker_ids, n_partitions, rf, racks=rack_of, fixed_start_index=fixed_start
        )
        return time.perf_counter() - start, result

    cold, result = ours()
    our_bytes = _flat(result)
    del result
    warm = [ours()[0] for _ in range(max(1, min(repeats, 2_000_000 // n_partitions)))]

    kafka = _kafka_assign(
        driver,
        n_brokers,
        n_racks,
        n_partitions,
        rf,
        fixed_start,
        warmup_partitions,
        repeats,
        out_file,
    )
    kafka_warm = [int(ns) / 1e9 for ns in kafka["warm_ns"].split(",")]
    identical = kafka["same"] == "true" and out_file.read_bytes() == our_bytes
    placements = n_partitions * rf
    ours_warm, kafka_median = statistics.median(warm), statistics.median(kafka_warm)
    return {
        "bench": "assign",
        "brokers": n_brokers,
        "racks": n_racks,
        "partitions": n_partitions,
        "rf": rf,
        "fixed_start_index": fixed_start,
        "identical": identical,
        "kreplica_cold_s": round(cold, 6),
        "kreplica_warm_s": round(ours_warm, 6),
        "kreplica_best_s": round(min(warm), 6),
        "kreplica_warm_runs": len(warm),
        "kreplica_placements_per_s": round(placements / ours_warm),
        "kreplica_meets_1m_per_s": placements / ours_warm >= TARGET_PLACEMENTS_PER_S,
        "kafka_class_init_s": round(int(kafka["class_init_ns"]) / 1e9, 6),
        "kafka_cold_s": round(int(kafka["cold_ns"]) / 1e9, 6),
        "kafka_warm_s": round(kafka_median, 6),
        "kafka_best_s": round(min(kafka_warm), 6),
        "kafka_warmup_calls": int(kafka["warmups"]),
        "kafka_warm_runs": len(kafka_warm),
        "kafka_placements_per_s": round(placements / kafka_median),
        "warm_ratio": round(ours_warm / kafka_median, 2),
        "java_version": kafka["java"],
        "loadavg_1m": round(os.getloadavg()[0], 1),
    }


def _assign_line(row: Row) -> str:
    flag = "" if row["identical"] else "   <-- OUTPUTS DIFFER"
    return (
        f"assign {row['brokers']:>4} brokers {row['racks']} racks {row['partitions']:>9,} "
        f"partitions: kreplica {row['kreplica_warm_s']:.3f} s, Kafka warm "
        f"{row['kafka_warm_s']:.3f} s cold {row['kafka_cold_s']:.3f} s, "
        f"identical={row['identical']}{flag}"
    )


# --------------------------------------------------------------------------- generate


Assignment = dict[tuple[str, int], list[int]]


def _assignment(doc: Mapping[str, Any]) -> Assignment:
    return {(p["topic"], int(p["partition"])): list(p["replicas"]) for p in doc["partitions"]}


def _generate_output(text: str) -> tuple[Assignment, Assignment]:
    """(current, proposed) from kafka-reassign-partitions --generate's output."""
    docs: dict[str, Assignment] = {}
    label = ""
    for line in text.splitlines():
        if line.startswith("Current partition replica assignment"):
            label = "current"
        elif line.startswith("Proposed partition reassignment configuration"):
            label = "proposed"
        elif line.startswith("{") and label:
            docs[label] = _assignment(json.loads(line))
            label = ""
    if set(docs) != {"current", "proposed"}:
        raise SandboxError(f"unexpected kafka-reassign-partitions output: {text[-1500:]}")
    return docs["current"], docs["proposed"]


def _copies(current: Assignment, target: Assignment) -> tuple[int, int, int]:
    """(replicas copied: in target but not on the partition now, existing replicas dropped,
    preferred leaders changed) over the partitions in `target`."""
    copied = dropped = leaders = 0
    for key, replicas in target.items():
        now = set(current[key])
        copied += len(set(replicas) - now)
        dropped += len(now - set(replicas))
        leaders += replicas[0] != current[key][0]
    return copied, dropped, leaders


def _timed(
    cmd: Sequence[str],
    *,
    timeout: float = 900,
    cwd: Path = REPO,
    env: Mapping[str, str] | None = None,
) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(
        cmd, capture_output=True, text=True, check=False, timeout=timeout, cwd=cwd, env=env
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SandboxError(
            f"{' '.join(cmd[:4])} ... exited {done.returncode}: "
            f"{(done.stderr or done.stdout).strip()[-1500:]}"
        )
    return elapsed, done.stdout


def compare_generate(
    *,
    brokers: int = 6,
    racks: Sequence[str] = ("a", "b", "c"),
    topics: int = 200,
    partitions_per_topic: int = 100,
    rf: int = 2,
    runs: int = 3,
    batch_topics: int = 10,
    mode: str = "zk",
    kafka_version: str | None = None,
    name: str | None = None,
    baseline: Path | None = None,
    verbose: bool = False,
) -> list[Row]:
    """Start a sandbox (`mode` zk: Kafka 3.9 with ZooKeeper; kraft: Kafka 4.x) with `topics` x
    `partitions_per_topic` partitions at RF `rf`, then time `kreplica expand --rf rf+1 --dry-run
    --out F` (the CLI process) and `kafka-reassign-partitions --generate` (the JVM) for the same
    topics and brokers, `runs` times each, alternating; count the replicas each way copies for
    RF+1. One row; the sandbox is stopped even on error or Ctrl-C, unless `name` is a sandbox
    that was running already (it is reused, topics it lacks are created, and it is left up).
    `baseline`: a checkout whose kreplica is timed too (the before of a change)."""
    from kreplica import sandbox
    from kreplica.sandbox import procs as sandbox_procs

    sandbox.reap_orphans("bench-compare-")
    kafka_version = kafka_version or default_version(mode)
    existing = sandbox.status(name) if name else None
    name = name or f"bench-compare-{os.getpid()}"
    names = [f"bench-t{i:04d}" for i in range(topics)]
    broker_ids = list(range(1, brokers + 1))
    row: Row = {
        "bench": "generate",
        "mode": mode,
        "kafka_version": kafka_version,
        "brokers": brokers,
        "racks": len(racks),
        "topics": topics,
        "partitions": topics * partitions_per_topic,
        "rf_from": rf,
        "rf_to": rf + 1,
    }
    start = time.perf_counter()
    # The sandbox's broker heap (384 MB) is sized for test clusters; ~7,000 replicas a broker
    # get BROKER_HEAP (the sandbox has no option for it: its module default is swapped for the
    # duration of up()).
    heap = sandbox_procs.BROKER_HEAP
    saved = list(heap)
    try:
        heap[:] = BROKER_HEAP
        try:
            info = existing or sandbox.up(
                mode=mode,
                brokers=brokers,
                racks=racks,
                name=name,
                kafka_version=kafka_version,
                timeout_s=600,
            )
        finally:
            heap[:] = saved
        row["kafka_version"] = info.kafka_version if existing else kafka_version
        row["sandbox_up_s"] = round(time.perf_counter() - start, 1)
        _log(verbose, f"generate: sandbox {name} up in {row['sandbox_up_s']} s")
        start = time.perf_counter()
        present = _existing_topics(info.bootstrap_servers) if existing else set()
        missing = [t for t in names if t not in present]
        for first in range(0, len(missing), batch_topics):
            _create_batch(
                info.bootstrap_servers,
                missing[first : first + batch_topics],
                partitions_per_topic,
                rf,
            )
            _log(verbose, f"generate: {min(topics, first + batch_topics)} topics created")
        row["create_topics_s"] = round(time.perf_counter() - start, 1)
        row.update(
            _generate_runs(
                name,
                info.bootstrap_servers,
                info.zookeeper,
                names,
                broker_ids,
                rf,
                runs,
                baseline,
                verbose,
            )
        )
    finally:
        if existing is None:
            sandbox.down(name)
            _log(verbose, f"generate: sandbox {name} down")
    return [row]


def _existing_topics(bootstrap: str) -> set[str]:
    from confluent_kafka.admin import AdminClient

    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=60).topics)


def _create_batch(bootstrap: str, names: list[str], partitions: int, rf: int) -> None:
    """Create the topics (Kafka places them) and wait for their leaders. On a busy machine a
    CreateTopics request can time out while the controller still creates the topic: failed
    topics are re-sent (up to 5 times), and "already exists" counts as created."""
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient, NewTopic

    from kreplica.testing import wait_for_leaders

    admin = AdminClient({"bootstrap.servers": bootstrap})
    todo = list(names)
    for attempt in range(1, 6):
        futures = admin.create_topics(
            [NewTopic(t, num_partitions=partitions, replication_factor=rf) for t in todo],
            operation_timeout=120,
            request_timeout=180,
        )
        failed: list[str] = []
        errors: list[str] = []
        for topic, future in futures.items():
            try:
                future.result(timeout=300)
            except Exception as exc:
                error = exc.args[0] if exc.args else None
                if (
                    isinstance(error, KafkaError)
                    and error.code() == KafkaError.TOPIC_ALREADY_EXISTS
                ):
                    continue
                failed.append(topic)
                errors.append(f"{topic}: {exc}")
        if not failed:
            break
        if attempt == 5:
            raise SandboxError(f"could not create {len(failed)} topics: {errors[:3]}")
        time.sleep(5)
        todo = failed
    wait_for_leaders(bootstrap, dict.fromkeys(names, partitions), timeout_s=900)


def _kreplica_env() -> dict[str, str]:
    """The environment of a timed kreplica process: bytecode caching on (as an installed
    package has it; a development shell may turn it off, and compiling every module again
    costs each run half a second)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPATH", None)  # `-m kreplica` from cwd: the checkout's own package
    return env


def _generate_runs(
    name: str,
    bootstrap: str,
    zookeeper: str | None,
    names: list[str],
    broker_ids: list[int],
    rf: int,
    runs: int,
    baseline: Path | None,
    verbose: bool,
) -> Row:
    from kreplica.sandbox import tool_command

    with tempfile.TemporaryDirectory(prefix="kreplica-generate-") as tmp:
        topics_json = Path(tmp) / "topics.json"
        topics_json.write_text(json.dumps({"version": 1, "topics": [{"topic": t} for t in names]}))
        kafka_cmd = tool_command(
            name,
            "kafka-reassign-partitions",
            [
                "--generate",
                "--topics-to-move-json-file",
                str(topics_json),
                "--broker-list",
                ",".join(map(str, broker_ids)),
            ],
        )
        # Kafka's tool as an operator runs it: without the sandbox's class archive (cds.py)
        kafka_cmd = [a for a in kafka_cmd if not a.startswith("-XX:SharedArchiveFile=")]
        plan = Path(tmp) / "plan.json"

        def expand(source: list[str], out: Path) -> list[str]:
            return [
                "expand",
                *(arg for t in names for arg in ("-t", t)),
                "--rf",
                str(rf + 1),
                *source,
                "--timeout",
                "300",
                "--dry-run",
                "--out",
                str(out),
                "--force-out",
            ]

        sources = {"kreplica": ["--bootstrap-server", bootstrap]}
        if zookeeper:
            sources["kreplica_zk"] = ["--zookeeper", zookeeper]
        # label -> (command, cwd): ours from this checkout, the baseline's from its own
        commands: dict[str, tuple[list[str], Path]] = {}
        for label, source in sources.items():
            out = plan if label == "kreplica" else Path(tmp) / f"{label}.json"
            commands[label] = ([*KREPLICA_CLI, *expand(source, out)], REPO)
            if baseline is not None:
                base_out = Path(tmp) / f"base_{label}.json"
                commands[f"base_{label}"] = ([*KREPLICA_CLI, *expand(source, base_out)], baseline)
        env = _kreplica_env()
        for cmd, cwd in commands.values():  # untimed: bytecode written, files cached
            _timed(cmd, cwd=cwd, env=env)
        times: dict[str, list[float]] = {label: [] for label in ("kafka", *commands)}
        kafka_out = ""
        retries = 0
        for run in range(runs):
            wall, kafka_out = _timed(kafka_cmd)
            times["kafka"].append(wall)
            for label, (cmd, cwd) in commands.items():
                try:
                    wall = _timed(cmd, cwd=cwd, env=env)[0]
                except SandboxError as exc:
                    # On an overloaded machine a broker's ZooKeeper session can lapse for a
                    # moment (kreplica then refuses to plan around a dead broker): once more.
                    _log(verbose, f"generate: {label} failed, retried in 10 s: {str(exc)[:200]}")
                    retries += 1
                    time.sleep(10)
                    try:
                        wall = _timed(cmd, cwd=cwd, env=env)[0]
                    except SandboxError as again:
                        _log(verbose, f"generate: {label} failed again, run left out: {again}")
                        continue
                times[label].append(wall)
            _log(
                verbose,
                f"generate run {run + 1}: "
                + ", ".join(f"{label} {t[-1]:.2f} s" for label, t in times.items()),
            )
        phase_args = expand(sources["kreplica"], Path(tmp) / "phases.json")
        try:
            phases = _phase_profile(phase_args, env)
        except SandboxError:  # as above: once more after a lapsed broker session
            time.sleep(10)
            phases = _phase_profile(phase_args, env)
        _log(verbose, "generate phases: " + ", ".join(f"{k} {v:.2f} s" for k, v in phases.items()))
        current, proposed = _generate_output(kafka_out)
        ours = _assignment(json.loads(plan.read_text()))
        same_zk = (
            _assignment(json.loads((Path(tmp) / "kreplica_zk.json").read_text())) == ours
            if zookeeper
            else None
        )

    n_partitions = len(current)
    # Kafka's tool keeps RF: its proposal re-places every partition from scratch at RF `rf`.
    # To reach rf+1 the user then adds one replica per partition; we count the cheapest
    # choice (a broker the proposal dropped, when there is one), so each partition copies
    # max(1, replicas of the proposal not already on it).
    prop_copied, prop_dropped, prop_leaders = _copies(current, proposed)
    plus_one = sum(
        max(1, len(set(proposed[key]) - set(replicas))) for key, replicas in current.items()
    )
    # The other reading: Kafka's own placement at rf+1 from scratch (assignReplicasToBrokers,
    # rack-aware, random start per topic as the tool draws it; kreplica.kafka.assign_replicas
    # is bit-identical to it, see tests/unit/test_kafka_jvm.py).
    racks = _sandbox_racks(name)
    rng = JavaRandom(20261123)
    scratch: Assignment = {}
    counts = Counter(topic for topic, _ in current)
    for topic in names:
        for p, replicas in assign_replicas(
            broker_ids, counts[topic], rf + 1, racks=racks, rng=rng
        ).items():
            scratch[(topic, p)] = replicas
    scratch_copied, scratch_dropped, scratch_leaders = _copies(current, scratch)
    ours_copied, ours_dropped, ours_leaders = _copies(current, ours)
    unchanged = n_partitions - len(ours)  # partitions kreplica leaves out of the plan
    kafka_median = statistics.median(times["kafka"])
    walls: Row = {}
    for label, samples in times.items():
        if not samples:
            continue
        key = "kafka_generate" if label == "kafka" else label
        walls[f"{key}_wall_s"] = round(statistics.median(samples), 3)
        walls[f"{key}_best_s"] = round(min(samples), 3)
        if label != "kafka":
            ratio_key = "wall_ratio" if label == "kreplica" else f"{label}_wall_ratio"
            walls[ratio_key] = round(statistics.median(samples) / kafka_median, 2)
    return {
        "partitions_seen": n_partitions,
        "runs": runs,
        **walls,
        "kreplica_zk_same_plan": same_zk,
        "kreplica_retries": retries,
        **{f"phase_{k}_s": round(v, 3) for k, v in phases.items()},
        "loadavg_1m": round(os.getloadavg()[0], 1),
        "lower_bound_copies": n_partitions,
        "kreplica_copies": ours_copied,
        "kreplica_existing_moved": ours_dropped,
        "kreplica_leaders_changed": ours_leaders,
        "kreplica_partitions_unchanged": unchanged,
        "kafka_generate_copies_rf_same": prop_copied,
        "kafka_generate_existing_moved": prop_dropped,
        "kafka_generate_leaders_changed": prop_leaders,
        "kafka_generate_plus_one_copies": plus_one,
        "kafka_scratch_rf_plus_one_copies": scratch_copied,
        "kafka_scratch_existing_moved": scratch_dropped,
        "kafka_scratch_leaders_changed": scratch_leaders,
        "copies_ratio_generate_plus_one": round(plus_one / max(1, ours_copied), 2),
        "copies_ratio_scratch": round(scratch_copied / max(1, ours_copied), 2),
    }


# One kreplica CLI run with its steps timed, in a fresh process (`python -c` this, then the
# file for the figures, then the CLI's arguments): wrappers around the functions the command
# calls. python (interpreter start-up) is the parent's wall time minus the child's own.
PHASE_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
phases = {}
def timed(module, name, label):
    inner = getattr(module, name)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            phases[label] = phases.get(label, 0.0) + time.perf_counter() - start
    setattr(module, name, wrapper)
import kreplica.cli.commands as commands
import kreplica.cli.present as present
import kreplica.planner as planner
phases["imports"] = time.perf_counter() - t0
timed(commands, "read_cluster", "read")
timed(planner, "make_plan", "plan")
timed(present, "write_plan_files", "write")
timed(commands, "rf_change", "command")
from kreplica.cli.app import run
code = run(sys.argv[2:])
phases["total"] = time.perf_counter() - t0
with open(sys.argv[1], "w") as out:
    json.dump({"code": code, **phases}, out)
"""


def _phase_profile(args: Sequence[str], env: Mapping[str, str]) -> dict[str, float]:
    """Seconds per step of one `kreplica ARGS` run: python (interpreter start), imports (the
    CLI commands and planner modules), cli (typer: building the app, parsing), read (the
    cluster), plan, write (--out files), render (the rest of the command: checks, the table)."""
    with tempfile.TemporaryDirectory(prefix="kreplica-phases-") as tmp:
        figures = Path(tmp) / "phases.json"
        wall, _ = _timed([sys.executable, "-c", PHASE_CHILD, str(figures), *args], env=env)
        got = json.loads(figures.read_text())
    if got.get("code"):
        raise SandboxError(f"the profiled kreplica run exited {got['code']}")
    command = got["command"]
    return {
        "python": wall - got["total"],
        "imports": got["imports"],
        "cli": got["total"] - got["imports"] - command,
        "read": got["read"],
        "plan": got["plan"],
        "write": got.get("write", 0.0),
        "render": command - got["read"] - got["plan"] - got.get("write", 0.0),
    }


def _sandbox_racks(name: str) -> dict[int, str | None]:
    from kreplica.sandbox import status

    info = status(name)
    if info is None:
        raise SandboxError(f"sandbox {name} stopped during the bench")
    return {b.id: b.rack for b in info.brokers}


# --------------------------------------------------------------------------- startup


def compare_startup(*, runs: int = 20, verbose: bool = False) -> list[Row]:
    """`kreplica --help` (and `python -c pass`, `import kreplica.cli`, a demo dry run) as fresh
    processes, `runs` times each after one untimed run: median and best wall time."""
    import bench_startup

    names = list(bench_startup.COMMANDS)
    results = bench_startup.measure(runs, names)
    base = statistics.median(results["python -c pass"])
    rows = []
    for command, samples in results.items():
        median = statistics.median(samples)
        rows.append(
            {
                "bench": "startup",
                "command": command,
                "runs": runs,
                "median_s": round(median, 4),
                "best_s": round(min(samples), 4),
                "over_python_s": round(median - base, 4),
                "loadavg_1m": round(os.getloadavg()[0], 1),
            }
        )
        _log(verbose, f"startup {command}: {median * 1000:.0f} ms")
    return rows


# --------------------------------------------------------------------------- table + main


def _table(rows: list[Row], columns: list[tuple[str, str]]) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, bool):
            return "yes" if value else "NO"
        if isinstance(value, float):
            return f"{value:.3f}" if value < 100 else f"{value:,.0f}"
        if isinstance(value, int):
            return f"{value:,}"
        return str(value)

    body = [[cell(r.get(key, "")) for key, _ in columns] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, (_, h) in enumerate(columns)]
    # Text columns to the left, numbers to the right: a Markdown table as it stands.
    left = [all(isinstance(r.get(key), str) for r in rows) for key, _ in columns]
    just = [str.ljust if is_left else str.rjust for is_left in left]

    def line(cells: list[str]) -> str:
        padded = (j(c, w) for j, c, w in zip(just, cells, widths, strict=True))
        return "| " + " | ".join(padded) + " |"

    rule = (
        "|"
        + "|".join(
            ("-" * (w + 1) + ":" if not lf else ":" + "-" * (w + 1))
            for w, lf in zip(widths, left, strict=True)
        )
        + "|"
    )
    return "\n".join([line([h for _, h in columns]), rule, *(line(b) for b in body)])


ASSIGN_COLUMNS = [
    ("brokers", "brokers"),
    ("racks", "racks"),
    ("partitions", "partitions"),
    ("kreplica_cold_s", "kreplica cold s"),
    ("kreplica_warm_s", "kreplica warm s"),
    ("kreplica_placements_per_s", "kreplica placements/s"),
    ("kafka_cold_s", "Kafka cold s"),
    ("kafka_warm_s", "Kafka warm s"),
    ("kafka_placements_per_s", "Kafka placements/s"),
    ("warm_ratio", "kreplica/Kafka"),
    ("identical", "identical"),
]
PHASES = ("python", "imports", "cli", "read", "plan", "write", "render")
GENERATE_COLUMNS = [
    ("mode", "mode"),
    ("kafka_version", "Kafka"),
    ("partitions", "partitions"),
    ("kreplica_wall_s", "kreplica expand s"),
    ("kreplica_zk_wall_s", "with --zookeeper s"),
    ("kafka_generate_wall_s", "Kafka --generate s"),
    ("wall_ratio", "ratio"),
    ("kreplica_zk_wall_ratio", "--zookeeper ratio"),
    ("base_kreplica_wall_s", "baseline s"),
    ("base_kreplica_zk_wall_s", "baseline --zookeeper s"),
    ("loadavg_1m", "load"),
    ("lower_bound_copies", "lower bound"),
    ("kreplica_copies", "kreplica copies"),
    ("kreplica_existing_moved", "kreplica moved"),
    ("kafka_generate_plus_one_copies", "Kafka generate+1 copies"),
    ("kafka_generate_existing_moved", "Kafka generate moved"),
    ("kafka_scratch_rf_plus_one_copies", "Kafka RF3 scratch copies"),
    ("kafka_scratch_existing_moved", "Kafka scratch moved"),
]
GENERATE_PHASE_COLUMNS = [
    ("mode", "mode"),
    *((f"phase_{p}_s", f"{p} s") for p in PHASES),
]
STARTUP_COLUMNS = [
    ("command", "command"),
    ("median_s", "median s"),
    ("best_s", "best s"),
    ("over_python_s", "over python s"),
]


def print_tables(rows: list[Row]) -> None:
    for bench, title, columns in (
        ("assign", "assign_replicas vs AdminUtils.assignReplicasToBrokers (RF 3)", ASSIGN_COLUMNS),
        ("generate", "kreplica expand vs kafka-reassign-partitions --generate", GENERATE_COLUMNS),
        ("generate", "kreplica expand (AdminClient), one run by phase", GENERATE_PHASE_COLUMNS),
        ("startup", "start-up", STARTUP_COLUMNS),
    ):
        selected = [r for r in rows if r["bench"] == bench]
        if selected:
            print(f"\n## {title}\n")
            print(_table(selected, columns))
    differ = [r for r in rows if r["bench"] == "assign" and not r["identical"]]
    if differ:
        print(f"\nBUG: {len(differ)} assign rows differ from Kafka's AdminUtils output", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="assign,generate,startup", help="comma-separated")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--json-out", type=Path, help="write the rows here as JSON")
    parser.add_argument("--brokers", default="6,50,500")
    parser.add_argument("--racks", default="0,3,6")
    parser.add_argument("--partitions", default="10000,100000,1000000")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--topics", type=int, default=200)
    parser.add_argument("--partitions-per-topic", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3, help="timed runs per generate side")
    parser.add_argument("--modes", default="zk", help="generate's sandboxes: zk, kraft or zk,kraft")
    parser.add_argument(
        "--sandbox", help="generate: reuse this running sandbox (left running), else start one"
    )
    parser.add_argument(
        "--baseline", type=Path, help="generate: also time the kreplica of this checkout"
    )
    parser.add_argument("--startup-runs", type=int, default=20)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument(
        "--tables-from", type=Path, nargs="+", help="only print the tables of earlier --json-out"
    )
    args = parser.parse_args()
    if args.tables_from:
        print_tables([row for path in args.tables_from for row in json.loads(path.read_text())])
        return
    only = set(args.only.split(","))

    def ints(text: str) -> list[int]:
        return [int(x) for x in text.split(",") if x]

    if args.quick:
        args.partitions, args.brokers = "10000,100000", "6,500"
        args.topics, args.partitions_per_topic, args.runs, args.startup_runs = 10, 100, 1, 5

    # SIGTERM would skip the finally that stops the sandbox: make it an exception.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    verbose = not args.quiet
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, python "
        f"{platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    rows: list[Row] = []
    if "assign" in only:
        rows += compare_assign(
            brokers=ints(args.brokers),
            racks=ints(args.racks),
            partitions=ints(args.partitions),
            repeats=args.repeats,
            verbose=verbose,
        )
    if "generate" in only:
        for mode in args.modes.split(","):
            rows += compare_generate(
                topics=args.topics,
                partitions_per_topic=args.partitions_per_topic,
                runs=args.runs,
                mode=mode,
                name=args.sandbox,
                baseline=args.baseline,
                verbose=verbose,
            )
    if "startup" in only:
        rows += compare_startup(runs=args.startup_runs, verbose=verbose)
    print_tables(rows)
    if args.json_out:
        args.json_out.write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")
        print(f"\nwrote {args.json_out}")
    if any(r["bench"] == "assign" and not r["identical"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
