"""The Python side of `fleet audit` per snapshot file, without Spark: a file's text to the
Arrow batch its task hands Spark (`kreplica.fleet.batches.snapshot_batch`), through the
columnar reader and numpy (arrays) and through one object per partition (objects).

    PYTHONPATH=. .venv/bin/python bench/bench_fleet_records.py FOLDER [--layouts]
        [--paths arrays,objects]

FOLDER holds snapshot files (`kreplica fleet synth`). Prints per path the CPU seconds
(process time) of all files, texts already in memory, layouts off unless --layouts, and
whether the two paths gave the same batches. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import gc
import time
from pathlib import Path

from pyspark.sql.pandas.types import to_arrow_schema

from kreplica.fleet.batches import snapshot_batch
from kreplica.fleet.frames import PARSED_ROW
from kreplica.fleet.policy import parse_policy

POLICY = {"rule": [{"topics": ".*", "rf": 3, "min_insync": 2, "racks": 3}]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--layouts", action="store_true")
    ap.add_argument("--paths", default="arrays,objects")
    args = ap.parse_args()
    schema = to_arrow_schema(PARSED_ROW)
    policy = parse_policy(POLICY)
    texts = [(f"file:{p}", p.read_text()) for p in sorted(args.folder.glob("*.json"))]
    rows = 0
    batches = {}
    for path in args.paths.split(","):
        # imports and first calls outside the figure
        snapshot_batch(*texts[0], policy, schema, layouts=False, columnar=path == "arrays")
        gc.collect()
        began = time.process_time()
        batches[path] = [
            snapshot_batch(f, t, policy, schema, layouts=args.layouts, columnar=path == "arrays")
            for f, t in texts
        ]
        spent = time.process_time() - began
        rows = sum(b.column("n_partitions")[0].as_py() or 0 for b in batches[path])
        print(f"{path:8} {spent:6.2f} s CPU  {len(texts)} files  {rows} partitions")
    if len(batches) == 2:
        a, b = batches.values()
        same = all(x.equals(y) for x, y in zip(a, b, strict=True))
        print(f"same batches: {same}")


if __name__ == "__main__":
    main()
