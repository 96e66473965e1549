"""Client properties (`--command-config` style) mapped onto the three client libraries (pure).

Users give Kafka property names, as in a Java tool's `--command-config` file:
`security.protocol`, `sasl.mechanism`, `sasl.jaas.config` or `sasl.username`/`sasl.password`,
`ssl.ca.location`, ... . confluent-kafka (librdkafka) takes most of them verbatim;
kafka-python wants keyword arguments; kazoo takes the `zookeeper.*` keys below. One file can
hold both: Kafka clients ignore `zookeeper.*`, kazoo ignores the rest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kreplica.errors import UsageError

# Java-only properties the Python clients cannot use, with what to use instead.
_JAVA_ONLY = {
    "ssl.truststore.location": "convert the truststore to PEM and set ssl.ca.location",
    "ssl.truststore.password": "convert the truststore to PEM and set ssl.ca.location",
    "ssl.truststore.type": "convert the truststore to PEM and set ssl.ca.location",
    "ssl.keystore.type": "use PEM files: ssl.certificate.location and ssl.key.location",
    "sasl.login.callback.handler.class": "use sasl.username/sasl.password or sasl.oauthbearer.*",
    "sasl.client.callback.handler.class": "use sasl.username/sasl.password",
}

# Kafka/librdkafka property → kafka-python KafkaAdminClient keyword.
_KAFKA_PYTHON_NAMES = {
    "client.id": "client_id",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "ssl.crl.location": "ssl_crlfile",
}

_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')

ZOOKEEPER_KEYS = (
    "zookeeper.digest",
    "zookeeper.sasl.mechanism",
    "zookeeper.sasl.username",
    "zookeeper.sasl.password",
    "zookeeper.sasl.service",
    "zookeeper.sasl.principal",
    "zookeeper.ssl.client.enable",
    "zookeeper.ssl.ca.location",
    "zookeeper.ssl.certificate.location",
    "zookeeper.ssl.key.location",
    "zookeeper.ssl.key.password",
    "zookeeper.ssl.endpoint.identification.algorithm",
)


def _true(value: str, key: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no", ""):
        return False
    raise UsageError(f"client config {key}={value!r} must be true or false")


def jaas_credentials(jaas: str) -> dict[str, str]:
    """username/password from a `sasl.jaas.config` value (PLAIN and SCRAM login modules)."""
    options = {k: v.replace('\\"', '"') for k, v in _JAAS_OPTION.findall(jaas)}
    if "username" not in options or "password" not in options:
        raise UsageError(
            'client config sasl.jaas.config has no username="..." password="..."; '
            "kreplica supports PLAIN and SCRAM logins (or set sasl.username and sasl.password)"
        )
    return {"sasl.username": options["username"], "sasl.password": options["password"]}


def kafka_properties(client_config: Mapping[str, str] | None) -> dict[str, str]:
    """The Kafka client properties in `client_config`: `zookeeper.*` dropped, `sasl.jaas.config`
    turned into sasl.username/sasl.password, Java-only properties refused with what to use."""
    props: dict[str, str] = {}
    for key, value in sorted((client_config or {}).items()):
        if key.startswith("zookeeper."):
            continue
        if key in _JAVA_ONLY:
            raise UsageError(f"client config {key} is Java-only; {_JAVA_ONLY[key]}")
        if key == "sasl.jaas.config":
            props.update(jaas_credentials(value))
            continue
        if key == "bootstrap.servers":
            continue  # the --bootstrap-server value wins
        props[key] = str(value)
    return props


def principal_name(client_config: Mapping[str, str] | None) -> str | None:
    """`User:NAME` of a SASL login configured in `client_config` (None otherwise: with client
    certificates the broker derives the principal from the certificate)."""
    config = client_config or {}
    if not str(config.get("security.protocol", "")).upper().startswith("SASL"):
        return None
    username = config.get("sasl.username")
    if not username and config.get("sasl.jaas.config"):
        options = dict(_JAAS_OPTION.findall(config["sasl.jaas.config"]))
        username = options.get("username")
    return f"User:{username}" if username else None


def confluent_config(bootstrap: str, client_config: Mapping[str, str] | None) -> dict[str, Any]:
    """librdkafka configuration: bootstrap plus the Kafka properties, verbatim."""
    config: dict[str, Any] = dict(kafka_properties(client_config))
    config["bootstrap.servers"] = bootstrap
    return config


def kafka_python_config(
    bootstrap: str, client_config: Mapping[str, str] | None, timeout_s: float
) -> dict[str, Any]:
    """kafka-python KafkaAdminClient keywords. Properties it has no equivalent for are left to
    librdkafka (which validates them); security ones it must understand are mapped."""
    timeout_ms = max(1000, int(timeout_s * 1000))
    config: dict[str, Any] = {
        "bootstrap_servers": bootstrap.split(","),
        "request_timeout_ms": timeout_ms,
        "bootstrap_timeout_ms": timeout_ms,
        "reconnect_backoff_max_ms": 1000,
        "client_id": "kreplica",
    }
    for key, value in kafka_properties(client_config).items():
        name = _KAFKA_PYTHON_NAMES.get(key)
        if name is not None:
            config[name] = value
        elif key == "ssl.endpoint.identification.algorithm":
            config["ssl_check_hostname"] = value.strip().lower() == "https"
    return config


def zookeeper_options(
    client_config: Mapping[str, str] | None, auth: list[tuple[str, str]] | None
) -> dict[str, Any]:
    """kazoo KazooClient keywords from `zookeeper.*` properties and (scheme, credential) auth.

    `zookeeper.digest=user:password` is the same as auth=[("digest", "user:password")].
    """
    auth_data: list[tuple[str, str]] = []
    for entry in auth or []:
        if not isinstance(entry, tuple) or len(entry) != 2 or not all(entry):
            raise UsageError(
                f"ZooKeeper auth {entry!r} must be (scheme, credential), "
                "e.g. ('digest', 'user:pass')"
            )
        auth_data.append((entry[0], entry[1]))
    zk = {k: str(v) for k, v in (client_config or {}).items() if k.startswith("zookeeper.")}
    unknown = sorted(set(zk) - set(ZOOKEEPER_KEYS))
    if unknown:
        raise UsageError(
            f"unknown ZooKeeper client config {', '.join(unknown)}; "
            f"known: {', '.join(ZOOKEEPER_KEYS)}"
        )
    if "zookeeper.digest" in zk:
        auth_data.append(("digest", zk["zookeeper.digest"]))
    for scheme, credential in auth_data:
        if scheme == "digest" and ":" not in credential:
            raise UsageError("ZooKeeper digest credentials must be user:password")
    options: dict[str, Any] = {}
    if auth_data:
        options["auth_data"] = auth_data
    mechanism = zk.get("zookeeper.sasl.mechanism")
    if mechanism:
        mechanism = mechanism.upper()
        sasl: dict[str, str] = {"mechanism": mechanism}
        if mechanism == "DIGEST-MD5":
            if "zookeeper.sasl.username" not in zk or "zookeeper.sasl.password" not in zk:
                raise UsageError(
                    "ZooKeeper SASL DIGEST-MD5 needs zookeeper.sasl.username and "
                    "zookeeper.sasl.password"
                )
            sasl["username"] = zk["zookeeper.sasl.username"]
            sasl["password"] = zk["zookeeper.sasl.password"]
        elif mechanism != "GSSAPI":
            raise UsageError(
                f"ZooKeeper SASL mechanism {mechanism!r} is not supported; use DIGEST-MD5 or GSSAPI"
            )
        sasl["service"] = zk.get("zookeeper.sasl.service", "zookeeper")
        if "zookeeper.sasl.principal" in zk:
            sasl["principal"] = zk["zookeeper.sasl.principal"]
        options["sasl_options"] = sasl
    if _true(zk.get("zookeeper.ssl.client.enable", "false"), "zookeeper.ssl.client.enable"):
        options["use_ssl"] = True
        for key, kwarg in (
            ("zookeeper.ssl.ca.location", "ca"),
            ("zookeeper.ssl.certificate.location", "certfile"),
            ("zookeeper.ssl.key.location", "keyfile"),
            ("zookeeper.ssl.key.password", "keyfile_password"),
        ):
            if key in zk:
                options[kwarg] = zk[key]
        algorithm = zk.get("zookeeper.ssl.endpoint.identification.algorithm", "https")
        options["check_hostname"] = algorithm.strip().lower() == "https"
    return options
