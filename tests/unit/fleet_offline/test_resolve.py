"""What the files read come to (`pipeline.resolve`), without Spark: names as Spark gives them
(%-encoded URIs) against names as Hadoop lists them (not encoded)."""

from __future__ import annotations

from kreplica.fleet.frames import Listed
from kreplica.fleet.pipeline import resolve


def test_names_with_percent_signs_and_spaces_are_matched_not_called_unreadable() -> None:
    listed = Listed(
        files=["file:/f/x%41.json", "file:/f/y z.json", "file:/f/gone.json"],
        empty=[],
        broken=[],
    )
    meta = [
        {"cluster_id": "a", "file": "/f/x%2541.json", "error": None},
        {"cluster_id": "b", "file": "/f/y%20z.json", "error": None},
    ]
    said: list[str] = []
    resolved = resolve(meta, listed, "/f", said.append)
    assert resolved.first == {"a": "/f/x%2541.json", "b": "/f/y%20z.json"}
    assert [s["file"] for s in resolved.skipped] == ["/f/gone.json"]
    assert "cannot be read" in resolved.skipped[0]["error"]
    assert said[-1] == "read 3 snapshot(s): 2 cluster(s), 1 skipped"
