"""A secured sandbox: TLS, SASL/SCRAM users and an authorizer with ACLs (`sandbox up --security`).

    plaintext       no security (the default)
    sasl_plaintext  SCRAM-SHA-512 logins, no TLS
    sasl_ssl        SCRAM-SHA-512 logins over TLS
    ssl             TLS with client certificates (mutual TLS); the principal is the
                    certificate's CN (`ssl.principal.mapping.rules`)

Two users: `admin` (a super user: everything) and `readonly` (Describe and DescribeConfigs on
the cluster and on every topic, nothing else). Their passwords (and the keystores' password)
are random per sandbox. A client properties file per user is written beside the state, in the
form `kreplica --command-config` reads (`security/admin.properties`,
`security/readonly.properties`), mode 0600.

TLS material comes from the JDK's `keytool`: a throwaway CA (also written as PEM,
`security/ca.pem`, for librdkafka and kafka-python), one broker certificate for
`IP:127.0.0.1` only (so `localhost` is a hostname mismatch), and in `ssl` mode a client
certificate per user (its key exported as PEM with `openssl`, which kafka-python needs).

SCRAM credentials: in ZooKeeper mode written into `/config/users/<user>` before the brokers
start (the same znode `kafka-configs --zookeeper ... --add-config SCRAM-SHA-512=[...]`
writes); in KRaft mode given to `kafka-storage format --add-scram`.

Inter-broker traffic: in ZooKeeper mode over the secured listener itself (SCRAM as `admin`, or
the broker's certificate in `ssl` mode). In KRaft mode brokers talk to each other on an
`INTERNAL` PLAINTEXT listener and to the controllers on the PLAINTEXT `CONTROLLER` listener,
both on their own loopback ports; the authorizer sees `User:ANONYMOUS` there, which is
therefore a super user: anyone on this machine reaching those ports bypasses the ACLs. A
sandbox, not a production setup.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kreplica.errors import UsageError
from kreplica.sandbox.jars import SandboxError

SECURITY_MODES = ("plaintext", "sasl_plaintext", "sasl_ssl", "ssl")
USERS = ("admin", "readonly")
MECHANISM = "SCRAM-SHA-512"
SCRAM_ITERATIONS = 4096
_VALID_DAYS = "30"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
SECRETS_FILE = "secrets.json"


def check_mode(security: str) -> str:
    mode = security.strip().lower()
    if mode not in SECURITY_MODES:
        raise UsageError(f"--security {security!r} is unknown: use {', '.join(SECURITY_MODES)}")
    return mode


def protocol(mode: str) -> str:
    """Kafka's security protocol (and listener name) for a sandbox security mode."""
    return mode.upper()


def uses_sasl(mode: str) -> bool:
    return mode.startswith("sasl")


def uses_tls(mode: str) -> bool:
    return mode.endswith("ssl")


@dataclass
class Security:
    """The secrets and files of one secured sandbox (nothing of this is ever printed)."""

    mode: str
    dir: Path
    passwords: dict[str, str] = field(default_factory=dict)  # user -> password
    store_password: str = ""
    client_configs: dict[str, Path] = field(default_factory=dict)

    @property
    def enabled(self) -> bool:
        return self.mode != "plaintext"

    @property
    def ca_pem(self) -> Path:
        return self.dir / "ca.pem"

    @property
    def keystore(self) -> Path:
        return self.dir / "broker.p12"

    @property
    def truststore(self) -> Path:
        return self.dir / "truststore.p12"

    def secret_values(self) -> list[str]:
        return sorted(v for v in [*self.passwords.values(), self.store_password] if v)


# --------------------------------------------------------------------------- setup


def prepare(mode: str, state_dir: Path, java: str) -> Security:
    """Passwords, TLS material and the client properties files of a new sandbox."""
    sec = Security(mode=mode, dir=state_dir / "security")
    if not sec.enabled:
        return sec
    sec.dir.mkdir(mode=0o700)
    sec.store_password = secrets.token_hex(12)
    if uses_sasl(mode):
        sec.passwords = {user: f"{user}-{secrets.token_hex(12)}" for user in USERS}
    if uses_tls(mode):
        _make_tls(sec, java)
    for user in USERS:
        path = sec.dir / f"{user}.properties"
        _write_private(path, "".join(f"{k}={v}\n" for k, v in client_properties(sec, user).items()))
        sec.client_configs[user] = path
    _write_private(
        sec.dir / SECRETS_FILE,
        json.dumps({"passwords": sec.passwords, "store_password": sec.store_password}),
    )
    return sec


def load(mode: str, state_dir: Path) -> Security:
    """The Security of a sandbox that is running (read back from its folder)."""
    sec = Security(mode=mode, dir=state_dir / "security")
    if not sec.enabled:
        return sec
    try:
        data = json.loads((sec.dir / SECRETS_FILE).read_text())
    except (OSError, ValueError) as exc:
        raise SandboxError(
            f"the sandbox's security files in {sec.dir} are unreadable ({exc})"
        ) from None
    sec.passwords = dict(data.get("passwords") or {})
    sec.store_password = str(data.get("store_password") or "")
    sec.client_configs = {user: sec.dir / f"{user}.properties" for user in USERS}
    return sec


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)


def client_properties(sec: Security, user: str) -> dict[str, str]:
    """Kafka client properties for `user` (the names kreplica's --command-config reads)."""
    props = {"security.protocol": protocol(sec.mode)}
    if uses_sasl(sec.mode):
        props["sasl.mechanism"] = MECHANISM
        props["sasl.username"] = user
        props["sasl.password"] = sec.passwords[user]
    if uses_tls(sec.mode):
        props["ssl.ca.location"] = str(sec.ca_pem)
        if not uses_sasl(sec.mode):
            props["ssl.certificate.location"] = str(sec.dir / f"{user}.crt.pem")
            props["ssl.key.location"] = str(sec.dir / f"{user}.key.pem")
    return props


def librdkafka_config(sec: Security, user: str = "admin") -> dict[str, Any]:
    """confluent-kafka settings (without bootstrap.servers) for `user`; {} when not secured."""
    return dict(client_properties(sec, user)) if sec.enabled else {}


# --------------------------------------------------------------------------- TLS with keytool


def _keytool(java: str) -> str:
    keytool = os.path.join(os.path.dirname(os.path.realpath(java)), "keytool")
    if os.access(keytool, os.X_OK):
        return keytool
    found = shutil.which("keytool")
    if found is None:
        raise SandboxError(
            "keytool (part of the JDK) is not on PATH: install a full JDK 17+ to start a "
            "sandbox with --security ssl or sasl_ssl"
        )
    return found


def _run(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise SandboxError(f"{what} failed: {detail[-1] if detail else 'no output'}")


def _make_tls(sec: Security, java: str) -> None:
    kt = [_keytool(java), "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC"]
    pw = sec.store_password
    store = ["-storetype", "PKCS12", "-storepass", pw]
    ca = sec.dir / "ca.p12"
    keypair = ["-genkeypair", "-keyalg", "EC", "-groupname", "secp256r1", "-validity", _VALID_DAYS]
    _run(
        [*kt, *keypair, "-alias", "ca", "-dname", "CN=kreplica sandbox CA", "-ext", "bc:c",
         "-keystore", str(ca), *store, "-keypass", pw],
        "keytool (sandbox CA)",
    )  # fmt: skip
    _run(
        [*kt, "-exportcert", "-rfc", "-alias", "ca", "-keystore", str(ca), *store,
         "-file", str(sec.ca_pem)],
        "keytool (CA as PEM)",
    )  # fmt: skip
    _run(
        [*kt, "-importcert", "-noprompt", "-alias", "ca", "-file", str(sec.ca_pem),
         "-keystore", str(sec.truststore), *store],
        "keytool (truststore)",
    )  # fmt: skip
    names = {"broker": sec.keystore}
    if not uses_sasl(sec.mode):
        names.update({user: sec.dir / f"{user}.p12" for user in USERS})
    for cn, keystore in names.items():
        csr, crt = sec.dir / f"{cn}.csr", sec.dir / f"{cn}.crt"
        _run(
            [*kt, *keypair, "-alias", cn, "-dname", f"CN={cn}", "-keystore", str(keystore),
             *store, "-keypass", pw],
            f"keytool (key of {cn})",
        )  # fmt: skip
        _run(
            [*kt, "-certreq", "-alias", cn, "-keystore", str(keystore), *store,
             "-file", str(csr)],
            f"keytool (certificate request of {cn})",
        )  # fmt: skip
        # IP:127.0.0.1 only: clients that connect to "localhost" see a hostname mismatch
        san = ["-ext", "SAN=IP:127.0.0.1"] if cn == "broker" else []
        _run(
            [*kt, "-gencert", "-rfc", "-alias", "ca", "-keystore", str(ca), *store,
             "-infile", str(csr), "-outfile", str(crt), "-validity", _VALID_DAYS, *san,
             "-ext", "EKU=serverAuth,clientAuth"],
            f"keytool (signing the certificate of {cn})",
        )  # fmt: skip
        _run(
            [*kt, "-importcert", "-noprompt", "-alias", "ca", "-file", str(sec.ca_pem),
             "-keystore", str(keystore), *store],
            f"keytool (CA into the keystore of {cn})",
        )  # fmt: skip
        _run(
            [*kt, "-importcert", "-noprompt", "-alias", cn, "-file", str(crt),
             "-keystore", str(keystore), *store],
            f"keytool (certificate of {cn})",
        )  # fmt: skip
        if cn != "broker":
            _export_pem(sec, cn, keystore, crt)
        csr.unlink()


def _export_pem(sec: Security, user: str, keystore: Path, crt: Path) -> None:
    """A client's key as PEM (librdkafka and kafka-python take PEM; keytool cannot export a
    private key, so openssl does)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise SandboxError(
            "openssl is not on PATH: --security ssl needs it to write the client keys as PEM "
            "(install openssl, or use --security sasl_ssl)"
        )
    key = sec.dir / f"{user}.key.pem"
    _run(
        [openssl, "pkcs12", "-in", str(keystore), "-nocerts", "-nodes",
         "-passin", f"pass:{sec.store_password}", "-out", str(key)],
        f"openssl (key of {user} as PEM)",
    )  # fmt: skip
    os.chmod(key, 0o600)
    crt.replace(sec.dir / f"{user}.crt.pem")


# --------------------------------------------------------------------------- broker settings


def broker_properties(sec: Security, *, kraft: bool) -> dict[str, str]:
    """Broker (and controller) settings for the secured listener, named like its protocol."""
    if not sec.enabled:
        return {}
    name = protocol(sec.mode).lower()
    props: dict[str, str] = {}
    super_users = ["User:admin"]
    if kraft:
        props["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
        super_users.append("User:ANONYMOUS")  # the PLAINTEXT INTERNAL and CONTROLLER listeners
    else:
        props["authorizer.class.name"] = "kafka.security.authorizer.AclAuthorizer"
        props["security.inter.broker.protocol"] = protocol(sec.mode)
    if uses_sasl(sec.mode):
        props["sasl.enabled.mechanisms"] = MECHANISM
        props["sasl.mechanism.inter.broker.protocol"] = MECHANISM
        props[f"listener.name.{name}.{MECHANISM.lower()}.sasl.jaas.config"] = (
            f'{_SCRAM_MODULE} required username="admin" password="{sec.passwords["admin"]}";'
        )
    if uses_tls(sec.mode):
        props.update(
            {
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.location": str(sec.keystore),
                "ssl.keystore.password": sec.store_password,
                "ssl.key.password": sec.store_password,
                "ssl.truststore.type": "PKCS12",
                "ssl.truststore.location": str(sec.truststore),
                "ssl.truststore.password": sec.store_password,
            }
        )
        if not uses_sasl(sec.mode):
            props["ssl.client.auth"] = "required"
            props["ssl.principal.mapping.rules"] = "RULE:^CN=([^,]+).*$/$1/,DEFAULT"
            super_users.append("User:broker")  # ZooKeeper mode: brokers use their certificate
    props["super.users"] = ";".join(super_users)
    props["allow.everyone.if.no.acl.found"] = "false"
    return props


# --------------------------------------------------------------------------- SCRAM credentials


def scram_credential(password: str, *, salt: bytes | None = None) -> str:
    """Kafka's stored form of a SCRAM-SHA-512 credential (ScramCredentialUtils)."""
    salt = salt if salt is not None else secrets.token_bytes(32)
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, SCRAM_ITERATIONS)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha512).digest()
    stored_key = hashlib.sha512(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", hashlib.sha512).digest()

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    return (
        f"salt={b64(salt)},stored_key={b64(stored_key)},server_key={b64(server_key)},"
        f"iterations={SCRAM_ITERATIONS}"
    )


def write_zookeeper_users(sec: Security, zookeeper: str) -> None:
    """Write the users' SCRAM credentials into ZooKeeper, as `kafka-configs --zookeeper
    --alter --entity-type users --add-config SCRAM-SHA-512=[password=...]` does; the brokers
    read them when they start."""
    if not uses_sasl(sec.mode):
        return
    import logging

    from kazoo.client import KazooClient

    quiet = logging.getLogger("kreplica.sandbox.kazoo")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    zk = KazooClient(hosts=zookeeper, timeout=10, logger=quiet)
    try:
        zk.start(timeout=15)
        for user, password in sorted(sec.passwords.items()):
            data = {"version": 1, "config": {MECHANISM: scram_credential(password)}}
            zk.create_async(f"/config/users/{user}", json.dumps(data).encode(), makepath=True).get(
                timeout=10
            )
    except Exception as exc:  # kazoo's errors: one line, never the credential
        raise SandboxError(
            f"cannot write the SCRAM users into the sandbox's ZooKeeper at {zookeeper} "
            f"({type(exc).__name__})"
        ) from None
    finally:
        zk.stop()
        zk.close()


def storage_scram_arguments(sec: Security) -> list[str]:
    """`kafka-storage format` arguments that create the users' SCRAM credentials (KRaft)."""
    if not uses_sasl(sec.mode):
        return []
    return [
        f"--add-scram={MECHANISM}=[name={user},password={password}]"
        for user, password in sorted(sec.passwords.items())
    ]


# --------------------------------------------------------------------------- ACLs

READONLY_ACLS = (
    ("cluster", "kafka-cluster", "DESCRIBE"),
    ("cluster", "kafka-cluster", "DESCRIBE_CONFIGS"),
    ("topic", "*", "DESCRIBE"),
    ("topic", "*", "DESCRIBE_CONFIGS"),
)


def create_acls(bootstrap: str, sec: Security, admin_factory: Any) -> None:
    """Grant `readonly` its ACLs, as admin (a super user needs none)."""
    if not sec.enabled:
        return
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    bindings = [
        AclBinding(
            ResourceType.BROKER if kind == "cluster" else ResourceType.TOPIC,
            name,
            ResourcePatternType.LITERAL,
            "User:readonly",
            "*",
            getattr(AclOperation, operation),
            AclPermissionType.ALLOW,
        )
        for kind, name, operation in READONLY_ACLS
    ]
    admin = admin_factory(bootstrap, librdkafka_config(sec, "admin"))
    futures = admin.create_acls(bindings, request_timeout=30)
    for future in futures.values():
        future.result(timeout=40)


def readonly_ready(bootstrap: str, sec: Security, admin_factory: Any) -> bool:
    """True once the readonly user logs in and its cluster ACLs are in force."""
    if not sec.enabled:
        return True
    admin = admin_factory(bootstrap, librdkafka_config(sec, "readonly"))
    try:
        described = admin.describe_cluster(
            request_timeout=5, include_authorized_operations=True
        ).result(timeout=10)
    except Exception:
        return False
    ops = {op.name for op in (described.authorized_operations or [])}
    return {"DESCRIBE", "DESCRIBE_CONFIGS"} <= ops and "ALTER" not in ops
