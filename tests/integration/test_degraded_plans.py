"""kreplica on a degraded cluster, run like an operator runs it, with Kafka's own tool as the
judge: on `zk_degraded` (sources --zookeeper and --bootstrap-server) and `kraft_degraded`
(--bootstrap-server), 6 brokers on racks a,b,c,a,b,c with broker 6 killed.

One test per mode runs the steps in this order, because each step changes the cluster the next
one plans on (this module is the only one that changes topics of those clusters, and it leaves
`hand` partitions 0 and 3 and every topic's partition count but `logs`' as
test_sandbox_degraded.py expects them):

1. expand `events` 3 -> 4: refused (exit 4) without --replace-dead; with it, a plan without
   broker 6 that Kafka executes and completes.
2. shrink `hand-shrink` 3 -> 2: dead replicas go first, every current leader stays.
3. add 2 partitions to `logs` with the runbook's own `kafka-topics --alter` line.
4. rack repair of `hand` (`plan --fix-racks`); in KRaft the dead broker's rack is known, so a
   partition to repair holds broker 6: refused without --replace-dead.
5. a reassignment held in flight by Kafka's tool (`--throttle 1`): planning on it exits 6,
   `--skip-in-flight` leaves it out, `check` of a plan touching it exits 7; then Kafka's
   `--cancel`, nothing is in flight afterwards, and Kafka executes the --skip-in-flight plan.

Every plan kreplica exits 0 on is executed with `kafka-reassign-partitions --execute` (for the
ZooKeeper cluster, both sources plan each step and one of them is executed, alternating),
verified with `--verify` until every partition is complete, and compared with a fresh
`kreplica snapshot`. Each test prints a table of its runs (pytest -s) and writes it as JSON
under its tmp dir.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from kreplica.errors import ExitCode
from kreplica.sandbox import SandboxInfo
from kreplica.sources import open_source
from tests.integration.conftest import DEAD_BROKER
from tests.support.cli import run_kreplica

pytestmark = pytest.mark.integration

COMPLETE_WITHIN_S = 120  # bound on waiting for a reassignment (not asserted as a duration)
# A 1 B/s replication throttle still lets about one fetch (replica.fetch.max.bytes, 1 MiB) through
# each time the quota's samples expire (11 one-second windows): ~95 KB/s. 16 MB holds the move
# back for minutes; 3 MB was copied within this step on a loaded machine.
HELD_BYTES = 16_000_000

Key = tuple[str, int]


@dataclass
class Run:
    mode: str
    source: str
    command: str
    kreplica_exit: int | None
    kafka: str
    seconds: float


@dataclass
class State:
    """One partition as `kreplica snapshot` (or a source) reports it."""

    replicas: list[int]
    leader: int | None
    isr: list[int]
    adding: list[int]
    removing: list[int]


def _partitions(snapshot: dict[str, Any]) -> dict[Key, State]:
    return {
        (t["name"], p["partition"]): State(
            list(p["replicas"]),
            p.get("leader"),
            list(p.get("isr", p["replicas"])),
            list(p.get("adding_replicas", [])),
            list(p.get("removing_replicas", [])),
        )
        for t in snapshot["topics"]
        for p in t["partitions"]
    }


def _plan(path: Path) -> dict[Key, list[int]]:
    data = json.loads(path.read_text())
    assert data["version"] == 1
    return {(p["topic"], p["partition"]): list(p["replicas"]) for p in data["partitions"]}


def _names_partition(text: str, topic: str, partition: int) -> bool:
    """`events-3`, or `events: 1, 3` as kreplica lists partitions of one topic."""
    return bool(
        re.search(rf"\b{re.escape(topic)}-{partition}\b", text)
        or re.search(rf"\b{re.escape(topic)}: (\d+, )*{partition}\b", text)
    )


def _racks_distinct(replicas: Sequence[int], rack_of: dict[int, str | None]) -> bool:
    racks = [rack_of.get(b) for b in replicas]
    return len(set(racks)) == len(racks) and None not in racks


class Operator:
    """Runs kreplica and Kafka's tools in subprocesses against one sandbox, and records it."""

    def __init__(self, info: SandboxInfo, mode: str, tmp_path: Path) -> None:
        self.info, self.mode, self.dir = info, mode, tmp_path
        self.sources: dict[str, list[str]] = {}
        if info.zookeeper:
            self.sources["zookeeper"] = ["--zookeeper", info.zookeeper]
        self.sources["bootstrap"] = ["--bootstrap-server", info.bootstrap_servers]
        self.runs: list[Run] = []
        self.rack_of: dict[int, str | None] = {b.id: b.rack for b in info.brokers}
        self.live = {b.id for b in info.brokers} - {DEAD_BROKER}
        self.in_flight: Path | None = None  # a held move to cancel if a step fails

    # ------------------------------------------------------------------ processes
    def kreplica(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_kreplica(*args)

    def kafka(self, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
        return self.kreplica("sandbox", "kafka", "--name", self.info.name, tool, *args)

    def record(
        self, source: str, command: str, code: int | None, kafka: str, started: float
    ) -> Run:
        run = Run(self.mode, source, command, code, kafka, round(time.monotonic() - started, 1))
        self.runs.append(run)
        return run

    def executor(self, step: int) -> str:
        """Which source's plan Kafka executes: they alternate on the ZooKeeper cluster."""
        names = list(self.sources)
        return names[step % len(names)]

    # ------------------------------------------------------------------ reading the cluster
    def snapshot(self, source: str, *topics: str) -> dict[Key, State]:
        """A fresh `kreplica snapshot` of these topics, through the given source."""
        args = [a for t in topics for a in ("--topic", t)]
        proc = self.kreplica("snapshot", *self.sources[source], *args)
        assert proc.returncode == 0, proc.stderr
        return _partitions(json.loads(proc.stdout))

    def wait_until(self, topics: Sequence[str], done: Any, what: str) -> dict[Key, State]:
        """Poll the AdminClient source until `done(partitions)`; bounded, then a clear error."""
        deadline = time.monotonic() + COMPLETE_WITHIN_S
        last: dict[Key, State] = {}
        with open_source(bootstrap_server=self.info.bootstrap_servers, timeout_s=15) as src:
            while True:
                snap = src.snapshot(list(topics))
                last = {
                    (p.topic, p.partition): State(
                        list(p.replicas),
                        p.leader,
                        list(p.isr or ()),
                        list(p.adding_replicas),
                        list(p.removing_replicas),
                    )
                    for t in snap.topics
                    for p in t.partitions
                }
                if done(last):
                    return last
                if time.monotonic() > deadline:
                    raise AssertionError(f"{what}: not reached in {COMPLETE_WITHIN_S} s: {last}")
                time.sleep(0.3)

    # ------------------------------------------------------------------ Kafka's tool
    def execute(self, plan_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
        return self.kafka(
            "kafka-reassign-partitions",
            "--execute",
            "--reassignment-json-file",
            str(plan_path),
            *extra,
        )

    def verify(self, plan_path: Path) -> int:
        """Poll `--verify` until it reports every partition of the plan complete (bounded)."""
        wanted = {f"{t}-{p}" for t, p in _plan(plan_path)}
        deadline = time.monotonic() + COMPLETE_WITHIN_S
        rounds = 0
        while True:
            rounds += 1
            proc = self.kafka(
                "kafka-reassign-partitions", "--verify", "--reassignment-json-file", str(plan_path)
            )
            assert proc.returncode == 0, proc.stdout + proc.stderr
            done = set(re.findall(r"Reassignment of partition (\S+) is completed", proc.stdout))
            if done == wanted:
                return rounds
            assert done < wanted, proc.stdout
            if time.monotonic() > deadline:
                raise AssertionError(f"--verify after {COMPLETE_WITHIN_S} s:\n{proc.stdout}")
            time.sleep(0.5)

    def apply(self, plan_path: Path, *extra: str) -> str:
        """Kafka's --execute of a kreplica plan, waited for, then --verify until complete."""
        target = _plan(plan_path)
        assert target, f"{plan_path} is empty"
        proc = self.execute(plan_path, *extra)
        assert proc.returncode == 0, f"Kafka rejected {plan_path}:\n{proc.stdout}{proc.stderr}"
        assert "Successfully started partition reassignment" in proc.stdout, proc.stdout
        topics = sorted({t for t, _ in target})
        self.wait_until(
            topics,
            lambda now: all(
                now[k].replicas == r and not now[k].adding and not now[k].removing
                for k, r in target.items()
            ),
            f"reassignment of {plan_path.name}",
        )
        rounds = self.verify(plan_path)
        return f"execute ok; verify: {len(target)}/{len(target)} complete ({rounds} round(s))"

    # ------------------------------------------------------------------ the report
    def table(self) -> str:
        head = ("mode", "source", "command", "exit", "Kafka tool", "s")
        rows = [
            (
                r.mode,
                r.source,
                r.command,
                "-" if r.kreplica_exit is None else str(r.kreplica_exit),
                r.kafka,
                f"{r.seconds:.1f}",
            )
            for r in self.runs
        ]
        widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=False)]
        lines = [
            " | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True))
            for row in [head, *rows]
        ]
        lines.insert(1, "-+-".join("-" * w for w in widths))
        return "\n".join(lines)

    @contextmanager
    def reporting(self) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            if self.in_flight is not None:  # a step failed while a move was held: let it go
                self.kafka(
                    "kafka-reassign-partitions",
                    "--cancel",
                    "--reassignment-json-file",
                    str(self.in_flight),
                )
            total = round(time.monotonic() - started, 1)
            out = self.dir / f"degraded-runs-{self.mode}.json"
            out.write_text(
                json.dumps(
                    {"mode": self.mode, "seconds": total, "runs": [asdict(r) for r in self.runs]},
                    indent=2,
                )
            )
            print(f"\n{self.mode}: {len(self.runs)} runs in {total} s (written to {out})")
            print(self.table())


# ---------------------------------------------------------------------------------- the steps


def refused_for_dead(op: Operator, proc: subprocess.CompletedProcess[str], partitions: int) -> None:
    """Exit 4 and one line on stderr naming broker 6, the number of partitions and the fix."""
    assert proc.returncode == ExitCode.INFEASIBLE, proc.stdout + proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert re.search(rf"broker\S* {DEAD_BROKER}\b", lines[0]), lines[0]
    assert "--replace-dead" in lines[0]
    assert re.search(rf"\b{partitions} partition", lines[0]), lines[0]


def plan_each(
    op: Operator, cmd: list[str], name: str, check: Any
) -> tuple[dict[str, Path], dict[str, Run]]:
    """Run the planning command with every source, --out a plan per source, `check` each."""
    paths: dict[str, Path] = {}
    runs: dict[str, Run] = {}
    for source, args in op.sources.items():
        started = time.monotonic()
        path = paths[source] = op.dir / f"{name}-{source}.json"
        proc = op.kreplica(*cmd, "--out", str(path), *args)
        runs[source] = op.record(
            source, " ".join(cmd) + " --out PLAN", proc.returncode, "-", started
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        check(source, path, proc)
    if len(paths) > 1:
        a, b = (_plan(x) for x in paths.values())
        for source in paths:
            runs[source].kafka = (
                "same plan from both sources"
                if a == b
                else (f"plans differ in {sum(a[k] != b.get(k) for k in a)} partition(s)")
            )
    return paths, runs


def execute_one(op: Operator, step: int, paths: dict[str, Path], runs: dict[str, Run]) -> str:
    """Kafka executes the plan of one source (alternating on the ZooKeeper cluster)."""
    source = op.executor(step)
    started = time.monotonic()
    outcome = op.apply(paths[source])
    run = runs[source]
    run.kafka = outcome if run.kafka == "-" else f"{outcome}; {run.kafka}"
    run.seconds = round(run.seconds + time.monotonic() - started, 1)
    return source


def step_expand_events(op: Operator) -> None:
    before = op.snapshot("bootstrap", "events")
    holding_dead = [k for k, s in before.items() if DEAD_BROKER in s.replicas]
    assert holding_dead, "broker 6 holds replicas of events"
    cmd = ["expand", "--topic", "events", "--rf", "4", "--dry-run"]
    for source, args in op.sources.items():
        started = time.monotonic()
        proc = op.kreplica(*cmd, *args)
        op.record(source, " ".join(cmd), proc.returncode, "-", started)
        refused_for_dead(op, proc, len(holding_dead))

    def check(source: str, path: Path, proc: subprocess.CompletedProcess[str]) -> None:
        plan = _plan(path)
        assert set(plan) == set(before)  # RF goes up everywhere
        for key, target in plan.items():
            now = before[key]
            assert DEAD_BROKER not in target, (key, target)
            assert len(target) == 4 and len(set(target)) == 4 and set(target) <= op.live
            kept = [b for b in now.replicas if b != DEAD_BROKER]
            assert set(kept) <= set(target), key  # no live replica moves
            order = [b for b in target if b in kept]
            if now.replicas[0] == DEAD_BROKER:  # the current leader takes the dead one's place
                assert target[0] == now.leader, (key, target, now.leader)
                assert order == [now.leader] + [b for b in kept if b != now.leader], key
            else:  # nothing existing is reordered
                assert order == kept, (key, target)

    paths, runs = plan_each(op, [*cmd[:-1], "--replace-dead", "--dry-run"], "expand", check)
    source = execute_one(op, 0, paths, runs)
    after = op.snapshot(source, "events")
    assert {k: s.replicas for k, s in after.items()} == _plan(paths[source])
    assert {k: s.leader for k, s in after.items()} == {k: s.leader for k, s in before.items()}


def step_shrink(op: Operator) -> None:
    before = op.snapshot("bootstrap", "hand-shrink")

    def check(source: str, path: Path, proc: subprocess.CompletedProcess[str]) -> None:
        plan = _plan(path)
        assert set(plan) == set(before)
        for key, target in plan.items():
            now = before[key]
            in_sync = [b for b in now.replicas if b in now.isr and b in op.live]
            assert len(target) == 2 and set(target) <= set(now.replicas), (key, target)
            assert DEAD_BROKER not in target, (key, target)
            # dead, then out-of-sync replicas go first: every survivor was in sync
            assert len([b for b in target if b in in_sync]) == min(2, len(in_sync)), key
            assert target[0] == now.leader, (key, target, now.leader)

    cmd = ["shrink", "--topic", "hand-shrink", "--rf", "2", "--dry-run"]
    paths, runs = plan_each(op, cmd, "shrink", check)
    source = execute_one(op, 1, paths, runs)
    after = op.snapshot(source, "hand-shrink")
    assert {k: s.replicas for k, s in after.items()} == _plan(paths[source])
    assert {k: s.leader for k, s in after.items()} == {k: s.leader for k, s in before.items()}


def step_add_partitions(op: Operator) -> None:
    before = op.snapshot("bootstrap", "logs")
    assert len(before) == 6
    creates: dict[str, list[str]] = {}

    def check(source: str, path: Path, proc: subprocess.CompletedProcess[str]) -> None:
        assert _plan(path) == {}  # no existing partition is touched
        envelope = json.loads(path.with_suffix(".kreplica.json").read_text())
        new = {p["partition"]: p["replicas"] for p in envelope["new_partitions"]}
        assert sorted(new) == [6, 7]
        assert all(p["topic"] == "logs" for p in envelope["new_partitions"])
        for replicas in new.values():
            assert DEAD_BROKER not in replicas and set(replicas) <= op.live
            assert len(replicas) == 2 and _racks_distinct(replicas, op.rack_of), replicas
        # The runbook's create step: Kafka's kafka-topics with the whole assignment, of which
        # Kafka uses the entries past the existing partitions.
        (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("kafka-topics")]
        words = shlex.split(line)
        i = words.index("--bootstrap-server")
        tool_args = creates[source] = words[1:i] + words[i + 2 :]
        assert tool_args[tool_args.index("--partitions") + 1] == "8"
        given = [
            [int(b) for b in part.split(":")]
            for part in tool_args[tool_args.index("--replica-assignment") + 1].split(",")
        ]
        assert given[:6] == [before[("logs", p)].replicas for p in range(6)]
        assert given[6:] == [new[6], new[7]]

    cmd = ["add-partitions", "--topic", "logs", "--partitions", "8", "--dry-run"]
    paths, runs = plan_each(op, cmd, "add", check)
    source = op.executor(2)
    started = time.monotonic()
    tool = op.kafka("kafka-topics", *creates[source])
    assert tool.returncode == 0, tool.stdout + tool.stderr
    op.wait_until(
        ["logs"],
        lambda now: len(now) == 8 and all(s.leader is not None for s in now.values()),
        "logs-6 and logs-7 created",
    )
    after = op.snapshot(source, "logs")
    envelope = json.loads(paths[source].with_suffix(".kreplica.json").read_text())
    planned = {("logs", p["partition"]): p["replicas"] for p in envelope["new_partitions"]}
    assert {k: s.replicas for k, s in after.items()} == {
        **{k: s.replicas for k, s in before.items()},
        **planned,
    }
    run = runs[source]
    outcome = "runbook's kafka-topics --alter: exit 0, 8 partitions as planned"
    run.kafka = outcome if run.kafka == "-" else f"{outcome}; {run.kafka}"
    run.seconds = round(run.seconds + time.monotonic() - started, 1)


def step_fix_racks(op: Operator) -> None:
    before = op.snapshot("bootstrap", "hand")
    # What the sources know: in ZooKeeper mode broker 6's registration (and rack) is gone, in
    # KRaft a fenced broker keeps its rack. Partitions with two replicas on one known rack:
    rack_of = dict(op.rack_of)
    if op.mode == "zk":
        rack_of[DEAD_BROKER] = None
    violating = {
        k
        for k, s in before.items()
        if len({rack_of[b] for b in s.replicas if rack_of[b]})
        < len([b for b in s.replicas if rack_of[b]])
    }
    assert violating, "hand has partitions to repair"
    needs_dead = [k for k in violating if DEAD_BROKER in before[k].replicas]
    assert bool(needs_dead) == (op.mode == "kraft")
    cmd = ["plan", "--topics", "hand", "--fix-racks", "--dry-run"]
    if needs_dead:
        for source, args in op.sources.items():
            started = time.monotonic()
            proc = op.kreplica(*cmd, *args)
            op.record(source, " ".join(cmd), proc.returncode, "-", started)
            refused_for_dead(op, proc, len(needs_dead))
        cmd.append("--replace-dead")

    def check(source: str, path: Path, proc: subprocess.CompletedProcess[str]) -> None:
        plan = _plan(path)
        assert set(plan) == violating, (plan, violating)
        # test_sandbox_degraded.py relies on these two staying as they are
        assert ("hand", 0) not in plan and ("hand", 3) not in plan
        for key, target in plan.items():
            now = before[key]
            assert DEAD_BROKER not in target and len(target) == 3, (key, target)
            assert _racks_distinct(target, op.rack_of), (key, target)
            assert target[0] == now.leader, (key, target, now.leader)

    paths, runs = plan_each(op, cmd, "racks", check)
    source = execute_one(op, 3, paths, runs)
    after = op.snapshot(source, "hand")
    plan = _plan(paths[source])
    for k, s in after.items():
        assert s.replicas == plan.get(k, before[k].replicas), k
        assert s.leader == before[k].leader, k


def _produce(bootstrap: str, topic: str, partition: int, total: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20})
    chunk = os.urandom(10_000)
    for _ in range(total // len(chunk)):
        producer.produce(topic, chunk, partition=partition)
        producer.poll(0)
    remaining = producer.flush(30)
    producer.close()  # a producer left open logs to stderr once its cluster is gone
    assert remaining == 0


def step_in_flight(op: Operator) -> None:
    before = op.snapshot("bootstrap", "events")
    p = 0
    now = before[("events", p)]
    assert len(now.replicas) == 4 and DEAD_BROKER not in now.replicas
    (free,) = op.live - set(now.replicas)  # 5 live brokers, RF 4: one is free
    moved = next(b for b in reversed(now.replicas) if b != now.leader)
    target = [free if b == moved else b for b in now.replicas]

    started = time.monotonic()
    _produce(op.info.bootstrap_servers, "events", p, HELD_BYTES)
    move = op.dir / "held-move.json"
    move.write_text(
        json.dumps(
            {"version": 1, "partitions": [{"topic": "events", "partition": p, "replicas": target}]}
        )
    )
    proc = op.execute(move, "--throttle", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    op.in_flight = move
    assert "throttle limit was set to 1 B/s" in proc.stdout, proc.stdout
    op.wait_until(
        ["events"],
        lambda s: s[("events", p)].adding == [free] and s[("events", p)].removing == [moved],
        f"events-{p} in flight",
    )
    op.record(
        "-",
        f"kafka-reassign-partitions --execute --throttle 1 (events-{p}: {moved} -> {free})",
        None,
        f"ok; events-{p} adding [{free}] removing [{moved}]",
        started,
    )

    # A plan touching events-p (the original RF-3 shrink of it), for `check`.
    touching = op.dir / "touching.json"
    touching.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [{"topic": "events", "partition": p, "replicas": now.replicas[:3]}],
            }
        )
    )
    for source, args in op.sources.items():
        for cmd in (
            ["expand", "--topic", "events", "--rf", "5", "--dry-run"],
            ["shrink", "--topic", "events", "--rf", "3", "--dry-run"],
        ):
            started = time.monotonic()
            proc = op.kreplica(*cmd, *args)
            op.record(source, " ".join(cmd), proc.returncode, "-", started)
            assert proc.returncode == ExitCode.IN_PROGRESS, proc.stdout + proc.stderr
            (line,) = proc.stderr.splitlines()
            assert _names_partition(line, "events", p), line
            assert "--skip-in-flight" in line and "--verify" in line, line

        started = time.monotonic()
        proc = op.kreplica("check", str(touching), *args)
        op.record(source, f"check PLAN (events-{p} only)", proc.returncode, "-", started)
        assert proc.returncode == ExitCode.VERIFY_FAILED, proc.stdout + proc.stderr
        assert _names_partition(proc.stdout + proc.stderr, "events", p)

    skipped: dict[str, Path] = {}
    for source, args in op.sources.items():
        started = time.monotonic()
        path = skipped[source] = op.dir / f"skip-{source}.json"
        cmd = ["shrink", "--topic", "events", "--rf", "3", "--skip-in-flight", "--dry-run"]
        proc = op.kreplica(*cmd, "--out", str(path), *args)
        assert proc.returncode == 0, proc.stderr
        assert re.search(rf"left out .*\bevents-{p}\b", proc.stdout.replace("\n", " ")), proc.stdout
        plan = _plan(path)
        assert set(plan) == set(before) - {("events", p)}
        for key, t in plan.items():
            assert len(t) == 3 and set(t) <= set(before[key].replicas) and DEAD_BROKER not in t
            assert t[0] == before[key].leader, (key, t)
        check = op.kreplica("check", str(path), *args)
        assert check.returncode == 0, check.stdout + check.stderr  # the same cluster, p left out
        op.record(
            source,
            " ".join(cmd) + " --out PLAN; check PLAN",
            proc.returncode,
            f"check exit {check.returncode}",
            started,
        )

    # Kafka's --cancel while the move is still held back, then nothing is in flight. (Run
    # while the move is held, the runbook's apply line needed --additional, added in 718c62a,
    # tests/unit/cli/test_runbook_in_flight.py; its --throttle 50 MB/s would release the move.)
    started = time.monotonic()
    proc = op.kafka("kafka-reassign-partitions", "--cancel", "--reassignment-json-file", str(move))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"Successfully cancelled partition reassignment for: events-{p}" in proc.stdout, (
        proc.stdout
    )
    assert "Clearing topic-level throttles on topic events" in proc.stdout, proc.stdout
    op.in_flight = None
    after_cancel = op.wait_until(
        ["events", "hand", "hand-shrink", "logs"],
        lambda s: not any(x.adding or x.removing for x in s.values()),
        "no reassignment in flight",
    )
    assert after_cancel[("events", p)].replicas == now.replicas  # the old replicas are back
    op.record(
        "-",
        f"kafka-reassign-partitions --cancel (events-{p})",
        None,
        "cancelled, throttles cleared, nothing in flight",
        started,
    )

    # The --skip-in-flight plan is still right for the partitions it names: Kafka executes it.
    source = op.executor(4)
    path = skipped[source]
    plan = _plan(path)
    run = next(r for r in reversed(op.runs) if r.source == source and "skip-in-flight" in r.command)
    started = time.monotonic()
    outcome = op.apply(path)
    after = op.snapshot(source, "events")
    assert after[("events", p)].replicas == now.replicas
    for key, t in plan.items():
        assert after[key].replicas == t and after[key].leader == before[key].leader, key
    run.kafka = f"{outcome} (after --cancel); {run.kafka}"
    run.seconds = round(run.seconds + time.monotonic() - started, 1)


def run_sequence(info: SandboxInfo, mode: str, tmp_path: Path) -> None:
    op = Operator(info, mode, tmp_path)
    with op.reporting():
        step_expand_events(op)
        step_shrink(op)
        step_add_partitions(op)
        step_fix_racks(op)
        step_in_flight(op)


def test_zk_degraded_plans(zk_degraded: SandboxInfo, tmp_path: Path) -> None:
    run_sequence(zk_degraded, "zk", tmp_path)


def test_kraft_degraded_plans(kraft_degraded: SandboxInfo, tmp_path: Path) -> None:
    run_sequence(kraft_degraded, "kraft", tmp_path)
