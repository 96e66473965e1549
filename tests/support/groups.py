"""xdist groups: which worker runs which test when the suite runs in parallel.

`scripts/test` runs pytest with `-n 3 --dist loadgroup`. A session fixture then starts once per
*worker*, so every test that uses a sandbox cluster (or the Spark session, or a module's private
cluster) has to run on the worker that owns it. `assign` (called by tests/conftest.py on each
worker) gives each test the xdist group of what it uses: the session- and module-scoped
fixtures of ours it requests
(directly or through other fixtures), plus the ones a fixture asks for by name at run time
(`request.getfixturevalue(f"{mode}_cluster")`), which pytest cannot see: those are declared
with the `uses` mark, on the test or on the fixture's param (`per_mode` below). Tests that
share a cluster, directly or through another test, form one group.

`claim` is the safety net: a session fixture that starts on a second worker fails the test
that asked for it, naming the fixture, instead of silently starting a second cluster.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

# The mark that declares clusters a test asks for by name: pytest.mark.uses("zk_cluster", ...)
uses = pytest.mark.uses


def per_mode(kind: str, modes: tuple[str, ...] = ("zk", "kraft")) -> list[Any]:
    """Params "zk", "kraft" for a fixture that asks for f"{mode}_{kind}" by name."""
    return [pytest.param(mode, marks=uses(f"{mode}_{kind}")) for mode in modes]


def claim(name: str) -> None:
    """Record that this worker starts `name` (a session fixture, a private cluster); fail if
    another worker of this run did."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if worker is None or run is None:  # one process: pytest starts each fixture once
        return
    folder = Path(tempfile.gettempdir()) / f"kreplica-xdist-{run}"
    folder.mkdir(exist_ok=True)
    marker = folder / name.replace("/", "_")
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        pytest.fail(
            f"{name} started already on worker {marker.read_text() or '?'}: this test is not in "
            "its xdist group; declare the fixture it asks for by name with "
            "pytest.mark.uses(...) (tests/support/groups.py)",
            pytrace=False,
        )
    with os.fdopen(fd, "w") as fh:
        fh.write(worker)


def resources(item: pytest.Item) -> set[str]:
    """The session fixtures and module fixture instances of ours that `item` uses."""
    found = {str(arg) for mark in item.iter_markers("uses") for arg in mark.args}
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return found
    defs = info.name2fixturedefs
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    # the module-wide params (a module fixture's "zk"/"kraft") tell its instances apart
    wide = "".join(
        f"({k}={v})"
        for k, v in sorted(params.items())
        if k in defs and defs[k][-1].scope != "function"
    )
    for name in item.fixturenames:
        if name.startswith("_") or name not in defs or not defs[name][-1].baseid:
            continue  # ours only: pytest's and the plugins' fixtures have no baseid
        scope = defs[name][-1].scope
        if scope == "session":
            found.add(name)
        elif scope in ("package", "module", "class"):
            found.add(f"{item.path.name}::{name}{wide}")
    return found


def group_names(used: dict[str, Iterable[str]]) -> dict[str, str]:
    """test id -> group for the tests that use anything: tests linked by a shared resource,
    directly or through other tests, are one group (union-find). A group is named after its
    session fixtures (kraft_secured+zk_secured), else after its module fixture."""
    parent: dict[str, str] = {}

    def root(key: str) -> str:
        while parent.setdefault(key, key) != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    firsts = {}
    for test, keys in used.items():
        keys = sorted(keys)
        if keys:
            firsts[test] = keys[0]
            for key in keys:
                parent[root(key)] = root(keys[0])
    members: dict[str, set[str]] = {}
    for key in list(parent):
        members.setdefault(root(key), set()).add(key)
    names = {
        top: "+".join(sorted(k for k in keys if "::" not in k)) or min(keys)
        for top, keys in members.items()
    }
    # xdist takes the group from the nodeid's "@NAME" suffix, and not if a "]" follows the "@"
    return {
        test: names[root(key)].replace("[", "(").replace("]", ")") for test, key in firsts.items()
    }


def assign(items: list[pytest.Item]) -> None:
    """Put each item that uses a cluster (etc.) in its xdist group."""
    named = group_names({item.nodeid: resources(item) for item in items})
    for item in items:
        if item.nodeid in named:
            _set_group(item, named[item.nodeid])


def _set_group(item: pytest.Item, group: str) -> None:
    """What xdist does for an xdist_group mark: the group as a suffix of the nodeid, which its
    scheduler splits off. Done here because xdist 3.8 writes `_nodeid`, which pytest 9.2 no
    longer reads (pytest-xdist issue 1386: the groups are silently ignored)."""
    nodeid = f"{item.nodeid}@{group}"
    if hasattr(item, "_id"):  # pytest >= 9.2: a structured id that keeps the string it parsed
        from _pytest.nodeid import NodeId

        item._id = NodeId.parse(nodeid)
    else:
        item._nodeid = nodeid  # type: ignore[attr-defined]
