"""The sources' helper modules are pure, and the client libraries load only when a source is
opened (so `kreplica --help` and snapshot-file commands never import them)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import importlib, json, sys
before = set(sys.modules)
for name in {modules!r}:
    importlib.import_module(name)
print(json.dumps(sorted(
    name for name in set(sys.modules) - before
    if name.split(".")[0] not in sys.stdlib_module_names and name.split(".")[0] != "kreplica"
)))
"""


def _third_party_after_import(*modules: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(modules=list(modules))],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded: list[str] = json.loads(out.stdout)
    return loaded


@pytest.mark.parametrize(
    "module",
    ["kreplica.sources.znodes", "kreplica.sources.assemble", "kreplica.sources.clientconfig"],
)
def test_helpers_are_standard_library_only(module: str) -> None:
    assert _third_party_after_import(module) == []


def test_sources_import_no_client_library_until_opened() -> None:
    loaded = _third_party_after_import(
        "kreplica.sources", "kreplica.sources.zookeeper", "kreplica.sources.admin"
    )
    clients = [m for m in loaded if m.split(".")[0] in ("kazoo", "confluent_kafka", "kafka")]
    assert clients == []
