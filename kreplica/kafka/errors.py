"""The exceptions Kafka's placers throw, under Kafka's names and with Kafka's messages."""

from __future__ import annotations

from kreplica.errors import ExitCode, PlanInfeasible


class KafkaAssignmentError(PlanInfeasible):
    """A placement Kafka itself would refuse; ``str(exc)`` is Kafka's message, verbatim."""

    code = "kafka-refused"

    @property
    def kafka_exception(self) -> str:
        """The simple name of the Java exception class Kafka throws."""
        return type(self).__name__


class InvalidPartitionsException(KafkaAssignmentError):
    pass


class InvalidReplicationFactorException(KafkaAssignmentError):
    pass


class AdminOperationException(KafkaAssignmentError):
    pass


class UnknownTopicOrPartitionException(KafkaAssignmentError):
    exit_code = ExitCode.SOURCE  # nothing to plan against, as for kreplica's UnknownTopicError
