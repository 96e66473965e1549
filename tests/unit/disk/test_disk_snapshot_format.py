"""The snapshot format's disk keys: brokers[].log_dirs with total/usable bytes,
partitions[].replica_dirs and replica_sizes. Old snapshots stay valid."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kreplica.errors import InputError
from kreplica.model import Broker, LogDir
from kreplica.sources.snapshot import dump_snapshot, load_snapshot, parse_snapshot

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

BASE: dict[str, Any] = {
    "kreplica_snapshot": 1,
    "brokers": [
        {
            "id": 1,
            "log_dirs": [
                {"path": "/d/a", "total_bytes": 1000, "usable_bytes": 400},
                {"path": "/d/b", "total_bytes": 1000, "usable_bytes": 900},
            ],
        },
        {"id": 2, "log_dirs": ["/d/a"]},
        {"id": 3},
    ],
    "topics": [
        {
            "name": "t",
            "partitions": [
                {
                    "partition": 0,
                    "replicas": [1, 2],
                    "size_bytes": 50,
                    "replica_dirs": ["/d/b", None],
                    "replica_sizes": [50, 40],
                }
            ],
        }
    ],
}


def test_disk_keys_are_read_into_the_model() -> None:
    snap = parse_snapshot(copy.deepcopy(BASE))
    b1, b2, b3 = snap.brokers
    assert b1.disks == (LogDir("/d/a", 1000, 400), LogDir("/d/b", 1000, 900))
    assert b1.log_dirs == ("/d/a", "/d/b")  # paths stay where check and others read them
    assert b2.disks == (LogDir("/d/a"),) and b2.log_dirs == ("/d/a",)  # old form: a path string
    assert b3.disks is None and b3.log_dirs is None
    p = snap.topics[0].partitions[0]
    assert p.replica_dirs == ("/d/b", None) and p.replica_sizes == (50, 40)


def test_the_writer_writes_them_and_reads_back_the_same() -> None:
    snap = parse_snapshot(copy.deepcopy(BASE))
    text = dump_snapshot(snap)
    written = json.loads(text)
    assert written["brokers"][0]["log_dirs"][1] == {
        "path": "/d/b",
        "total_bytes": 1000,
        "usable_bytes": 900,
    }
    assert written["brokers"][1]["log_dirs"] == [{"path": "/d/a"}]
    assert "log_dirs" not in written["brokers"][2]
    assert written["topics"][0]["partitions"][0]["replica_dirs"] == ["/d/b", None]
    assert parse_snapshot(written) == snap


def test_an_old_snapshot_is_written_back_byte_for_byte() -> None:
    path = EXAMPLES / "cluster.json"
    snap = load_snapshot(path)
    assert all(b.disks is None for b in snap.brokers)
    assert all(p.replica_dirs is None for t in snap.topics for p in t.partitions)
    assert "replica_dirs" not in dump_snapshot(snap) and "usable_bytes" not in dump_snapshot(snap)


def test_a_broker_built_with_disks_lists_their_paths() -> None:
    b = Broker(id=1, disks=(LogDir("/x", 10, 5), LogDir("/y")))
    assert b.log_dirs == ("/x", "/y")


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (lambda d: d["brokers"][0]["log_dirs"][0].update(usable_bytes=-1), "log_dirs[0].usable"),
        (lambda d: d["brokers"][0]["log_dirs"][1].update(total_bytes="1"), "log_dirs[1].total"),
        (lambda d: d["brokers"][0]["log_dirs"][0].update(usable_bytes=2000), "more than total"),
        (lambda d: d["brokers"][0]["log_dirs"].append({"total_bytes": 1}), "log_dirs[2]"),
        (lambda d: d["topics"][0]["partitions"][0].update(replica_dirs=["/d/b"]), "replica_dirs"),
        (lambda d: d["topics"][0]["partitions"][0].update(replica_dirs=[1, None]), "dirs[0]"),
        (lambda d: d["topics"][0]["partitions"][0].update(replica_sizes=[1, -5]), "sizes[1]"),
        (lambda d: d["topics"][0]["partitions"][0].update(replica_sizes="big"), "replica_sizes"),
    ],
)
def test_a_wrong_disk_value_names_its_path(edit: Any, where: str) -> None:
    data = copy.deepcopy(BASE)
    edit(data)
    with pytest.raises(InputError) as err:
        parse_snapshot(data)
    assert where in str(err.value)
    assert "\n" not in str(err.value)


def test_the_full_path_is_named() -> None:
    data = copy.deepcopy(BASE)
    data["brokers"][0]["log_dirs"][0]["usable_bytes"] = True
    with pytest.raises(InputError, match=r"brokers\[0\]\.log_dirs\[0\]\.usable_bytes"):
        parse_snapshot(data)
