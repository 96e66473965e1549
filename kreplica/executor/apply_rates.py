"""The Applier's write rates: what each moving partition is written at (the plan document's
rates, else measured now over `rate_window_s`), checked against the throttle before anything
is written (kreplica.executor.writerate: a move under a throttle below its write rate never
finishes), then journalled and counted in the ETA."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kreplica.errors import ThrottleBelowWriteRate
from kreplica.executor import events as ev
from kreplica.executor.apply_base import ApplierState, Key, _key_text
from kreplica.executor.moves import Move
from kreplica.executor.writerate import (
    BrokerLoad,
    broker_loads,
    busiest,
    copy_time_s,
    journalled_rates,
    overload_text,
    overloaded,
    rate_text,
    refusal,
)
from kreplica.model import ClusterSnapshot
from kreplica.planner.serialize import rate_rows

NEAR_THROTTLE = 0.8  # writes taking this share of a throttle or more: a warning, not a refusal


class RateCheck(ApplierState):
    """Knowing the write rates before the first wave, and refusing a throttle below them."""

    def _check_write_rates(
        self, snapshot: ClusterSnapshot, waiting: Sequence[Move], waves: Sequence[Sequence[Move]]
    ) -> ev.WriteRates | None:
        """The rates of the partitions that copy (kept in `_rates` for the ETA); refused
        (ThrottleBelowWriteRate, nothing written) when a broker's throttle would carry writes
        at or above its rate in some wave, unless `allow_under_write_rate`. Returns the
        `write-rates` event to journal once the apply starts (None: no rate known)."""
        copying = sorted({m.key for wave in [waiting, *waves] for m in wave if m.added})
        from_plan = {k: self.plan.write_rates[k] for k in copying if k in self.plan.write_rates}
        # a resume counts what the interrupted run measured: no second wait
        earlier = journalled_rates(self.journal.read()) if self.options.resume else {}
        from_journal = {k: earlier[k] for k in copying if k in earlier and k not in from_plan}
        known = {**from_plan, **from_journal}
        missing = [k for k in copying if k not in known]
        throttle = self.options.throttle
        measured: dict[Key, float | None] = {}
        window = None
        if missing and throttle is not None and self.options.rate_window_s > 0:
            measured, window = self.cluster.write_rates(
                missing, self.options.rate_window_s, self._measuring(len(missing))
            )
        rates = {**known, **{k: r for k, r in measured.items() if r is not None}}
        if not rates:
            if measured:
                self._unknown_note(missing)
            return None
        self._rates = rates
        leaders = {
            (t.name, p.partition): p.current_leader for t in snapshot.topics for p in t.partitions
        }
        loads = broker_loads([waiting], rates, leaders, first_wave=0) if waiting else []
        loads += broker_loads(waves, rates, leaders)
        if throttle is not None:
            over = overloaded(loads, throttle)
            self._over = over
            if over and not self.options.allow_under_write_rate:
                raise ThrottleBelowWriteRate(refusal(over, throttle, pace=self.options.pace))
        how = [
            name
            for name, used in (
                ("plan", from_plan),
                ("journal", from_journal),
                ("measured", measured),
            )
            if used
        ]
        source: ev.WriteRates = {
            "event": "write-rates",
            "source": " and ".join(how),
            "measured": self._measured_text(
                bool(from_plan), bool(from_journal), window.window_s if window else None
            ),
            "partitions": rate_rows(rates),
            "unknown": [_key_text(k) for k in copying if k not in rates],
            "bytes_in_per_s": round(sum(rates.values()), 1),
            "throttle": throttle,
        }
        top = busiest(loads)
        if top is not None and throttle is not None:
            source["busiest"] = _load_json(top)
            seconds = copy_time_s(loads, throttle)
            if seconds is not None:
                source["copy_s"] = round(seconds, 1)
        return source

    def _unknown_note(self, keys: Sequence[Key]) -> None:
        shown = ", ".join(_key_text(k) for k in keys[:3]) + (" and more" if len(keys) > 3 else "")
        self.emit(
            {
                "event": "note",
                "message": f"the write rates of {len(keys)} moving partition(s) could not be "
                f"measured ({shown}; tiered, offline or without a log size): the throttle is "
                "not checked against them",
            }
        )

    def _measured_text(self, planned: bool, journalled: bool, window_s: float | None) -> str:
        parts = []
        if planned:
            parts.append(f"from the plan, measured {self.plan.rates_measured}")
        if journalled:
            parts.append("as the interrupted apply measured them")
        if window_s is not None:
            parts.append(f"measured now over {window_s:g} s")
        return "; ".join(parts)

    def _measuring(self, partitions: int) -> Callable[[float, float], None]:
        def told(waited: float, window: float) -> None:
            self.emit(
                {
                    "event": "rate-measuring",
                    "waited_s": round(waited, 1),
                    "window_s": window,
                    "partitions": partitions,
                }
            )

        return told

    def _journal_write_rates(self, event: ev.WriteRates | None) -> None:
        """Once the apply started: the rates on the record (for `status` and a resume), shown,
        and a warning when `allow_under_write_rate` let a throttle below them pass."""
        if event is None:
            return
        self.journal.append(event)
        self.emit(event)
        throttle = event["throttle"]
        if self._over and throttle is not None:
            self.emit(
                {
                    "event": "warning",
                    "message": "`allow_under_write_rate`: starting although "
                    f"{overload_text(self._over, throttle)}: those moves finish only once "
                    "their writes slow down",
                }
            )
        elif throttle is not None and "busiest" in event:
            self._near_throttle_warning(event["busiest"], throttle)

    def _near_throttle_warning(self, top: Mapping[str, Any], throttle: int) -> None:
        """Writes that take most of a throttle leave the copy a thin margin: it gains only
        (throttle - writes) per second, and a new follower's first minutes often run well
        under the throttle (seen at 100 of 250 KB/s with 197 KiB/s written), while the gap
        to the leader grows."""
        share = float(top["bytes_in_per_s"]) / throttle
        if share < NEAR_THROTTLE:
            return
        self.emit(
            {
                "event": "warning",
                "message": f"the writes take {share:.0%} of broker {top['broker']}'s "
                f"{top['side']} throttle in wave {top['wave']}: the copy outruns them by only "
                f"{rate_text(throttle - float(top['bytes_in_per_s']))} and "
                "may fall behind while it starts; a higher `throttle` leaves a margin",
            }
        )


def _load_json(load: BrokerLoad) -> dict[str, object]:
    return {
        "broker": load.broker,
        "side": load.side,
        "wave": load.wave,
        "bytes_in_per_s": round(load.writes, 1),
    }
