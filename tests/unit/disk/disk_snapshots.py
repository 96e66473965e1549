"""Snapshots with disk figures for the disk guard's tests: examples/cluster.json plus, per
broker, two log dirs and their usable bytes (and an empty broker 7 for the broker
operations that move replicas onto a broker)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
TOTAL = 1000 * 2**30  # each dir: 1000 GiB; the default headroom keeps 100 GiB free
KEEP = TOTAL // 10
DIRS = ("/data/a", "/data/b")


def disk_snapshot(
    usable: Callable[[int, str], int],
    *,
    extra_broker: bool = False,
    source: str = "admin",
) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REPO / "examples" / "cluster.json").read_text())
    data["source"] = source
    if extra_broker:
        data["brokers"].append({"id": 7, "rack": "eu-west-1a", "host": "10.0.7.15", "port": 9092})
    for b in data["brokers"]:
        b["log_dirs"] = [
            {"path": p, "total_bytes": TOTAL, "usable_bytes": usable(b["id"], p)} for p in DIRS
        ]
    return data


def write(tmp_path: Path, data: dict[str, Any], name: str = "snap.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)
