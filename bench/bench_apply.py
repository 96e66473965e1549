"""Wall time of a throttled `kreplica expand --yes` against the throttle's lower bound (prints,
no asserts).

Starts a private sandbox, writes a few hundred MB of incompressible records to an RF 1 topic,
then times `kreplica expand --rf 2 --yes --throttle RATE` (a subprocess, as an operator runs
it). Kafka's throttle is a rate per broker: each broker's leader side sends at most RATE and
each follower side fetches at most RATE, so the move cannot finish before

    max over brokers of max(bytes it sends, bytes it receives) / RATE

(bytes / RATE would hold only for a single broker pair). Printed next to the measured wall time
of the whole command and of the apply alone (journal start -> finish).

.venv/bin/python bench/bench_apply.py [--mode kraft|zk] [--brokers 3] [--mb 300]
                                      [--partitions 12] [--throttle 20MB/s]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

from kreplica.executor.throttles import parse_rate
from kreplica.sandbox import DEFAULT_KRAFT_VERSION, DEFAULT_ZK_VERSION
from kreplica.testing import TopicSpec, create_topics, running_cluster

TOPIC = "bench-apply"


def produce(bootstrap: str, total_bytes: int, record_bytes: int = 16 * 1024) -> float:
    """Incompressible records (slices of one random buffer), acks=all; returns seconds."""
    from confluent_kafka import Producer

    rng = random.Random(7)
    pool = rng.randbytes(4 * 1024 * 1024 + record_bytes)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 20,
            "compression.type": "none",
            "queue.buffering.max.kbytes": 262144,
        }
    )
    failures: list[str] = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    started = time.perf_counter()
    for i in range(total_bytes // record_bytes):
        offset = rng.randrange(0, len(pool) - record_bytes)
        while True:
            try:
                producer.produce(
                    TOPIC,
                    pool[offset : offset + record_bytes],
                    key=b"%d" % i,
                    on_delivery=delivered,
                )
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    if producer.flush(300) or failures:
        raise SystemExit(f"producing failed: {failures[:3]}")
    return time.perf_counter() - started


def kreplica(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "KREPLICA_POLL_INTERVAL": "0.5"}
    return subprocess.run(
        [sys.executable, "-m", "kreplica", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def _ts(event: dict[str, object]) -> float:
    return datetime.fromisoformat(str(event["ts"]).replace("Z", "+00:00")).timestamp()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["kraft", "zk"], default="kraft")
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--mb", type=int, default=300, help="MB (10^6 bytes) to write")
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--throttle", default="20MB/s")
    args = parser.parse_args()
    rate = parse_rate(args.throttle)
    version = DEFAULT_ZK_VERSION if args.mode == "zk" else DEFAULT_KRAFT_VERSION

    with tempfile.TemporaryDirectory(prefix="bench-apply-") as tmp:
        cwd = Path(tmp)
        t0 = time.perf_counter()
        with running_cluster(
            backend="sandbox",
            mode=args.mode,
            brokers=args.brokers,
            racks=("a", "b", "c"),
            kafka_version=version,
            name=f"bench-apply-{os.getpid()}",
        ) as info:
            print(
                f"sandbox: Kafka {info.kafka_version} {args.mode}, {args.brokers} brokers "
                f"(started in {time.perf_counter() - t0:.1f} s)"
            )
            source = ["--bootstrap-server", info.bootstrap_servers]
            create_topics(
                info.bootstrap_servers,
                [TopicSpec(TOPIC, partitions=args.partitions, replication_factor=1)],
            )
            seconds = produce(info.bootstrap_servers, args.mb * 1_000_000)
            print(f"produced {args.mb} MB to {args.partitions} partitions in {seconds:.1f} s")

            snap = kreplica(cwd, "snapshot", *source, "--topic", TOPIC)
            if snap.returncode:
                raise SystemExit(snap.stderr)
            parts = json.loads(snap.stdout)["topics"][0]["partitions"]
            size = {p["partition"]: int(p.get("size_bytes") or 0) for p in parts}

            started = time.perf_counter()
            # --rate-window 0: the topic is idle, and the figures stay comparable with those
            # before apply measured write rates (10 s before the journal's start)
            proc = kreplica(
                cwd, "expand", "-t", TOPIC, "--rf", "2", "--yes", "--out", "plan.json",
                "--throttle", args.throttle, "--rate-window", "0", *source,
            )  # fmt: skip
            wall = time.perf_counter() - started
            if proc.returncode:
                raise SystemExit(f"expand exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
            plan = json.loads((cwd / "plan.json").read_text())["partitions"]
            before = {p["partition"]: p["replicas"] for p in parts}
            sends: Counter[int] = Counter()
            receives: Counter[int] = Counter()
            for row in plan:
                pid = row["partition"]
                for broker in set(row["replicas"]) - set(before[pid]):
                    receives[broker] += size[pid]
                    sends[before[pid][0]] += size[pid]  # the leader serves the new follower
            copied = sum(receives.values())
            events = [
                json.loads(line) for line in (cwd / "plan.journal.jsonl").read_text().splitlines()
            ]
            start = next(e for e in events if e["event"] == "start")
            finish = next(e for e in events if e["event"] == "finish")
            apply_s = _ts(finish) - _ts(start)
            busiest = max([*sends.values(), *receives.values()])
            bound = busiest / rate
            print(f"throttle {args.throttle} = {rate} B/s per broker (leader and follower side)")
            print(f"bytes copied: {copied / 1e6:.1f} MB ({len(plan)} new replicas)")
            for broker in sorted(set(sends) | set(receives)):
                print(
                    f"  broker {broker}: sends {sends[broker] / 1e6:.1f} MB, "
                    f"receives {receives[broker] / 1e6:.1f} MB"
                )
            print(f"bytes / throttle (one broker pair): {copied / rate:.1f} s")
            print(f"lower bound (busiest broker / throttle): {bound:.1f} s")
            print(
                f"apply (journal start -> finish): {apply_s:.1f} s ({apply_s / bound:.2f}x bound)"
            )
            print(f"wall, whole `kreplica expand --yes`: {wall:.1f} s")
            print(f"effective rate: {copied / apply_s / 1e6:.1f} MB/s cluster-wide")
            print(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
