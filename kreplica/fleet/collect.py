"""`kreplica fleet collect`: snapshot many clusters at once into DIR/<cluster_id>.json.

The CLI resolves each named cluster of the config file to a source opener; this module runs
them on a thread pool (reading a cluster is mostly waiting for it), writes each snapshot as
`kreplica snapshot -o` would, and reports a cluster that cannot be read instead of stopping:
the others still land.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kreplica.errors import KreplicaError
from kreplica.fleet.report import safe_name
from kreplica.sources.snapshot import write_snapshot


@dataclass(frozen=True)
class Target:
    name: str  # the config file's name for the cluster
    address: str  # what it reads (for messages)
    open: Callable[[], Any]  # returns an AssignmentSource


@dataclass
class Collected:
    name: str
    address: str
    ok: bool
    file: str | None = None
    cluster_id: str | None = None
    brokers: int = 0
    topics: int = 0
    partitions: int = 0
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def _one(target: Target, out: Path) -> Collected:
    try:
        source = target.open()
        try:
            snapshot = source.snapshot(None)
        finally:
            source.close()
        name = safe_name(snapshot.cluster_id or target.name)
        path = out / f"{name}.json"
        tmp = path.with_suffix(".json.tmp")
        write_snapshot(snapshot, tmp)
        tmp.replace(path)
    except KreplicaError as exc:
        return Collected(target.name, target.address, False, error=exc.message)
    except Exception as exc:  # one cluster's surprise must not cost the others theirs
        return Collected(
            target.name, target.address, False, error=f"unexpected {type(exc).__name__}: {exc}"
        )
    return Collected(
        target.name,
        target.address,
        True,
        file=str(path),
        cluster_id=snapshot.cluster_id,
        brokers=len(snapshot.brokers),
        topics=len(snapshot.topics),
        partitions=sum(len(t.partitions) for t in snapshot.topics),
    )


def collect(
    targets: Sequence[Target],
    out: Path,
    *,
    workers: int = 8,
    on_done: Callable[[Collected], None] | None = None,
) -> list[Collected]:
    """Snapshot every target, `workers` at a time; results in the targets' order."""
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Collected] = {}
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(targets) or 1))) as pool:
        futures = {pool.submit(_one, t, out): t for t in targets}
        for future in as_completed(futures):
            result = future.result()
            results[futures[future].name] = result
            if on_done is not None:
                on_done(result)
    return [results[t.name] for t in targets]
