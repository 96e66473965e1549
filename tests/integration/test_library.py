"""docs/library.md's live example, run as written against the shared KRaft cluster (its topic
renamed to one of this module's own): plan RF 1 -> 3, write, apply, verify, through `kreplica`
the library."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

import kreplica
from kreplica.sandbox import SandboxInfo
from kreplica.testing import TopicSpec, create_topics

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

DOC = Path(__file__).resolve().parents[2] / "docs" / "library.md"
TOPIC = "library-example"


def _python_blocks() -> list[str]:
    blocks: list[tuple[str, list[str]]] = []
    inside = False
    for line in DOC.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("```"):
            if not inside:
                blocks.append((line[3:].strip(), []))
            inside = not inside
        elif inside:
            blocks[-1][1].append(line)
    return ["".join(body) for info, body in blocks if info == "python"]


def test_the_live_example_applies_a_plan(
    kraft_cluster: SandboxInfo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bootstrap = kraft_cluster.bootstrap_servers
    create_topics(bootstrap, [TopicSpec(TOPIC, partitions=3, replication_factor=1)])
    code = _python_blocks()[1]
    assert '"payments"' in code and 'BOOTSTRAP = "localhost:9092"' in code
    code = code.replace('"payments"', repr(TOPIC)).replace('"payments.json"', '"plan.json"')
    code = code.replace('BOOTSTRAP = "localhost:9092"', f"BOOTSTRAP = {bootstrap!r}")
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(DOC), "exec"), {})
    assert printed.getvalue() == "moved 3 partitions in 1 wave(s)\n"
    after = kreplica.read_cluster(bootstrap_server=bootstrap, topics=[TOPIC], sizes=False)
    assert [len(p.replicas) for p in after.topic(TOPIC).partitions] == [3, 3, 3]
    assert (tmp_path / "plan.journal.jsonl").exists()  # what --resume and status read
    with kreplica.connect(bootstrap_server=bootstrap) as connection:
        assert kreplica.verify(connection, "plan.json") == []
