"""A Java harness compiled against Kafka's jars and asked line by line: the tests that compare
kreplica with Kafka's own classes (placement, the client's partitioner and assignors)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest


def java_harness(
    tmp_path_factory: pytest.TempPathFactory,
    version: str,
    class_name: str,
    source: str,
    java_flags: tuple[str, ...] = (),
) -> Callable[[list[str]], list[str]]:
    """Compile `source` (class `class_name`, possibly in a package) against Kafka `version`;
    returns a call that sends request lines to one fresh JVM and returns its answer lines."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("needs a JDK (java and javac on PATH) to run Kafka's own code")
    from kreplica.sandbox.jars import SandboxError, fetch

    try:
        classpath = fetch(version)
    except SandboxError as exc:
        pytest.skip(f"Kafka {version} jars unavailable ({exc}); run scripts/test")
    workdir: Path = tmp_path_factory.mktemp(f"harness_{version}")
    java_file = workdir / f"{class_name.rsplit('.', 1)[-1]}.java"
    java_file.write_text(source)
    subprocess.run(
        ["javac", "-nowarn", "-cp", classpath, "-d", str(workdir), str(java_file)],
        check=True,
        capture_output=True,
        timeout=120,
    )

    def ask(requests: list[str]) -> list[str]:
        done = subprocess.run(
            ["java", *java_flags, "-cp", f"{workdir}:{classpath}", class_name],
            input="\n".join(requests) + "\n",
            capture_output=True,
            text=True,
            encoding="utf-8",
            check=True,
            timeout=300,
        )
        answers = done.stdout.splitlines()
        assert len(answers) == len(requests), done.stderr[-2000:]
        return answers

    return ask
