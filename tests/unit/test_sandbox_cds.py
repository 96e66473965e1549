"""Class-data sharing for the sandbox's JVMs (kreplica/sandbox/cds.py): one process records at a
time, the archive is mapped once it exists, a failed start gives the recording up, and the
archive belongs to one classpath and Java build. The archive itself is made and used by every
sandbox the integration tests start."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kreplica.sandbox import cds

JAVA = sys.executable  # any binary: only its identity is read here


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KREPLICA_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_one_recorder_at_a_time_then_the_archive_is_mapped(tmp_path: Path) -> None:
    first = cds.start_recording(JAVA, "a.jar:b.jar", tmp_path)
    assert first == [f"-XX:DumpLoadedClassList={tmp_path / 'classes.lst'}"]
    assert cds.start_recording(JAVA, "a.jar:b.jar", tmp_path) == []  # locked
    assert cds.archive_flags(JAVA, "a.jar:b.jar") == []
    archive = cds.archive_path(JAVA, "a.jar:b.jar")
    archive.write_bytes(b"made by java -Xshare:dump")
    assert cds.archive_flags(JAVA, "a.jar:b.jar") == [f"-XX:SharedArchiveFile={archive}"]
    assert cds.start_recording(JAVA, "a.jar:b.jar", tmp_path) == []  # nothing left to record


def test_a_failed_start_gives_the_recording_up(tmp_path: Path) -> None:
    assert cds.start_recording(JAVA, "a.jar", tmp_path)
    cds.abandon(JAVA, "a.jar")
    assert cds.start_recording(JAVA, "a.jar", tmp_path)


def test_another_classpath_or_java_has_its_own_archive(tmp_path: Path) -> None:
    other_java = tmp_path / "java"
    other_java.write_text("#!/bin/sh\n")
    paths = {
        cds.archive_path(JAVA, "a.jar"),
        cds.archive_path(JAVA, "b.jar"),
        cds.archive_path(str(other_java), "a.jar"),
    }
    assert len(paths) == 3


def test_nothing_recorded_releases_the_lock(tmp_path: Path) -> None:
    assert cds.start_recording(JAVA, "a.jar", tmp_path)
    cds.dump_later(JAVA, "a.jar", tmp_path)  # the broker wrote no list: no dump started
    assert cds.start_recording(JAVA, "a.jar", tmp_path)


def test_a_cache_that_cannot_be_written_only_means_no_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("KREPLICA_CACHE", str(blocker / "cache"))  # under a file: no folder
    assert cds.start_recording(JAVA, "a.jar", tmp_path) == []
    assert cds.archive_flags(JAVA, "a.jar") == []
