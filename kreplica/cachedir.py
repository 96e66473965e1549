"""kreplica's cache folder: the sandbox's resolved classpaths and the JVMs' class-data-sharing
archives (sandbox and Spark). Nothing in it is needed: deleting it costs the next run time."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """`$KREPLICA_CACHE`, else `$XDG_CACHE_HOME/kreplica`, else `~/.cache/kreplica`."""
    base = os.environ.get("KREPLICA_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kreplica"
    )
    return Path(base)
