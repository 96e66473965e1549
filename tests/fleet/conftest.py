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
    from tests.support.groups import claim
    from tests.support.lifetimes import releasable

    claim("spark")

    if shutil.which("java") is None and not __import__("os").environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java")
    # The test fleets are tiny: the time goes to the JVM compiling Spark itself (the first
    # queries) and Janino compiling each stage, not to data. C1 only, the serial collector and
    # interpreted stages cut the JVM's CPU by about a third, which on a busy 2-core machine is
    # most of the wall time; one shuffle partition per core, a small heap.
    session = build_session(
        "local[2]",
        app_name="kreplica-tests",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.sql.codegen.wholeStage": "false",
            "spark.driver.memory": "768m",
            # prepended to the job's own extraJavaOptions (its log config)
            "spark.driver.defaultJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        },
    )
    with releasable("spark") as stack:
        stack.callback(session.stop)
        yield session


@pytest.fixture(scope="session")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """6 synthetic clusters (3,000 partitions) plus one file that is not a snapshot."""
    from kreplica.fleet.synth import write_fleet

    folder = tmp_path_factory.mktemp("fleet")
    write_fleet(folder, 6, 3000, seed=21)
    (folder / "broken.json").write_text('{"kreplica_snapshot": 1, "brokers": [\n')
    return folder
