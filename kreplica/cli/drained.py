"""The brokers drained on each cluster, remembered in kreplica's state folder
(`drained-brokers.json` beside the plans kept there), so later plans leave them out.

An applied drain records its brokers (by the plan's cluster id); an applied add-brokers, or
`kreplica brokers undrain IDS`, forgets them. Planning commands read the record and pass the
brokers to the pure planner as exclusions (kreplica.planner.drained says so in the plan).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kreplica.cli import statefile
from kreplica.errors import InputError

NAME, KIND = "drained-brokers.json", "kreplica_drained"
# cluster id -> broker id -> {"since": ISO time, "plan": the applied plan's path}
Record = dict[str, dict[int, dict[str, str]]]


def record_path() -> Path:
    return statefile.record_path(NAME)


def load() -> Record:
    """The record ({} when there is none yet); a file that is not one is a one-line error."""
    data = statefile.read_record(NAME, KIND, "drained brokers")
    clusters = data.get("clusters", {})
    try:
        return {
            str(cid): {int(b): {k: str(v) for k, v in dict(e).items()} for b, e in ids.items()}
            for cid, ids in clusters.items()
        }
    except (TypeError, ValueError, AttributeError):
        raise InputError(
            f"{record_path()}: a broker entry is malformed; fix or delete it"
        ) from None


def _save(record: Record) -> None:
    clusters = {
        cid: {str(b): entry for b, entry in sorted(ids.items())}
        for cid, ids in sorted(record.items())
        if ids
    }
    statefile.write_record(NAME, KIND, {"clusters": clusters})


def drained_on(cluster_id: str | None) -> dict[int, str]:
    """The brokers drained on the cluster: id -> when (ISO UTC)."""
    if not cluster_id:
        return {}
    return {b: e.get("since", "") for b, e in load().get(cluster_id, {}).items()}


def remember(cluster_id: str, brokers: Iterable[int], plan: Path) -> None:
    record = load()
    since = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    ids = record.setdefault(cluster_id, {})
    for b in brokers:
        ids[int(b)] = {"since": since, "plan": str(plan.absolute())}
    _save(record)


def forget(cluster_id: str, brokers: Iterable[int]) -> list[int]:
    """Forget these brokers on the cluster; the ones that were drained."""
    record = load()
    ids = record.get(cluster_id, {})
    gone = sorted(b for b in set(brokers) if ids.pop(b, None) is not None)
    if gone:
        _save(record)
    return gone


def after_apply(cluster_id: str | None, report: Mapping[str, Any], plan: Path) -> str | None:
    """What an applied plan teaches: a drain's brokers are drained, add-brokers' are back.
    The line that says so (None: nothing learnt)."""
    drained = sorted(int(b) for b in report.get("drained_brokers") or [])
    added = sorted(int(b) for b in report.get("new_brokers") or [])
    if not cluster_id or not (drained or added):
        return None
    from kreplica.planner.drained import broker_words

    if drained:
        remember(cluster_id, drained, plan)
        return (
            f"{broker_words(drained)} drained: later plans on cluster {cluster_id} leave "
            f"{'it' if len(drained) == 1 else 'them'} out until `kreplica brokers undrain "
            f"{','.join(map(str, drained))}`"
        )
    back = forget(cluster_id, added)
    if not back:
        return None
    them = "it" if len(back) == 1 else "them"
    return f"{broker_words(back)} added back: later plans may place replicas on {them} again"


def exclusions(snap: Any, named: frozenset[int] | None) -> tuple[frozenset[int], list[Any]]:
    """The drained brokers a plan on `snap`'s cluster leaves out, and the finding that says
    so. `named`: the brokers the request names (None: it names none); a named broker is
    asked for, not left out."""
    from kreplica.planner.drained import drained_to_leave_out, left_out_finding

    left_out = drained_to_leave_out(snap, drained_on(snap.cluster_id), named or frozenset())
    if not left_out:
        return frozenset(), []
    return frozenset(left_out), [left_out_finding(left_out)]


def annotate(plan: Any, notes: list[Any], asked: frozenset[int] | None) -> Any:
    """The plan with the drained brokers' note and a warning per empty broker it fills that
    the request did not ask for."""
    from kreplica.planner.drained import empty_broker_findings, with_findings

    return with_findings(plan, [*notes, *empty_broker_findings(plan, asked or frozenset())])
