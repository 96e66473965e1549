"""The sandbox refuses bad requests before starting any process, with a one-line fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from kreplica import sandbox
from kreplica.errors import ExitCode, UsageError
from kreplica.sandbox import jars


@pytest.fixture(autouse=True)
def _private_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KREPLICA_SANDBOX_DIR", str(tmp_path / "sandboxes"))
    monkeypatch.setenv("KREPLICA_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "kraf"}, "sandbox mode 'kraf' is unknown: use zk or kraft"),
        ({"brokers": 0}, "--brokers 0 is out of range"),
        ({"racks": ("a", "")}, "rack '' is not allowed"),
        ({"racks": ("a b",)}, "rack 'a b' is not allowed"),
        ({"name": "../etc"}, "sandbox name '../etc' is not allowed"),
        ({"mode": "zk", "kafka_version": "4.1.1"}, "has no ZooKeeper mode"),
        ({"kafka_version": "3.9"}, "is not MAJOR.MINOR.PATCH"),
        ({"kafka_version": "latest"}, "is not MAJOR.MINOR.PATCH"),
        ({"mode": "kraft", "kafka_version": "2.8.2"}, "not supported by the sandbox"),
    ],
)
def test_bad_requests_are_usage_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        sandbox.up(**kwargs)  # type: ignore[arg-type]
    assert message in str(caught.value)
    assert caught.value.exit_code is ExitCode.USAGE
    assert "\n" not in str(caught.value)
    assert not (Path(sandbox.sandbox_root()) / str(kwargs.get("name", "default"))).exists()


def test_nothing_running_is_not_an_error_for_status_and_down() -> None:
    assert sandbox.status("nothing") is None
    assert sandbox.processes("nothing") == []
    assert sandbox.down("nothing") is False


def test_broken_state_file_names_the_fix() -> None:
    folder = sandbox.sandbox_root() / "broken"
    folder.mkdir(parents=True)
    (folder / "state.json").write_text("{not json")
    with pytest.raises(sandbox.SandboxError, match="delete that folder"):
        sandbox.status("broken")


def test_missing_maven_is_reported_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a machine without Maven
    with pytest.raises(sandbox.SandboxError, match=r"Maven \(mvn\) is not on PATH: install Maven"):
        jars.fetch("3.9.2")


def test_first_maven_error_line_is_kept() -> None:
    output = (
        "\x1b[0m[INFO] fine\n[ERROR] Could not find artifact org.apache.kafka:kafka_2.13:jar:9\n"
    )
    assert (
        jars._first_maven_error(output)
        == "Could not find artifact org.apache.kafka:kafka_2.13:jar:9"
    )


def test_each_kafka_line_gets_its_pom_and_logging() -> None:
    assert jars.pom_for("3.9.2").name == "kafka3.xml"
    assert jars.pom_for("4.3.1").name == "kafka4.xml"
    assert "-Dlog4j.version=2.24.3" in jars._maven_properties("4.1.1")
    assert jars._maven_properties("3.9.2") == ["-Dkafka.version=3.9.2"]


def test_a_process_of_another_sandbox_is_not_ours() -> None:
    import subprocess
    import sys

    from kreplica.sandbox import procs

    # Sandbox "demo2"'s folder name starts with "demo": a recorded pid of "demo" that the OS
    # reused for a "demo2" JVM must not count as "demo"'s (down would kill the wrong cluster).
    root = sandbox.sandbox_root()
    other = root / "demo2" / "broker-1"
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", f"-Dkafka.logs.dir={other}"]
    )
    try:
        assert procs.is_ours(proc.pid, str(root / "demo2"))
        assert not procs.is_ours(proc.pid, str(root / "demo"))
    finally:
        proc.kill()
        proc.wait()


def test_a_failed_kraft_format_stops_the_other_formats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import sys
    import time

    from kreplica.sandbox import cluster

    # A stand-in `java`: node 1's storage format fails at once, the others would run for a
    # minute. Their command lines keep the sandbox's paths, as a JVM's do.
    java = tmp_path / "java"
    java.write_text(
        "#!/bin/sh\n"
        'case "$*" in *node-1.properties*) echo "bad config"; exit 1;; esac\n'
        f"exec {sys.executable} -c 'import time; time.sleep(60)' \"$@\"\n"
    )
    java.chmod(0o755)
    monkeypatch.setattr(cluster, "fetch", lambda version: "")
    monkeypatch.setattr(cluster, "java_binary", lambda: str(java))
    with pytest.raises(sandbox.SandboxError, match="formatting KRaft node 1"):
        sandbox.up(mode="kraft", brokers=3, name="fmt")
    folder = os.path.join(sandbox.sandbox_root(), "fmt", "").encode()
    time.sleep(0.2)  # a process the launcher left behind would still be there
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if folder in fh.read():
                    left.append(pid)
        except OSError:
            pass
    assert left == []
    assert not (sandbox.sandbox_root() / "fmt").exists()
