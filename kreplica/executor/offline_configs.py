"""A down broker's dynamic configs (the throttle rates), written where Kafka allows it.

The Admin API sends a broker's configs to that broker, so while it is down they can neither be
read nor changed that way; a throttle rate left on it comes back when it restarts and slows its
catch-up (compare KAFKA-13392). Two other ways in:

* ZooKeeper mode: `/config/brokers/<id>` holds `{"version":1,"config":{...}}`; a sequential
  `/config/changes/config_change_` znode `{"version":2,"entity_path":"brokers/<id>"}` tells the
  live brokers, and the broker reads the znode when it starts (as Kafka's ConfigCommand did).
* KRaft: the active controller handles IncrementalAlterConfigs for any broker id (a broker
  refuses another broker's id: "Unexpected broker id"). Its address is the brokers'
  `controller.quorum.voters` or `controller.quorum.bootstrap.servers`; only a PLAINTEXT
  controller listener is used here (kreplica speaks its client protocol to brokers only).

Reading a down broker's configs is possible in ZooKeeper mode only (the controller refuses to
describe another broker's configs).
"""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Mapping
from typing import Any

from kreplica.errors import SourceError

_DISCOVERY_KEYS = (
    "zookeeper.connect",
    "controller.quorum.voters",
    "controller.quorum.bootstrap.servers",
    "controller.listener.names",
    "listener.security.protocol.map",
)
NOT_CONTROLLER = 41


def controller_addresses(settings: Mapping[str, str]) -> list[tuple[str, int]] | None:
    """(host, port) of each KRaft controller from a broker's static configs; None when the
    controller listener is not PLAINTEXT (or the cluster has no controllers: ZooKeeper mode)."""
    listed = settings.get("controller.quorum.bootstrap.servers") or ""
    voters = settings.get("controller.quorum.voters") or ""
    entries = [e.strip() for e in (listed or voters).split(",") if e.strip()]
    if not entries:
        return None
    listener = (settings.get("controller.listener.names") or "CONTROLLER").split(",")[0].strip()
    protocols = dict(
        item.split(":", 1)
        for item in (settings.get("listener.security.protocol.map") or "").split(",")
        if ":" in item
    )
    if protocols.get(listener, listener).upper() != "PLAINTEXT":
        return None
    out = []
    for entry in entries:
        address = entry.split("@", 1)[-1]  # voters are ID@HOST:PORT
        host, _, port = address.rpartition(":")
        if host and port.isdigit():
            out.append((host.strip("[]"), int(port)))
    return out or None


def _rpc(host: str, port: int, request: Any, response_cls: Any, timeout_s: float) -> Any:
    """One request on a fresh connection (framed, header v1/v2 as the request's version)."""
    request.with_header(correlation_id=1, client_id="kreplica")
    with socket.create_connection((host, port), timeout=timeout_s) as conn:
        conn.sendall(request.encode(version=1, header=True, framed=True))
        head = conn.recv(4, socket.MSG_WAITALL)
        if len(head) < 4:
            raise OSError("connection closed")
        size = struct.unpack(">i", head)[0]
        body = b""
        while len(body) < size:
            chunk = conn.recv(size - len(body))
            if not chunk:
                raise OSError("connection closed")
            body += chunk
    return response_cls.decode(body, version=1, header=True)


class OfflineBrokerConfigs:
    """Writes (and in ZooKeeper mode reads) the dynamic configs of brokers that are down."""

    def __init__(self, cluster: Any, zookeeper: Any = None) -> None:
        self._cluster = cluster  # KafkaCluster
        self._zookeeper = zookeeper  # ZooKeeperSource, when the source is ZooKeeper
        self._opened_zk: Any = None
        self._settings: dict[str, str] | None = None

    def close(self) -> None:
        if self._opened_zk is not None:
            self._opened_zk.close()
            self._opened_zk = None

    def _static(self) -> dict[str, str]:
        """The discovery configs of one live broker (read once)."""
        if self._settings is None:
            self._settings = self._cluster.static_configs(_DISCOVERY_KEYS)
        return self._settings

    def _zk(self) -> Any:
        if self._zookeeper is not None:
            return self._zookeeper
        if self._opened_zk is None:
            connect = self._static().get("zookeeper.connect")
            if not connect:
                return None
            from kreplica.sources.zookeeper import ZooKeeperSource

            try:
                self._opened_zk = ZooKeeperSource(connect, timeout_s=self._cluster.timeout_s)
            except Exception as exc:  # secured or unreachable from here: say why, later
                raise SourceError(f"ZooKeeper at {connect} (zookeeper.connect): {exc}") from None
        return self._opened_zk

    def read(self, broker: int) -> dict[str, str] | None:
        """The broker's dynamic configs from ZooKeeper; None where they cannot be read."""
        try:
            zk = self._zk()
        except SourceError:
            return None
        if zk is None:
            return None
        return self._zk_config(zk, broker)

    def known_brokers(self) -> list[int]:
        """Brokers with dynamic configs in ZooKeeper (down ones included); [] elsewhere."""
        try:
            zk = self._zk()
        except SourceError:
            return []
        if zk is None:
            return []
        from kazoo.exceptions import NoNodeError

        try:
            children = (
                zk.kazoo_client().get_children_async("/config/brokers").get(timeout=zk.timeout_s)
            )
        except NoNodeError:
            return []
        return sorted(int(c) for c in children if c.isdigit())

    @staticmethod
    def _zk_config(zk: Any, broker: int) -> dict[str, str]:
        from kazoo.exceptions import NoNodeError

        client = zk.kazoo_client()
        try:
            data, _ = client.get_async(f"/config/brokers/{broker}").get(timeout=zk.timeout_s)
        except NoNodeError:
            return {}
        parsed = json.loads(data.decode("utf-8")) if data else {}
        config = parsed.get("config") if isinstance(parsed, dict) else None
        return {str(k): str(v) for k, v in (config or {}).items()}

    def write(self, broker: int, values: Mapping[str, str | None]) -> str:
        """Apply SETs (and DELETEs: None) to the broker's dynamic configs; returns the way it
        went ("ZooKeeper /config/brokers/4" or "the KRaft controller at HOST:PORT").
        SourceError when neither way is open, naming why."""
        zk = self._zk()
        if zk is not None:
            return self._zk_write(zk, broker, values)
        controllers = controller_addresses(self._static())
        if controllers is None:
            raise SourceError(
                f"broker {broker} is down and its configs cannot be written elsewhere (no "
                "ZooKeeper given, no PLAINTEXT KRaft controller listener)"
            )
        return self._controller_write(controllers, broker, values)

    def _zk_write(self, zk: Any, broker: int, values: Mapping[str, str | None]) -> str:
        from kazoo.exceptions import KazooException, NodeExistsError
        from kazoo.handlers.threading import KazooTimeoutError

        path = f"/config/brokers/{broker}"
        client = zk.kazoo_client()
        try:
            config = self._zk_config(zk, broker)
            for key, value in values.items():
                if value is None:
                    config.pop(key, None)
                else:
                    config[key] = value
            payload = json.dumps({"version": 1, "config": config}).encode()
            if client.exists_async(path).get(timeout=zk.timeout_s) is None:
                try:
                    client.create_async(path, payload, makepath=True).get(timeout=zk.timeout_s)
                except NodeExistsError:
                    client.set_async(path, payload).get(timeout=zk.timeout_s)
            else:
                client.set_async(path, payload).get(timeout=zk.timeout_s)
            notice = json.dumps({"version": 2, "entity_path": f"brokers/{broker}"}).encode()
            client.create_async(
                "/config/changes/config_change_", notice, sequence=True, makepath=True
            ).get(timeout=zk.timeout_s)
        except (KazooException, KazooTimeoutError) as exc:
            raise SourceError(f"ZooKeeper refused {path}: {exc!r}") from None
        return f"ZooKeeper {path}"

    def _controller_write(
        self, controllers: list[tuple[str, int]], broker: int, values: Mapping[str, str | None]
    ) -> str:
        from kafka.protocol.admin import (
            IncrementalAlterConfigsRequest,
            IncrementalAlterConfigsResponse,
        )

        entries = [(k, 0 if v is not None else 1, v) for k, v in sorted(values.items())]
        last = "no controller answered"
        for host, port in controllers:  # the active one answers; the others say NOT_CONTROLLER
            request = IncrementalAlterConfigsRequest(
                resources=[(4, str(broker), entries)], validate_only=False
            )
            try:
                answer = _rpc(
                    host, port, request, IncrementalAlterConfigsResponse, self._cluster.timeout_s
                )
            except (OSError, ValueError) as exc:
                last = f"{host}:{port}: {exc}"
                continue
            (result,) = answer.responses
            if result.error_code == 0:
                return f"the KRaft controller at {host}:{port}"
            last = f"{host}:{port}: {result.error_message or result.error_code}"
            if result.error_code != NOT_CONTROLLER:
                break
        raise SourceError(f"the KRaft controller did not take broker {broker}'s configs ({last})")
