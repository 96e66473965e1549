"""Checks the fleet commands make before Spark starts (stdlib only): is `--master` a Spark
master URL that answers, and can `--out` be written. Each failure is one line naming the
master or the folder, so an unattended run fails in seconds instead of after a JVM start and
a Java stack trace."""

from __future__ import annotations

import glob
import os
import re
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from kreplica.errors import ExitCode, KreplicaError, UsageError

# Spark's own marker for a finished write is _SUCCESS; ours is written last into --out, after
# every report, so a reader (or the next job in a chain) never takes a half-written run.
DONE_MARKER = "_KREPLICA_DONE"
CONNECT_TIMEOUT_S = 5.0

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_LOCAL = re.compile(r"^local(\[(\*|[1-9][0-9]*)(,\s*[0-9]+)?\])?$")
_LOCAL_CLUSTER = re.compile(r"^local-cluster\[[1-9][0-9]*,\s*[1-9][0-9]*,\s*[1-9][0-9]*\]$")
MASTERS = "local[*], local[N], spark://HOST:PORT, yarn or k8s://https://HOST:PORT"


class MasterUnreachable(KreplicaError):
    """The Spark master named by --master does not answer."""

    exit_code = ExitCode.SOURCE
    code = "spark-master-unreachable"


@dataclass(frozen=True)
class OutDir:
    """Where results go: a local folder (`local` set) or a Hadoop URI (hdfs://, s3a://, ...)."""

    uri: str  # what Spark writes to (`hadoop_uri` of a local folder)
    local: Path | None

    @property
    def shown(self) -> str:
        """For messages: the local path as people write it, or the URI."""
        return str(self.local) if self.local is not None else self.uri


def check_master(master: str | None, *, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """A malformed master is a usage error; a spark:// master none of whose hosts accepts a
    TCP connection within `timeout_s` is MasterUnreachable. None (spark-submit's) passes."""
    if master is None or _LOCAL.match(master) or _LOCAL_CLUSTER.match(master):
        return
    if master == "yarn":
        return
    if master.startswith("k8s://"):
        rest = master[len("k8s://") :]
        target = urlsplit(rest if "://" in rest else f"https://{rest}")
        if not target.hostname:
            raise UsageError(f"--master {master!r}: give k8s://https://HOST:PORT")
        return
    if master.startswith("spark://"):
        hosts = _spark_hosts(master)
        errors = []
        for host, port in hosts:
            try:
                with socket.create_connection((host, port), timeout=timeout_s):
                    return
            except OSError as exc:
                errors.append(f"{host}:{port}: {exc.strerror or exc}")
        raise MasterUnreachable(
            f"--master {master}: no Spark master answers ({'; '.join(errors)}); start it "
            f"(sbin/start-master.sh) or check the host and port"
        )
    raise UsageError(f"--master {master!r} is not a Spark master URL; use {MASTERS}")


def _spark_hosts(master: str) -> list[tuple[str, int]]:
    hosts = []
    for part in master[len("spark://") :].split(","):
        host, sep, port = part.rstrip("/").rpartition(":")
        host = host.strip("[]")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UsageError(f"--master {master!r}: give spark://HOST:PORT (e.g. :7077)")
        hosts.append((host, int(port)))
    return hosts


def local_path(value: str, flag: str = "--out") -> Path | None:
    """A local path for a plain path or a file: URI (file:///x, file:/x, file://localhost/x);
    None for any other URI. Plain paths are taken relative to the working directory. A file
    URI's path is taken as written, %XX and all, as Hadoop takes it (Spark reads and writes
    through Hadoop's Path: file:///a%20b is a folder named `a%20b` to it)."""
    scheme = _SCHEME.match(value)
    if scheme is None or len(scheme.group(1)) == 1:  # C:\x on Windows is a path
        return Path(value).expanduser().absolute()
    if scheme.group(1).lower() != "file":
        return None
    parts = urlsplit(value)
    if parts.netloc not in ("", "localhost"):
        raise UsageError(
            f"{flag} {value!r}: a file URI names a local path (file:///abs/path), not host "
            f"{parts.netloc!r}"
        )
    if not parts.path.startswith("/"):
        raise UsageError(f"{flag} {value!r}: give an absolute path (file:///abs/path)")
    return Path(parts.path)


def hadoop_uri(path: Path) -> str:
    """The URI Spark is given for a local folder: Hadoop's Path quotes what needs quoting
    itself, so a %-encoded URI (`Path.as_uri`: file:///a%20b) would name another folder."""
    return f"file://{path.as_posix()}"


_HADOOP_GLOB = re.compile(r"([\\*?\[\]{}])")


def hadoop_literal(path: str) -> str:
    """`path` for a Hadoop (and Spark) read that globs: its glob characters (`* ? [ ] { }`
    and `\\`) escaped, so a folder named `audit[2026-11]` or `a{b,c}` is that folder."""
    return _HADOOP_GLOB.sub(r"\\\1", path)


def check_out(value: str) -> OutDir:
    """The output folder, created and proven writable when local (a probe file is written
    and removed); a previous run's success marker is removed, so a run that stops half-way
    never leaves one behind. A remote URI is checked once Spark runs (its file system lives
    in the JVM)."""
    if not value.strip():
        raise UsageError("--out is empty; give a folder or a URI")
    path = local_path(value)
    if path is None:
        if not urlsplit(value).netloc and not urlsplit(value).path.strip("/"):
            raise UsageError(f"--out {value!r}: give a folder in that file system")
        return OutDir(uri=value.rstrip("/") or value, local=None)
    _writable(path, value)
    return OutDir(uri=hadoop_uri(path), local=path)


def local_out(value: str) -> Path:
    """For the commands that write with Python only (collect, synth): a local folder."""
    path = local_path(value)
    if path is None:
        raise UsageError(f"--out {value!r}: this command writes to a local folder; give a path")
    _writable(path, value)
    return path


def _writable(path: Path, shown: str) -> None:
    if path.exists() and not path.is_dir():
        raise UsageError(f"--out {shown!r} is a file; give a folder")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"--out {shown!r} is under {str(parent)!r}, a file; give a folder")
            break
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".kreplica-probe-"):
            pass
        marker = path / DONE_MARKER
        if marker.exists():
            marker.unlink()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UsageError(
            f"--out {shown!r} cannot be written ({reason}); give a folder you can write"
        ) from None


def local_input_bytes(value: str) -> int | None:
    """The bytes of the snapshot files a local --input names (a folder: its *.json files, or
    its Parquet files for a Parquet dataset; a glob; a file), or None when that is not known
    before Spark starts (a remote URI, nothing there yet)."""
    try:
        path = local_path(value, "--input")
    except UsageError:
        return None
    if path is None:
        return None
    if path.is_dir():
        found = [str(p) for p in path.rglob("*.parquet")] or glob.glob(
            os.path.join(glob.escape(str(path)), "*.json")
        )
    else:
        found = glob.glob(str(path))
    try:
        return sum(os.path.getsize(f) for f in found if os.path.isfile(f)) if found else None
    except OSError:
        return None
