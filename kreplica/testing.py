"""pytest plugin (entry point `kreplica`): real-cluster fixtures for users' own CI.

Filled in by the real-clusters work; kept importable and side-effect free.
"""

from __future__ import annotations
