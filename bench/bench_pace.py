"""`--pace auto` beside a fixed throttle chosen as operators do (10 MB/s): wall time of the
apply, a probe producer's p99 while it runs, and for --pace auto the canary's own p99 and
baseline (prints, no asserts).

Starts a private sandbox, writes the same amount of incompressible records to two RF 1 topics
(one per run, so both copy the same data), and keeps a steady producer writing to a third
topic all along (the cluster's own traffic). Each run is `kreplica apply` of `expand --rf 2`
as an operator runs it; a probe producer (small acks=all records to every broker, not
kreplica's canary, so both runs are measured alike) records its latency during the apply.

.venv/bin/python bench/bench_pace.py [--mode kraft|zk] [--mb 200] [--partitions 12]
    [--fixed 10MB/s] [--min 5MB/s] [--max 100MB/s] [--interval 3]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bench_apply
from kreplica.executor.canary import canary_assignment
from kreplica.executor.pace import p99
from kreplica.sandbox import DEFAULT_KRAFT_VERSION, DEFAULT_ZK_VERSION
from kreplica.testing import TopicSpec, create_topics, running_cluster

QUIET = logging.getLogger("bench.pace.librdkafka")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False


class Probe(threading.Thread):
    """acks=all records of 100 bytes to each partition of `topic` every 100 ms; latencies."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Producer

        self.topic, self.partitions = topic, partitions
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "logger": QUIET}
        )
        self.latencies: list[float] = []
        self.failed = 0
        self.stop = threading.Event()
        self.recording = threading.Event()

    def _done(self, err: Any, sent: float) -> None:
        if not self.recording.is_set():
            return
        if err is not None:
            self.failed += 1
        else:
            self.latencies.append((time.monotonic() - sent) * 1000)

    def run(self) -> None:
        next_at = time.monotonic()
        while not self.stop.is_set():
            for p in range(self.partitions):
                sent = time.monotonic()
                self.producer.produce(
                    self.topic,
                    b"p" * 100,
                    partition=p,
                    on_delivery=lambda e, _m, s=sent: self._done(e, s),
                )
            next_at += 0.1
            while (left := next_at - time.monotonic()) > 0:
                self.producer.poll(left)
        self.producer.flush(10)


class Steady(threading.Thread):
    """The cluster's own traffic: about 200 KB/s of acks=all writes until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Producer

        self.topic = topic
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "logger": QUIET}
        )
        self.stop = threading.Event()

    def run(self) -> None:
        value = os.urandom(1000)
        while not self.stop.is_set():
            for _ in range(20):
                try:
                    self.producer.produce(self.topic, value)
                except BufferError:
                    break
            self.producer.poll(0.1)
        self.producer.flush(30)


def kreplica(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "KREPLICA_POLL_INTERVAL": "0.5"}
    return subprocess.run(
        [sys.executable, "-m", "kreplica", *args],
        cwd=cwd, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["kraft", "zk"], default="kraft")
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--fixed", default="10MB/s")
    parser.add_argument("--min", default="5MB/s")
    parser.add_argument("--max", default="100MB/s")
    parser.add_argument("--interval", default="3")
    args = parser.parse_args()
    version = DEFAULT_ZK_VERSION if args.mode == "zk" else DEFAULT_KRAFT_VERSION
    with tempfile.TemporaryDirectory(prefix="bench-pace-") as tmp:
        cwd = Path(tmp)
        with running_cluster(
            backend="sandbox", mode=args.mode, brokers=3, racks=("a", "b", "c"),
            kafka_version=version, name=f"bench-pace-{os.getpid()}",
        ) as info:  # fmt: skip
            bootstrap = info.bootstrap_servers
            source = ["--bootstrap-server", bootstrap]
            print(f"sandbox: Kafka {info.kafka_version} {args.mode}, 3 brokers")
            specs = [
                TopicSpec(name, partitions=args.partitions, replication_factor=1)
                for name in ("fixed", "paced")
            ] + [
                TopicSpec("traffic", partitions=6, replication_factor=3),
                TopicSpec("probe", assignment=dict(enumerate(canary_assignment([1, 2, 3])))),
            ]
            create_topics(bootstrap, specs)
            for name in ("fixed", "paced"):
                bench_apply.TOPIC = name
                bench_apply.produce(bootstrap, args.mb * 1_000_000)
            print(f"produced {args.mb} MB to each of fixed, paced ({args.partitions} partitions)")
            steady, probe = Steady(bootstrap, "traffic"), Probe(bootstrap, "probe", 3)
            steady.start()
            probe.start()
            time.sleep(3)
            probe.recording.set()
            time.sleep(5)
            idle = p99(probe.latencies)
            print(f"probe p99 before any move (steady traffic only): {idle:.1f} ms")
            rows = []
            for name, flags in (
                ("fixed", ["--throttle", args.fixed]),
                ("paced", ["--pace", "auto", "--throttle-min", args.min, "--throttle-max",
                           args.max, "--pace-interval", args.interval]),
            ):  # fmt: skip
                plan = f"{name}.json"
                made = kreplica(
                    cwd, "expand", "-t", name, "--rf", "2", "--dry-run", "--out", plan, *source
                )
                if made.returncode:
                    raise SystemExit(made.stderr)
                probe.latencies.clear()
                probe.failed = 0
                started = time.perf_counter()
                proc = kreplica(cwd, "apply", plan, *source, *flags, "--output", "json")
                wall = time.perf_counter() - started
                if proc.returncode:
                    raise SystemExit(f"apply exited {proc.returncode}: {proc.stderr[-2000:]}")
                data = json.loads(proc.stdout)["data"]
                pace = data.get("pace") or {}
                changes = pace.get("changes", 0)
                last = pace["final_rate"] / 1e6 if pace else None
                canary = (pace.get("canary_p99_ms"), pace.get("baseline_p99_ms"))
                rows.append((name, " ".join(flags), wall, p99(probe.latencies) or 0.0,
                             len(probe.latencies), probe.failed, changes, last,
                             canary))  # fmt: skip
            probe.stop.set()
            steady.stop.set()
            probe.join(15)
            steady.join(40)
    print()
    print(f"{'run':6} {'wall s':>7} {'probe p99 ms':>13} {'records':>8} {'failed':>6} "
          f"{'canary p99 ms':>13} {'baseline ms':>11} {'changes':>7} {'last MB/s':>9}  "
          "flags")  # fmt: skip
    for name, flags, wall, p, n, failed, changes, last, (canary, base) in rows:
        last_text = f"{last:.1f}" if last is not None else "-"
        canary_text = f"{canary:.1f}" if canary is not None else "-"
        base_text = f"{base:.1f}" if base is not None else "-"
        print(
            f"{name:6} {wall:7.1f} {p:13.1f} {n:8} {failed:6} {canary_text:>13} {base_text:>11} "
            f"{changes:7} {last_text:>9}  {flags}"
        )


if __name__ == "__main__":
    main()
