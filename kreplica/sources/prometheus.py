"""Traffic from Prometheus (`--traffic-from prometheus://HOST:PORT`): each partition's write
rate at its peak over a range (`--traffic-range 7d`: plan for the busiest hour of the week, not
this minute), from the series Prometheus's JMX exporter gives brokers with its Kafka example
rules, through the HTTP API (standard library only).

A partition's rate at a moment is its log-end offset's advance per second times its bytes per
offset (log size over offset span), as the live measurement (kreplica.sources.traffic); here
both come from the exporter's gauges:

    kafka_log_log_logendoffset{topic,partition}     one series per replica (per broker)
    kafka_log_log_logstartoffset{topic,partition}
    kafka_log_log_size{topic,partition}
    kafka_server_brokertopicmetrics_bytesin_total{topic}    producers' bytes, at the leader
    kafka_server_brokertopicmetrics_bytesout_total{topic}   consumers' bytes (no replication)

The offsets written in a window are the advance of the highest log end among the replicas (the
leader's: a replica catching up after a move would look like a burst of writes) from the
window's start to its end, both read as Prometheus answers an instant (the latest scrape): a
window is a whole number of scrapes, so both ends are the same phase of the scrape cycle, and
one value per window and partition is read, however long the window (no `rate()` over every
sample). Each partition's rate is the highest of its windows' (4 scrapes or more, at most 240
per range); the brokers' loads
are then sums of peaks, which may not coincide (an upper bound, as planning wants). What it
cannot see: which consumer groups read a partition (no committed offsets in the JMX metrics):
fan-out is the topic's bytes out over its bytes in over the range, an estimate for every
partition of the topic; and anything the brokers' exporters were not scraped for.
"""

from __future__ import annotations

import json
import math
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from kreplica.errors import SourceError, UsageError
from kreplica.model import ClusterSnapshot, TrafficWindow
from kreplica.planner.traffic import (
    COMPACTED,
    FANOUT_TOPIC,
    IDLE,
    NO_SERIES,
    NO_SIZE,
    TIERED,
    UNITS,
    PartitionTraffic,
    duration_text,
    with_traffic,
)
from kreplica.sources.assemble import utc_timestamp

SCHEME = "prometheus://"
DEFAULT_RANGE = "5m"
LOG_END = "kafka_log_log_logendoffset"
LOG_START = "kafka_log_log_logstartoffset"
LOG_SIZE = "kafka_log_log_size"
BYTES_IN = "kafka_server_brokertopicmetrics_bytesin_total"
BYTES_OUT = "kafka_server_brokertopicmetrics_bytesout_total"

SCRAPES_PER_WINDOW = 4  # a rate over fewer scrapes is one scrape's jitter
MAX_POINTS = 240  # rate windows per partition over the range
MAX_SAMPLES = 2_000_000  # points of all partitions per answer: fewer, wider windows past it
DEFAULT_SCRAPE_S = 60.0  # Prometheus's own default, when its targets do not say
TIMEOUT_S = 60.0

_DURATION = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")

Key = tuple[str, int]


def parse_url(text: str) -> str:
    """`prometheus://HOST:PORT[/PATH]` -> the HTTP API's base URL."""
    if not text.startswith(SCHEME):
        raise UsageError(
            f"`traffic_from` {text!r} is not a Prometheus address: write "
            "prometheus://HOST:PORT (e.g. prometheus://127.0.0.1:9090)"
        )
    parts = urllib.parse.urlsplit("http://" + text.removeprefix(SCHEME))
    try:
        port = parts.port
    except ValueError:
        port = None
    if not parts.hostname or port is None or parts.query or parts.fragment:
        raise UsageError(
            f"`traffic_from` {text!r} needs a host and a port: write prometheus://HOST:PORT"
        )
    return f"http://{parts.netloc}{parts.path.rstrip('/')}"


def parse_duration(text: str) -> float:
    """Seconds of a Prometheus duration (`30s`, `5m`, `7d`, `1h30m`); bad input: UsageError."""
    pieces = _DURATION.findall(text)
    if not text or "".join(n + u for n, u in pieces) != text:
        raise UsageError(
            f"`traffic_range` {text!r} is not a duration: write a number and a unit, "
            "ms s m h d w y (e.g. 10m, 7d, 1h30m)"
        )
    seconds = sum(int(n) * UNITS[u] for n, u in pieces)
    if not seconds > 0:
        raise UsageError(f"`traffic_range` {text!r} is empty: give a range longer than 0")
    return float(seconds)


class Prometheus:
    """The few calls of Prometheus's HTTP API this source makes; every failure a SourceError."""

    def __init__(self, url: str, timeout_s: float = TIMEOUT_S) -> None:
        self.base = parse_url(url)
        self.shown = url
        self.timeout_s = timeout_s

    def get(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        url = self.base + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=self.timeout_s) as answer:
                body = answer.read()
        except urllib.error.HTTPError as exc:  # a bad query: Prometheus says why in JSON
            body = exc.read()
            reason = _error_text(body) or f"HTTP {exc.code}"
            raise SourceError(f"Prometheus at {self.shown} refused {path}: {reason}") from None
        except (urllib.error.URLError, OSError) as exc:
            why = getattr(exc, "reason", None) or exc
            why = getattr(why, "strerror", None) or why  # "Connection refused", no errno
            raise SourceError(
                f"cannot reach Prometheus at {self.shown} ({why}); check `traffic_from` and "
                "that Prometheus runs"
            ) from None
        try:
            document = json.loads(body)
            status = document["status"]
        except (ValueError, KeyError, TypeError):
            raise SourceError(
                f"{self.shown} answered {path} with something other than Prometheus's HTTP "
                "API; check `traffic_from`"
            ) from None
        if status != "success":
            raise SourceError(f"Prometheus at {self.shown}: {_error_text(body) or status}")
        return document.get("data")

    def scrape_interval_s(self) -> float:
        """The longest scrape interval of its active targets (rates need whole scrapes)."""
        data = self.get("/api/v1/targets", {"state": "active"}) or {}
        found = []
        for target in data.get("activeTargets") or []:
            interval = target.get("scrapeInterval")
            if isinstance(interval, str) and _DURATION.fullmatch(interval):
                found.append(parse_duration(interval))
        return max(found, default=DEFAULT_SCRAPE_S)

    def query_range(self, query: str, start: float, end: float, step: float) -> list[Any]:
        params = {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        data = self.get("/api/v1/query_range", params)
        return list(data.get("result") or []) if isinstance(data, dict) else []

    def query(self, query: str, at: float) -> list[Any]:
        data = self.get("/api/v1/query", {"query": query, "time": f"{at:.3f}"})
        return list(data.get("result") or []) if isinstance(data, dict) else []


def _error_text(body: bytes) -> str:
    try:
        document = json.loads(body)
        return str(document.get("error") or "").strip()
    except (ValueError, AttributeError):
        return ""


def _selector(topics: Sequence[str] | None) -> str:
    if not topics:
        return ""
    return '{topic=~"' + "|".join(re.escape(t) for t in topics).replace("\\", "\\\\") + '"}'


def plan_windows(range_s: float, scrape_s: float, partitions: int) -> float:
    """The rate window (and query step) for a range: 4 scrapes or more, at most MAX_POINTS
    windows per partition, and fewer when many partitions would make a huge answer."""
    points = max(12, min(MAX_POINTS, MAX_SAMPLES // max(1, partitions)))
    window = max(SCRAPES_PER_WINDOW * scrape_s, range_s / points)
    return math.ceil(window / scrape_s - 1e-9) * scrape_s  # whole scrapes: ends in phase


def check_range(range_s: float, window_s: float, range_text: str) -> None:
    if range_s < window_s:
        raise UsageError(
            f"`traffic_range` {range_text} is shorter than {SCRAPES_PER_WINDOW} of Prometheus's "
            f"scrapes ({duration_text(window_s)}): give {duration_text(window_s)} or more"
        )


def _series(result: Iterable[Any]) -> dict[Key, dict[float, float]]:
    """query_range's matrix as {(topic, partition): {time: value}} (NaN and inf dropped)."""
    out: dict[Key, dict[float, float]] = {}
    for item in result:
        labels = item.get("metric") or {}
        topic, number = labels.get("topic"), labels.get("partition")
        if not isinstance(topic, str) or not isinstance(number, str) or not number.isdigit():
            continue
        points = {round(float(t), 3): float(v) for t, v in item.get("values") or []}
        out[(topic, int(number))] = {t: v for t, v in points.items() if math.isfinite(v)}
    return out


def per_second(ends: Mapping[float, float], window_s: float) -> dict[float, float]:
    """Offsets written per second in each window, at its end: the advance of the log end from
    the value one window earlier (a fall, a topic deleted and made again, counts as none)."""
    out = {}
    for moment, value in ends.items():
        before = ends.get(round(moment - window_s, 3))  # times to the millisecond
        if before is not None:
            out[moment] = max(0.0, value - before) / window_s
    return out


def peak_rate(
    offsets_per_s: Mapping[float, float], bytes_per_offset: Mapping[float, float]
) -> tuple[float | None, tuple[str, ...]]:
    """The highest bytes per second over the windows (each window's offsets per second times
    the bytes per offset then, else the nearest known), and why it is not a plain figure."""
    if not any(v > 0 for v in offsets_per_s.values()):
        return 0.0, (IDLE,)
    if not bytes_per_offset:
        return None, (NO_SIZE,)
    known = sorted(bytes_per_offset)
    peak = 0.0
    for moment, offsets in offsets_per_s.items():
        size = bytes_per_offset.get(moment)
        if size is None:
            size = bytes_per_offset[min(known, key=lambda t: abs(t - moment))]
        peak = max(peak, offsets * size)
    return peak, ()


def topic_fanout(bytes_out: float | None, bytes_in: float | None) -> int | None:
    """Consumer groups a topic's bytes out over the range amount to (None: unknown)."""
    if bytes_out is None or not bytes_in:
        return None
    return round(bytes_out / bytes_in)


def _by_topic(result: Iterable[Any]) -> dict[str, float]:
    out = {}
    for item in result:
        topic = (item.get("metric") or {}).get("topic")
        value = float((item.get("value") or [0, "nan"])[1])
        if isinstance(topic, str) and math.isfinite(value):
            out[topic] = value
    return out


def read_traffic(
    url: str,
    range_text: str,
    snapshot: ClusterSnapshot,
    topics: Sequence[str] | None = None,
    *,
    now: float | None = None,
    timeout_s: float = TIMEOUT_S,
) -> tuple[ClusterSnapshot, list[PartitionTraffic]]:
    """`snapshot` (the cluster's topology, from any source) with each partition's peak rate and
    fan-out over the last `range_text` from the Prometheus at `url`, and the measurements.
    `topics`: the topics asked for (the queries select them; None: every topic)."""
    range_s = parse_duration(range_text)
    prom = Prometheus(url, timeout_s)
    keys = sorted((p.topic, p.partition) for t in snapshot.topics for p in t.partitions)
    scrape_s = prom.scrape_interval_s()
    window = plan_windows(range_s, scrape_s, len(keys))
    check_range(range_s, window, range_text)
    end = round(time.time() if now is None else now, 3)  # the API's times: milliseconds
    start = end - range_s + window  # the first window starts where the range does
    names = sorted(set(topics or ()))
    sel = _selector(names)
    highest = f"max by (topic, partition) ({LOG_END}{sel})"
    ends = _series(prom.query_range(highest, start - window, end, window))
    offsets = {key: per_second(points, window) for key, points in ends.items()}
    if not ends:
        where = f" for topic(s) {', '.join(names)}" if names else ""
        raise SourceError(
            f"Prometheus at {url} has no series {LOG_END}{where} in the last {range_text}: "
            "scrape the brokers' JMX exporter with the Kafka example rules, or check "
            "`traffic_range`"
        )
    span = f"({LOG_END}{sel} - {LOG_START}{sel} > 0)"
    per_offset = f"max by (topic, partition) ({LOG_SIZE}{sel} / {span})"
    sizes = _series(prom.query_range(per_offset, start, end, window))
    totals = f"[{range_s:g}s]"
    bytes_in = _by_topic(prom.query(f"sum by (topic) (increase({BYTES_IN}{sel}{totals}))", end))
    bytes_out = _by_topic(prom.query(f"sum by (topic) (increase({BYTES_OUT}{sel}{totals}))", end))
    configs = {t.name: t.configs for t in snapshot.topics}
    measured = []
    for key in keys:
        topic, number = key
        if not offsets.get(key):  # no series, or none a whole window old
            measured.append(PartitionTraffic(topic, number, None, None, (NO_SERIES,)))
            continue
        tiered = configs[topic].get("remote.storage.enable", "").lower() == "true"
        rate, notes = peak_rate(offsets[key], sizes.get(key, {}))
        if tiered and IDLE not in notes:  # the local log does not span the offsets
            rate, notes = None, (TIERED,)
        elif rate and "compact" in configs[topic].get("cleanup.policy", ""):
            notes += (COMPACTED,)
        # a topic's bytes-out meter appears with its first consumer: none yet is none read
        read = bytes_out.get(topic, 0.0 if topic in bytes_in else None)
        fanout = topic_fanout(read, bytes_in.get(topic))
        if IDLE in notes:
            fanout = 0
        elif fanout is not None:
            notes += (FANOUT_TOPIC,)
        measured.append(PartitionTraffic(topic, number, rate, fanout, notes))
    measured_at = utc_timestamp(datetime.fromtimestamp(end, UTC))
    origin = TrafficWindow(range_s, measured_at, peak_of_s=window, origin=url)
    return with_traffic(snapshot, measured, origin), measured
