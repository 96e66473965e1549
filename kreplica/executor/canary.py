"""The canary of `--pace auto`: small acks=all records to a topic kreplica owns, one partition
led by each broker (replicated to the next ones), so its latency feels every broker's
replication. A background thread sends a record to every partition each `every_s`; `take()`
hands over the latencies (ms) and failures since the last call, and how long the oldest record
still unanswered has waited (a broker that stops answering shows there before any latency)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

from kreplica.errors import SourceError

CANARY_TOPIC = "kreplica-canary"
_QUIET = logging.getLogger("kreplica.canary.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False
RECORD = b"k" * 100


def _ignore(_error: Any) -> None:
    """Connection errors: the delivery reports count what they cost."""


def canary_assignment(brokers: Sequence[int], rf: int = 3) -> list[list[int]]:
    """Partition i led by the i-th broker, followed by the next ones (RF up to 3)."""
    ids = sorted(brokers)
    width = min(rf, len(ids))
    return [[ids[(i + k) % len(ids)] for k in range(width)] for i in range(len(ids))]


class Canary:
    def __init__(
        self, cluster: Any, brokers: Sequence[int], *, topic: str = CANARY_TOPIC, every_s: float
    ) -> None:
        self.cluster = cluster  # kreplica.executor.kafka_cluster.KafkaCluster
        self.topic = topic
        self.brokers = sorted(brokers)
        self.every_s = every_s
        self.created = False  # this run created the topic
        self.exists = False  # the topic is there (created now or before)
        self._lock = threading.Lock()
        self._latencies: list[float] = []
        self._failed = 0
        self._waiting: dict[int, float] = {}  # record number -> sent at (monotonic)
        self._sent = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._producer: Any = None

    def start(self) -> None:
        """Create the topic when missing, then start sending."""
        from confluent_kafka import Producer

        self.created = self.cluster.create_topic_if_missing(
            self.topic, canary_assignment(self.brokers)
        )
        self.exists = True
        settings = self.cluster.source.client_settings()
        settings.update(
            {
                "acks": "all",
                "linger.ms": 0,
                "enable.idempotence": False,
                "message.timeout.ms": 10000,  # unacknowledged for 10 s: failed (degraded)
                "client.id": "kreplica-canary",
            }
        )
        # quiet: a struggling cluster is what the canary measures, not something to print
        settings.update({"logger": _QUIET, "error_cb": _ignore})
        self._producer = Producer(settings)
        self._thread = threading.Thread(target=self._run, name="kreplica-canary", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        partitions = range(len(self.brokers))
        next_at = time.monotonic()
        while not self._stop.is_set():
            # poll() returns at the first delivery: wait out the rest of the period, so the
            # canary stays a trickle (one record per partition per period) on a busy cluster
            while (left := next_at - time.monotonic()) > 0 and not self._stop.is_set():
                self._producer.poll(left)
            next_at = max(next_at + self.every_s, time.monotonic())
            for partition in partitions:
                sent = time.monotonic()
                with self._lock:
                    self._sent += 1
                    number = self._sent
                    self._waiting[number] = sent
                try:
                    self._producer.produce(
                        self.topic,
                        RECORD,
                        partition=partition,
                        on_delivery=lambda err, _msg, n=number, at=sent: self._delivered(
                            err, n, at
                        ),
                    )
                except BufferError:
                    with self._lock:
                        self._waiting.pop(number, None)
                        self._failed += 1
            self._producer.poll(0)

    def _delivered(self, err: Any, number: int, sent: float) -> None:
        with self._lock:
            self._waiting.pop(number, None)
            if err is not None:
                self._failed += 1
            else:
                self._latencies.append((time.monotonic() - sent) * 1000.0)

    def take(self) -> tuple[list[float], int, float | None]:
        """(latencies ms, failures, ms the oldest unanswered record has waited or None)."""
        with self._lock:
            latencies, failed = self._latencies, self._failed
            self._latencies, self._failed = [], 0
            oldest = next(iter(self._waiting.values()), None)  # sent in order
        waiting = None if oldest is None else (time.monotonic() - oldest) * 1000.0
        return latencies, failed, waiting

    def stop(self, *, delete: bool) -> str | None:
        """Stop sending; delete the topic (kreplica's own, whoever created it) when `delete`
        says so. Returns why the delete failed, if it did."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._producer is not None:
            if self._producer.flush(3):  # still unanswered: their latency is not needed
                self._producer.purge()
                self._producer.flush(1)
            self._producer = None
        if delete and self.exists:
            try:
                self.cluster.delete_topic(self.topic)
            except SourceError as exc:
                return str(exc)
        return None
