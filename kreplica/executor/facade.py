"""The executor's face: what a caller (the CLI, a script) does with a plan file on a cluster.

    plan = load_plan_to_apply(Path("plan.json"))  # read and parsed once, here
    with connect(bootstrap_server="kafka:9092") as connection:
        result = apply(connection, plan, ApplyOptions(throttle=50_000_000))
        differences = verify(connection, plan)

apply, resume, verify, status, cancel and the election after an apply take the plan loaded
(load_plan, load_plan_to_apply) and open its journal (PLAN.journal.jsonl beside it, named by
planfile.plan_siblings) themselves, so a caller needs nothing from the modules behind it
(Applier, Journal, the Kafka and ZooKeeper backends).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kreplica.errors import SourceError, UsageError
from kreplica.executor.events import Elect, Emit
from kreplica.executor.options import ApplyOptions, Via

if TYPE_CHECKING:  # the backends load only when used
    from kreplica.executor.apply_base import ApplyResult
    from kreplica.executor.kafka_cluster import KafkaCluster
    from kreplica.executor.planfile import PlanFile
    from kreplica.executor.status import PartitionStatus, StatusSummary
    from kreplica.executor.verify import Difference
    from kreplica.model import ClusterSnapshot

Key = tuple[str, int]


@dataclass
class Connection:
    """A writable connection: `cluster` (kreplica.executor.kafka_cluster.KafkaCluster) and,
    when the cluster was reached through ZooKeeper, that source (`zookeeper`). `source`: how
    the cluster was reached, without secrets ({"bootstrap_server", "zookeeper",
    "command_config"} or {"cluster": NAME}); an apply journals it, so a resume knows where to
    reconnect (journal_source)."""

    cluster: KafkaCluster
    zookeeper: Any = None
    source: dict[str, str] | None = None


@contextmanager
def connect(
    *,
    bootstrap_server: str | None = None,
    zookeeper: str | None = None,
    client_config: Mapping[str, str] | None = None,
    zk_auth: Sequence[tuple[str, str]] | None = None,
    timeout_s: float = 15.0,
) -> Iterator[Connection]:
    """A writable connection to a cluster. Through ZooKeeper alone, the brokers are reached at
    the addresses they registered (with the same client config); ZooKeeper stays open for what
    only it can do (a down broker's throttles, /admin/reassign_partitions, the controller)."""
    from kreplica.executor.kafka_cluster import KafkaCluster
    from kreplica.executor.offline_configs import OfflineBrokerConfigs
    from kreplica.sources import open_source
    from kreplica.sources.admin import AdminSource

    zk = None
    bootstrap = bootstrap_server
    try:
        if zookeeper:
            zk = open_source(
                zookeeper=zookeeper,
                client_config=dict(client_config) if client_config else None,
                zk_auth=list(zk_auth) if zk_auth else None,
                timeout_s=timeout_s,
            )
        if zk is not None and not bootstrap:
            brokers = [b for b in zk.snapshot([]).brokers if b.alive and b.host and b.port]
            if not brokers:
                raise UsageError(
                    f"ZooKeeper at {zookeeper} lists no live broker with an address; "
                    "give `bootstrap_server`"
                )
            bootstrap = ",".join(f"{b.host}:{b.port}" for b in brokers)
        if not bootstrap:
            raise UsageError("no cluster to connect to: give `bootstrap_server` or `zookeeper`")
        admin = AdminSource(
            bootstrap,
            client_config=dict(client_config) if client_config else None,
            timeout_s=timeout_s,
        )
        cluster = KafkaCluster(admin)
        cluster.offline = OfflineBrokerConfigs(cluster, zk)  # a down broker's throttles
        cluster.zookeeper = zk  # /controller: migration and the controller's age
        given = {"bootstrap_server": bootstrap_server, "zookeeper": zookeeper}
        connection = Connection(cluster, zk, {k: v for k, v in given.items() if v})
        try:
            yield connection
        finally:
            connection.cluster.close()
    finally:
        if zk is not None:
            zk.close()


# --- plan files ----------------------------------------------------------------------------------


def load_plan(plan_path: Path) -> PlanFile:
    """The plan at `plan_path` (Kafka's reassignment JSON, with PLAN.kreplica.json beside it
    when there is one) as kreplica.executor.planfile.PlanFile."""
    from kreplica.executor.planfile import load_plan_file

    return load_plan_file(plan_path)


def plan_document_of(plan_path: Path, data: Any) -> dict[str, Any] | None:
    """The plan document that goes with the plan file at `plan_path` (contents `data`): the
    file itself, or PLAN.kreplica.json beside it; None for bare Kafka JSON."""
    from kreplica.executor.planfile import plan_document_of as document_of

    return document_of(plan_path, data)


def load_plan_to_apply(plan_path: Path) -> PlanFile:
    """The plan, refused (with nothing touched) when it moves nothing."""
    from kreplica.executor.apply import require_moves

    plan = load_plan(plan_path)
    require_moves(plan)
    return plan


def journal_path(plan_path: Path) -> Path:
    """PLAN.journal.jsonl: the record of the plan's applies, for --resume, status and cancel."""
    from kreplica.executor.planfile import journal_path as path_of

    return path_of(plan_path)


def journal_source(plan_path: Path) -> dict[str, str] | None:
    """How the plan's last apply reached its cluster, as its journal recorded it (None: no
    journal, or one written before kreplica recorded it)."""
    from kreplica.executor.journal import Journal

    return Journal(journal_path(plan_path)).state().source


def journal_via(plan_path: Path) -> str | None:
    """The way the plan's last apply submitted ("kafka" or "zookeeper"), as its journal
    recorded it (None: no journal)."""
    from kreplica.executor.journal import Journal

    return Journal(journal_path(plan_path)).state().via


def journal_cancelled_on(plan_path: Path) -> str | None:
    """When the plan's last apply was cancelled (the journal's `ts`), else None."""
    from kreplica.executor.journal import Journal

    state = Journal(journal_path(plan_path)).state()
    return (state.cancelled_at or "?") if state.cancelled else None


def journal_finished(path: Path) -> bool:
    """The journal's apply finished or was cancelled (its plan may be overwritten)."""
    from kreplica.executor.journal import Journal

    state = Journal(path).state()
    return bool(state.finished or state.cancelled)


# --- apply, resume ---------------------------------------------------------------------------


def _submitter(connection: Connection, via: Via) -> Any:
    from kreplica.executor.kafka_cluster import KafkaSubmitter, ZooKeeperSubmitter

    if via == "zookeeper":
        if connection.zookeeper is None:
            raise UsageError("`via` zookeeper writes /admin/reassign_partitions: give `zookeeper`")
        return ZooKeeperSubmitter(connection.zookeeper)
    return KafkaSubmitter(connection.cluster)


def apply(
    connection: Connection,
    plan: PlanFile,
    options: ApplyOptions | None = None,
    *,
    progress: Emit | None = None,
    via: Via = "kafka",
) -> ApplyResult:
    """Apply `plan` (load_plan_to_apply: throttles, waves, waiting, restoring the
    throttles), journalled beside its file; returns kreplica.executor.apply.ApplyResult.
    `options`: kreplica.executor.options.ApplyOptions (default: no throttle, one wave of
    everything); `progress`: called with each of the journal's events as it happens
    (kreplica.render.progress.ProgressPrinter is one); `via`: "kafka" (KIP-455) or
    "zookeeper" (/admin/reassign_partitions).

    With `options.elect_leaders`, or when the journal says an earlier run of this plan asked
    for it (a resumed drain), a preferred leader election for the plan's partitions follows
    the moves (`result.election`, journalled as "elect")."""
    from kreplica.executor.apply import Applier
    from kreplica.executor.journal import Journal

    options = options if options is not None else ApplyOptions()
    journal = Journal(plan.paths["journal"])
    emit = progress if progress is not None else (lambda event: None)
    applier = Applier(
        connection.cluster,
        _submitter(connection, via),
        plan,
        journal,
        options,
        emit,
        source=connection.source,
    )
    result = applier.run()
    if options.elect_leaders or journal.state().elect_leaders:
        from kreplica.executor.apply_base import Election

        with journal.lock():  # no cancel or other apply of this plan meanwhile
            elected, failed = elect_after_apply(connection, plan)
            event: Elect = {"event": "elect", "elected": sorted(elected), "failed": failed}
            journal.append(event)
        emit(event)
        result.election = Election(sorted(elected), failed)
    return result


def resume(
    connection: Connection, plan: PlanFile, options: ApplyOptions | None = None, **kwargs: Any
) -> ApplyResult:
    """Continue an interrupted apply of the plan from its journal (apply with resume=True)."""
    options = dataclasses.replace(options or ApplyOptions(), resume=True)
    return apply(connection, plan, options, **kwargs)


# --- verify, cancel --------------------------------------------------------------------------


def verify(connection: Connection, plan: PlanFile) -> list[Difference]:
    """The plan's partitions that are not as planned (kreplica.executor.apply.Difference);
    empty when everything is in place and nothing of it is moving."""
    from kreplica.executor.verify import verify_plan

    return verify_plan(connection.cluster, plan)


@dataclass
class CancelOutcome:
    """What `cancel` did and what stays: `cancelled`, the moves stopped (back to their old
    replicas); `running`, whether an apply of the plan was asked to stop; `finished`, the
    partitions the plan had moved already (they stay; PLAN.rollback.json returns them) and
    `finished_rf`, their replication factor when they share one and the plan changed it;
    `created`, new partitions the plan made (Kafka cannot remove them); `rolled_back`, the
    rollback's apply when `roll_back_finished` asked for one."""

    cancelled: list[Key]
    running: bool
    finished: list[Key]
    finished_rf: int | None
    created: list[Key]
    rollback: Path
    rolled_back: ApplyResult | None = None


def cancel(
    connection: Connection,
    plan: PlanFile,
    *,
    emit: Emit = lambda event: None,
    force: bool = False,
    roll_back_finished: ApplyOptions | None = None,
) -> CancelOutcome:
    """Cancel the plan's reassignments in flight (they return to their old replicas) and
    restore its throttles. `roll_back_finished` (a plan that changes RF or partition counts
    only): then apply PLAN.rollback.json with these options (without a throttle, at the
    highest rate the plan's apply set), so the partitions that had finished return too and no
    topic is left at two RFs; refused before anything is cancelled when the plan or its
    rollback does not allow it."""
    from kreplica.executor.cancel import cancel_plan
    from kreplica.executor.journal import Journal

    rollback = plan.paths["rollback"]
    if roll_back_finished is not None:
        _require_rollback(plan, rollback)
    journal = Journal(plan.paths["journal"])
    cancelled, running = cancel_plan(connection.cluster, plan, journal, emit, force=force)
    if roll_back_finished is not None:
        _wait_cancelled(connection, plan, journal, running)
    snap = connection.cluster.snapshot(plan.topics)
    # still moving (a running apply's last submissions, cancelled by it): not finished
    finished = plan.finished_moves(snap, {*cancelled, *connection.cluster.in_flight()})
    sizes = {len(plan.targets[k]) for k in finished}
    resized = any(len(plan.before.get(k, ())) != len(plan.targets[k]) for k in finished)
    existing = {(t.name, p.partition) for t in snap.topics for p in t.partitions}
    outcome = CancelOutcome(
        list(cancelled),
        bool(running),
        finished,
        sizes.pop() if len(sizes) == 1 and resized else None,
        sorted(k for k in plan.new_partitions if k in existing),
        rollback,
    )
    if roll_back_finished is not None and finished:
        options = roll_back_finished
        if options.throttle is None:  # the rollback copies no faster than the plan did
            from kreplica.executor.throttle_records import journal_rate

            options = dataclasses.replace(options, throttle=journal_rate(journal.read()))
        outcome.rolled_back = apply(
            connection, load_plan_to_apply(rollback), options, progress=emit
        )
    return outcome


def _require_rollback(plan: PlanFile, rollback: Path) -> None:
    """`roll_back_finished` is for a change of topic shape (RF, partition count), whose
    rollback returns replicas where they were; a drain's or rebalance's rollback would move
    data back onto brokers being emptied, so it is left to an apply the operator reviews."""
    if not plan.resized_topics:
        raise UsageError(
            f"`roll_back_finished`: {plan.path} changes no replication factor or partition "
            f"count; cancel without it, then review and apply {rollback} if it should go back"
        )
    if not rollback.exists():
        raise UsageError(
            f"`roll_back_finished`: {rollback} is missing; cancel without it, then make a plan "
            "that returns the partitions you want back"
        )


def _wait_cancelled(
    connection: Connection,
    plan: PlanFile,
    journal: Any,
    running: bool,
    *,
    timeout_s: float = 60.0,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Until the apply asked to stop has let go of the journal and none of the plan's
    partitions is in flight: the rollback then starts from where the cancel left them."""
    from kreplica.errors import ReassignmentInProgress

    deadline = time.monotonic() + timeout_s
    while running:
        try:
            with journal.lock():
                running = False
        except ReassignmentInProgress:
            if time.monotonic() > deadline:
                raise
            sleep(0.5)
    while set(plan.targets) & set(connection.cluster.in_flight()):
        if time.monotonic() > deadline:
            raise ReassignmentInProgress(
                f"the cancelled moves of {plan.path} are still listed in flight after "
                f"{timeout_s:.0f} s; run kreplica verify, then apply its rollback"
            )
        sleep(0.5)


def status(
    connection: Connection, plan: PlanFile, *, interval_s: float = 5.0
) -> tuple[list[PartitionStatus], StatusSummary]:
    """Where each partition of the plan stands (kreplica.executor.status: rows and a
    summary), from the cluster and the plan's journal; `interval_s` apart, a second read rates
    the moves no journal dates. Read-only: safe beside a running apply."""
    from kreplica.executor.status import plan_status
    from kreplica.executor.status_facts import gather

    facts, throttles, _snap = gather(connection.cluster, plan, interval_s, plan.paths["journal"])
    rows, summary = plan_status(facts, throttles)
    return list(rows), summary


def snapshot(connection: Connection, topics: Sequence[str] | None = None) -> ClusterSnapshot:
    """The cluster as it is now (all topics, or these), without sizes' second read."""
    snap: ClusterSnapshot = connection.cluster.snapshot(
        list(topics) if topics is not None else None
    )
    return snap


def known_brokers(connection: Connection, snap: ClusterSnapshot) -> set[int]:
    """The brokers the snapshot lists and those only ZooKeeper or the controller knows (down
    ones whose registration is gone)."""
    return {b.id for b in snap.brokers} | set(connection.cluster.offline.known_brokers())


# --- leaders -----------------------------------------------------------------------------------


def off_preferred(snapshot: ClusterSnapshot, keys: Iterable[Key]) -> list[Key]:
    """The partitions among `keys` led by a replica other than their first (preferred) one."""
    parts = {(t.name, p.partition): p for t in snapshot.topics for p in t.partitions}
    return [
        k for k in dict.fromkeys(keys) if k in parts and parts[k].leader != parts[k].replicas[0]
    ]


def elect(connection: Connection, keys: Sequence[Key]) -> dict[Key, str | None]:
    """Preferred leader election for `keys` (asked for the right to elect first, even when
    `keys` is empty); partition -> None when elected, else why not."""
    from kreplica.executor.authz import CLUSTER, Need

    connection.cluster.require([Need("cluster", CLUSTER, "ALTER", "elect leaders")])
    return dict(connection.cluster.elect_preferred(list(keys)))


def elect_after_apply(
    connection: Connection,
    plan: PlanFile,
    *,
    retry_s: float = 30.0,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[list[str], dict[str, str]]:
    """After an applied plan: preferred leader election for its partitions led off their
    first replica (a drained leader's replacement, a reordered partition). A replica that just
    joined may need a moment to be in sync: what failed, or got no answer, is retried for up to
    `retry_s`.
    Returns (the partitions elected, partition -> why not) as "topic-partition" names."""
    keys = sorted({*plan.targets, *plan.new_partitions})
    failed: dict[str, str] = {}
    elected: list[str] = []
    deadline = time.monotonic() + retry_s
    while True:
        snap = connection.cluster.snapshot(sorted({t for t, _ in keys}))
        parts = {(t.name, p.partition): p for t in snap.topics for p in t.partitions}
        off = [
            k
            for k in keys
            if k in parts and parts[k].replicas and parts[k].leader != parts[k].replicas[0]
        ]
        try:
            results = connection.cluster.elect_preferred(off)
        except SourceError:
            # no answer in time (a controller busy finishing the moves, or just elected): the
            # election is idempotent, so ask again while the retry time lasts
            if time.monotonic() > deadline:
                raise
            sleep(1)
            continue
        elected += [f"{t}-{p}" for (t, p), err in results.items() if not err]
        failed = {f"{t}-{p}": err for (t, p), err in results.items() if err}
        if not failed or time.monotonic() > deadline:
            break
        keys = [k for k in keys if f"{k[0]}-{k[1]}" in failed]
        sleep(1)
    return elected, failed


# --- throttles -----------------------------------------------------------------------------


def clear_pending_throttles(
    connection: Connection, journal_paths: Iterable[Path], emit: Emit
) -> int:
    """Throttles earlier runs left pending (their broker was down) whose broker is back:
    restored now. Returns the configs changed."""
    from kreplica.executor.journal import Journal
    from kreplica.executor.throttle_records import clear_pending_throttles as clear

    return clear(connection.cluster, [Journal(p) for p in journal_paths], emit)


def list_throttles(
    connection: Connection, topics: Sequence[str], brokers: Iterable[int]
) -> tuple[list[dict[str, str]], list[int]]:
    """Every replication throttle set on these topics and brokers as {kind, name, config,
    value} rows, and the brokers that could not be read (down)."""
    from kreplica.executor.throttle_records import list_throttles as listed

    return listed(connection.cluster, topics, brokers)


def journal_throttled_brokers(path: Path) -> set[int]:
    """The brokers a journal says kreplica throttled (some may be down now)."""
    from kreplica.executor.journal import Journal

    return {int(n) for k, n in Journal(path).state().throttles_set if k == "broker"}


def journal_throttles(path: Path) -> list[tuple[str, str]]:
    """(kind, name) of the throttles a journal says kreplica set and has not restored."""
    from kreplica.executor.journal import Journal
    from kreplica.executor.throttle_records import journal_throttles

    return list(journal_throttles(Journal(path).read())[1])


def require_clear(connection: Connection, resources: Sequence[tuple[str, str]]) -> None:
    """Refused, before any config changes, unless these throttles may be cleared."""
    from kreplica.executor.authz import throttle_needs

    connection.cluster.require(throttle_needs(list(resources), "clear throttles"))


def remove_throttle(connection: Connection, kind: str, name: str, config: str) -> None:
    """One throttle config removed (back to Kafka's default)."""
    connection.cluster.alter_configs(kind, name, {config: None})


def remove_broker_throttles(connection: Connection, broker: int) -> str | None:
    """Every throttle config of a broker removed (a down one through ZooKeeper or the
    controller); returns the way the write went."""
    from kreplica.executor.throttles import BROKER_KEYS

    connection.cluster.alter_configs("broker", str(broker), dict.fromkeys(BROKER_KEYS))
    return connection.cluster.last_path


def restore_journal_throttles(connection: Connection, path: Path, cluster_id: str | None) -> int:
    """What the journal at `path` set and has not restored, put back (under its lock), when it
    belongs to this cluster; returns the configs changed."""
    from kreplica.executor.journal import Journal
    from kreplica.executor.throttle_records import restore_journal_throttles as restore

    journal = Journal(path)
    state = journal.state()
    if not state.has_throttles or state.cluster_id not in (None, cluster_id):
        return 0
    with journal.lock():
        return restore(connection.cluster, journal, lambda event: None)


def plan_paths(plan_path: Path) -> dict[str, Path]:
    """PLAN.json and the files that go with it: reassignment, rollback, plan_document,
    journal (by those keys)."""
    from kreplica.executor.planfile import plan_siblings

    return dict(plan_siblings(plan_path))
