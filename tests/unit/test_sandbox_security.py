"""The secured sandbox's pure parts: SCRAM credentials in Kafka's stored form, broker settings,
client properties (the end-to-end proof is tests/integration/test_secured.py)."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

import pytest

from kreplica.errors import UsageError
from kreplica.sandbox import security
from kreplica.sources.tlscheck import _first_address


def test_scram_credential_is_kafkas_stored_form() -> None:
    salt = b"\x01" * 32
    text = security.scram_credential("pw", salt=salt)
    fields = dict(part.split("=", 1) for part in text.split(","))
    assert list(fields) == ["salt", "stored_key", "server_key", "iterations"]
    assert base64.b64decode(fields["salt"]) == salt and fields["iterations"] == "4096"
    salted = hashlib.pbkdf2_hmac("sha512", b"pw", salt, 4096)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha512).digest()
    assert base64.b64decode(fields["stored_key"]) == hashlib.sha512(client_key).digest()


def test_modes_and_client_properties(tmp_path: Path) -> None:
    assert security.check_mode("SASL_SSL") == "sasl_ssl"
    with pytest.raises(UsageError, match="--security 'tls' is unknown"):
        security.check_mode("tls")
    sec = security.Security(
        mode="sasl_ssl", dir=tmp_path, passwords={"admin": "a", "readonly": "r"}
    )
    assert security.client_properties(sec, "readonly") == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "readonly",
        "sasl.password": "r",
        "ssl.ca.location": str(tmp_path / "ca.pem"),
    }
    mtls = security.Security(mode="ssl", dir=tmp_path)
    assert security.client_properties(mtls, "admin")["ssl.key.location"].endswith("admin.key.pem")


def test_broker_properties() -> None:
    sec = security.Security(mode="sasl_ssl", dir=Path("/s"), passwords={"admin": "a"})
    zk = security.broker_properties(sec, kraft=False)
    assert zk["authorizer.class.name"] == "kafka.security.authorizer.AclAuthorizer"
    assert zk["super.users"] == "User:admin"
    assert zk["security.inter.broker.protocol"] == "SASL_SSL"
    kraft = security.broker_properties(sec, kraft=True)
    assert kraft["super.users"] == "User:admin;User:ANONYMOUS"
    assert "security.inter.broker.protocol" not in kraft
    assert security.broker_properties(security.Security("plaintext", Path("/s")), kraft=True) == {}
    assert security.storage_scram_arguments(sec) == [
        "--add-scram=SCRAM-SHA-512=[name=admin,password=a]"
    ]


def test_first_bootstrap_address() -> None:
    assert _first_address("localhost:9093,b:9093") == ("localhost", 9093)
    assert _first_address("SASL_SSL://[::1]:9093") == ("::1", 9093)
    assert _first_address("nohost") is None
