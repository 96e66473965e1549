"""JBOD on the shared clusters (Kafka 3.9 ZooKeeper mode and Kafka 4.x KRaft, 2 log dirs per
broker, see conftest.py): the disk figures kreplica reads, `drain-dir` under an acks=all
producer, `balance-dirs`, and `--log-dirs balanced` placing new replicas in the named dir.

Every test works on topics of its own; drain-dir and balance-dirs move other topics' replicas
between the dirs of one broker too (that is what emptying a dir means) but never between
brokers, so the shared topics keep their assignment."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kreplica.sandbox import SandboxInfo
from kreplica.testing import TopicSpec, create_topics
from tests.integration.conftest import produce
from tests.integration.test_apply import LoadProducer, consume_all
from tests.support.cli import run_kreplica
from tests.support.groups import per_mode

ALTER_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"


@pytest.fixture(params=per_mode("cluster"))
def info(request: pytest.FixtureRequest) -> Iterator[SandboxInfo]:
    yield request.getfixturevalue(f"{request.param}_cluster")


def _kreplica(cwd: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {"KREPLICA_POLL_INTERVAL": "0.3", "KREPLICA_STATE_DIR": str(cwd / "state")}
    return run_kreplica(*args, cwd=cwd, env=env, columns=160, timeout=timeout)


def _ok(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    data: dict[str, Any] = json.loads(proc.stdout)["data"]
    return data


def _log_dirs(info: SandboxInfo) -> list[dict[str, Any]]:
    """kafka-python's DescribeLogDirs answer of every broker (a fresh client each time)."""
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=info.bootstrap_servers)
    try:
        answer: list[dict[str, Any]] = admin.describe_log_dirs()
        return answer
    finally:
        admin.close()


def _placement(info: SandboxInfo) -> dict[tuple[str, int, int], tuple[str, bool]]:
    """(topic, partition, broker) -> (its dir, is a future log), every replica of the cluster."""
    out: dict[tuple[str, int, int], tuple[str, bool]] = {}
    for broker in _log_dirs(info):
        for d in broker["log_dirs"]:
            for t in d["topics"]:
                for p in t["partitions"]:
                    key = (t["name"], p["partition_index"], int(broker["broker"]))
                    if p["is_future_key"] or key not in out:
                        out[key] = (d["log_dir"], bool(p["is_future_key"]))
    return out


def _broker_rate(info: SandboxInfo, broker: int) -> str | None:
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType

    admin = AdminClient({"bootstrap.servers": info.bootstrap_servers})
    resource = ConfigResource(ResourceType.BROKER, str(broker))
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    entry = entries.get(ALTER_DIRS_RATE)
    if entry is None or entry.source == ConfigSource.DEFAULT_CONFIG.value:
        return None
    return str(entry.value)


# --------------------------------------------------------------------------- disk figures


def test_disk_figures_agree_with_statvfs(info: SandboxInfo) -> None:
    from kreplica.sources import open_source

    with open_source(bootstrap_server=info.bootstrap_servers, timeout_s=30) as source:
        snap = source.snapshot()
    seen = 0
    for broker in snap.brokers:
        sandbox_dirs = next(b.log_dirs for b in info.brokers if b.id == broker.id)
        assert broker.disks is not None and len(broker.disks) == 2
        assert sorted(d.path for d in broker.disks) == sorted(sandbox_dirs)
        for disk in broker.disks:
            st = os.statvfs(disk.path)
            total, usable = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
            assert disk.total_bytes is not None and disk.usable_bytes is not None
            assert abs(disk.total_bytes - total) <= 0.01 * total, (disk, total)
            assert abs(disk.usable_bytes - usable) <= 0.01 * usable, (disk, usable)
            seen += 1
    assert seen == 6


# --------------------------------------------------------------------------- drain-dir


def test_drain_dir_under_acks_all_load_keeps_every_record(
    info: SandboxInfo, tmp_path: Path
) -> None:
    topic = f"jbod-drain-{info.mode}"
    create_topics(
        info.bootstrap_servers,
        [
            TopicSpec(
                topic, partitions=6, replication_factor=2, configs={"min.insync.replicas": "2"}
            )
        ],
    )
    produce(info.bootstrap_servers, topic, 1024 * 1024)
    placed = _placement(info)
    mine = Counter((b, d) for (t, _, b), (d, _) in placed.items() if t == topic)
    (broker, path), count = sorted(mine.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    assert count >= 1
    in_dir = sorted(k for k, (d, _) in placed.items() if k[2] == broker and d == path)

    load = LoadProducer(info.bootstrap_servers, topic)
    load.start()
    started = time.monotonic()
    try:
        load.wait_every_partition(6)  # records on every partition before the moves start
        proc = _kreplica(
            tmp_path, "drain-dir", "--broker", str(broker), "--dir", path, "--yes",
            "--out", "drain.json", "--throttle", "10MB/s", "--output", "json",
            "--bootstrap-server", info.bootstrap_servers,
        )  # fmt: skip
        time.sleep(1)
    finally:
        load.stop.set()
        load.join(150)
    data = _ok(proc)

    # the plan: every replica of the dir, nothing else, replicas unchanged
    planned = {(m["topic"], m["partition"], m["broker"]) for m in data["dir_moves"]}
    assert planned == set(in_dir)
    assert data["bytes_moved"] == data["lower_bound_bytes"]
    kafka_json = json.loads((tmp_path / "drain.json").read_text())
    for row in kafka_json["partitions"]:
        holders = {k[2] for k in placed if k[:2] == (row["topic"], row["partition"])}
        assert set(row["replicas"]) == holders  # the replicas stay on their brokers
        named = [d for d in row["log_dirs"] if d != "any"]
        assert len(named) == 1 and named[0] != path
    assert sorted(data["apply"]["dir_moved"]) == sorted(f"{t}-{p}@{b}" for t, p, b in in_dir)

    # the cluster: the dir is empty, no future log is left, the throttle is gone
    after = _placement(info)
    assert not [k for k, (d, _) in after.items() if k[2] == broker and d == path]
    assert not [k for k, (_, future) in after.items() if future]
    assert {(t, p, b) for t, p, b in after} == {(t, p, b) for t, p, b in placed}
    assert _broker_rate(info, broker) is None
    verify = _kreplica(
        tmp_path, "verify", "drain.json", "--bootstrap-server", info.bootstrap_servers
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr

    # the records: every acknowledged one is readable, none twice
    consumed = consume_all(info.bootstrap_servers, topic)
    seqs = Counter(
        int(v[:10]) for records in consumed.values() for _, v in records if v[:10].isdigit()
    )
    acked = set(load.acked)
    counts = {
        "sent": load.sent,
        "acked": len(load.acked),
        "failed": len(load.failed),
        "lost": len(acked - set(seqs)),
        "moves": len(in_dir),
        "seconds": round(time.monotonic() - started, 1),
    }
    print(f"\ndrain-dir under load ({info.mode}): {counts}")
    assert load.failed == [] and load.unflushed == 0
    assert len(acked) == load.sent
    assert acked <= set(seqs)
    assert all(n == 1 for n in seqs.values())

    # balance-dirs on that broker fills the empty dir again, within the bound
    proc = _kreplica(
        tmp_path, "balance-dirs", "--brokers", str(broker), "--yes", "--out", "bal.json",
        "--output", "json", "--bootstrap-server", info.bootstrap_servers,
    )  # fmt: skip
    balance = _ok(proc)
    assert balance["moves"] >= 1
    assert 0 < balance["bytes_moved"] <= balance["lower_bound_bytes"]
    final = _placement(info)
    assert [k for k, (d, _) in final.items() if k[2] == broker and d == path]
    assert not [k for k, (_, future) in final.items() if future]


# --------------------------------------------------------------------------- --log-dirs balanced


def _has_log_dirs_option() -> bool:
    from kreplica.cli.options import Options

    return "log_dirs" in Options.__dataclass_fields__


@pytest.mark.skipif(not _has_log_dirs_option(), reason="this build has no --log-dirs option")
def test_log_dirs_balanced_rf_raise_lands_in_the_named_dirs(
    info: SandboxInfo, tmp_path: Path
) -> None:
    topic = f"jbod-balanced-{info.mode}"
    create_topics(info.bootstrap_servers, [TopicSpec(topic, partitions=4, replication_factor=1)])
    produce(info.bootstrap_servers, topic, 256 * 1024)
    before = {(t, p): b for t, p, b in _placement(info) if t == topic}
    proc = _kreplica(
        tmp_path, "expand", "-t", topic, "--rf", "2", "--log-dirs", "balanced", "--yes",
        "--out", "bal.json", "--output", "json", "--bootstrap-server", info.bootstrap_servers,
    )  # fmt: skip
    data = _ok(proc)
    assert data is not None
    rows = json.loads((tmp_path / "bal.json").read_text())["partitions"]
    assert len(rows) == 4
    named: dict[tuple[str, int, int], str] = {}
    for row in rows:
        key = (row["topic"], row["partition"])
        for broker, path in zip(row["replicas"], row["log_dirs"], strict=True):
            if before.get(key) == broker:
                continue  # the replica that stays
            assert path != "any", row  # every new replica has its dir named
            named[(key[0], key[1], broker)] = path
    assert len(named) == 4
    sandbox_dirs = {b.id: set(b.log_dirs) for b in info.brokers}
    assert all(path in sandbox_dirs[b] for (_, _, b), path in named.items())
    after = _placement(info)
    landed = {k: after.get(k) for k in named}
    assert landed == {k: (path, False) for k, path in named.items()}
