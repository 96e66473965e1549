"""apply / verify / cancel / elect / throttles, once typer has parsed them. Imported lazily.
The work is kreplica.executor.facade's; applying (shared with the planning commands) is
kreplica.cli.applying."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kreplica.cli import output
from kreplica.cli.applying import clear_pending, connect, journals_to_clear, run_apply, warn_stderr
from kreplica.cli.common import console
from kreplica.cli.config import SourceSpec
from kreplica.cli.options import Options, OutputFormat
from kreplica.errors import KreplicaError, PartialResult, UsageError, VerificationFailed
from kreplica.executor import facade
from kreplica.executor.options import ApplyOptions


def apply(opts: Options, spec: SourceSpec, plan_path: Path) -> None:
    data = run_apply(opts, spec, plan_path)
    if opts.output is OutputFormat.json:
        output.emit_envelope(data)


def verify(opts: Options, spec: SourceSpec, plan_path: Path) -> None:
    plan = facade.load_plan(plan_path)
    with connect(spec) as connection:
        differences = facade.verify(connection, plan)
    rows = [
        {
            "partition": d.partition,
            "planned": list(d.planned),
            "now": list(d.now) if d.now is not None else None,
            "moving": d.moving,
            "planned_dir": d.planned_dir,
            "now_dir": d.now_dir,
        }
        for d in differences
    ]
    total = len(plan.targets) + len(plan.new_partitions)
    cancelled_on = facade.journal_cancelled_on(plan_path)
    if opts.output is OutputFormat.json:
        errors = (
            [
                {
                    "code": "verification-failed",
                    "message": _verify_line(plan_path, differences, total, cancelled_on),
                }
            ]
            if differences
            else []
        )
        output.emit_envelope(
            {"plan": str(plan_path), "partitions": total, "differences": rows}, errors
        )
    else:
        out = console()
        for d in differences[:20]:
            now = "missing" if d.now is None else str(list(d.now))
            state = " (moving)" if d.moving else ""
            if d.planned_dir is not None:
                now = "not on the broker" if d.now_dir is None else d.now_dir
                out.print(
                    f"{d.partition}: planned in {d.planned_dir}, now in {now}{state}", markup=False
                )
                continue
            out.print(f"{d.partition}: planned {list(d.planned)}, now {now}{state}", markup=False)
        if not differences:
            out.print(
                f"{plan_path}: all {total} partition(s) as planned, nothing in flight", markup=False
            )
    if differences:
        raise VerificationFailed(_verify_line(plan_path, differences, total, cancelled_on))


def _verify_line(
    plan_path: Path, differences: list[Any], total: int, cancelled_on: str | None
) -> str:
    moving = sum(1 for d in differences if d.moving)
    line = f"{plan_path}: {len(differences)} of {total} partition(s) not as planned" + (
        f" ({moving} still moving)" if moving else ""
    )
    if cancelled_on is not None:  # the journal says why: no cancel to suggest again
        rollback = facade.plan_paths(plan_path)["rollback"]
        return (
            f"{line}: its apply was cancelled on {cancelled_on[:10]} (journal); apply it "
            f"again to finish it, or apply {rollback} to return what had finished"
        )
    return line + "; wait and verify again, or kreplica apply --resume / kreplica cancel"


def cancel(
    opts: Options,
    spec: SourceSpec,
    plan_path: Path,
    *,
    force: bool = False,
    rollback_finished: bool = False,
) -> None:
    plan = facade.load_plan(plan_path)
    roll_back = (
        # the rollback's write rates: those its plan document carries, none measured (its
        # apply's check passed with the same partitions and rate)
        ApplyOptions(
            poll_interval_s=float(os.environ.get("KREPLICA_POLL_INTERVAL", "2")), rate_window_s=0
        )
        if rollback_finished
        else None
    )
    with connect(spec) as connection:
        output.state().interrupt_note = (
            f"interrupted: part of the cancel may have been sent; `kreplica cancel {plan_path}` "
            f"again finishes it, `kreplica verify {plan_path}` shows where things are"
        )
        outcome = facade.cancel(
            connection,
            plan,
            emit=warn_stderr,
            force=force,
            roll_back_finished=roll_back,
        )
        clear_pending(connection)
    names = [f"{t}-{p}" for t, p in outcome.cancelled]
    rolled = outcome.rolled_back
    if opts.output is OutputFormat.json:
        output.emit_envelope(
            {
                "plan": str(plan_path),
                "cancelled": names,
                "apply_running": outcome.running,
                "finished": [f"{t}-{p}" for t, p in outcome.finished],
                "created": [f"{t}-{p}" for t, p in outcome.created],
                "rollback": str(outcome.rollback),
                "rolled_back": [f"{t}-{p}" for t, p in rolled.moved] if rolled else [],
            }
        )
        return
    console().print(f"{plan_path}: {cancel_line(outcome)}", markup=False)


def cancel_line(outcome: facade.CancelOutcome) -> str:
    """What a cancel stopped, what stays, and the way back: one line."""
    parts = [
        f"{len(outcome.cancelled)} returned to their old replicas"
        if outcome.cancelled
        else "nothing of this plan was in flight"
    ]
    if outcome.finished:
        where = (
            f"at RF {outcome.finished_rf}"
            if outcome.finished_rf is not None
            else "on their new replicas"
        )
        if outcome.rolled_back is not None:
            parts.append(
                f"{len(outcome.finished)} had finished and {outcome.rollback} returned "
                f"{len(outcome.rolled_back.moved)} of them"
            )
        else:
            parts.append(
                f"{len(outcome.finished)} had finished and stay {where}: "
                f"{outcome.rollback} returns them"
            )
    if outcome.created:
        parts.append(f"{len(outcome.created)} new partition(s) stay (Kafka cannot remove them)")
    parts.append(
        "the running apply stops and restores the throttles"
        if outcome.running
        else "kreplica's throttles restored"
    )
    return "; ".join(parts)


def elect(opts: Options, spec: SourceSpec, plan_path: Path | None, topics: list[str]) -> None:
    if plan_path is None and not topics:
        raise UsageError("nothing to elect; pass PLAN.json or --topic NAME")
    with connect(spec) as connection:
        snap = facade.snapshot(connection)
        keys: list[tuple[str, int]] = []
        if plan_path is not None:
            plan = facade.load_plan(plan_path)
            keys += sorted({*plan.targets, *plan.new_partitions})
        if topics:
            from kreplica.sources.assemble import select_topics

            names = select_topics([t.name for t in snap.topics], topics)
            keys += [
                (t.name, p.partition) for t in snap.topics if t.name in names for p in t.partitions
            ]
        off = facade.off_preferred(snap, keys)
        output.state().interrupt_note = (
            "interrupted: the election may have been sent; running elect again is safe"
        )
        # the right to elect is asked even when every leader is preferred: this command writes
        results = facade.elect(connection, off)
    failed = {f"{t}-{p}": err for (t, p), err in results.items() if err}
    elected = [f"{t}-{p}" for (t, p), err in results.items() if not err]
    if opts.output is OutputFormat.json:
        output.emit_envelope({"elected": sorted(elected), "failed": failed})
    else:
        out = console()
        out.print(
            f"preferred leader elected on {len(elected)} partition(s)"
            + ("" if off else " (every leader was on its preferred replica already)"),
            markup=False,
        )
        for name, err in sorted(failed.items()):
            out.print(f"{name}: {err}", style="warning", markup=False)
    if failed:
        raise VerificationFailed(
            f"{len(failed)} partition(s) kept their leader ({', '.join(sorted(failed)[:3])}): "
            "the preferred replica is not in sync or not alive; retry once it is"
        )


def throttles(
    opts: Options, spec: SourceSpec, *, clear: bool, everything: bool, plans: list[Path]
) -> None:
    """List the replication throttles set on a cluster. --clear restores those kreplica set
    and has not restored (found in the plans' journals), --clear --all removes every one."""
    unread: list[int] = []
    removed: list[int] = []  # unread brokers whose throttles --clear --all removed all the same
    with connect(spec) as connection:
        snap = facade.snapshot(connection)
        clear_pending(connection)  # what earlier runs could not clear, now its broker is back
        known = facade.known_brokers(connection, snap)
        for path in journals_to_clear(plans):
            known |= facade.journal_throttled_brokers(path)

        def listed() -> list[dict[str, str]]:
            rows, unread[:] = facade.list_throttles(
                connection, [t.name for t in snap.topics], known
            )
            return rows

        rows = listed()
        cleared = 0
        if clear:  # refused before the first config is changed
            if everything:
                resources = [(row["kind"], row["name"]) for row in rows]
            else:
                resources = [
                    resource
                    for path in journals_to_clear(plans)
                    for resource in facade.journal_throttles(path)
                ]
            resources.append(("broker", "*"))  # asked even when nothing is set
            facade.require_clear(connection, resources)
        if clear:
            output.state().interrupt_note = (
                "interrupted: some throttles may have been cleared; `kreplica throttles "
                "--clear` again finishes it"
            )
        if clear and everything:
            for row in rows:
                facade.remove_throttle(connection, row["kind"], row["name"], row["config"])
                cleared += 1
            for broker in list(unread):  # cannot be read, may be written (ZooKeeper, controller)
                try:
                    way = facade.remove_broker_throttles(connection, broker)
                except KreplicaError as exc:
                    warn_stderr({"event": "warning", "message": str(exc)})
                    continue
                cleared += 1
                removed.append(broker)
                console(stderr=True).print(
                    f"broker {broker} is down: its throttles were removed through {way}",
                    markup=False,
                )
        elif clear:
            for path in journals_to_clear(plans):
                cleared += facade.restore_journal_throttles(connection, path, snap.cluster_id)
        if clear:
            rows = listed()
    missed = _throttles_missed([b for b in unread if b not in removed])
    if opts.output is OutputFormat.json:
        errors = [{"code": "partial", "message": missed}] if missed else None
        output.emit_envelope(
            {"throttles": rows, "cleared": cleared, "unread_brokers": unread},
            errors,
            status="partial" if missed else "",
        )
    else:
        _print_throttles(rows, unread, cleared if clear else None)
    if missed:
        raise PartialResult(missed)


def _throttles_missed(unseen: list[int]) -> str | None:
    """What of the cluster `throttles` could neither read nor clear (exit 9), or None."""
    if not unseen:
        return None
    return (
        f"broker(s) {', '.join(map(str, unseen))} down: their throttles could not be read "
        "(unread, not none); run this again once they are back"
    )


def _print_throttles(rows: list[dict[str, str]], unread: list[int], cleared: int | None) -> None:
    out = console()
    if cleared is not None:
        out.print(f"cleared {cleared} throttle config(s)", markup=False)
    if not rows:
        where = "on the brokers that could be read" if unread else ""
        out.print(f"no replication throttles are set {where}".strip(), markup=False)
    for row in rows:
        out.print(f"{row['kind']} {row['name']}: {row['config']}={row['value']}", markup=False)
