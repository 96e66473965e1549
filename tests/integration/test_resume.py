"""An interrupted `kreplica drain --yes` resumed with the command it prints, on the session
clusters (a topic of its own; ZooKeeper mode reached through --zookeeper, KRaft through
--bootstrap-server).

The drain (two waves; ZooKeeper mode through /admin/reassign_partitions, `--via zookeeper`) is
stopped with Ctrl-C (SIGINT) once its first wave is submitted; its last line is
`... continue with `kreplica apply d.json --resume` ...`. That command, run as printed (plus a
faster throttle for the running move) and with no cluster source, reconnects to the cluster
the journal recorded, submits the second wave the way the drain did, and runs the preferred
leader election the drain runs after its moves, journalled as "elect". `kreplica verify d.json`
(no source either) exits 0, and every partition of the plan is led by its preferred replica,
read back through the AdminClient.
"""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
from pathlib import Path

import pytest

from kreplica.sandbox import SandboxInfo
from kreplica.testing import TopicSpec, create_topics
from tests.integration.conftest import produce
from tests.integration.test_apply import Kafka, Operator, _plan
from tests.support.cli import kreplica_argv, kreplica_env, run_kreplica
from tests.support.groups import per_mode

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

TOPIC = "resumed-drain"
DRAINED = 3


@pytest.fixture(params=per_mode("cluster"))
def info(request: pytest.FixtureRequest) -> SandboxInfo:
    fixture = "zk_cluster" if request.param == "zk" else "kraft_cluster"
    result: SandboxInfo = request.getfixturevalue(fixture)
    return result


def _extra(cwd: Path) -> dict[str, str]:
    """No source but what the command line gives: no variable (tests/conftest.py drops the
    inherited KREPLICA_* ones), no config file's default."""
    env = {
        "KREPLICA_POLL_INTERVAL": "0.3",
        "KREPLICA_STATE_DIR": str(cwd / "state"),
        "KREPLICA_CONFIG": str(cwd / "no-clusters.toml"),
    }
    return env


def _run(cwd: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    return run_kreplica(*args, cwd=cwd, env=_extra(cwd), columns=160, timeout=240)


def test_an_interrupted_drain_resumes_as_printed_with_its_election(
    info: SandboxInfo, tmp_path: Path
) -> None:
    topic = f"{TOPIC}-{info.mode}"
    # every partition on brokers 1 and 3, led by 1: the drain gives some of them broker 2 as
    # preferred leader, which only an election makes leader (1 stays a replica)
    create_topics(
        info.bootstrap_servers, [TopicSpec(topic, assignment={p: [1, DRAINED] for p in range(4)})]
    )
    # 2 MiB a partition: a throttled follower still fetches up to replica.fetch.max.bytes
    # (1 MiB) a partition each time the quota's samples (11 of 1 s) roll over, so a wave takes
    # two windows at least: time to stop the drain before both waves are done
    produce(info.bootstrap_servers, topic, 8 * 1024 * 1024)
    source = (
        ["--zookeeper", info.zookeeper]
        if info.zookeeper
        else ["--bootstrap-server", info.bootstrap_servers]
    )
    args = ["drain", "--brokers", str(DRAINED), "-t", topic, "--yes", "--out", "d.json"]
    # two waves, so the resume has one to submit; ZooKeeper mode through /admin/reassign_partitions
    via = "zookeeper" if info.zookeeper else "kafka"
    args += ["--max-partitions", "2", "--via", via, "--throttle", "60KB/s"]
    drain = subprocess.Popen(
        kreplica_argv(*args, *source),
        cwd=tmp_path,
        env=kreplica_env(_extra(tmp_path), columns=160),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    op = Operator(info, tmp_path)
    kafka = Kafka(info)
    try:
        try:
            op.wait_journal("d.json", "submit", drain)
            kafka.wait("the drain's moves in flight", lambda: bool(kafka.in_flight()))
        finally:
            drain.send_signal(signal.SIGINT)
            out, err = drain.communicate(timeout=60)
        assert drain.returncode == 130, f"{out}\n{err}"
        printed = re.search(r"continue with `(kreplica apply [^`]+ --resume)`", err)
        assert printed, err
        plan = _plan(tmp_path / "d.json")
        events = op.journal("d.json")
        starts = [e for e in events if e["event"] == "start"]
        assert starts[0]["elect_leaders"] is True
        key = source[0].removeprefix("--").replace("-", "_")
        assert starts[0]["source"] == {key: source[1]}
        assert not any(e["event"] in ("finish", "elect") for e in events)

        # the printed command, with no source; a faster rate for the running move
        resume = _run(tmp_path, [*shlex.split(printed.group(1))[1:], "--throttle", "50MB/s"])
        assert resume.returncode == 0, f"{resume.stdout}\n{resume.stderr}"
        assert "(from the journal d.journal.jsonl)" in resume.stderr
        assert "preferred leader elected on" in resume.stdout

        events = op.journal("d.json")
        kinds = [e["event"] for e in events]
        assert kinds.count("finish") == 1, kinds
        # the resume submitted the second wave, the way the drain did (no --via given)
        starts = [e for e in events if e["event"] == "start"]
        assert len(starts) == 2 and starts[1]["resume"] is True, kinds
        assert [s["via"] for s in starts] == [via, via]
        assert starts[1]["source"] == starts[0]["source"]
        assert kinds.index("elect") > kinds.index("finish")  # after the moves
        elect = next(e for e in events if e["event"] == "elect")
        assert elect["failed"] == {}
        verify = _run(tmp_path, ["verify", "d.json"])
        assert verify.returncode == 0, f"{verify.stdout}\n{verify.stderr}"
        now = kafka.partitions(topic)
        assert {(topic, p): reps for p, (reps, _, _) in now.items()} == plan
        assert all(DRAINED not in reps for reps, _, _ in now.values())
        # led by the preferred replica: the election the drain runs after its moves did it
        off = {p: (reps, leader) for p, (reps, leader, _) in now.items() if leader != reps[0]}
        assert not off, off
        print(f"{info.mode}: journal {kinds}; elected {elect['elected']}")
    finally:
        if drain.poll() is None:
            drain.kill()
            drain.communicate()
        kafka.close()
