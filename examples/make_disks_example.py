"""Write examples/disks.json: examples/cluster.json as the AdminClient source would read it
from a JBOD cluster (two log dirs per broker with their total and usable bytes, and each
replica's dir). Deterministic: same bytes every run.

    .venv/bin/python examples/make_disks_example.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
GIB = 2**30
DIRS = ("/var/kafka/data-1", "/var/kafka/data-2")


def main() -> None:
    data = json.loads((HERE / "cluster.json").read_text(encoding="utf-8"))
    data["source"] = "admin"
    for b in data["brokers"]:
        i = b["id"]
        # broker 6 is nearly full: 62 GiB usable on 500 GiB disks, 50 GiB of it kept free
        usable = (31, 31) if i == 6 else (180 + 10 * i, 240 - 15 * i)
        b["log_dirs"] = [
            {"path": p, "total_bytes": 500 * GIB, "usable_bytes": u * GIB}
            for p, u in zip(DIRS, usable, strict=True)
        ]
    for t in data["topics"]:
        for p in t["partitions"]:
            p["replica_dirs"] = [DIRS[(p["partition"] + b) % 2] for b in p["replicas"]]
    text = json.dumps(data, indent=2) + "\n"
    (HERE / "disks.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
