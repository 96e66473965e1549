"""kreplica's cache folder: the sandbox's resolved classpaths and the JVMs' class-data-sharing
archives (sandbox and Spark), keyed by the Java build they are valid for. Nothing in it is
needed: deleting it costs the next run time."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def cache_dir() -> Path:
    """`$KREPLICA_CACHE`, else `$XDG_CACHE_HOME/kreplica`, else `~/.cache/kreplica`."""
    base = os.environ.get("KREPLICA_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kreplica"
    )
    return Path(base)


def java_build(java: str) -> str:
    """The Java build behind `java`, cheaply: the JVM library's path, size and time (a JDK
    update changes them, and a class archive is valid for one build only)."""
    real = Path(os.path.realpath(java))
    for lib in (real.parent.parent / "lib" / "server" / "libjvm.so", real):
        with contextlib.suppress(OSError):
            st = lib.stat()
            return f"{lib}:{st.st_size}:{st.st_mtime_ns}"
    return str(real)
