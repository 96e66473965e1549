"""`kreplica partition-for` and `kreplica consumers [simulate]` (the client-impact section of
add-partitions plans is kreplica.cli.client_impact). The algorithms are kreplica.impact
(pure); groups come from kreplica.sources.groups; rendering is kreplica.render.impact."""

# No `from __future__ import annotations`: typer reads these annotations at runtime.

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from kreplica.cli import output
from kreplica.cli.common import (
    console,
    describe_source,
    has_source,
    key_bytes,
    read_cluster,
    read_keys,
    source_spec,
)
from kreplica.cli.options import OUTPUT, SOURCE, Options, OutputFormat, shared
from kreplica.errors import UsageError

# --- partition-for ---------------------------------------------------------------------------


def partition_for(
    opts: Options,
    *,
    topic: str | None,
    keys: list[str],
    key_hex: bool,
    keys_file: Path | None,
    partitions: int | None,
    after: int | None,
) -> None:
    from kreplica.impact.partitioner import (
        key_text,
        measure_remap,
        murmur2,
        partition_for_key,
        remap_share,
    )

    values = [key_bytes(k, key_hex, "--key") for k in keys]
    if keys_file is not None:
        values += read_keys(keys_file, hex_keys=key_hex)
    if not values:
        raise UsageError("no key given; pass --key K (repeatable) or --keys-file FILE")
    source = "--partitions"
    if partitions is None:
        if topic is None or not has_source(opts):
            raise UsageError(
                "how many partitions? pass --partitions N, or --topic T with a cluster source "
                "(--bootstrap-server, --zookeeper, --snapshot or --cluster)"
            )
        spec = source_spec(opts)
        snap = read_cluster(spec, [topic], sizes=False)  # only its partition count
        partitions = len(snap.topic(topic).partitions)
        source = describe_source(spec)
    if partitions < 1 or (after is not None and after < 1):
        raise UsageError("partition counts are 1 or more")
    rows = []
    for value in values:
        row: dict[str, Any] = {
            "key": key_text(value),
            "murmur2": murmur2(value),
            "partition": partition_for_key(value, partitions),
        }
        if after is not None:
            row["partition_after"] = partition_for_key(value, after)
        rows.append(row)
    data: dict[str, Any] = {
        "topic": topic,
        "partitions": partitions,
        "partitions_from": source,
        "partitioner": "murmur2 (Java default partitioner, librdkafka murmur2/murmur2_random)",
        "keys": rows,
    }
    if len(rows) == 1:
        data["partition"] = rows[0]["partition"]
    if after is not None:
        data["after"] = {
            "partitions": after,
            "share": remap_share(partitions, after).as_dict(),
            "measured": measure_remap(values, partitions, after).as_dict(),
        }
    if opts.output is OutputFormat.json:
        output.emit_envelope(data)
        return
    name = f"{topic}, " if topic else ""
    if opts.output is OutputFormat.markdown:
        sys.stdout.write(f"## Partition for keys ({name}{partitions} partitions)\n\n")
        head = "| Key | murmur2 | Partition |" + (" After |" if after else "")
        sys.stdout.write(head + "\n|---|---:|---:|" + ("---:|" if after else "") + "\n")
        for row in rows:
            extra = f" {row['partition_after']} |" if after else ""
            sys.stdout.write(f"| `{row['key']}` | {row['murmur2']} | {row['partition']} |{extra}\n")
    else:
        out = console()
        for row in rows:
            of = f"{topic} ({partitions} partitions)" if topic else str(partitions)
            text = f"{row['key']} → partition {row['partition']} of {of}"
            if after is not None:
                text += f", {row['partition_after']} with {after}"
            out.print(text, markup=False, soft_wrap=True)
    if after is not None:
        share = data["after"]["share"]
        measured = data["after"]["measured"]
        line = (
            f"{partitions} → {after} partitions: {share['moving_share'] * 100:.1f}% of keys "
            f"({share['moving_fraction']}) change partition for a uniform hash; of the "
            f"{measured['keys']} keys given, {measured['moving']} do"
        )
        if opts.output is OutputFormat.markdown:
            sys.stdout.write(f"\n{line}\n")
        else:
            console().print(line, markup=False, soft_wrap=True)


# --- consumers -------------------------------------------------------------------------------


def new_counts_from_plan(path: Path) -> dict[str, int]:
    """Partition counts after a plan, from its kreplica plan document (PLAN.kreplica.json,
    next to the PLAN.json that --out wrote) or from an add-partitions `--output json` envelope."""
    from kreplica.executor.facade import plan_paths
    from kreplica.userfiles import decode_json, read_user_file

    candidates = [path, plan_paths(path)["plan_document"]]
    for candidate in candidates:
        if not candidate.exists():
            continue
        doc = decode_json(
            read_user_file(candidate, "plan file", fix="check the path"),
            str(candidate),
            fix="pass the PLAN.json that --out wrote",
        )
        if isinstance(doc, dict) and isinstance(doc.get("data"), dict):
            doc = doc["data"]  # an --output json envelope
        if isinstance(doc, dict) and isinstance(doc.get("new_partitions"), list):
            counts: dict[str, int] = {}
            for row in doc["new_partitions"]:
                topic, number = str(row["topic"]), int(row["partition"])
                counts[topic] = max(counts.get(topic, 0), number + 1)
            return counts
    raise UsageError(
        f"--after {str(path)!r}: no kreplica plan document found (looked for "
        f"{', '.join(str(c) for c in candidates)}); pass the PLAN.json that --out wrote"
    )


def consumers(opts: Options, *, groups: list[str], after: Path | None) -> None:
    from kreplica.impact.report import group_impact
    from kreplica.sources.groups import read_groups

    spec = source_spec(opts)
    if spec.kind != "bootstrap_server":
        raise UsageError(
            "consumer groups are read from the brokers: pass --bootstrap-server (or a --cluster "
            "with one); for a group in a file use `kreplica consumers simulate --group-file F`"
        )
    new_counts = new_counts_from_plan(after) if after is not None else {}
    source = spec.open(read_sizes=False)  # partition counts only
    try:
        snap = source.snapshot(None)
        counts = {t.name: len(t.partitions) for t in snap.topics}
        found = read_groups(source, counts, groups or None)
    finally:
        source.close()
    missing = [g for g in groups if g not in {f.group_id for f in found}]
    if missing:
        raise UsageError(f"no consumer group {', '.join(map(repr, missing))} in this cluster")
    entries = [
        group_impact(g.group_id, g.assignor, g.spec, new_counts, state=g.state) for g in found
    ]
    data = {
        "source": describe_source(spec),
        "after_plan": str(after) if after else None,
        "partition_changes": {t: [counts.get(t), n] for t, n in sorted(new_counts.items())},
        "groups": entries,
    }

    _show_groups(opts, data, entries)


def _show_groups(opts: Options, data: dict[str, Any], entries: list[dict[str, Any]]) -> None:
    from kreplica.render.impact import assignment_table, group_lines

    if opts.output is OutputFormat.json:
        output.emit_envelope(data)
        return
    if opts.output is OutputFormat.markdown:
        lines = []
        for entry in entries:
            lines += [f"### {entry['group']}", ""] + [f"- {x}" for x in group_lines(entry)] + [""]
            lines += ["| Member | Now | After |", "|---|---|---|"]
            for member in sorted(entry["now"]):
                now = " ".join(entry["now"][member]) or "-"
                later = " ".join((entry.get("after") or {}).get(member, [])) or "-"
                lines.append(f"| {member} | {now} | {later} |")
            lines.append("")
        sys.stdout.write("\n".join(lines) or "no consumer groups\n")
        return
    out = console()
    if not entries:
        out.print("no consumer groups", markup=False)
    for entry in entries:
        for line in group_lines(entry):
            out.print(line, markup=False, soft_wrap=True)
        out.print(assignment_table(entry))
    if entries:
        out.print("+ owned by nobody before, * changes owner", style="muted")


def simulate(opts: Options, *, assignor: str, group_file: Path) -> None:
    from kreplica.impact.assignors import ASSIGNORS, assignment_json, compare, parse_group_document
    from kreplica.impact.report import settle
    from kreplica.userfiles import decode_json, read_user_file

    if assignor not in ASSIGNORS:
        raise UsageError(f"--assignor {assignor!r}: use one of {', '.join(ASSIGNORS)}")
    doc = decode_json(
        read_user_file(group_file, "group file", fix="check the path"),
        str(group_file),
        fix='write {"members": [{"id": "C1", "topics": ["T1"]}], "topics": {"T1": 10}}',
    )
    spec = parse_group_document(doc, str(group_file))
    from kreplica.impact.assignors import assign

    result = assign(assignor, spec)
    entry: dict[str, Any] = {
        "group": str(group_file),
        "state": "",
        "assignor": assignor,
        "members": len(spec.members),
        "now": assignment_json({m.id: list(m.owned or ()) for m in spec.members}),
        "after": assignment_json(result),
        "rebalances": 1,
    }
    entry.update(compare({m.id: list(m.owned or ()) for m in spec.members}, result))
    data: dict[str, Any] = {
        "assignor": assignor,
        "topics": dict(spec.topics),
        "assignment": assignment_json(result),
        "changed_owner": entry["changed_owner"],
        "above_share": entry["above_share"],
    }
    if assignor == "cooperative-sticky":
        settled, rounds = settle(assignor, spec)
        data["settled"] = {"assignment": assignment_json(settled), "rebalances": rounds}
    if opts.output is OutputFormat.json:
        output.emit_envelope(data)
        return
    _show_groups(opts, data, [entry])


# --- typer commands (mounted by kreplica.cli.app) --------------------------------------------

consumers_app = typer.Typer(
    name="consumers",
    help="Consumer groups: who owns what now and after a planned change (Java assignors).",
    add_completion=False,
    pretty_exceptions_enable=False,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)


@consumers_app.callback(invoke_without_command=True)
@shared(SOURCE, OUTPUT)
def consumers_command(
    ctx: typer.Context,
    *,
    group: Annotated[
        list[str] | None,
        typer.Option("--group", "-g", metavar="GROUP", help="Group id (repeatable; default all)."),
    ] = None,
    after: Annotated[
        Path | None,
        typer.Option(
            "--after",
            metavar="PLAN.json",
            help="A plan --out wrote: the assignment once its new partitions exist.",
        ),
    ] = None,
    opts: Options,
) -> None:
    """Consumer groups now and after a plan, as the Java client's assignor computes it.

    Reads members, subscriptions and assignments with DescribeGroups (--bootstrap-server);
    shows partitions that change owner and members above their share.
    """
    if ctx.invoked_subcommand is not None:
        return
    consumers(opts, groups=group or [], after=after)


@consumers_app.command("simulate")
@shared(OUTPUT)
def simulate_command(
    *,
    assignor: Annotated[
        str,
        typer.Option(
            "--assignor",
            metavar="range|roundrobin|sticky|cooperative-sticky",
            help="The partition.assignment.strategy to run.",
        ),
    ],
    group_file: Annotated[
        Path,
        typer.Option(
            "--group-file",
            metavar="FILE",
            help='{"members": [{"id": "C1", "topics": ["T1"], "owned": ["T1-0"]}], '
            '"topics": {"T1": 10}}',
        ),
    ],
    opts: Options,
) -> None:
    """Run a Java assignor on a group from a file (offline)."""
    simulate(opts, assignor=assignor, group_file=group_file)
