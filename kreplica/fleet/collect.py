"""`kreplica fleet collect`: snapshot many clusters at once into DIR/<cluster_id>.json.

The CLI resolves each named cluster of the config file to a source opener; this module runs
them on a thread pool (reading a cluster is mostly waiting for it), writes each snapshot as
`kreplica snapshot -o` would, and reports a cluster that cannot be read instead of stopping:
the others still land.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kreplica.errors import KreplicaError
from kreplica.fleet.preflight import DONE_MARKER
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
    same_as: str | None = None  # another entry of this run read the same cluster first

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


class _Claims:
    """Which entry writes which file: the first to read a cluster; a second entry reading
    the same cluster (another name, another address) must not overwrite it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: dict[str, str] = {}

    def claim(self, file: str, name: str) -> str | None:
        with self._lock:
            owner = self._owner.setdefault(file, name)
        return None if owner == name else owner


def _one(target: Target, out: Path, claims: _Claims) -> Collected:
    try:
        source = target.open()
        try:
            snapshot = source.snapshot(None)
        finally:
            source.close()
        name = safe_name(snapshot.cluster_id or target.name)
        path = out / f"{name}.json"
        owner = claims.claim(path.name, target.name)
        if owner is not None:
            return Collected(
                target.name,
                target.address,
                False,
                cluster_id=snapshot.cluster_id,
                error=f"the same cluster as {owner!r} ({snapshot.cluster_id}); not written twice",
                same_as=owner,
            )
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
    claims = _Claims()
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(targets) or 1))) as pool:
        futures = {pool.submit(_one, t, out, claims): t for t in targets}
        for future in as_completed(futures):
            result = future.result()
            results[futures[future].name] = result
            if on_done is not None:
                on_done(result)
    ordered = [results[t.name] for t in targets]
    _mark_done(out, ordered)
    return ordered


def _mark_done(out: Path, results: Sequence[Collected]) -> None:
    """The success marker (as `fleet audit|plan` write theirs), last; not a *.json file, so
    an audit of this folder does not read it."""
    failed = [r.name for r in results if not r.ok]
    doc = {
        "kreplica_fleet": "collect",
        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "clusters": len(results) - len(failed),
        "skipped": failed,
        "status": "ok" if not failed else ("partial" if len(failed) < len(results) else "failed"),
    }
    tmp = out / f".{DONE_MARKER}.tmp"
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(out / DONE_MARKER)
