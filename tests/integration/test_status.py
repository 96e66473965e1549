"""`kreplica status PLAN.json` on the shared session clusters: a throttled move in flight shows
its partitions `moving` with reason `throttle-bound` (the copy runs at the throttle), bytes
copied under the total, the second wave `waiting` (`not-submitted`); once the apply is done
every partition is `done` and status exits 0.
Bad input (no such plan, malformed JSON, a plan made for another cluster) is one line and an
exit code through the real CLI, and status never writes (the throttles are as apply left them).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from kreplica.sandbox import SandboxInfo
from kreplica.testing import TopicSpec, create_topics
from tests.integration.conftest import produce
from tests.support.cli import kreplica_argv, kreplica_env, run_kreplica
from tests.support.groups import per_mode

THROTTLE = "100KB/s"


@pytest.fixture(params=per_mode("cluster"))
def info(request: pytest.FixtureRequest) -> SandboxInfo:
    fixture = "zk_cluster" if request.param == "zk" else "kraft_cluster"
    result: SandboxInfo = request.getfixturevalue(fixture)
    return result


POLL = {"KREPLICA_POLL_INTERVAL": "0.5"}


def kreplica(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_kreplica(*args, cwd=cwd, env=POLL, columns=100, timeout=timeout)


def _data(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    data: dict[str, Any] = json.loads(proc.stdout)["data"]
    return data


def _one_line(proc: subprocess.CompletedProcess[str], code: int) -> str:
    assert proc.returncode == code, f"exit {proc.returncode}, not {code}:\n{proc.stderr}"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_status_of_a_throttled_move_then_done(info: SandboxInfo, tmp_path: Path) -> None:
    topic = f"status-{info.mode}"
    source = ["--bootstrap-server", info.bootstrap_servers]
    create_topics(info.bootstrap_servers, [TopicSpec(topic, partitions=3, replication_factor=1)])
    # the first wave's two partitions 3 MiB each, long enough at the throttle to be seen
    # moving; the second wave's a little, so the run does not wait half a minute more for it
    for partition, size in ((0, 3 * 1024 * 1024), (1, 3 * 1024 * 1024), (2, 128 * 1024)):
        produce(info.bootstrap_servers, topic, size, partition=partition)
    made = kreplica(
        tmp_path, "expand", "-t", topic, "--rf", "2", "--dry-run", "--out", "s.json", *source
    )
    assert made.returncode == 0, made.stderr
    journal = tmp_path / "s.journal.jsonl"
    apply = subprocess.Popen(
        kreplica_argv("apply", "s.json", "--throttle", THROTTLE, "--max-partitions", "2", *source),
        cwd=tmp_path,
        env=kreplica_env(POLL, columns=100),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = []
    try:
        deadline = time.monotonic() + 60
        while not (journal.exists() and '"submit"' in journal.read_text()):
            assert apply.poll() is None, apply.communicate()
            assert time.monotonic() < deadline, "no submit in the journal"
            time.sleep(0.2)
        seen: list[dict[str, Any]] = []
        for _ in range(6):  # the first read may come before the new replica exists
            data = _data(kreplica(tmp_path, "status", "s.json", *source, "--output", "json"))
            seen = data["partitions"]
            log.append(data["summary"]["line"])
            if any(p["reason"] == "throttle-bound" for p in seen):
                break
        bound = [p for p in seen if p["reason"] == "throttle-bound"]
        assert bound, seen
        assert all(p["state"] == "moving" for p in bound)
        assert all(0 <= p["copied_bytes"] < p["total_bytes"] for p in bound)
        assert all("throttle" in p["detail"] and "broker" in p["detail"] for p in bound)
        # counted at the throttle (97.7 KiB/s per receiving broker here), not the early burst
        assert all(p["rate_bytes_per_s"] <= 100_000 * 1.05 for p in bound), bound
        assert data["summary"]["moving"] >= 1 and data["summary"]["done"] < 3
        # the second wave (--max-partitions 2) is not submitted yet
        waiting = [p for p in seen if p["state"] == "waiting"]
        assert [p["reason"] for p in waiting] == ["not-submitted"], seen
        assert waiting[0]["copied_bytes"] == 0 < waiting[0]["total_bytes"]
        # the same plan without its journal (another host): rates from two reads 3 s apart
        other = tmp_path / "other"
        other.mkdir()
        for name in ("s.json", "s.kreplica.json"):
            (other / name).write_text((tmp_path / name).read_text())
        sampled = _data(
            kreplica(other, "status", "s.json", *source, "--interval", "3", "--output", "json")
        )["partitions"]
        assert not (other / "s.journal.jsonl").exists()  # read-only: no journal made either
        moving = [p for p in sampled if p["state"] == "moving"]
        assert moving, sampled
        assert {p["reason"] for p in moving} <= {"throttle-bound", "follower-lagging"}, moving
        assert all(p["copied_bytes"] < p["total_bytes"] for p in moving)
        table = kreplica(tmp_path, "status", "s.json", *source, "--interval", "0")
        assert table.returncode == 0, table.stderr  # not done yet, and still exit 0
        assert "moving" in table.stdout and "s.json:" in table.stdout
        log.append(table.stdout)
        # read-only: the throttles apply set are untouched by status (unless the apply, which
        # a loaded machine may let finish meanwhile, had restored them before this read ended)
        listed = _data(kreplica(tmp_path, "throttles", *source, "--output", "json"))
        if '"throttle-restored"' not in journal.read_text():
            assert any(
                row["config"] == "follower.replication.throttled.rate"
                for row in listed["throttles"]
            ), listed
        out, err = apply.communicate(timeout=240)
        assert apply.returncode == 0, f"{out}\n{err}"
    finally:
        if apply.poll() is None:
            apply.kill()
            apply.communicate()
    data = _data(kreplica(tmp_path, "status", "s.json", *source, "--output", "json"))
    assert [p["state"] for p in data["partitions"]] == ["done"] * 3, data
    assert all(p["reason"] is None for p in data["partitions"])
    assert data["summary"]["line"].startswith("3/3 done")
    assert data["summary"]["copied_bytes"] == data["summary"]["total_bytes"] > 0
    log.append(kreplica(tmp_path, "status", "s.json", *source, "--interval", "0").stdout)
    if info.zookeeper:  # the same through ZooKeeper (the brokers' registered addresses)
        via_zk = kreplica(
            tmp_path, "status", "s.json", "--zookeeper", info.zookeeper, "--output", "json"
        )
        assert _data(via_zk)["summary"]["line"].startswith("3/3 done")
    md = kreplica(tmp_path, "status", "s.json", *source, "--output", "markdown", "--interval", "0")
    assert md.returncode == 0 and "| Partition | State |" in md.stdout
    log.append(md.stdout)
    print("\n".join(log))

    # a plan made for another cluster: one line, exit 5 (stale plan), nothing read further
    document = tmp_path / "s.kreplica.json"
    doc = json.loads(document.read_text())
    doc["cluster_id"] = "another-cluster"
    document.write_text(json.dumps(doc))
    line = _one_line(kreplica(tmp_path, "status", "s.json", *source), 5)
    assert "another-cluster" in line and "made for cluster" in line


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    # no cluster needed: the plan is read before anything connects
    source = ["--bootstrap-server", "127.0.0.1:1"]
    line = _one_line(kreplica(tmp_path, "status", "missing.json", *source), 2)
    assert "missing.json" in line
    (tmp_path / "bad.json").write_text('{"version": 1, "partitions": [')
    line = _one_line(kreplica(tmp_path, "status", "bad.json", *source), 2)
    assert "bad.json" in line
    line = _one_line(kreplica(tmp_path, "status", "bad.json", "--interval", "-1", *source), 2)
    assert "--interval" in line
    plan = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2]}]}
    (tmp_path / "ok.json").write_text(json.dumps(plan))
    snapshot = tmp_path / "snap.json"
    snapshot.write_text("{}")
    line = _one_line(kreplica(tmp_path, "status", "ok.json", "--snapshot", str(snapshot)), 2)
    assert "--bootstrap-server" in line
