"""Show a plan, write --out, and apply it unless --dry-run (after a confirmation): the one
path every planning command ends on (expand, plan, drain, drain-dir, ...).

A command describes its plan as a Presentation (its title, how it is written, shown and put
in the JSON envelope); the order of the steps, the refusals before anything is written, the
confirmation, the default plan path and the apply are the same for all.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kreplica.cli import output
from kreplica.cli.common import console, describe_source, interactive, print_json_data
from kreplica.cli.config import SourceSpec
from kreplica.cli.options import Options, OutputFormat
from kreplica.errors import UsageError
from kreplica.model import ClusterSnapshot, Plan

Files = dict[str, Path]


@dataclass(frozen=True)
class Presentation:
    title: str
    has_changes: bool
    cluster_id: str | None  # named in the confirmation question
    live_sources: str  # the flags a plan must come from to be applied
    write: Callable[[Path, bool], Files]  # the plan files at a path (overwrite or not)
    default_name: Callable[[], str]  # the file a plan applied without --out gets (state folder)
    json_data: Callable[[Files | None], dict[str, Any]]
    view: Callable[[Any], None]  # the table (or text) on a console
    next_steps: Callable[[Any, Files | None], None]  # after the view when not applying
    markdown: Callable[[], str] | None = None  # None: markdown shows the table view
    # a preferred leader election follows the apply (journalled: a resume runs it too)
    elect_leaders: bool = False
    # warnings that stand even when there is nothing to change ("level: text" lines)
    warnings: tuple[str, ...] = ()


def present_and_apply(opts: Options, spec: SourceSpec, shown: Presentation) -> None:
    if not shown.has_changes:
        nothing_to_change(opts, shown)
        return
    applying = not opts.dry_run
    if applying:
        from kreplica.cli.applying import apply_options

        apply_options(opts)  # bad apply flags fail before the plan is shown or written
        if spec.kind == "snapshot":
            raise UsageError(
                f"applying needs a live cluster: plan from {shown.live_sources}, or add "
                "--dry-run to only show the plan"
            )
        if not opts.yes and not interactive():
            raise UsageError(
                "applying a plan needs a confirmation: run it on a terminal, pass --yes, or "
                "add --dry-run to only show the plan"
            )
    out_path = opts.out
    files = shown.write(out_path, opts.force_out) if out_path else None
    data: dict[str, Any] = {}
    if opts.output is OutputFormat.json:
        data = shown.json_data(files)
    elif opts.output is OutputFormat.markdown and shown.markdown is not None:
        sys.stdout.write(shown.markdown())
    else:
        out = console()
        shown.view(out)
        if files:
            out.print()
            out.print("wrote " + ", ".join(str(p) for p in files.values()), markup=False)
        if not applying:
            shown.next_steps(out, files)
    if applying:
        if opts.output is OutputFormat.table and not opts.yes:
            import typer

            target = shown.cluster_id or describe_source(spec)
            if not typer.confirm(f"Apply this plan to cluster {target}?", default=False):
                console().print("Not applied; nothing was changed.")
                return
        if files is None:
            out_path = default_plan_path(shown.default_name())
            files = shown.write(out_path, True)
            if opts.output is not OutputFormat.json:
                console().print("wrote " + ", ".join(str(p) for p in files.values()), markup=False)
        from kreplica.cli.applying import run_apply

        assert out_path is not None
        result = run_apply(opts, spec, out_path, elect_leaders=shown.elect_leaders)
        if opts.output is OutputFormat.json:
            data["files"] = {k: str(v) for k, v in files.items()}
            data["apply"] = result
    if opts.output is OutputFormat.json:
        print_json_data(data)


def nothing_to_change(opts: Options, shown: Presentation) -> None:
    """One line, exit 0, and no plan file (even with --out): there is nothing to apply."""
    line = f"{shown.title}: nothing to change, the cluster already has this shape"
    if opts.out:
        line += f"; no plan written to {opts.out}"
    if opts.output is OutputFormat.json:
        print_json_data({**shown.json_data(None), "message": line})
    elif opts.output is OutputFormat.markdown:
        sys.stdout.write("".join(f"{text}\n" for text in (line, *shown.warnings)))
    else:
        for text in (line, *shown.warnings):
            console().print(text, markup=False, soft_wrap=True)


# --- replica plans (kreplica.model.Plan) ----------------------------------------------------


def show_plan(
    opts: Options,
    spec: SourceSpec,
    snap: ClusterSnapshot,
    plan: Plan,
    title: str,
    impact: dict[str, Any] | None = None,
    *,
    elect_leaders: bool = False,
) -> None:
    """A replica plan through the one show / --out / apply path (kreplica.cli.present)."""
    source = describe_source(spec)

    def json_data(files: dict[str, Path] | None) -> dict[str, Any]:
        data = plan_data(plan, snap, title=title, source=source, files=files)
        if impact is not None:
            data["impact"] = impact
        return data

    def markdown() -> str:
        from kreplica.render.markdown import plan_markdown

        return plan_markdown(
            plan,
            snap,
            title=title,
            source=source,
            runbook=runbook(plan, snap, opts, spec),
            limit=opts.limit,
            impact=impact,
        )

    def view(out: Any) -> None:
        from kreplica.render.diff import plan_view

        out.print(
            plan_view(plan, snap, title=title, source=source, limit=opts.limit, impact=impact)
        )

    def next_steps(out: Any, files: dict[str, Path] | None) -> None:
        if plan.changes and files:
            from rich.text import Text

            out.print()
            for label, command in runbook(plan, snap, opts, spec):
                if label:
                    out.print(Text(f"# {label}", style="muted"), soft_wrap=True)
                out.print(command, soft_wrap=True, markup=False)
        elif plan.changes:
            out.print()
            out.print(
                "[muted]add --out PLAN.json to write Kafka's reassignment JSON, its rollback "
                "and the kreplica plan document[/muted]"
            )

    present_and_apply(
        opts,
        spec,
        Presentation(
            title=title,
            has_changes=bool(plan.changes),
            cluster_id=plan.cluster_id,
            live_sources="--bootstrap-server or --zookeeper",
            write=lambda out, overwrite: write_plan_files(plan, snap, out, overwrite=overwrite),
            default_name=lambda: f"{plan.cluster_id or 'cluster'}-{plan.snapshot_fingerprint}.json",
            json_data=json_data,
            view=view,
            next_steps=next_steps,
            markdown=markdown,
            elect_leaders=elect_leaders,
            warnings=_warnings(plan),
        ),
    )


def _warnings(plan: Plan) -> tuple[str, ...]:
    from kreplica.render.text import finding_text

    return tuple(
        f"{f.level}: {finding_text(f)}"
        for f in plan.findings
        if f.level != "info" or f.code in _STANDING_INFO
    )


# info that answers "why nothing?": the loads a traffic rebalance found already within the band
_STANDING_INFO = frozenset({"traffic-balance"})


def plan_data(
    plan: Plan,
    snap: ClusterSnapshot,
    *,
    title: str,
    source: str,
    files: dict[str, Path] | None,
) -> dict[str, Any]:
    from kreplica.planner.serialize import (
        findings_json,
        new_partitions_list,
        reassignment_json,
        rollback_json,
    )

    return {
        "title": title,
        "source": source,
        "cluster_id": plan.cluster_id,
        "snapshot_fingerprint": plan.snapshot_fingerprint,
        "strategy": plan.strategy,
        "reassignment": reassignment_json(plan, lazy=True),
        "new_partitions": new_partitions_list(plan),
        "rollback": rollback_json(plan, lazy=True),
        "report": dict(plan.report),
        "findings": findings_json(plan.findings),
        "files": {k: str(v) for k, v in files.items()} if files else None,
    }


def write_plan_files(
    plan: Plan, snap: ClusterSnapshot, out: Path, *, overwrite: bool = True
) -> dict[str, Path]:
    """PLAN.json (Kafka's format), PLAN.rollback.json and PLAN.kreplica.json beside it.
    Without `overwrite`, existing plan files (or an old plan's journal) are a usage error."""
    from kreplica.planner.serialize import plan_files

    return write_documents(out, lambda: plan_files(plan, snap, lazy=True), overwrite=overwrite)


def runbook(
    plan: Plan, snap: ClusterSnapshot, opts: Options, spec: SourceSpec
) -> list[tuple[str, str]]:
    """The exact commands that apply, verify and roll back this plan with Kafka's own tools."""
    from kreplica.render.text import runbook_commands

    return runbook_commands(
        plan,
        snap,
        bootstrap=spec.bootstrap_server or "BROKER:9092",
        command_config=opts.command_config,
        out=opts.out,
    )


def default_plan_path(name: str) -> Path:
    """Where a plan applied without --out is kept, its journal beside it (for --resume)."""
    from kreplica.cli.common import state_folder

    folder = state_folder()
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def sibling_paths(out: Path) -> Files:
    """PLAN.json and the files written beside it (the journal comes later, from apply)."""
    from kreplica.executor.facade import plan_paths

    paths = plan_paths(out)
    del paths["journal"]
    return paths


def write_documents(
    out: Path, documents: Callable[[], dict[str, Any]], *, overwrite: bool
) -> Files:
    """Write the plan files at `out` (`documents()` gives them by sibling key) once it is safe:
    no existing plan files unless `overwrite`, never over an apply that did not finish, and
    into a folder that exists."""
    from kreplica.executor.facade import journal_finished, journal_path

    paths = sibling_paths(out)
    journal = journal_path(out)
    existing = [p for p in (*paths.values(), journal) if p.exists()]
    if existing and not overwrite:
        names = ", ".join(str(p) for p in existing)
        raise UsageError(
            f"--out {str(out)!r}: {names} exist(s) already; pass --force-out to overwrite, or "
            "choose another name"
        )
    if journal.exists():
        if not journal_finished(journal):
            raise UsageError(
                f"--out {str(out)!r}: {journal} shows an apply of the plan there that did not "
                f"finish; continue it with `kreplica apply {out} --resume` or stop it with "
                f"`kreplica cancel {out}`, or choose another name"
            )
        journal.unlink()  # a finished apply's journal belongs to the plan being overwritten
    if not out.parent.exists():
        raise UsageError(
            f"--out {str(out)!r}: folder {str(out.parent)!r} does not exist; create it"
        )
    contents = documents()
    for key, path in paths.items():
        try:
            output.write_file(path, contents[key])
        except OSError as exc:
            raise UsageError(f"cannot write {str(path)!r} ({exc.strerror}); check --out") from None
    return paths
