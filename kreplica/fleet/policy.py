"""The fleet policy: what every topic of every cluster should look like (pure, stdlib only).

A TOML file (YAML is not read: PyYAML is not a kreplica dependency):

```toml
[[rule]]                      # rules are tried in order; the first whose regex matches the
topics = "__.*"               # whole topic name applies (Python `re.fullmatch`)
rf = 3
min_insync = 2

[[rule]]
topics = ".*"
rf = 3                        # replication factor
min_insync = 2                # min.insync.replicas (the value in force)
racks = 3                     # distinct racks per partition (at most RF)
max_partitions_per_broker = 4000

[clusters."kR9pQ2vXT3aWm1bLc8dEfg"]   # by cluster id (or the snapshot's file name without .json)
drain = [6]                   # brokers being drained: no new replica goes there
exempt = ["audit-.*"]         # topics (whole-name regexes) neither audited nor planned
```

`--rf N` / `--min-insync N` on the command line set that target for every topic (over the file).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kreplica.errors import InputError
from kreplica.userfiles import read_user_file

RULE_KEYS = ("topics", "rf", "min_insync", "racks", "max_partitions_per_broker")
CLUSTER_KEYS = ("drain", "exempt")


@dataclass(frozen=True)
class Target:
    """What one topic should be. None: no requirement."""

    rf: int | None = None
    min_insync: int | None = None
    racks: int | None = None
    max_partitions_per_broker: int | None = None


@dataclass(frozen=True)
class Rule:
    pattern: str
    target: Target

    def matches(self, topic: str) -> bool:
        return re.fullmatch(self.pattern, topic) is not None


@dataclass(frozen=True)
class ClusterPolicy:
    drain: frozenset[int] = frozenset()
    exempt: tuple[str, ...] = ()

    def is_exempt(self, topic: str) -> bool:
        return any(re.fullmatch(p, topic) for p in self.exempt)


@dataclass(frozen=True)
class Policy:
    rules: tuple[Rule, ...] = ()
    clusters: Mapping[str, ClusterPolicy] = field(default_factory=dict)
    rf: int | None = None  # --rf: over every rule
    min_insync: int | None = None  # --min-insync: over every rule

    def cluster(self, *keys: str | None) -> ClusterPolicy:
        """The cluster's section, looked up by each key in turn (cluster id, file stem)."""
        for key in keys:
            if key is not None and key in self.clusters:
                return self.clusters[key]
        return ClusterPolicy()

    def target(self, topic: str) -> Target:
        found = Target()
        for rule in self.rules:
            if rule.matches(topic):
                found = rule.target
                break
        if self.rf is not None:
            found = replace(found, rf=self.rf)
        if self.min_insync is not None:
            found = replace(found, min_insync=self.min_insync)
        return found

    @property
    def empty(self) -> bool:
        return not self.rules and self.rf is None and self.min_insync is None

    def to_dict(self) -> dict[str, Any]:
        """A plain form (for shipping to Spark workers and for reports)."""
        return {
            "rules": [
                {"topics": r.pattern, **{k: v for k, v in vars(r.target).items() if v is not None}}
                for r in self.rules
            ],
            "clusters": {
                k: {"drain": sorted(c.drain), "exempt": list(c.exempt)}
                for k, c in sorted(self.clusters.items())
            },
            "rf": self.rf,
            "min_insync": self.min_insync,
        }


def _bad(origin: str, where: str, problem: str) -> InputError:
    return InputError(f"policy {origin}: {where} {problem}")


def _positive(value: Any, origin: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _bad(origin, where, f"must be a whole number >= 1, got {value!r}")
    return value


def _regex(value: Any, origin: str, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise _bad(origin, where, f"must be a regex string, got {value!r}")
    try:
        re.compile(value)
    except re.error as exc:
        raise _bad(origin, where, f"is not a valid regex ({exc})") from None
    return value


def parse_policy(data: Any, *, origin: str = "policy") -> Policy:
    if not isinstance(data, dict):
        raise _bad(origin, "the top level", "must be a table")
    unknown = sorted(set(data) - {"rule", "clusters"})
    if unknown:
        raise _bad(origin, repr(unknown[0]), "is not a policy key; use [[rule]] and [clusters.ID]")
    rules_raw = data.get("rule", [])
    if not isinstance(rules_raw, list):
        raise _bad(origin, "rule", "must be an array of tables ([[rule]])")
    rules: list[Rule] = []
    for i, raw in enumerate(rules_raw):
        where = f"rule[{i}]"
        if not isinstance(raw, dict):
            raise _bad(origin, where, "must be a table")
        bad_keys = sorted(set(raw) - set(RULE_KEYS))
        if bad_keys:
            raise _bad(
                origin, f"{where}.{bad_keys[0]}", f"is not a rule key ({', '.join(RULE_KEYS)})"
            )
        if "topics" not in raw:
            raise _bad(origin, f"{where}.topics", 'is missing (e.g. topics = ".*")')
        values = {k: _positive(raw[k], origin, f"{where}.{k}") for k in RULE_KEYS[1:] if k in raw}
        target = Target(**values)
        if (
            target.rf is not None
            and target.min_insync is not None
            and target.min_insync > target.rf
        ):
            raise _bad(origin, where, f"asks min_insync {target.min_insync} above rf {target.rf}")
        rules.append(Rule(_regex(raw["topics"], origin, f"{where}.topics"), target))
    clusters_raw = data.get("clusters", {})
    if not isinstance(clusters_raw, dict):
        raise _bad(origin, "clusters", 'must be tables like [clusters."CLUSTER_ID"]')
    clusters: dict[str, ClusterPolicy] = {}
    for name, raw in clusters_raw.items():
        where = f"clusters.{name}"
        if not isinstance(raw, dict):
            raise _bad(origin, where, "must be a table")
        bad_keys = sorted(set(raw) - set(CLUSTER_KEYS))
        if bad_keys:
            raise _bad(origin, f"{where}.{bad_keys[0]}", "is not a cluster key (drain, exempt)")
        drain = raw.get("drain", [])
        exempt = raw.get("exempt", [])
        if not isinstance(drain, list) or any(
            isinstance(b, bool) or not isinstance(b, int) for b in drain
        ):
            raise _bad(origin, f"{where}.drain", f"must be a list of broker ids, got {drain!r}")
        if not isinstance(exempt, list):
            raise _bad(origin, f"{where}.exempt", f"must be a list of regexes, got {exempt!r}")
        clusters[str(name)] = ClusterPolicy(
            drain=frozenset(drain),
            exempt=tuple(_regex(p, origin, f"{where}.exempt[{j}]") for j, p in enumerate(exempt)),
        )
    return Policy(rules=tuple(rules), clusters=clusters)


def load_policy(path: str | Path) -> Policy:
    """Read a TOML policy file; any problem is an InputError (exit 2) on one line."""
    p = Path(path)
    if p.suffix.lower() in (".yaml", ".yml"):
        raise InputError(
            f"policy {str(p)!r}: YAML policies are not read (PyYAML is not a kreplica "
            "dependency); write it as TOML (see docs/fleet.md: policy file)"
        )
    text = read_user_file(p, "policy file", fix="check --policy")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"policy {str(p)!r} is not valid TOML: {exc}") from None
    return parse_policy(data, origin=repr(str(p)))


def with_overrides(policy: Policy, *, rf: int | None, min_insync: int | None) -> Policy:
    return replace(
        policy,
        rf=rf if rf is not None else policy.rf,
        min_insync=min_insync if min_insync is not None else policy.min_insync,
    )


def policy_from_dict(data: Mapping[str, Any]) -> Policy:
    """The inverse of Policy.to_dict (on Spark workers)."""
    policy = parse_policy(
        {"rule": data.get("rules", []), "clusters": data.get("clusters", {})}, origin="(shipped)"
    )
    return replace(policy, rf=data.get("rf"), min_insync=data.get("min_insync"))
