"""Drain balance: the plan's spreads against the flow optimum, on Kafka-placed clusters; and
the drain at scale through the CLI, before and after a change.

    PYTHONPATH=. .venv/bin/python bench/bench_drain.py [--partitions 20000] [--million]
    PYTHONPATH=. .venv/bin/python bench/bench_drain.py --scale [--before 6f36dc9]
        [--sizes 10000,100000,1000000] [--timeout 300]

--scale (issue 32's shape): RF 3, 500 brokers on 6 racks plus 20 empty ones, sizes set
(bench/planner_clusters.py `write_scale_snapshot`, files kept in --work-dir); per size,
`kreplica drain --snapshot F --brokers 1,2 --dry-run --output json` in a fresh process under
`/usr/bin/time -v`, this checkout's code and the --before commit's (`git archive` into the
work dir, put first on PYTHONPATH) alternating, each --repeat times: wall, peak RSS and the
replicas moved.

Shapes (issue 21): 6 brokers on racks a,b,c (1a 2b 3c 4a 5b 6c), 60 topics at RF 2 and 20 at
RF 3 (partitions 60:30 per topic, scaled to the total), drain 6; racks a:3 b:3 c:2, drain a
rack-c broker, then a rack-a broker; no racks, drain 6. Each topic is placed by Kafka's own
ZooKeeper-mode assignment (kreplica.kafka.assign_replicas, start index varied per topic).

Printed per shape: replicas per staying broker max-min (plan / optimum), worst topic spread,
preferred leaders max-min (plan / optimum with the plan's replica sets), moves (plan / lower
bound) and the planning wall time. The optima are max-flow windows solved by networkx over
the partitions grouped by their choices (a bench dependency only, never in kreplica/).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path

import networkx as nx

from kreplica.kafka import assign_replicas
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic
from kreplica.planner.brokers import drain_plan


def shape_cluster(racks: Mapping[int, str | None], total: int) -> ClusterSnapshot:
    brokers = sorted(racks)
    scale = total / 4200  # 60x60 RF2 + 20x30 RF3 = 4,200 partitions
    topics = []
    for i in range(80):
        rf, n = (2, round(60 * scale)) if i < 60 else (3, round(30 * scale))
        layout = assign_replicas(
            brokers,
            n,
            rf,
            racks=racks if any(racks.values()) else None,
            fixed_start_index=i % len(brokers),
        )
        name = f"t{i:02d}"
        parts = tuple(Partition(name, p, tuple(layout[p])) for p in sorted(layout))
        topics.append(Topic(name, parts, {}))
    return ClusterSnapshot(
        brokers=tuple(Broker(b, rack=racks[b]) for b in brokers),
        topics=tuple(topics),
        cluster_id="bench",
    )


Groups = list[tuple[int, list[tuple[int, int, list[int]]], int]]


def _feasible(groups: Groups, base: Mapping[int, int], lo: int, hi: int, lower: bool) -> bool:
    """Is there a placement of the groups' units (n partitions, layers (lo, hi, brokers) per
    partition, k units each) with every broker's base + units <= hi (and >= lo if `lower`)?"""
    g = nx.DiGraph()
    total = 0
    demand: Counter[str] = Counter()
    for gi, (n, layers, k) in enumerate(groups):
        total += n * k
        demand[f"g{gi}"] -= n * k
        for li, (llo, lhi, bs) in enumerate(layers):
            node = f"g{gi}l{li}"
            # lower bound n*llo on g -> layer: moved into the demands
            g.add_edge(f"g{gi}", node, capacity=n * (lhi - llo))
            demand[f"g{gi}"] += n * llo
            demand[node] -= n * llo
            for b in bs:
                g.add_edge(node, f"b{b}", capacity=n)
    needs = 0
    for b, c in base.items():
        need = max(0, lo - c) if lower else 0
        room = hi - c
        if room < need:
            return False
        g.add_edge(f"b{b}", "sink", capacity=room - need)
        demand[f"b{b}"] += need
        needs += need
    demand["sink"] += total - needs
    for node, d in demand.items():
        g.add_node(node, demand=d)
    try:
        nx.network_simplex(g)
    except nx.NetworkXUnfeasible:
        return False
    return True


def _window_exists(groups: Groups, base: Mapping[int, int], s: int) -> bool:
    """Some level L with every broker within [L, L + s]. Routing the units under the ceilings
    only gets easier as L rises and meeting the floors only harder (the reachable counts form
    a polymatroid base), so the lowest L that routes is the one to check with floors."""
    units = sum(n * k for n, _, k in groups)
    total = sum(base.values()) + units
    lo_l = max(0, -(-total // len(base)) - s, max(base.values()) - s)
    hi_l = total // len(base)
    if lo_l > hi_l:
        return False
    if not _feasible(groups, base, hi_l, hi_l + s, lower=False):
        return False
    while lo_l < hi_l:
        mid = (lo_l + hi_l) // 2
        if _feasible(groups, base, mid, mid + s, lower=False):
            hi_l = mid
        else:
            lo_l = mid + 1
    return _feasible(groups, base, lo_l, lo_l + s, lower=True)


def optimum(groups: Groups, base: Mapping[int, int]) -> int:
    """The lowest max-min of base + units any placement reaches (binary search on s)."""
    units = sum(n * k for n, _, k in groups)
    lo_s, hi_s = 0, max(base.values()) + units - min(base.values())
    while lo_s < hi_s:
        mid = (lo_s + hi_s) // 2
        if _window_exists(groups, base, mid):
            hi_s = mid
        else:
            lo_s = mid + 1
    return lo_s


def drain_groups(snap: ClusterSnapshot, drained: set[int]):  # type: ignore[no-untyped-def]
    """The drain's choices grouped (rack rule as in the planner) and the staying base."""
    racks = {b.id: (b.rack or "") for b in snap.brokers}
    stay = [b for b in sorted(racks) if b not in drained]
    by_rack: dict[str, list[int]] = defaultdict(list)
    for b in stay:
        by_rack[racks[b]].append(b)
    base = dict.fromkeys(stay, 0)
    grouped: Counter[tuple[tuple[int, ...], int]] = Counter()
    for t in snap.topics:
        for p in t.partitions:
            rest = tuple(sorted(b for b in p.replicas if b not in drained))
            for b in rest:
                base[b] += 1
            if len(rest) < len(p.replicas):
                grouped[(rest, len(p.replicas) - len(rest))] += 1
    groups = []
    for (rest, k), n in sorted(grouped.items()):
        used = {racks[b] for b in rest}
        fresh = [r for r in by_rack if r not in used]
        if k <= len(fresh):
            layers = [(0, 1, by_rack[r]) for r in fresh]
        else:
            layers = []
            for r, bs in by_rack.items():
                free = [b for b in bs if b not in rest]
                if free:
                    layers.append((int(r in fresh), min(k, len(free)), free))
        groups.append((n, layers, k))
    return groups, base


def leader_optimum(
    snap: ClusterSnapshot, plan_after: Mapping[tuple[str, int], tuple[int, ...]], drained: set[int]
) -> int:
    stay = [b.id for b in snap.brokers if b.id not in drained]
    base = dict.fromkeys(stay, 0)
    grouped: Counter[tuple[int, ...]] = Counter()
    for t in snap.topics:
        for p in t.partitions:
            after = plan_after.get((t.name, p.partition), p.replicas)
            if p.replicas[0] in drained:
                cands = tuple(sorted(b for b in after if b in base))
                grouped[cands] += 1
            elif after[0] in base:
                base[after[0]] += 1
    groups = [(n, [(0, 1, list(c))], 1) for c, n in sorted(grouped.items())]
    return optimum(groups, base)


def spread(values: Iterable[int]) -> int:
    v = list(values)
    return max(v) - min(v) if v else 0


def run_shape(
    name: str, racks: Mapping[int, str | None], drained: set[int], total: int, check: bool
) -> list[str]:
    snap = shape_cluster(racks, total)
    n_parts = sum(len(t.partitions) for t in snap.topics)
    t0 = time.perf_counter()
    plan = drain_plan(snap, drained)
    wall = time.perf_counter() - t0
    after = {(t.name, p.partition): p.replicas for t in snap.topics for p in t.partitions}
    for c in plan.changes:
        after[(c.topic, c.partition)] = tuple(c.after)
    stay = [b for b in sorted(racks) if b not in drained]
    per_broker = dict.fromkeys(stay, 0)
    leaders = dict.fromkeys(stay, 0)
    per_topic: dict[str, Counter[int]] = defaultdict(Counter)
    for (topic, _), reps in after.items():
        leaders[reps[0]] += 1
        for b in reps:
            per_broker[b] += 1
            per_topic[topic][b] += 1
    worst = max(spread(per_topic[t][b] for b in stay) for t in per_topic)
    moves = sum(len(c.added) for c in plan.changes)
    bound = sum(
        1
        for reps in (p.replicas for t in snap.topics for p in t.partitions)
        for b in reps
        if b in drained
    )
    if check:
        groups, base = drain_groups(snap, drained)
        opt = str(optimum(groups, base))
        lopt = str(leader_optimum(snap, after, drained))
    else:
        opt = lopt = "-"
    return [
        name,
        f"{n_parts:,}",
        f"{spread(per_broker.values())} / {opt}",
        str(worst),
        f"{spread(leaders.values())} / {lopt}",
        f"{moves:,} / {bound:,}",
        f"{wall:.2f}s",
    ]


SHAPES: list[tuple[str, dict[int, str | None], set[int]]] = [
    ("abc x2, drain 6", {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}, {6}),
    ("a3 b3 c2, drain c", {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c", 7: "a", 8: "b"}, {6}),
    ("a3 b3 c2, drain a", {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c", 7: "a", 8: "b"}, {7}),
    ("no racks, drain 6", dict.fromkeys(range(1, 7)), {6}),
]


HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def scale_snapshot(work: Path, partitions: int) -> Path:
    path = work / f"drain-b500+20-r6-p{partitions}-rf3.json"
    if not path.exists():
        sys.path.insert(0, str(HERE))
        from planner_clusters import write_scale_snapshot

        work.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        write_scale_snapshot(str(tmp), brokers=500, racks=6, partitions=partitions, rf=3, empty=20)
        tmp.replace(path)
    return path


def code_of(ref: str, work: Path) -> Path:
    """The kreplica package of commit `ref`, unpacked once under the work dir."""
    sha = subprocess.run(
        ["git", "rev-parse", "--short", ref], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    dest = work / f"code-{sha}"
    if not (dest / "kreplica").exists():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "archive", sha, "kreplica"], cwd=ROOT, check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def drain_run(code: Path, snapshot: Path, timeout: float) -> dict[str, str]:
    """One CLI drain in a fresh process: wall, peak RSS, replicas moved (or how it ended)."""
    # run in `code` too: `python -m` puts the working directory first on the path
    env = {**os.environ, "PYTHONPATH": str(code), "NO_COLOR": "1"}
    cmd = [
        "/usr/bin/time",
        "-v",
        sys.executable,
        "-m",
        "kreplica",
        "drain",
        "--snapshot",
        str(snapshot),
        "--brokers",
        "1,2",
        "--dry-run",
        "--output",
        "json",
    ]
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, cwd=code, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {"wall": f"> {timeout:.0f} s", "rss": "-", "moves": "not done"}
    wall = time.perf_counter() - started
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    moves = "exit " + str(proc.returncode)
    if proc.returncode == 0:
        plan = json.loads(proc.stdout)["data"]["reassignment"]["partitions"]
        moves = f"{len(plan):,} partitions"
    mib = int(rss.group(1)) / 1024 if rss else 0.0
    return {"wall": f"{wall:.1f} s", "rss": f"{mib:,.0f} MiB", "moves": moves}


def scale_main(args: argparse.Namespace) -> None:
    work = Path(args.work_dir)
    codes = [("after", ROOT)] + ([("before", code_of(args.before, work))] if args.before else [])
    print("partitions | code | wall | peak RSS | reassigned", flush=True)
    for size in [int(x) for x in args.sizes.split(",")]:
        snapshot = scale_snapshot(work, size)
        for _ in range(args.repeat):
            for name, code in codes:
                row = drain_run(code, snapshot, args.timeout)
                print(
                    f"{size:,} | {name} | {row['wall']} | {row['rss']} | {row['moves']}",
                    flush=True,
                )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=20_000)
    ap.add_argument("--million", action="store_true", help="also 1,000,000 partitions")
    ap.add_argument("--no-optimum", action="store_true", help="skip the networkx optima")
    ap.add_argument("--scale", action="store_true", help="the CLI drain at scale (issue 32)")
    ap.add_argument("--before", help="a commit to compare with (--scale)")
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--work-dir", default="/tmp/kreplica-bench-drain")
    args = ap.parse_args()
    if args.scale:
        scale_main(args)
        return
    sizes = [args.partitions] + ([1_000_000] if args.million else [])
    head = [
        "shape",
        "partitions",
        "broker max-min plan/opt",
        "worst topic",
        "leaders max-min plan/opt",
        "moves plan/bound",
        "wall",
    ]
    rows = [head]
    for total in sizes:
        for name, racks, drained in SHAPES:
            rows.append(
                run_shape(
                    name, racks, drained, total, check=not args.no_optimum and total <= 100_000
                )
            )
            print(" | ".join(rows[-1]), flush=True)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    print()
    for r in rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    main()
