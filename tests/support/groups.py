"""xdist groups: which worker runs which test when the suite runs in parallel.

`scripts/test` runs pytest with `-n 3 --dist loadgroup`. A session fixture then starts once per
*worker*, so every test that uses a sandbox cluster (or the Spark session, or a module's private
cluster) has to run on the worker that owns it. tests/conftest.py gives each test the
xdist_group of the clusters it uses: the session- and module-scoped fixtures it requests
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
