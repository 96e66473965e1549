"""The job's output folder: a local folder (written by Python) or any Hadoop-compatible URI
(hdfs://, s3a://, ...; written through Hadoop's FileSystem API in the driver's JVM, so the
user's Hadoop jars for that file system must be on Spark's classpath). Spark's own writers
(the findings' Parquet) take `uri(...)` either way. The success marker is written last."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from kreplica.errors import UsageError
from kreplica.fleet.preflight import DONE_MARKER, OutDir, hadoop_literal

JARS_NEEDED = (
    "hdfs:// and s3a:// need that file system's Hadoop jars on Spark's classpath "
    "(e.g. --packages org.apache.hadoop:hadoop-aws:VERSION for s3a://)"
)


class OutFiles:
    """Files under --out, by path relative to it ("plans/x/plan.json")."""

    def __init__(self, spark: Any, out: OutDir) -> None:
        self.out = out
        self._spark = spark
        self._fs: Any = None
        if out.local is None:
            self._remote_prepare()

    def uri(self, rel: str = "") -> str:
        return f"{self.out.uri}/{rel}" if rel else self.out.uri

    def literal(self, rel: str = "") -> str:
        """`uri(rel)` for a read that globs (Spark's readers, globStatus): the folder the user
        named, glob characters and all, not a pattern."""
        return hadoop_literal(self.uri(rel))

    def shown(self, rel: str = "") -> str:
        if self.out.local is not None:
            return str(self.out.local / rel) if rel else str(self.out.local)
        return self.uri(rel)

    def write_text(self, rel: str, text: str) -> None:
        self.write_bytes(rel, text.encode("utf-8"))

    def write_bytes(self, rel: str, data: bytes) -> None:
        if self.out.local is not None:
            write_local(self.out.local, rel, data)
            return
        self._remote(lambda: self._write_remote(rel, data), rel)

    def remove(self, rel: str) -> None:
        """Remove `rel` (a file or a folder, with what it holds) if it is there."""
        if self.out.local is not None:
            path = self.out.local / rel
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif path.exists() or path.is_symlink():
                path.unlink()
            return
        self._remote(lambda: self._fs.delete(self._path(rel), True), rel)

    def move(self, rel: str, to: str) -> None:
        """Rename `rel` to `to` (which must not exist) in one step, its parent made first."""
        if self.out.local is not None:
            target = self.out.local / to
            target.parent.mkdir(parents=True, exist_ok=True)
            (self.out.local / rel).rename(target)
            return

        def rename() -> None:
            self._fs.mkdirs(self._path(to).getParent())
            if not self._fs.rename(self._path(rel), self._path(to)):
                raise UsageError(f"--out {self.uri(to)!r}: cannot move {rel} there")

        self._remote(rename, to)

    def only_file(self, rel: str) -> str | None:
        """The one data file Spark's writer left in folder `rel` (its part file), relative to
        --out; None when there is none."""
        if self.out.local is not None:
            found = sorted(p.name for p in (self.out.local / rel).glob("part-*"))
        else:
            statuses: list[Any] = []

            def listing() -> None:
                pattern = self._spark._jvm.org.apache.hadoop.fs.Path(f"{self.literal(rel)}/part-*")
                statuses.extend(self._fs.globStatus(pattern) or [])

            self._remote(listing, rel)
            found = sorted(str(st.getPath().getName()) for st in statuses)
        return f"{rel}/{found[0]}" if len(found) == 1 else None

    def mark_done(self, command: str, counts: dict[str, Any]) -> None:
        """The success marker: written after everything else, so its presence means the run
        finished (with `status` "partial" when snapshots were skipped)."""
        doc = {"kreplica_fleet": command, "finished": _utc_now(), **counts}
        self.write_text(DONE_MARKER, json.dumps(doc, indent=2, sort_keys=True) + "\n")

    # Hadoop FileSystem, through the driver's JVM
    def _path(self, rel: str = "") -> Any:
        return self._spark._jvm.org.apache.hadoop.fs.Path(self.uri(rel))

    def _remote_prepare(self) -> None:
        def prepare() -> None:
            root = self._path()
            self._fs = root.getFileSystem(self._spark._jsc.hadoopConfiguration())
            if self._fs.exists(root) and self._fs.getFileStatus(root).isFile():
                raise UsageError(f"--out {self.out.uri!r} is a file; give a folder")
            self._fs.mkdirs(root)
            marker = self._path(DONE_MARKER)
            if self._fs.exists(marker):
                self._fs.delete(marker, False)
            probe = self._path(".kreplica-probe")
            self._fs.create(probe, True).close()
            self._fs.delete(probe, False)

        self._remote(prepare, "")

    def _write_remote(self, rel: str, data: bytes) -> None:
        stream = self._fs.create(self._path(rel), True)
        try:
            stream.write(bytearray(data))
        finally:
            stream.close()

    def _remote(self, action: Any, rel: str) -> None:
        try:
            action()
        except UsageError:
            raise
        except Exception as exc:  # Py4JJavaError: no such file system, denied, ...
            first = first_line(exc)
            raise UsageError(
                f"--out {self.uri(rel)!r} cannot be written ({first}); {JARS_NEEDED}"
            ) from None


def write_local(root: Path, rel: str, data: bytes) -> None:
    """Write `root/rel` whole: a reader sees the old file or the new one, never half of it.
    (Also called in executors, which write a local --out's plan files themselves.)"""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def first_line(exc: BaseException) -> str:
    """A Java exception's first line (its class and message), not py4j's whole trace."""
    java = getattr(exc, "java_exception", None)
    text = str(java.toString()) if java is not None else str(exc)
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
