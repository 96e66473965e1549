"""kreplica.sources.zkwire's pure parts: connect strings and the frames it writes."""

from __future__ import annotations

import struct

from kreplica.sources.zkwire import _connect_frame, _get_data_frame, split_connect


def test_connect_strings_split_into_hosts_and_chroot() -> None:
    assert split_connect("zk1:2181,zk2:2182/kafka/prod") == (
        [("zk1", 2181), ("zk2", 2182)],
        "/kafka/prod",
    )
    assert split_connect("zk1") == ([("zk1", 2181)], "")
    assert split_connect("[::1]:2181/") == ([("::1", 2181)], "")


def test_a_get_data_frame_is_length_xid_type_path_and_no_watch() -> None:
    frame = _get_data_frame(7, b"/brokers/ids/1")
    size, xid, kind, path_len = struct.unpack_from(">iiii", frame)
    assert (size, xid, kind, path_len) == (len(frame) - 4, 7, 4, 14)
    assert frame[16:-1] == b"/brokers/ids/1" and frame[-1:] == b"\0"


def test_the_connect_frame_asks_a_new_session_with_the_timeout() -> None:
    frame = _connect_frame(10_000)
    size, version, zxid, timeout, session, pw_len = struct.unpack_from(">iiqiqi", frame)
    assert size == len(frame) - 4
    assert (version, zxid, timeout, session, pw_len) == (0, 0, 10_000, 0, 16)
