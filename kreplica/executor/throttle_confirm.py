"""Wait until the brokers report the throttle rates kreplica just set (pure: the reads, the
clock and the sleep are handed in).

A config change is not in effect when the write returns. In ZooKeeper mode it is written to
ZooKeeper and each broker applies it when it processes the change notification; in KRaft each
broker applies the config record when it reaches it in the metadata log. A broker answers
DescribeConfigs for its own BROKER resource from the dynamic config it has applied (in
ZooKeeper mode a value written to `/config/brokers/<id>` without a notification is not shown),
so "every broker reports the rate" is the evidence that the rate is in effect.

The topic lists (`*.replication.throttled.replicas`) cannot be confirmed that way: in ZooKeeper
mode DescribeConfigs for a topic is answered from ZooKeeper, not from what a broker applied.
They are covered by order instead: kreplica writes the topic lists first and the broker rates
last, and a broker applies config changes in the order they were written (ZooKeeper's
sequential change notifications, one thread; KRaft's metadata log), so a broker that reports
the new rate has applied the lists written before it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kreplica.errors import KreplicaError

CONFIRM_S = 30.0  # how long apply waits for the brokers to report a new rate
FIRST_PAUSE_S = 0.05  # a healthy broker applies a change within a few tens of milliseconds
MAX_PAUSE_S = 1.0

# broker ids -> {config: value} as each broker reports it (a broker missing: no answer)
ReadBrokers = Callable[[Sequence[str]], Mapping[str, Mapping[str, str]]]


@dataclass
class Confirmation:
    """The outcome of a wait: the brokers that never reported the values, with what they
    reported last (None: no answer), how long it took and how many reads."""

    missing: dict[str, dict[str, str | None]] = field(default_factory=dict)
    seconds: float = 0.0
    rounds: int = 0
    last_error: str | None = None

    @property
    def confirmed(self) -> bool:
        return not self.missing


def differences(
    wanted: Mapping[str, Mapping[str, str | None]], reported: Mapping[str, Mapping[str, str]]
) -> dict[str, dict[str, str | None]]:
    """Per broker, the wanted configs whose reported value differs: {key: reported or None}.
    A wanted None is a config removed (reported by none)."""
    out: dict[str, dict[str, str | None]] = {}
    for broker, values in wanted.items():
        have = reported.get(broker)
        for key, value in values.items():
            now = None if have is None else have.get(key)
            if now != value:
                out.setdefault(broker, {})[key] = now
    return out


def check_once(
    read: ReadBrokers, wanted: Mapping[str, Mapping[str, str | None]]
) -> tuple[dict[str, dict[str, str | None]], str | None]:
    """One read of the brokers in `wanted`: those not reporting their values yet, and the read's
    error when it failed as a whole (then every broker counts as not reporting)."""
    try:
        reported = read(sorted(wanted, key=broker_order))
    except KreplicaError as exc:
        return {b: dict.fromkeys(v) for b, v in wanted.items()}, str(exc)
    return differences(wanted, reported), None


def wait_applied(
    read: ReadBrokers,
    wanted: Mapping[str, Mapping[str, str | None]],
    *,
    timeout_s: float,
    now: Callable[[], float],
    sleep: Callable[[float], None],
    first_pause_s: float = FIRST_PAUSE_S,
    max_pause_s: float = MAX_PAUSE_S,
) -> Confirmation:
    """Read the brokers until each reports its `wanted` values, or `timeout_s` has passed.

    Only the brokers not confirmed yet are read again; the pause between reads doubles from
    `first_pause_s` up to `max_pause_s`. A read that fails is another try, not the end.
    """
    started = now()
    pending = {b: dict(v) for b, v in wanted.items() if v}
    result = Confirmation()
    pause = first_pause_s
    while pending:
        missing, error = check_once(read, pending)
        result.rounds += 1
        result.last_error = error
        pending = {b: pending[b] for b in missing}
        result.missing = missing
        if not pending:
            break
        left = timeout_s - (now() - started)
        if left <= 0:
            break
        sleep(min(pause, left))
        pause = min(pause * 2, max_pause_s)
    result.seconds = now() - started
    return result


def broker_order(name: str) -> tuple[int, str]:
    """Broker ids as numbers (2 before 10)."""
    return (int(name), name) if name.isdigit() else (1 << 62, name)


def describe_missing(
    missing: Mapping[str, Mapping[str, str | None]], wanted_rate: str | None = None
) -> str:
    """'broker 2 reports leader.replication.throttled.rate 50000000' for a message (the first
    few brokers), and what kreplica set when `wanted_rate` is given."""
    parts = []
    for broker in sorted(missing, key=broker_order)[:3]:
        values = missing[broker]
        if all(v is None for v in values.values()):
            parts.append(f"broker {broker} does not report it")
            continue
        shown = ", ".join(
            f"{key} {value if value is not None else 'unset'}"
            for key, value in sorted(values.items())
        )
        parts.append(f"broker {broker} reports {shown}")
    more = len(missing) - 3
    text = "; ".join(parts) + (f" and {more} more broker(s)" if more > 0 else "")
    return text if wanted_rate is None else f"{text} (kreplica set {wanted_rate})"
