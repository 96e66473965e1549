"""What every command needs: its cluster source, reading the cluster, parsing sizes, broker ids
and topic selections, the console, and kreplica's state folder.

A leaf of kreplica.cli: it imports no command module, so the command modules share these
steps without importing one another (the import-linter contract `cli-layers` keeps it so).
"""

from __future__ import annotations

import gc
import os
import re
import sys
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from kreplica.cli import output
from kreplica.cli.config import SourceSpec, resolve_source
from kreplica.cli.options import Options
from kreplica.errors import InputError, UsageError
from kreplica.model import ClusterSnapshot

# --- the cluster source ------------------------------------------------------------------------


def source_spec(opts: Options) -> SourceSpec:
    from kreplica.cli.config import where_set

    spec = resolve_source(
        snapshot=opts.snapshot,
        zookeeper=opts.zookeeper,
        bootstrap_server=opts.bootstrap_server,
        command_config=opts.command_config,
        cluster=opts.cluster,
        timeout_s=opts.timeout,
    )
    command_config_origin = (
        "command line"
        if opts.command_config
        else "KREPLICA_COMMAND_CONFIG"
        if os.environ.get("KREPLICA_COMMAND_CONFIG")
        else None
    )
    # errors name the cluster entry or variable the source came from, not a flag never given
    output.state().flag_names = where_set(spec, command_config_origin=command_config_origin)
    return spec


def has_source(opts: Options) -> bool:
    """A cluster source given by a flag or a variable (or a named cluster)."""
    return bool(
        opts.snapshot
        or opts.zookeeper
        or opts.bootstrap_server
        or opts.cluster
        or any(
            os.environ.get(name)
            for name in (
                "KREPLICA_CLUSTER",
                "KREPLICA_SNAPSHOT",
                "KREPLICA_ZOOKEEPER",
                "KREPLICA_BOOTSTRAP_SERVER",
            )
        )
    )


def describe_source(spec: SourceSpec) -> str:
    names = {"snapshot": "snapshot", "zookeeper": "zookeeper", "bootstrap_server": "bootstrap"}
    text = f"{names.get(spec.kind, spec.kind)} {spec.address}"
    return text if spec.origin == "command line" else f"{text} (from {spec.origin})"


def read_cluster(
    spec: SourceSpec,
    topics: Sequence[str] | None = None,
    *,
    columnar: bool = False,
    sizes: bool = True,
) -> ClusterSnapshot:
    """All topics by default: planning balances against the whole cluster's load.
    `columnar`: a snapshot file, or a live source that can (`columnar` set), is read into
    columns (kreplica/columns.py) for the array planner; the snapshot's objects are built
    only if something else reads them.
    sizes=False: no partition sizes, replica dirs or disk figures (no DescribeLogDirs)."""
    if columnar and sizes and spec.kind == "snapshot" and not topics and spec.snapshot:
        from kreplica.sources.snapshot import load_snapshot_columnar

        snap: ClusterSnapshot = load_snapshot_columnar(spec.snapshot)
        gc.freeze()
        return snap
    source = spec.open(read_sizes=sizes)
    try:
        if columnar and not topics and getattr(source, "columnar", False):
            snap = source.snapshot(None, columnar=True)
        else:
            snap = source.snapshot(list(topics) if topics else None)
    finally:
        source.close()
    # The snapshot lives as long as this process and holds no cycles: keep the cyclic
    # collector from rescanning its objects on every later pass (see kreplica/gcpause.py;
    # planning a million partitions spent seconds there).
    gc.freeze()
    return snap


# --- topic selections --------------------------------------------------------------------------


def require_topics(snap: ClusterSnapshot, names: Sequence[str]) -> None:
    """Unknown names fail before planning, all of them in one message."""
    from kreplica.sources.assemble import select_topics

    select_topics(topic_list(snap), names)


def topic_list(snap: ClusterSnapshot) -> list[str]:
    """The snapshot's topic names, in order (a ColumnarSnapshot's without building topics)."""
    names = getattr(snap, "topic_names", None)
    return list(names()) if names is not None else [t.name for t in snap.topics]


def rf_ranges(snap: ClusterSnapshot, names: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Each named topic's lowest and highest replica count over its partitions ((0, 0)
    without any); a ColumnarSnapshot's from its columns, without building topics."""
    columns = getattr(snap, "columns", None)
    if columns is None or getattr(snap, "materialised", True):
        counts = {n: {len(p.replicas) for p in snap.topic(n).partitions} for n in names}
        return {n: (min(c), max(c)) if c else (0, 0) for n, c in counts.items()}
    index = {shell.name: i for i, shell in enumerate(columns.topics)}
    out: dict[str, tuple[int, int]] = {}
    for name in names:
        i = index[name]
        rows = columns.rf[columns.start[i] : columns.start[i + 1]]
        out[name] = (int(rows.min()), int(rows.max())) if len(rows) else (0, 0)
    return out


def topics_pattern(regex: str | None) -> re.Pattern[str] | None:
    if regex is None:
        return None
    try:
        return re.compile(regex)
    except re.error as exc:
        raise UsageError(f"--topics {regex!r} is not a valid regex ({exc}); fix it") from None


def topic_names(
    snap: ClusterSnapshot, topics: Sequence[str], pattern: re.Pattern[str] | None
) -> list[str]:
    """--topic names (all must exist) then the topics --topics REGEX matches as a whole."""
    names = list(dict.fromkeys(topics))
    require_topics(snap, names)
    if pattern is not None:
        matched = [name for name in topic_list(snap) if pattern.fullmatch(name)]
        if not matched:
            from kreplica.errors import UnknownTopicError

            raise UnknownTopicError(
                f"--topics {pattern.pattern!r} matches no topic in this cluster; "
                "the regex must match the whole name (e.g. 'orders.*')"
            )
        names += [m for m in matched if m not in names]
    return names


# --- values of flags ---------------------------------------------------------------------------


def parse_broker_ids(text: str | None, flag: str) -> frozenset[int] | None:
    """'1,2,5-8' -> {1, 2, 5, 6, 7, 8}."""
    if text is None:
        return None
    ids: set[int] = set()
    for item in text.split(","):
        item = item.strip()
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", item)
        if not match:
            raise UsageError(f"{flag}: {item!r} is not a broker id; write ids like 1,2,5-8")
        low = int(match.group(1))
        high = int(match.group(2) or low)
        if high < low:
            raise UsageError(f"{flag}: range {item!r} runs backwards; write it as {high}-{low}")
        ids.update(range(low, high + 1))
    return frozenset(ids)


_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def parse_size(text: str, flag: str) -> int:
    """Bytes from "500MB", "20GiB", "1.5TB" or "1000000" (KB/MB/GB/TB are powers of 1000)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _SIZE_UNITS:
        raise UsageError(f"{flag} {text!r} is not a size; give bytes such as 500MB, 20GiB or 1000")
    try:
        value = Decimal(match.group(1)) * _SIZE_UNITS[unit]
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
        raise UsageError(f"{flag} {text!r} is not a size") from None
    return int(value)


def parse_headroom(text: str | None) -> Any:
    """`--disk-headroom`: "10%" (of each dir's total) or a size ("50GiB", "1000000" bytes) ->
    kreplica.planner.disk.Headroom. None: the default, 10%."""
    from kreplica.planner.disk import DEFAULT_HEADROOM, Headroom

    if text is None:
        return DEFAULT_HEADROOM
    value = text.strip()
    if value.endswith("%"):
        try:
            percent = float(value[:-1])
        except ValueError:
            percent = -1.0
        if not 0 <= percent < 100:
            raise UsageError(
                f"--disk-headroom {text!r}: a percentage must be from 0% to below 100%, e.g. 10%"
            )
        return Headroom(percent=percent)
    return Headroom(percent=None, fixed_bytes=parse_size(value, "--disk-headroom"))


def parse_log_dirs_mode(text: str) -> str:
    """`--log-dirs`: any or balanced."""
    value = text.strip().lower()
    if value not in ("any", "balanced"):
        raise UsageError(f"--log-dirs {text!r}: use any or balanced")
    return value


def read_keys(path: Path, *, hex_keys: bool) -> list[bytes]:
    """One key per line (the line ending is not part of the key); hex with --key-hex."""
    from kreplica.userfiles import read_user_file

    text = read_user_file(path, "keys file", fix="check the path")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [
        key_bytes(line.removesuffix("\r"), hex_keys, f"{path}:{i + 1}")
        for i, line in enumerate(lines)
    ]


def key_bytes(text: str, hex_keys: bool, where: str) -> bytes:
    if not hex_keys:
        return text.encode("utf-8")
    try:
        return bytes.fromhex(text.removeprefix("0x"))
    except ValueError:
        raise InputError(f"{where}: {text!r} is not hex; write bytes like 0a1bff") from None


# --- the terminal and the state folder ---------------------------------------------------------


def console(file: Any = None, *, stderr: bool = False) -> Any:
    """A rich console on stdout (or `file`, or stderr), colourless with --no-color."""
    from kreplica.render.console import make_console

    return make_console(sys.stderr if stderr else file, no_color=output.state().no_color)


def print_json_data(data: Any, errors: list[dict[str, str]] | None = None) -> None:
    output.emit_envelope(data, errors)


def interactive() -> bool:
    """Ask before applying only when a person is at the keyboard."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def state_folder() -> Path:
    """Where plans applied without --out are kept: $KREPLICA_STATE_DIR, else
    $XDG_STATE_HOME/kreplica/plans, else ~/.local/state/kreplica/plans."""
    base = os.environ.get("KREPLICA_STATE_DIR") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"),
        "kreplica",
        "plans",
    )
    return Path(base)


# --- measuring traffic -------------------------------------------------------------------------


def measure_traffic(
    spec: SourceSpec, window_s: float, topics: Sequence[str] | None, check: Any = None
) -> Any:
    """(the snapshot with rates, the measurements) over `window_s`, a line on stderr every
    few seconds while it waits (stdout keeps the one output); `check(snapshot)` before it
    waits."""
    from kreplica.planner.traffic import check_window
    from kreplica.sources.traffic import NEEDS_BROKERS, measure

    check_window(window_s)  # before connecting: bad input costs nothing
    if not spec.bootstrap_server:
        raise UsageError(NEEDS_BROKERS)

    def progress(waited: float, total: float) -> None:
        sys.stderr.write(f"measuring traffic: {waited:.0f}s of {total:g}s\n")
        sys.stderr.flush()

    source = spec.open()
    try:
        wanted = list(topics) if topics else None
        return measure(source, window_s, wanted, progress=progress, check=check)
    finally:
        source.close()


def read_capacity(
    flag: Path | None, configured: str | None
) -> Callable[[ClusterSnapshot], dict[int, dict[str, float]] | None]:
    """--capacity FILE, else the cluster entry's `capacity` (clusters.toml), read now (a bad
    file costs no wait), as the check that gives the capacities of a cluster's brokers (a
    broker it does not have refused); None without either."""
    path = flag if flag is not None else Path(configured) if configured else None
    if path is None:
        return lambda snap: None
    from kreplica.planner.traffic import check_capacities
    from kreplica.userfiles import decode_json, read_user_file

    fix = 'write {"BROKER_ID": {"nw_in": B/s, "nw_out": B/s}}'
    raw = decode_json(
        read_user_file(path, "capacity file", fix="check the path"), str(path), fix=fix
    )
    return lambda snap: check_capacities(raw, snap.broker_ids(), str(path))


def wants_metrics(opts: Options) -> bool:
    """True when rates come from metrics (--traffic-from); --traffic-range alone is refused."""
    if opts.traffic_range is not None and not opts.traffic_from:
        raise UsageError(
            "--traffic-range is how far back Prometheus is read: give --traffic-from "
            "prometheus://HOST:PORT with it"
        )
    return bool(opts.traffic_from)


def metrics_traffic(
    opts: Options,
    spec: SourceSpec,
    topics: Sequence[str] = (),
    check: Any = None,
    snap: ClusterSnapshot | None = None,
) -> Any:
    """(the cluster from `spec`, or `snap`, with each partition's peak rate over
    --traffic-range read from --traffic-from, the measurements); `check(snapshot)` first."""
    from kreplica.sources.prometheus import DEFAULT_RANGE, parse_duration, parse_url, read_traffic

    assert opts.traffic_from is not None
    range_text = opts.traffic_range or DEFAULT_RANGE
    parse_url(opts.traffic_from)  # before reading the cluster: bad input costs nothing
    parse_duration(range_text)
    wanted = list(dict.fromkeys(topics)) or None
    if snap is None:
        snap = read_cluster(spec, wanted)
    if check is not None:
        check(snap)
    if opts.timeout is None:
        return read_traffic(opts.traffic_from, range_text, snap, wanted)
    return read_traffic(opts.traffic_from, range_text, snap, wanted, timeout_s=opts.timeout)
