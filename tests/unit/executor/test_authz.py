"""The permission check before writes (pure): what each write needs, what is missing, and the
one-line refusal."""

from __future__ import annotations

from kreplica.executor.authz import (
    CLUSTER,
    Need,
    NotAuthorized,
    apply_needs,
    canary_needs,
    missing,
    refusal,
    throttle_needs,
)
from kreplica.sources.clientconfig import principal_name


def test_apply_needs_by_what_the_plan_writes() -> None:
    needs = apply_needs(
        moved_topics=["orders", "orders", "logs"], created_topics=["new"], throttled=True
    )
    assert needs == [
        Need("cluster", CLUSTER, "ALTER", "submit partition reassignments"),
        Need("cluster", CLUSTER, "ALTER_CONFIGS", "set broker throttles"),
        Need("topic", "logs", "ALTER_CONFIGS", "set topic throttles"),
        Need("topic", "orders", "ALTER_CONFIGS", "set topic throttles"),
        Need("topic", "new", "ALTER", "create partitions"),
    ]
    # --via zookeeper writes the znode, not AlterPartitionReassignments; no throttle, no configs
    assert (
        apply_needs(moved_topics=["a"], created_topics=[], throttled=False, via_kafka=False) == []
    )


def test_throttle_needs_map_brokers_to_the_cluster() -> None:
    needs = throttle_needs([("broker", "1"), ("broker", "2"), ("topic", "t")], "clear")
    assert [(n.resource, n.name, n.operation) for n in needs] == [
        ("cluster", CLUSTER, "ALTER_CONFIGS"),
        ("topic", "t", "ALTER_CONFIGS"),
    ]


def test_missing_counts_unknown_as_allowed_and_all_as_everything() -> None:
    needs = apply_needs(moved_topics=["t"], created_topics=[], throttled=True)
    readonly = {"DESCRIBE", "DESCRIBE_CONFIGS"}
    assert [n.operation for n in missing(needs, readonly, {"t": readonly})] == [
        "ALTER",
        "ALTER_CONFIGS",
        "ALTER_CONFIGS",
    ]
    assert missing(needs, None, {"t": None}) == []  # the cluster did not say: the write decides
    assert missing(needs, {"ALL"}, {"t": {"ALL"}}) == []
    assert [n.resource for n in missing(needs, {"ALTER", "ALTER_CONFIGS"}, {"t": set()})] == [
        "topic"
    ]


def test_refusal_is_one_line_with_kafkas_error_and_the_acl() -> None:
    needs = apply_needs(moved_topics=["t"], created_topics=[], throttled=True)
    error = refusal(needs, "User:readonly", "b:9093")
    assert isinstance(error, NotAuthorized) and error.exit_code == 3
    text = str(error)
    assert "\n" not in text
    assert text.startswith("User:readonly may not Alter the cluster at b:9093")
    assert "CLUSTER_AUTHORIZATION_FAILED" in text and "(and 2 more permission(s))" in text
    assert "kafka-acls --add --allow-principal User:readonly --operation Alter --cluster" in text
    topic_only = refusal([Need("topic", "t", "ALTER_CONFIGS", "x")], None, "b:9093")
    assert "TOPIC_AUTHORIZATION_FAILED" in str(topic_only)
    assert "--operation AlterConfigs --topic t" in str(topic_only)
    assert str(topic_only).startswith("this client's principal may not")


def test_principal_name_from_sasl_settings() -> None:
    assert principal_name({"security.protocol": "SASL_SSL", "sasl.username": "ops"}) == "User:ops"
    jaas = 'ScramLoginModule required username="a" password="p";'
    assert principal_name({"security.protocol": "sasl_plaintext", "sasl.jaas.config": jaas}) == (
        "User:a"
    )
    assert principal_name({"security.protocol": "SSL"}) is None
    assert principal_name(None) is None


def test_canary_needs_and_the_refusal_naming_its_topic() -> None:
    missing_topic = canary_needs("kreplica-canary", exists=False, delete=True)
    assert [(n.resource, n.operation) for n in missing_topic] == [("cluster", "CREATE")]
    line = str(refusal(missing_topic, "User:ops", "k:9092"))
    assert line.startswith("User:ops may not Create the cluster at k:9092, needed to create its")
    assert "topic kreplica-canary: run the --pace auto canary (or use --throttle RATE" in line
    assert "`kafka-acls --add --allow-principal User:ops --operation Create --cluster`" in line
    there = canary_needs("kreplica-canary", exists=True, delete=True)
    assert [(n.name, n.operation) for n in there] == [
        ("kreplica-canary", "WRITE"),
        ("kreplica-canary", "DELETE"),
    ]
    kept = canary_needs("kreplica-canary", exists=True, delete=False)
    assert [n.operation for n in kept] == ["WRITE"]  # --keep-canary: no delete
    lacking = missing(there, {"ALTER"}, {"kreplica-canary": {"WRITE", "DESCRIBE"}})
    assert [n.operation for n in lacking] == ["DELETE"]
    assert "--operation Delete --topic kreplica-canary" in str(refusal(lacking, None, "k:9092"))
