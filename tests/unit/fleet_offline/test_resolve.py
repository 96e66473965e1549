"""What the files read come to (`pipeline.resolve`), without Spark: names as Spark gives them
(%-encoded URIs, decoded once by `records.row_name`) against names as Hadoop lists them (not
encoded)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="the fleet extra is not installed (pip install '.[fleet]')")

from kreplica.fleet.frames import Listed
from kreplica.fleet.pipeline import resolve
from kreplica.fleet.policy import Policy
from kreplica.fleet.records import record_row, row_name

ROOT = Path(__file__).resolve().parents[3]


def test_names_with_percent_signs_and_spaces_are_matched_not_called_unreadable() -> None:
    listed = Listed(
        files=["file:/f/x%41.json", "file:/f/y z.json", "file:/f/gone.json"],
        empty=[],
        broken=[],
    )
    meta = [
        {"cluster_id": "a", "file": row_name("file:///f/x%2541.json"), "error": None},
        {"cluster_id": "b", "file": row_name("file:///f/y%20z.json"), "error": None},
    ]
    said: list[str] = []
    resolved = resolve(meta, listed, "/f", said.append)
    assert resolved.first == {"a": "/f/x%41.json", "b": "/f/y z.json"}
    assert [s["file"] for s in resolved.skipped] == ["/f/gone.json"]
    assert "cannot be read" in resolved.skipped[0]["error"]
    assert said[-1] == "read 3 snapshot(s): 2 cluster(s), 1 skipped"


def test_every_message_and_cluster_name_shows_a_file_as_it_is_written() -> None:
    """An empty file (listed by Hadoop), a file that does not parse, a cluster's second file
    (both named by Spark) and a snapshot without a cluster id, in a folder with a space."""
    text = (ROOT / "examples" / "cluster.json").read_text()
    anonymous = text.replace('"cluster_id"', '"former_cluster_id"', 1)
    spark_names = {
        "file:///f/sp%20ace/a.json": text,
        "file:///f/sp%20ace/b%20again.json": text,
        "file:///f/sp%20ace/bad%20one.json": "{bad",
        "file:///f/sp%20ace/no%20id.json": anonymous,
    }
    meta = [record_row(name, body, Policy()) for name, body in spark_names.items()]
    listed = Listed(
        files=[f"file:/f/sp ace/{n}" for n in ("a.json", "b again.json", "bad one.json")]
        + ["file:/f/sp ace/no id.json"],
        empty=["file:/f/sp ace/empty one.json"],
        broken=[],
    )
    said: list[str] = []
    resolved = resolve(meta, listed, "/f/sp ace", said.append)
    errors = [s["error"] for s in resolved.skipped]
    assert len(errors) == 3, errors
    assert all("%20" not in e and e.startswith("/f/sp ace/") for e in errors), errors
    assert any("again (first in /f/sp ace/a.json)" in e for e in errors), errors
    assert "no id" in resolved.first  # named after the file, as written
    assert not any("%" in line for line in said), said
