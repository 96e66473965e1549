"""kreplica: minimal, rack-safe, Kafka-exact replica plans for Kafka operators."""

from __future__ import annotations

__version__ = "0.1.0"
