"""What an apply shows while it runs: the executor emits events, this turns them into output.

On a terminal, a live line (partitions done/total, bytes copied/total, throughput, ETA) and a
line per finished wave; elsewhere (a log, CI) plain lines, a progress line whenever `every_s`
seconds have passed since the last (4 s: with apply's 2-s polls, one at least every 5 s); with
--output json, each event as one JSON line on stderr (stdout keeps the one envelope). The
throughput and ETA are the event's (kreplica.executor.copyrate: a sliding window, never above
the throttle), as `kreplica status` counts them.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from typing import IO, Any

from rich.console import Console

from kreplica.errors import flag_words
from kreplica.render.text import format_bytes, format_seconds, plural


def eta_text(copied: int, total: int, elapsed_s: float) -> tuple[str, str]:
    """(throughput, ETA) from bytes so far: '12.5 MiB/s', '3m20s' ('?' when unknown); for
    events that carry no rate of their own (moves between log dirs)."""
    if elapsed_s <= 0 or copied <= 0:
        return "?", "?"
    return rate_text(copied / elapsed_s, max(0, total - copied) / (copied / elapsed_s))


def rate_text(rate: float | None, eta_s: float | None) -> tuple[str, str]:
    """(throughput, ETA) in words: '12.5 MiB/s', '3m20s' ('?' when unknown)."""
    if eta_s is None:
        eta = "?"
    else:
        minutes, seconds = divmod(int(eta_s + 0.5), 60)
        eta = f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"
    return ("?" if not rate else f"{format_bytes(int(rate))}/s"), eta


class ProgressPrinter:
    """Callable event sink for kreplica.executor.apply."""

    def __init__(
        self,
        console: Console,
        *,
        json_lines: bool = False,
        err: IO[str] | None = None,
        every_s: float = 4.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.console = console
        self.json_lines = json_lines
        self.err = err or sys.stderr
        self.every_s = every_s
        self.clock = clock
        self.live = console.is_terminal and not json_lines
        self._last_line = -1e9
        self._status: Any = None

    def __call__(self, event: Mapping[str, Any]) -> None:
        if self.json_lines:
            self.err.write(json.dumps(event, sort_keys=True) + "\n")
            self.err.flush()
            return
        kind = event.get("event")
        handler = getattr(self, "_on_" + str(kind).replace("-", "_"), None)
        if handler is not None:
            handler(event)

    def close(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    # -- events --------------------------------------------------------------------------------

    def _print(self, text: str, style: str = "") -> None:
        if self._status is not None:
            self._status.console.print(text, style=style, markup=False, highlight=False)
        else:
            self.console.print(text, style=style, markup=False, highlight=False)

    def _on_warning(self, e: dict[str, Any]) -> None:
        self._print(f"warning: {flag_words(e['message'])}", "warning")

    def _on_leftover_throttles(self, e: dict[str, Any]) -> None:
        rows = e["configs"]
        shown = "; ".join(f"{r['kind']} {r['name']} {r['config']}={r['value']}" for r in rows[:4])
        more = f" and {len(rows) - 4} more" if len(rows) > 4 else ""
        when = "before starting" if e["when"] == "start" else "after finishing"
        self._print(
            f"throttles left from earlier runs ({when}; kept as they are): {shown}{more}; "
            "`kreplica throttles --clear` restores those kreplica set, `--clear --all` removes "
            "every one",
            "warning",
        )

    def _on_rate_measuring(self, e: dict[str, Any]) -> None:
        self._print(
            f"measuring the write rates of {plural(int(e['partitions']), 'moving partition')}: "
            f"{float(e['waited_s']):.0f}s of {float(e['window_s']):g}s",
            "muted",
        )

    def _on_write_rates(self, e: dict[str, Any]) -> None:
        rows = e.get("partitions") or []
        top = max(rows, key=lambda r: float(r["bytes_in_per_s"]), default=None)
        text = (
            f"write rates ({e['measured']}): {plural(len(rows), 'moving partition')} written "
            f"at {format_bytes(int(e['bytes_in_per_s']))}/s in all"
        )
        if top is not None:
            text += (
                f", the busiest {top['topic']}-{top['partition']} at "
                f"{format_bytes(int(top['bytes_in_per_s']))}/s"
            )
        busiest, throttle = e.get("busiest"), e.get("throttle")
        if busiest and throttle:
            share = float(busiest["bytes_in_per_s"]) / int(throttle)
            text += (
                f"; the writes take {share:.0%} of broker {busiest['broker']}'s "
                f"{busiest['side']} throttle at most"
            )
        if e.get("copy_s") is not None:
            text += f"; at the throttle the copy takes about {format_seconds(e['copy_s'])}"
        unknown = e.get("unknown") or []
        if unknown:
            shown = ", ".join(unknown[:3]) + (" and more" if len(unknown) > 3 else "")
            text += f"; {len(unknown)} without a rate, not checked ({shown})"
        self._print(text)

    def _on_pace_start(self, e: dict[str, Any]) -> None:
        base = e.get("baseline_p99_ms")
        self._print(
            f"pace auto: throttle starts at {format_bytes(int(e['rate']))}/s (ceiling "
            f"{format_bytes(int(e['ceiling']))}/s); canary {e.get('canary') or 'none'}, "
            f"baseline p99 {'?' if base is None else f'{base:g} ms'}, "
            f"{e.get('out_of_isr')} partition(s) outside the plan out of the ISR"
        )

    def _on_pace(self, e: dict[str, Any]) -> None:
        self._print(
            f"pace: throttle {format_bytes(int(e['previous']))}/s -> "
            f"{format_bytes(int(e['rate']))}/s ({e['reason']})",
            "warning" if int(e["rate"]) < int(e["previous"]) else "",
        )

    def _on_window_wait(self, e: dict[str, Any]) -> None:
        self._print(
            f"wave {e['wave']} waits until {e['until']} ({flag_words(e['reason'])}); Ctrl-C stops "
            "here, `--resume` later continues"
        )

    def _on_window_open(self, e: dict[str, Any]) -> None:
        self._print(f"wave {e['wave']} may start now")

    def _on_note(self, e: dict[str, Any]) -> None:
        self._print(f"note: {flag_words(e['message'])}", "muted")

    def _on_throttle_set(self, e: dict[str, Any]) -> None:
        self._print(
            f"throttle {format_bytes(int(e['rate']))}/s set for the moving replicas of "
            f"{plural(int(e['topics']), 'topic')} on {plural(int(e['brokers']), 'broker')}"
        )

    def _on_throttle_confirmed(self, e: dict[str, Any]) -> None:
        seconds = float(e.get("seconds") or 0.0)
        if e.get("what") == "pace" and seconds < 5:
            return  # a pace change in effect at once: its `pace` line said enough
        brokers = ", ".join(map(str, e.get("brokers") or [])) or "none"
        down = e.get("down") or []
        later = f"; down, so at their start: {', '.join(map(str, down))}" if down else ""
        self._print(
            f"throttle in effect: broker(s) {brokers} report the rate kreplica set "
            f"(after {seconds:.1f} s){later}"
        )

    def _on_dir_throttle_set(self, e: dict[str, Any]) -> None:
        self._print(
            f"throttle {format_bytes(int(e['rate']))}/s set for copies between log dirs on "
            f"{plural(int(e['brokers']), 'broker')}"
        )

    def _on_throttle_restored(self, e: dict[str, Any]) -> None:
        self._print(f"throttles restored ({plural(int(e['configs']), 'config')} put back)")
        for broker, path in sorted((e.get("via") or {}).items()):
            self._print(f"broker {broker} is down: its throttle was cleared through {path}")
        for resource, why in sorted((e.get("pending") or {}).items()):
            self._print(
                f"{resource}: throttle left in place for now ({why}); recorded in the journal, "
                "cleared by `kreplica throttles --clear` or the next command once it is back",
                "warning",
            )

    def _on_resume_wait(self, e: dict[str, Any]) -> None:
        self._print(f"resuming: waiting for {len(e['partitions'])} partition(s) already moving")

    def _on_wave_start(self, e: dict[str, Any]) -> None:
        names = e["partitions"]
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        self._print(f"wave {e['wave']}: moving {plural(len(names), 'partition')} ({shown})")
        if self.live and self._status is None:
            self._status = self.console.status("starting")
            self._status.start()

    def _on_progress(self, e: dict[str, Any]) -> None:
        done, total = int(e["done"]), int(e["total"])
        copied, size = int(e["bytes_copied"]), int(e["bytes_total"])
        if "rate_bytes_per_s" in e:
            rate, eta = rate_text(e["rate_bytes_per_s"], e.get("eta_s"))
        else:
            rate, eta = eta_text(copied, size, float(e["elapsed_s"]))
        label = f"wave {e['wave']}" if e["wave"] else "resumed moves"
        writes = float(e.get("write_bytes_per_s") or 0.0)
        written = f", written at {format_bytes(int(writes))}/s" if writes else ""
        if writes and e.get("eta_s") is None and (e.get("rate_bytes_per_s") or 0) > 0:
            eta = "never at this rate"  # copied no faster than written
        line = (
            f"{label}: {done}/{total} partitions, {format_bytes(copied)} of "
            f"{format_bytes(size)} copied, {rate}{written}, ETA {eta}"
        )
        if self._status is not None:
            self._status.update(line)
            return
        now = self.clock()
        if now - self._last_line >= self.every_s:
            self._last_line = now
            self._print(line, "muted")

    def _on_partition_done(self, e: dict[str, Any]) -> None:
        pass  # counted in the progress line; the wave line sums them up

    def _on_wave_done(self, e: dict[str, Any]) -> None:
        self.close()
        self._print(f"wave {e['wave']} done: {plural(int(e['partitions']), 'partition')} moved")

    def _on_stall(self, e: dict[str, Any]) -> None:
        names = e["partitions"]
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        brokers = ", ".join(map(str, e["brokers"])) or "none"
        self._print(
            f"stalled: no bytes copied for {e['seconds']:g}s on {shown} (receiving brokers "
            f"{brokers}); {flag_words(e['hint'])}",
            "warning",
        )

    def _on_created(self, e: dict[str, Any]) -> None:
        self._print(f"created {plural(int(e['partitions']), 'partition')} of {e['topic']}")

    def _on_nothing_to_do(self, e: dict[str, Any]) -> None:
        self._print(
            f"nothing to do: the plan is applied already ({e['done']} partitions as planned)"
        )

    def _on_finish(self, e: dict[str, Any]) -> None:
        self.close()
