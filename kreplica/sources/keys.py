"""Record keys read from a topic, to measure on real traffic how many change partition.

The most recent records of every partition are read (up to `count` keys in all, spread over
the partitions), with a consumer that joins no group and commits nothing: sampling leaves no
trace on the cluster. Records without a key are skipped (they do not follow the key hash).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from kreplica.errors import SourceError, UsageError
from kreplica.sources.clientconfig import confluent_config


def sample_keys(
    bootstrap: str,
    topic: str,
    count: int,
    *,
    client_config: Mapping[str, str] | None = None,
    timeout_s: float = 15.0,
) -> list[bytes]:
    """Up to `count` keys from the newest records of `topic`; fewer when the topic holds fewer
    keyed records, or when `timeout_s` runs out first."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    if count < 1:
        raise UsageError(f"`count` {count}: give a number of keys of 1 or more")
    config = confluent_config(bootstrap, client_config)
    config.update(
        {
            "group.id": "kreplica-sample",  # required by librdkafka; never joined or committed
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    consumer = Consumer(config)
    try:
        metadata = consumer.list_topics(topic, timeout=timeout_s)
        described = metadata.topics.get(topic)
        if described is None or described.error is not None or not described.partitions:
            raise SourceError(f"cannot read topic {topic!r} to sample keys; check the name")
        partitions = sorted(described.partitions)
        per_partition = max(1, -(-count // len(partitions)))
        assignment = []
        for pid in partitions:
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, pid), timeout=timeout_s
            )
            if high > low:
                assignment.append(TopicPartition(topic, pid, max(low, high - per_partition)))
        if not assignment:
            return []
        consumer.assign(assignment)
        keys: list[bytes] = []
        open_partitions = {tp.partition for tp in assignment}
        deadline = time.monotonic() + timeout_s
        while open_partitions and len(keys) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == error._PARTITION_EOF:
                    open_partitions.discard(message.partition())
                    continue
                raise SourceError(f"reading {topic!r} to sample keys failed: {error.str()}")
            key = message.key()
            if key is not None:
                keys.append(key)
        return keys[:count]
    except KafkaException as exc:
        raise SourceError(f"reading {topic!r} to sample keys failed: {exc}") from None
    finally:
        consumer.close()
