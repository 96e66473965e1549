"""kreplica: minimal, rack-safe, Kafka-exact replica plans for Kafka operators.

As a library (docs/library.md): `read_cluster`, `plan`, `write_plan`, `connect`, `apply`,
`resume`, `verify`, `cancel` and their types, from kreplica.api. They are imported on first
use, so `import kreplica` (and every `kreplica.*` module, which imports this package first)
loads nothing but this file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "ApplyOptions",
    "ApplyResult",
    "ClusterSnapshot",
    "Connection",
    "Difference",
    "Plan",
    "PlanOptions",
    "TopicRequest",
    "__version__",
    "apply",
    "cancel",
    "connect",
    "plan",
    "read_cluster",
    "resume",
    "verify",
    "write_plan",
]

if TYPE_CHECKING:
    from kreplica.api import (
        ApplyOptions,
        ApplyResult,
        ClusterSnapshot,
        Connection,
        Difference,
        Plan,
        PlanOptions,
        TopicRequest,
        apply,
        cancel,
        connect,
        plan,
        read_cluster,
        resume,
        verify,
        write_plan,
    )


def __getattr__(name: str) -> Any:
    if name in __all__:
        from kreplica import api

        return getattr(api, name)
    raise AttributeError(f"module 'kreplica' has no attribute {name!r}")
