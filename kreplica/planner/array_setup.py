"""What the array planner's steps (shrink_arrays.py, racks_arrays.py) read of its setup
(arrays._Setup: dense broker indexes, racks, eligibility, loads), and rack sets as bit masks.

Pure; numpy is imported with the columns.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import numpy.typing as npt

from kreplica.columns import PartitionColumns

I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


class ArraySetup(Protocol):
    columns: PartitionColumns
    dense: I64  # replicas as indexes into the broker table (-1: none)
    eligible: Mask  # per broker index
    cluster: I64  # replicas per broker index, kept current
    rack_of: I64  # rack index per broker index
    elig_rack_mask: int  # the eligible brokers' racks, as bits
    nb: int

    def to_dense(self, broker_ids: npt.NDArray[np.int64]) -> I64: ...

    def racks(self, dense: I64) -> I64: ...


def popcount(masks: I64) -> I64:
    """Bits set per mask (racks in a rack set)."""
    out = np.zeros_like(masks)
    m = masks.copy()
    while bool(m.any()):
        out += m & 1
        m >>= 1
    return out
