"""The ZooKeeper source: a ZK-mode cluster's brokers and assignments, read through kazoo.

Reads `/cluster/id`, `/brokers/ids/*`, `/brokers/topics/*` with each partition's `state`,
`/config/topics/*`, `/config/brokers/<default>` (the dynamic cluster default of
min.insync.replicas) and `/admin/reassign_partitions`. All znode reads after the listings are
pipelined (kazoo `get_async`), so 10,000 partitions take one round trip's worth of waiting,
not 10,000. kazoo never leaves this module: errors become SourceError, results model objects.

Every wait is bounded by `timeout_s`, except a SASL login the server does not answer: kazoo
runs it in its connection thread under the session's read timeout (ZooKeeper's minimum session
is 6 s), so that failure takes up to about 10 s.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from kreplica.errors import SourceError, UnknownTopicError, UsageError
from kreplica.model import Broker, ClusterSnapshot, Topic
from kreplica.sources.assemble import (
    LiveSource,
    assemble_snapshot,
    select_topics,
    utc_timestamp,
)
from kreplica.sources.clientconfig import zookeeper_options
from kreplica.sources.znodes import (
    PartitionState,
    TopicAssignment,
    build_topic,
    parse_broker,
    parse_cluster_id,
    parse_partition_state,
    parse_reassign_partitions,
    parse_topic_assignment,
    parse_topic_config,
)

# kazoo logs every refused connection with a stack trace; keep it off stderr unless the
# application configures logging (a NullHandler stops the "last resort" stderr handler).
_LOG = logging.getLogger("kreplica.sources.kazoo")
_LOG.addHandler(logging.NullHandler())
_LOG.setLevel(logging.CRITICAL)

# Requests in flight at once: bounds memory, still one wait per batch, not per znode.
_BATCH = 5000

# From this many znodes on, a plain connection reads them through kreplica.sources.zkwire
# (one pipelined stream) instead of kazoo (a turn of its connection thread per znode).
_WIRE_FROM = 100

# Dynamic cluster-wide broker configs (`kafka-configs --entity-type brokers --entity-default`).
_CLUSTER_DEFAULT = "/config/brokers/<default>"


class ZooKeeperSource(LiveSource):
    """Reads a ZooKeeper-mode cluster. `connect` is HOST:PORT[,HOST:PORT...][/chroot]."""

    source_name = "zookeeper"
    columnar = True  # snapshot(columnar=True) reads into columns

    def __init__(
        self,
        connect: str,
        *,
        auth: list[tuple[str, str]] | None = None,
        client_config: dict[str, str] | None = None,
        timeout_s: float = 15.0,
        probe: bool = True,
    ) -> None:
        from kazoo.client import KazooClient
        from kazoo.exceptions import KazooException
        from kazoo.handlers.threading import KazooTimeoutError

        if not connect or not connect.strip():
            raise UsageError("`zookeeper` is empty; give HOST:PORT[/chroot]")
        self._connect = connect.strip()
        self._timeout_s = timeout_s
        options = zookeeper_options(client_config, auth)
        self._sasl = "sasl_options" in options
        # no TLS, SASL or digest login: bulk reads may take their own plain session
        self._plain = not (options.get("use_ssl") or self._sasl or options.get("auth_data"))
        if "sasl_options" in options:
            try:
                import puresasl  # noqa: F401
            except ImportError:
                raise UsageError(
                    "ZooKeeper SASL needs the pure-sasl package: pip install pure-sasl"
                ) from None
        try:
            client = KazooClient(
                hosts=self._connect,
                timeout=max(timeout_s, 6.0),  # session timeout; ZooKeeper clamps it anyway
                connection_retry={"max_tries": -1, "max_delay": 1.0},
                command_retry=None,
                logger=_LOG,
                **options,
            )
        except (ValueError, KazooException) as exc:
            raise UsageError(
                f"bad ZooKeeper connect string {connect!r} ({exc}); "
                "use HOST:PORT[,HOST:PORT][/chroot]"
            ) from None
        self._client: Any = client
        if probe:
            # refused fails at once, a Kafka port is named as such; only silence waits
            from kreplica.sources.probe import require_server

            try:
                require_server(
                    self._connect,
                    protocol="zookeeper",
                    default_port=2181,
                    timeout_s=timeout_s,
                    flag="`zookeeper`",
                    handshake="use_ssl" not in options,  # TLS first: a TCP connect only
                )
            except BaseException:
                self._stop()
                raise
        try:
            with warnings.catch_warnings():  # a missing chroot is reported below, clearly
                warnings.simplefilter("ignore", UserWarning)
                client.start(timeout=timeout_s)
        except KazooTimeoutError:
            self._stop()
            raise SourceError(
                f"cannot reach ZooKeeper at {self._connect} within {timeout_s:g}s; "
                "check `zookeeper` and that ZooKeeper is running"
            ) from None
        except KazooException as exc:  # auth failures, NoAuth on the chroot kazoo checks
            self._stop()
            raise self._error("the chroot", exc) from None
        except Exception as exc:  # a client failure must not leave its threads behind
            self._stop()
            raise SourceError(
                f"cannot connect to ZooKeeper at {self._connect}: {exc}; check `zookeeper`"
            ) from None
        try:
            if self._call(client.exists_async, "/brokers/ids") is None:
                raise SourceError(
                    f"no Kafka cluster at ZooKeeper {self._connect}: /brokers/ids does not exist; "
                    "check the chroot (e.g. HOST:PORT/kafka), as in the brokers' zookeeper.connect"
                )
        except BaseException:
            self._stop()
            raise

    # -- lifecycle ---------------------------------------------------------------------------

    def _stop(self) -> None:
        client, self._client = getattr(self, "_client", None), None
        if client is None:
            return
        try:
            client.stop()
            client.close()
        except Exception:  # closing a half-broken connection has nothing left to report
            pass

    @property
    def connect(self) -> str:
        return self._connect

    @property
    def timeout_s(self) -> float:
        return self._timeout_s

    def kazoo_client(self) -> Any:
        """The connected kazoo client (the executor writes /admin/reassign_partitions with it)."""
        if self._client is None:
            raise UsageError("this ZooKeeper source is closed")
        return self._client

    def close(self) -> None:
        self._stop()

    # -- reading -----------------------------------------------------------------------------

    def _error(self, path: str, exc: Exception) -> SourceError:
        from kazoo.exceptions import (
            AuthFailedError,
            ConnectionLoss,
            NoAuthError,
            SessionExpiredError,
        )
        from kazoo.handlers.threading import KazooTimeoutError

        if isinstance(exc, AuthFailedError):
            return SourceError(
                f"ZooKeeper at {self._connect} rejected the credentials (SASL failed); "
                "check the zookeeper.sasl.* settings and the server's JAAS configuration"
            )
        if isinstance(exc, NoAuthError):
            return SourceError(
                f"ZooKeeper at {self._connect} denied reading {path} (ACL); pass credentials "
                "that may read it (digest user:password, or zookeeper.sasl.* settings)"
            )
        if isinstance(exc, KazooTimeoutError) and self._sasl:
            return SourceError(
                f"ZooKeeper at {self._connect} did not complete the SASL login within "
                f"{self._timeout_s:g}s; check the zookeeper.sasl.* settings and that the server "
                "has SASL enabled"
            )
        if isinstance(exc, KazooTimeoutError):
            return SourceError(
                f"ZooKeeper at {self._connect} did not answer for {path} within "
                f"{self._timeout_s:g}s; check the server and retry"
            )
        if isinstance(exc, ConnectionLoss | SessionExpiredError):
            return SourceError(
                f"lost the connection to ZooKeeper at {self._connect} while reading {path}; retry"
            )
        return SourceError(f"ZooKeeper at {self._connect} failed reading {path}: {exc!r}")

    def _call(self, method: Any, path: str) -> Any:
        from kazoo.exceptions import KazooException
        from kazoo.handlers.threading import KazooTimeoutError

        if self._client is None:
            raise UsageError("this ZooKeeper source is closed")
        try:
            # async + a timeout: kazoo's synchronous calls wait without limit
            return method(path).get(timeout=self._timeout_s)
        except (KazooException, KazooTimeoutError) as exc:
            raise self._error(path, exc) from None

    def _read_many(self, paths: list[str]) -> dict[str, bytes | None]:
        """znode data for every path, pipelined; None for a znode that does not exist."""
        from kazoo.exceptions import KazooException, NoNodeError
        from kazoo.handlers.threading import KazooTimeoutError

        if self._client is None:
            raise UsageError("this ZooKeeper source is closed")
        if self._plain and len(paths) >= _WIRE_FROM:
            from kreplica.sources.zkwire import WireError, read_znodes

            try:
                return read_znodes(self._connect, paths, timeout_s=self._timeout_s)
            except WireError:
                pass  # kazoo reads them again, and names what fails
        out: dict[str, bytes | None] = {}
        for start in range(0, len(paths), _BATCH):
            batch = paths[start : start + _BATCH]
            pending = [(path, self._client.get_async(path)) for path in batch]
            for path, result in pending:
                try:
                    data, _stat = result.get(timeout=self._timeout_s)
                except NoNodeError:
                    out[path] = None
                except (KazooException, KazooTimeoutError) as exc:
                    raise self._error(path, exc) from None
                else:
                    out[path] = data
        return out

    def controller_znode(self) -> tuple[dict[str, Any], float] | None:
        """/controller's JSON and its creation time (epoch seconds: when the current
        controller was elected); None when no controller holds it."""
        from kazoo.exceptions import KazooException, NoNodeError
        from kazoo.handlers.threading import KazooTimeoutError

        if self._client is None:
            raise UsageError("this ZooKeeper source is closed")
        try:
            data, stat = self._client.get_async("/controller").get(timeout=self._timeout_s)
        except NoNodeError:
            return None
        except (KazooException, KazooTimeoutError) as exc:
            raise self._error("/controller", exc) from None
        try:
            parsed = json.loads(data or b"{}")
        except ValueError:
            parsed = {}
        return (parsed if isinstance(parsed, dict) else {}), stat.ctime / 1000.0

    def controller_epoch(self) -> int | None:
        """/controller_epoch: 1 while the cluster's first controller holds it (created as 0,
        each election adds 1); None when absent or unreadable as a number."""
        raw = self._read_many(["/controller_epoch"]).get("/controller_epoch")
        try:
            return int(raw or b"")
        except ValueError:
            return None

    def _list(self, path: str) -> list[str]:
        """Children of `path`; [] when it does not exist."""
        from kazoo.exceptions import KazooException, NoNodeError
        from kazoo.handlers.threading import KazooTimeoutError

        if self._client is None:
            raise UsageError("this ZooKeeper source is closed")
        try:
            return sorted(self._client.get_children_async(path).get(timeout=self._timeout_s))
        except NoNodeError:
            return []
        except (KazooException, KazooTimeoutError) as exc:
            raise self._error(path, exc) from None

    def _cluster_default(self) -> dict[str, str] | None:
        """The dynamic cluster-wide broker configs; None when an ACL denies reading them (Kafka
        with zookeeper.set.acl=true keeps /config/brokers from other principals)."""
        from kazoo.exceptions import NoAuthError, NoNodeError

        if self._client is None:
            raise UsageError("this ZooKeeper source is closed")
        try:
            data, _stat = self._client.get_async(_CLUSTER_DEFAULT).get(timeout=self._timeout_s)
        except NoNodeError:
            return {}
        except NoAuthError:
            return None
        except Exception as exc:
            raise self._error(_CLUSTER_DEFAULT, exc) from None
        return parse_topic_config(data, _CLUSTER_DEFAULT)

    def snapshot(
        self, topics: Iterable[str] | None = None, *, columnar: bool = False
    ) -> ClusterSnapshot:
        """Brokers and topics (all when None). `columnar`: the partitions in columns
        (kreplica/columns.py, for the array planner), the objects built only if read; a
        cluster with reassignments in flight, or a partition without its state, is read into
        objects."""
        captured_at = utc_timestamp(datetime.now(UTC))
        wanted = None if topics is None else list(topics)
        broker_ids = self._list("/brokers/ids")
        deleting = set(self._list("/admin/delete_topics"))
        names = select_topics(
            (t for t in self._list("/brokers/topics") if wanted is not None or t not in deleting),
            wanted,
        )

        first = ["/cluster/id", "/admin/reassign_partitions"]
        first += [f"/brokers/ids/{b}" for b in broker_ids]
        first += [f"/brokers/topics/{t}" for t in names]
        first += [f"/config/topics/{t}" for t in names]
        data = self._read_many(first)

        brokers = []
        for raw_id in broker_ids:
            path = f"/brokers/ids/{raw_id}"
            if not raw_id.isdigit() or data[path] is None:
                continue  # deregistered between listing and reading: it is not alive
            brokers.append(parse_broker(int(raw_id), data[path], path))

        assignments = {}
        for name in names:
            path = f"/brokers/topics/{name}"
            if data[path] is None:
                if wanted is not None:
                    raise UnknownTopicError(
                        f"topic {name!r} was deleted while it was being read; check the name"
                    )
                continue
            assignments[name] = parse_topic_assignment(data[path], path)

        state_paths = [
            f"/brokers/topics/{name}/partitions/{p}/state"
            for name, assignment in assignments.items()
            for p in assignment.replicas
        ]
        states_raw = self._read_many(state_paths)

        pending_data = data["/admin/reassign_partitions"]
        pending = (
            parse_reassign_partitions(pending_data, "/admin/reassign_partitions")
            if pending_data is not None
            else {}
        )

        cluster_default = self._cluster_default()
        states_of: dict[str, dict[int, PartitionState | None]] = {}
        for name, assignment in assignments.items():
            states: dict[int, PartitionState | None] = {}
            for p in assignment.replicas:
                path = f"/brokers/topics/{name}/partitions/{p}/state"
                raw = states_raw[path]
                states[p] = None if raw is None else _partition_state(raw, path)
            states_of[name] = states

        def topic(name: str, *, shell: bool = False) -> Topic:
            assignment = assignments[name]
            if shell:
                assignment = TopicAssignment({}, {}, {})
            return build_topic(
                name,
                assignment,
                states_of[name],
                parse_topic_config(data[f"/config/topics/{name}"], f"/config/topics/{name}"),
                pending,
                cluster_default or {},
                cluster_default_readable=cluster_default is not None,
            )

        cluster_id = parse_cluster_id(data["/cluster/id"])
        moving = pending or any(a.adding or a.removing for a in assignments.values())
        if columnar and not moving:
            snap = _columnar(brokers, assignments, states_of, topic, cluster_id, captured_at)
            if snap is not None:
                return snap
        return assemble_snapshot(
            brokers=brokers,
            topics=[topic(name) for name in assignments],
            cluster_id=cluster_id,
            source=self.source_name,
            captured_at=captured_at,
        )


def _partition_state(data: bytes, path: str) -> PartitionState:
    """parse_partition_state, read by orjson (a big cluster's 20,000 state znodes in a tenth
    of json's time); anything but the plain form Kafka writes goes to parse_partition_state,
    which reads it (json) or names the problem."""
    import orjson

    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return parse_partition_state(data, path)
    if type(obj) is dict:
        leader, isr = obj.get("leader"), obj.get("isr")
        if type(leader) is int and type(isr) is list:
            for broker in isr:
                if type(broker) is not int:
                    break
            else:
                return PartitionState(leader=leader, isr=tuple(isr))
    return parse_partition_state(data, path)


def _columnar(
    brokers: list[Broker],
    assignments: dict[str, TopicAssignment],
    states_of: dict[str, dict[int, PartitionState | None]],
    topic: Callable[..., Topic],
    cluster_id: str | None,
    captured_at: str,
) -> ClusterSnapshot | None:
    """The snapshot in columns (None: a partition without its state znode, or anything else
    unusual; the caller reads objects). Built once, each topic is what build_topic gives."""
    import numpy as np

    from kreplica.columns import PAD, ColumnarSnapshot, live_columns

    order = sorted(assignments)
    counts: list[int] = []
    pids: list[int] = []
    replicas: list[tuple[int, ...]] = []
    leaders: list[int] = []
    isrs: list[tuple[int, ...]] = []
    for name in order:
        states = states_of[name]
        parts = assignments[name].replicas
        counts.append(len(parts))
        for number, reps in parts.items():  # sorted by partition id
            state = states.get(number)
            if state is None:
                return None
            pids.append(number)
            replicas.append(reps)
            leaders.append(state.leader)
            isrs.append(state.isr)
    shells = [topic(name, shell=True) for name in order]
    columns = live_columns(shells, counts, pids, replicas, leaders, isrs)
    if columns is None:
        return None
    by_id = {b.id: b for b in brokers}
    held = np.unique(columns.replicas[columns.replicas != PAD]).tolist()
    for b in held:
        by_id.setdefault(b, Broker(id=b, alive=False))
    return ColumnarSnapshot(
        tuple(by_id[k] for k in sorted(by_id)),
        cluster_id=cluster_id,
        source=ZooKeeperSource.source_name,
        captured_at=captured_at,
        columns=columns,
        maker=lambda i: topic(order[i]),
    )
