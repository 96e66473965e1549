"""`expand` on a snapshot read into columns (kreplica/columns.py) never builds a topic object:
the plan, its disk check, the diff, the runbook and the plan files all come from the arrays,
in every output format."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from kreplica.columns import PartitionColumns


def _snapshot(path: Path) -> list[str]:
    """Six brokers on three racks with disk figures, topics at RF 2 on two racks each."""
    rng = random.Random(4)
    racks = {b: "abc"[(b - 1) % 3] for b in range(1, 7)}
    topics = []
    for t in range(5):
        parts = []
        for p in range(8):
            first = rng.randrange(1, 7)
            second = rng.choice([b for b in racks if racks[b] != racks[first]])
            parts.append(
                {
                    "partition": p,
                    "replicas": [first, second],
                    "leader": first,
                    "isr": [first, second],
                    "size_bytes": rng.randrange(10**6),
                }
            )
        topics.append({"name": f"t{t}", "partitions": parts})
    doc = {
        "kreplica_snapshot": 1,
        "cluster_id": "c1",
        "brokers": [
            {
                "id": b,
                "rack": r,
                "log_dirs": [{"path": "/d", "total_bytes": 10**9, "usable_bytes": 5 * 10**8}],
            }
            for b, r in racks.items()
        ],
        "topics": topics,
    }
    path.write_text(json.dumps(doc))
    return [t["name"] for t in topics]


@pytest.mark.parametrize("fmt", ["table", "json", "markdown"])
def test_expand_from_columns_builds_no_topic(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    snap = tmp_path / "snap.json"
    names = _snapshot(snap)
    topics = [a for n in names for a in ("--topic", n)]
    args = ["expand", *topics, "--rf", "3", "--snapshot", str(snap), "--output", fmt]
    out = tmp_path / "plan.json"

    def refuse(self: PartitionColumns, i: int) -> Any:
        raise AssertionError("a topic was built from the columns")

    monkeypatch.setattr(PartitionColumns, "materialise", refuse)
    run = cli([*args, "--dry-run", "--out", str(out)])
    assert run.code == 0, run.stderr
    plan = json.loads(out.read_text())
    assert len(plan["partitions"]) == 40
    assert all(len(p["replicas"]) == 3 for p in plan["partitions"])
    document = json.loads((tmp_path / "plan.kreplica.json").read_text())
    assert document["report"]["disk"]["checked"] is True
