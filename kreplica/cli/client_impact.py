"""The client-impact section of a plan that adds partitions: keys that change partition and
the consumer groups' assignment afterwards. Shared by the planning commands (add-partitions,
plan --partitions); `kreplica partition-for` and `kreplica consumers` are kreplica.cli.impact_cmd.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kreplica.cli.common import read_keys
from kreplica.errors import UsageError


def plan_client_impact(
    plan: Any,
    snap: Any,
    spec: Any,
    *,
    keys_file: Path | None = None,
    sample: int | None = None,
) -> dict[str, Any]:
    """Keys that change partition (exact share always; measured with --keys-file, or on
    --sample N keys read from each topic) and, when the source is --bootstrap-server, every
    consumer group reading the grown topics."""
    from kreplica.impact.partitioner import measure_remap
    from kreplica.impact.report import group_impact, plan_impact

    counts: dict[str, tuple[int, int]] = {}
    sizes: dict[str, int] = snap.partition_counts()  # no topic object built from columns
    for change in plan.new_partitions:
        old, new = counts.get(change.topic) or (sizes[change.topic],) * 2
        counts[change.topic] = (old, max(new, change.partition + 1))
    measured = {}
    if keys_file is not None:
        keys = read_keys(keys_file, hex_keys=False)
        measured = {t: measure_remap(keys, old, new) for t, (old, new) in counts.items()}
    elif sample is not None:
        from kreplica.sources.keys import sample_keys

        if not spec.bootstrap_server:
            raise UsageError(
                "--sample reads keys from the topic: plan from --bootstrap-server, or pass "
                "--keys-file FILE"
            )
        measured = {
            t: measure_remap(
                sample_keys(
                    spec.bootstrap_server,
                    t,
                    sample,
                    client_config=spec.client_config or None,
                    timeout_s=spec.timeout_s,
                ),
                old,
                new,
            )
            for t, (old, new) in counts.items()
        }
    groups: list[dict[str, Any]] | None = None
    note: str | None = None
    if spec.kind == "bootstrap_server":
        from kreplica.errors import KreplicaError
        from kreplica.sources.groups import read_groups

        try:
            source = spec.open()
            try:
                found = read_groups(source, sizes)
            finally:
                source.close()
        except KreplicaError as exc:
            note = f"consumer groups not read: {exc}"
        else:
            new_counts = {t: new for t, (_old, new) in counts.items()}
            groups = [
                group_impact(g.group_id, g.assignor, g.spec, new_counts, state=g.state)
                for g in found
                if any(t in counts for m in g.spec.members for t in m.topics)
            ]
    else:
        note = (
            "consumer groups: not known from "
            + ("a snapshot" if spec.kind == "snapshot" else "ZooKeeper")
            + "; plan from --bootstrap-server, or run `kreplica consumers --group G --after "
            "PLAN.json --bootstrap-server ...`"
        )
    return plan_impact(counts, groups=groups, groups_note=note, measured=measured)
