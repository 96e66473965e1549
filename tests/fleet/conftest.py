"""The Spark tests share ONE local session (local[2], 4 shuffle partitions, no UI), built by
the job's own entry point; a synthetic fleet is written once per session."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the fleet extra is not installed (pip install '.[fleet]')")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from kreplica.fleet.job import build_session

    if shutil.which("java") is None and not __import__("os").environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java")
    session = build_session(
        "local[2]",
        app_name="kreplica-tests",
        conf={"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "4"},
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """6 synthetic clusters (3,000 partitions) plus one file that is not a snapshot."""
    from kreplica.fleet.synth import write_fleet

    folder = tmp_path_factory.mktemp("fleet")
    write_fleet(folder, 6, 3000, seed=21)
    (folder / "broken.json").write_text('{"kreplica_snapshot": 1, "brokers": [\n')
    return folder
