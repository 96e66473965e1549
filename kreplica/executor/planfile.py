"""A plan as apply reads it: Kafka's reassignment JSON, and the kreplica plan document beside it.

`PLAN.json` is what `--out` writes (or any tool's reassignment JSON); `PLAN.kreplica.json`, when
present, adds the cluster id, the before-state and the partitions to create. A bare Kafka file
can be applied too, but nothing then proves it was made for this cluster or this state.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kreplica.errors import StalePlan
from kreplica.model import ClusterSnapshot
from kreplica.planner.serialize import (
    parse_log_dirs,
    parse_new_partitions,
    parse_plan_before,
    parse_rate_rows,
    parse_reassignment_json,
)
from kreplica.userfiles import decode_json, read_user_file

Key = tuple[str, int]


def plan_siblings(path: Path) -> dict[str, Path]:
    """PLAN.json -> its rollback, plan document, the rollback's plan document and journal
    beside it (PLAN.rollback.json's plan document is then PLAN.rollback.kreplica.json; any
    name not ending in .json gets the suffixes appended). The one place they are named."""
    stem = path.name[: -len(".json")] if path.name.endswith(".json") else path.name
    return {
        "reassignment": path,
        "rollback": path.with_name(stem + ".rollback.json"),
        "plan_document": path.with_name(stem + ".kreplica.json"),
        "rollback_document": path.with_name(stem + ".rollback.kreplica.json"),
        "journal": path.with_name(stem + ".journal.jsonl"),
    }


def journal_path(plan_path: Path) -> Path:
    """PLAN.json -> PLAN.journal.jsonl beside it."""
    return plan_siblings(plan_path)["journal"]


@dataclass(frozen=True)
class PlanFile:
    path: Path
    targets: dict[Key, tuple[int, ...]]  # existing partitions -> replicas after
    before: dict[Key, tuple[int, ...]]  # from the plan document ({} for bare Kafka JSON)
    new_partitions: dict[Key, tuple[int, ...]]  # partitions to create -> their replicas
    document: dict[str, Any] | None  # the plan document (or the file itself when it is one)
    # (topic, partition, broker) -> the log dir `log_dirs` names for that replica ("any" left
    # out): intra-broker moves, and where new replicas go
    dirs: dict[tuple[str, int, int], str] = field(default_factory=dict)
    # (topic, partition, broker) -> its dir when the plan was made (plan document's before_dirs)
    before_dirs: dict[tuple[str, int, int], str] = field(default_factory=dict)
    # partition -> bytes/s written to it, when the plan was made from measured traffic
    # (the plan document's `write_rates`; {} for older plans and plans made without rates)
    write_rates: dict[Key, float] = field(default_factory=dict)

    @property
    def rates_measured(self) -> str | None:
        """When and over how long the plan's write rates were measured, in words."""
        rates = (self.document or {}).get("write_rates")
        if not isinstance(rates, dict):
            return None
        window = rates.get("window_s")
        over = f" over {window:g} s" if isinstance(window, int | float) else ""
        return f"{rates.get('measured_at') or 'at an unknown time'}{over}"

    @property
    def paths(self) -> dict[str, Path]:
        """The files beside the plan: rollback, plan_document, journal (plan_siblings)."""
        return plan_siblings(self.path)

    @property
    def cluster_id(self) -> str | None:
        value = (self.document or {}).get("cluster_id")
        return value if isinstance(value, str) else None

    @property
    def topics(self) -> list[str]:
        return sorted({t for t, _ in self.targets} | {t for t, _ in self.new_partitions})

    @property
    def dir_topics(self) -> list[str]:
        return sorted({t for t, _, _ in self.dirs})

    @property
    def resized_topics(self) -> set[str]:
        """The topics whose replication factor or partition count the plan changes: their
        change applies whole or not at all (half of it is a topic at two RFs)."""
        resized = {
            key[0]
            for key, target in self.targets.items()
            if len(self.before.get(key, target)) != len(target)
        }
        return resized | {topic for topic, _ in self.new_partitions}

    def finished_moves(self, snapshot: ClusterSnapshot, exclude: Collection[Key]) -> list[Key]:
        """The partitions (outside `exclude`) that now have the replicas the plan gave them
        and had others when it was made: moved by the plan, and so what its rollback returns."""
        current = {(t.name, p.partition): p.replicas for t in snapshot.topics for p in t.partitions}
        return sorted(
            key
            for key, target in self.targets.items()
            if key not in exclude
            and current.get(key) == target
            and self.before.get(key, target) != target
        )

    def done(self, snapshot: ClusterSnapshot) -> bool:
        """Every partition already has its planned replicas and every new one exists so."""
        current = {(t.name, p.partition): p.replicas for t in snapshot.topics for p in t.partitions}
        wanted = {**self.targets, **self.new_partitions}
        return all(current.get(k) == v for k, v in wanted.items())


def _read_json(path: Path, what: str) -> Any:
    text = read_user_file(path, what, fix="check the path")
    return decode_json(
        text, str(path), fix="pass a kafka-reassign-partitions JSON or a PLAN.kreplica.json"
    )


def plan_document_of(path: Path, data: Any) -> dict[str, Any] | None:
    """The plan document of the plan file at `path` (its contents `data`): the file itself
    when it is one, else PLAN.kreplica.json beside it, else None (bare Kafka JSON). A plan
    document that lists other reassignments than the file is refused (StalePlan)."""
    if isinstance(data, dict) and "kreplica_plan" in data:
        return data
    sibling = plan_siblings(path)["plan_document"]
    if not sibling.exists():
        return None
    loaded = _read_json(sibling, "plan document")
    if not isinstance(loaded, dict) or "kreplica_plan" not in loaded:
        return None
    planned = {(t, p): tuple(r) for t, p, r in parse_reassignment_json(loaded)}
    if planned != {(t, p): tuple(r) for t, p, r in parse_reassignment_json(data)}:
        raise StalePlan(
            f"{path} and its plan document {sibling} list different reassignments; one was "
            "edited: make a new plan"
        )
    return loaded


def load_plan_file(path: Path) -> PlanFile:
    """Read PLAN.json (or PLAN.kreplica.json directly) and the plan document beside it."""
    data = _read_json(path, "plan file")
    document = plan_document_of(path, data)
    targets = {(t, p): tuple(r) for t, p, r in parse_reassignment_json(data)}
    before: dict[Key, tuple[int, ...]] = {}
    new: dict[Key, tuple[int, ...]] = {}
    if document is not None:
        before = {(t, p): tuple(r) for t, p, r in parse_plan_before(document)}
        new = {(t, p): tuple(r) for t, p, r in parse_new_partitions(document)}
    from kreplica.executor.dirmoves import dir_targets

    dirs = dir_targets(targets, parse_log_dirs(data))
    before_dirs = _before_dirs(document)
    written = (document or {}).get("write_rates")
    rates = parse_rate_rows(written.get("partitions") if isinstance(written, dict) else None)
    return PlanFile(path, targets, before, new, document, dirs, before_dirs, rates)


def _before_dirs(document: dict[str, Any] | None) -> dict[tuple[str, int, int], str]:
    """The plan document's `before_dirs` (written by drain-dir and balance-dirs)."""
    out: dict[tuple[str, int, int], str] = {}
    rows = (document or {}).get("before_dirs") or []
    if not isinstance(rows, list):
        return out
    for row in rows:
        if not isinstance(row, dict):
            continue
        topic, partition, broker, path = (
            row.get("topic"),
            row.get("partition"),
            row.get("broker"),
            row.get("log_dir"),
        )
        if (
            isinstance(topic, str)
            and isinstance(partition, int)
            and isinstance(broker, int)
            and isinstance(path, str)
        ):
            out[(topic, partition, broker)] = path
    return out
