"""Seed idea 1: continue the topic's Kafka layout (filled in once kreplica.kafka lands)."""

from __future__ import annotations

from kreplica.errors import NotImplementedYet
from kreplica.model import Topic
from kreplica.planner.context import PlanContext
from kreplica.planner.strategies import Work


class KafkaStrategy:
    name = "kafka"

    def change_rf(self, ctx: PlanContext, topic: Topic, work: Work, rf: int) -> None:
        raise NotImplementedYet("--strategy kafka is not built yet; use --strategy balanced")

    def add_partitions(
        self, ctx: PlanContext, topic: Topic, work: Work, total: int, rf: int
    ) -> None:
        raise NotImplementedYet("--strategy kafka is not built yet; use --strategy balanced")
