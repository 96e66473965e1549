"""Class-data sharing (JDK CDS) for the sandbox's JVMs: a broker or one of Kafka's tools starts
with about a third less CPU when the classes it loads are mapped from a shared archive instead
of read, parsed and verified from the jars (a 3-node KRaft sandbox: 7.6 -> 5.2 CPU seconds to
ready, on 2 cores).

The archive is made once per Kafka classpath and Java build, from what a real broker loads:
the first `up` that finds none has its first broker record the classes it loads
(`-XX:DumpLoadedClassList`, into the sandbox's folder: free), and once the cluster runs, a
detached `java -Xshare:dump` turns that list into the archive under the jar cache (about 8 s of
CPU, off the caller's path). Later brokers and tools on the same classpath map it. A missing,
stale or unreadable archive only costs speed: the JVM then reads the jars (`-Xshare:auto`, the
default, falls back without a word). One process records at a time (a lock file), so parallel
`up`s do not all pay for it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import time
from pathlib import Path

from kreplica.cachedir import cache_dir, java_build

_LOCK_STALE_S = 900  # a recorder that died long ago does not block the next one
_DUMP_FLAGS = ("-XX:+UseSerialGC", "-XX:-UsePerfData")


def archive_path(java: str, classpath: str) -> Path:
    key = hashlib.sha256(f"{java_build(java)}\n{classpath}".encode()).hexdigest()[:16]
    return cache_dir() / "cds" / f"kafka-{key}.jsa"


def archive_flags(java: str, classpath: str) -> list[str]:
    """The flag that maps the archive for this classpath, once it exists."""
    path = archive_path(java, classpath)
    return [f"-XX:SharedArchiveFile={path}"] if path.exists() else []


def start_recording(java: str, classpath: str, state_dir: Path) -> list[str]:
    """The flag that makes one JVM record its classes into `state_dir`, when there is no
    archive yet and no other process records one; [] otherwise."""
    path = archive_path(java, classpath)
    if path.exists():
        return []
    lock = path.with_suffix(".lock")
    with contextlib.suppress(OSError):
        if time.time() - lock.stat().st_mtime > _LOCK_STALE_S:
            lock.unlink()
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:  # another process records, or the cache is read-only
        return []
    return [f"-XX:DumpLoadedClassList={state_dir / 'classes.lst'}"]


def abandon(java: str, classpath: str) -> None:
    """Give the recording up (the sandbox did not start): the next `up` records."""
    archive_path(java, classpath).with_suffix(".lock").unlink(missing_ok=True)


def dump_later(java: str, classpath: str, state_dir: Path) -> None:
    """Turn the recorded class list into the archive in a detached JVM (the lock taken by
    `start_recording` is released when it ends, whatever the outcome)."""
    path = archive_path(java, classpath)
    lock = path.with_suffix(".lock")
    recorded = state_dir / "classes.lst"
    listed = path.with_suffix(".lst")
    try:
        text = recorded.read_text(errors="replace")
        # the broker goes on loading classes: keep the complete lines only
        listed.write_text(text[: text.rfind("\n") + 1])
    except OSError:
        lock.unlink(missing_ok=True)
        return
    tmp = path.with_suffix(".tmp")
    dump = [
        java,
        *_DUMP_FLAGS,
        "-Xshare:dump",
        f"-XX:SharedClassListFile={listed}",
        f"-XX:SharedArchiveFile={tmp}",
        "-cp",
        classpath,
    ]
    # kept only when a JVM then starts with it mapped (-Xshare:on fails otherwise): a
    # truncated archive would crash every JVM that maps it
    script = (
        '"$@" >/dev/null 2>&1'
        ' && "$1" -XX:SharedArchiveFile="$TMP" -Xshare:on -cp "$CP" -version >/dev/null 2>&1'
        ' && mv -f "$TMP" "$OUT"; rm -f "$TMP" "$LIST" "$LOCK"'
    )
    subprocess.Popen(
        ["sh", "-c", script, "sh", *dump],
        env={
            **os.environ,
            "CP": classpath,
            "TMP": str(tmp),
            "OUT": str(path),
            "LIST": str(listed),
            "LOCK": str(lock),
        },
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # outlives `kreplica sandbox up`
    )
