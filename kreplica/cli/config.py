"""Where the CLI finds its cluster: flags, KREPLICA_* variables, or a named cluster in a file.

Precedence, highest first: source flags on the command line (`--snapshot`, `--zookeeper`,
`--bootstrap-server`), `--cluster NAME`, source variables (KREPLICA_SNAPSHOT, KREPLICA_ZOOKEEPER,
KREPLICA_BOOTSTRAP_SERVER), KREPLICA_CLUSTER, then the config file's `default` cluster.
Within one level exactly one source may be given; two is an error, never a silent choice.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kreplica.errors import InputError, UsageError
from kreplica.userfiles import read_user_file

SOURCE_KEYS = ("snapshot", "zookeeper", "bootstrap_server")
FLAG_NAMES = {
    "snapshot": "--snapshot",
    "zookeeper": "--zookeeper",
    "bootstrap_server": "--bootstrap-server",
}
ENV_NAMES = {
    "snapshot": "KREPLICA_SNAPSHOT",
    "zookeeper": "KREPLICA_ZOOKEEPER",
    "bootstrap_server": "KREPLICA_BOOTSTRAP_SERVER",
}
CLUSTER_KEYS = {
    *SOURCE_KEYS,
    "command_config",
    "client",
    "zk_auth",
    "timeout_s",
    "description",
    "capacity",
}
DEFAULT_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class SourceSpec:
    """One resolved cluster source, ready for `kreplica.sources.open_source`."""

    snapshot: str | None = None
    zookeeper: str | None = None
    bootstrap_server: str | None = None
    client_config: dict[str, str] = field(default_factory=dict)
    zk_auth: list[tuple[str, str]] = field(default_factory=list)
    timeout_s: float = DEFAULT_TIMEOUT_S
    origin: str = "command line"  # where the choice came from, for messages
    cluster: str | None = None  # the clusters.toml entry it came from
    command_config: str | None = None  # the --command-config file (absolute), when one was given
    capacity: str | None = None  # the clusters.toml entry's capacity file (absolute), if any

    def record(self) -> dict[str, str]:
        """The source as an apply's journal records it, for a resume given no source: the
        cluster entry's name, else the addresses and the command config's path (never the
        client config itself: it may hold secrets)."""
        given: dict[str, str | None] = (
            {"cluster": self.cluster}
            if self.cluster is not None
            else {"bootstrap_server": self.bootstrap_server, "zookeeper": self.zookeeper}
        )
        given["command_config"] = self.command_config
        return {k: v for k, v in given.items() if v}

    @property
    def kind(self) -> str:
        for key in SOURCE_KEYS:
            if getattr(self, key):
                return key
        return "none"

    @property
    def address(self) -> str:
        return str(getattr(self, self.kind) or "")

    def open(self, *, read_sizes: bool = True) -> Any:
        """The source; read_sizes=False: no DescribeLogDirs (partition sizes, replica dirs,
        disk figures) for a command that shows none of them."""
        from kreplica.sources import open_source

        return open_source(
            read_sizes=read_sizes,
            snapshot=self.snapshot,
            zookeeper=self.zookeeper,
            bootstrap_server=self.bootstrap_server,
            client_config=self.client_config or None,
            zk_auth=self.zk_auth or None,
            timeout_s=self.timeout_s,
        )


# --- Java .properties (the --command-config file Kafka's own tools take) ----------------------

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_properties(text: str, *, origin: str = "properties") -> dict[str, str]:
    """Parse Java `.properties` text: `key=value`, `key: value` or `key value`, `#`/`!` comments,
    backslash line continuations (common in `sasl.jaas.config`) and `\\uXXXX` escapes."""
    result: dict[str, str] = {}
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of backslashes continues the line
            pending += line[:-1]
            continue
        logical.append(pending + line)
        pending = ""
    if pending:
        logical.append(pending)
    for number, line in enumerate(logical, start=1):
        key, value = _split_property(line)
        if not key:
            raise InputError(
                f"{origin}: entry {number} ({line[:40]!r}) has no key; write `key=value` lines"
            )
        result[_unescape(key, origin)] = _unescape(value, origin)
    return result


def _split_property(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return line[:i], rest


def _unescape(text: str, origin: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                raise InputError(f"{origin}: bad unicode escape \\u{digits}; use \\uXXXX")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def load_properties(path: str | Path) -> dict[str, str]:
    p = Path(path).expanduser()
    text = read_user_file(p, "command config", fix="check `client_config`")
    return parse_properties(text, origin=str(p))


# --- clusters.toml -------------------------------------------------------------------------


def config_path(env: Mapping[str, str]) -> Path:
    if env.get("KREPLICA_CONFIG"):
        return Path(env["KREPLICA_CONFIG"]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "kreplica" / "clusters.toml"


def load_clusters(path: Path, *, required: bool) -> dict[str, Any]:
    """The parsed config file; {} when it is absent and not required."""
    if not required and not path.exists():
        return {}
    text = read_user_file(path, "cluster config", fix="create it or set KREPLICA_CONFIG")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"cluster config {str(path)!r} is not valid TOML: {exc}") from None
    clusters = data.get("clusters", {})
    if not isinstance(clusters, dict) or any(not isinstance(v, dict) for v in clusters.values()):
        raise InputError(
            f"cluster config {str(path)!r}: `clusters` must be tables like [clusters.prod]"
        )
    return data


def _cluster_spec(
    name: str, data: dict[str, Any], path: Path, base: SourceSpec, timeout_flag: float | None
) -> SourceSpec:
    clusters: dict[str, Any] = data.get("clusters", {})
    if name not in clusters:
        known = ", ".join(sorted(clusters)) or "none defined"
        raise UsageError(
            f"cluster {name!r} is not in {str(path)!r} (clusters: {known}); "
            "add a [clusters." + name + "] table or pick another name"
        )
    entry: dict[str, Any] = clusters[name]
    where = f"{path}: [clusters.{name}]"
    unknown = sorted(set(entry) - CLUSTER_KEYS)
    if unknown:
        raise InputError(
            f"{where} has unknown key {unknown[0]!r}; known keys: {', '.join(sorted(CLUSTER_KEYS))}"
        )
    given = [k for k in SOURCE_KEYS if entry.get(k)]
    if len(given) != 1:
        raise InputError(
            f"{where} must set exactly one of snapshot, zookeeper, bootstrap_server "
            f"(it sets {', '.join(given) or 'none'})"
        )
    for key in (*SOURCE_KEYS, "command_config", "capacity"):
        if key in entry and not isinstance(entry[key], str):
            raise InputError(f"{where}: {key} must be a string")
    client: dict[str, str] = {}
    if entry.get("command_config"):
        command_config = Path(entry["command_config"]).expanduser()
        if not command_config.is_absolute():
            command_config = path.parent / command_config
        if not command_config.exists():
            raise InputError(
                f"{where}: command_config {str(command_config)!r} not found; fix the path"
            )
        client.update(load_properties(command_config))
    inline = entry.get("client", {})
    if not isinstance(inline, dict):
        raise InputError(f'{where}: client must be a table of properties ("sasl.mechanism" = ...)')
    client.update({str(k): str(v) for k, v in inline.items()})
    client.update(base.client_config)  # --command-config on the command line wins
    zk_auth_raw = entry.get("zk_auth", [])
    if not isinstance(zk_auth_raw, list) or any(
        not (isinstance(a, list) and len(a) == 2 and all(isinstance(x, str) for x in a))
        for a in zk_auth_raw
    ):
        raise InputError(f'{where}: zk_auth must be a list of ["scheme", "credential"] pairs')
    timeout = entry.get("timeout_s", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise InputError(f"{where}: timeout_s must be a positive number of seconds")
    if timeout_flag is not None:
        timeout = timeout_flag  # --timeout on the command line wins
    snapshot, capacity = (_beside(path, entry.get(k)) for k in ("snapshot", "capacity"))
    return SourceSpec(
        snapshot=snapshot,
        zookeeper=entry.get("zookeeper"),
        bootstrap_server=entry.get("bootstrap_server"),
        client_config=client,
        zk_auth=[(a[0], a[1]) for a in zk_auth_raw],
        timeout_s=float(timeout),
        origin=f"cluster {name!r} in {path}",
        cluster=name,
        command_config=base.command_config,
        capacity=capacity,
    )


def _beside(config: Path, given: str | None) -> str | None:
    """A path the config file names: relative to the file."""
    if not given:
        return None
    named = Path(given).expanduser()
    return str(named if named.is_absolute() else config.parent / named)


# --- resolution --------------------------------------------------------------------------


def resolve_source(
    *,
    snapshot: str | None = None,
    zookeeper: str | None = None,
    bootstrap_server: str | None = None,
    command_config: str | None = None,
    cluster: str | None = None,
    timeout_s: float | None = None,
    env: Mapping[str, str] | None = None,
) -> SourceSpec:
    """Pick exactly one cluster source from flags, a named cluster, or KREPLICA_* variables.
    `timeout_s` is --timeout: None when not given, so a named cluster's `timeout_s` applies."""
    env = os.environ if env is None else env
    command_config = command_config or env.get("KREPLICA_COMMAND_CONFIG") or None
    client = load_properties(command_config) if command_config else {}
    config_file = str(Path(command_config).expanduser().absolute()) if command_config else None
    base = SourceSpec(
        client_config=client, timeout_s=timeout_s or DEFAULT_TIMEOUT_S, command_config=config_file
    )
    flags = {"snapshot": snapshot, "zookeeper": zookeeper, "bootstrap_server": bootstrap_server}
    flagged = [k for k, v in flags.items() if v]
    if cluster and flagged:
        raise UsageError(
            f"--cluster and {FLAG_NAMES[flagged[0]]} both given; pass exactly one cluster source"
        )
    if flagged == ["zookeeper", "bootstrap_server"]:
        # ZooKeeper for the assignment, the brokers for what it lacks (log dirs, disk figures)
        spec = _with_source(base, "zookeeper", zookeeper, "command line")
        return replace(spec, bootstrap_server=bootstrap_server)
    if len(flagged) > 1:
        names = " and ".join(FLAG_NAMES[k] for k in flagged)
        raise UsageError(f"{names} both given; pass exactly one cluster source")
    if flagged:
        return _with_source(base, flagged[0], flags[flagged[0]], "command line")
    path = config_path(env)
    if cluster:
        return _cluster_spec(cluster, load_clusters(path, required=True), path, base, timeout_s)
    from_env = [k for k in SOURCE_KEYS if env.get(ENV_NAMES[k])]
    env_cluster = env.get("KREPLICA_CLUSTER")
    if env_cluster and from_env:
        raise UsageError(
            f"KREPLICA_CLUSTER and {ENV_NAMES[from_env[0]]} are both set; unset one of them"
        )
    if len(from_env) > 1:
        names = " and ".join(ENV_NAMES[k] for k in from_env)
        raise UsageError(f"{names} are both set; unset all but one cluster source")
    if from_env:
        key = from_env[0]
        return _with_source(base, key, env[ENV_NAMES[key]], ENV_NAMES[key])
    if env_cluster:
        return _cluster_spec(env_cluster, load_clusters(path, required=True), path, base, timeout_s)
    data = load_clusters(path, required=False)
    default = data.get("default")
    if isinstance(default, str) and default:
        return _cluster_spec(default, data, path, base, timeout_s)
    raise UsageError(
        "no cluster source given; pass one of --snapshot FILE, --zookeeper HOST:PORT, "
        "--bootstrap-server HOST:PORT or --cluster NAME"
    )


def where_set(spec: SourceSpec, *, command_config_origin: str | None) -> dict[str, str]:
    """Option (kreplica.errors.FLAGS' words) -> where the user really set it, for error
    messages: `check --zookeeper` is no help when the address came from a cluster entry or a
    variable. `command_config_origin` is "command line", an environment variable's name, or
    None when neither gave one."""
    names: dict[str, str] = {}
    if spec.kind == "none" or spec.origin == "command line":
        return names
    if spec.origin.startswith("cluster "):
        names[spec.kind] = f"`{spec.kind}` of {spec.origin}"
        if command_config_origin is None:
            names["client_config"] = f"`command_config` / `client` of {spec.origin}"
    else:
        names[spec.kind] = spec.origin  # the environment variable
    if command_config_origin not in (None, "command line"):
        names["client_config"] = str(command_config_origin)
    return names


def _with_source(base: SourceSpec, key: str, value: str | None, origin: str) -> SourceSpec:
    values: dict[str, Any] = dict.fromkeys(SOURCE_KEYS)
    values[key] = value
    return SourceSpec(
        client_config=base.client_config,
        timeout_s=base.timeout_s,
        origin=origin,
        command_config=base.command_config,
        **values,
    )
